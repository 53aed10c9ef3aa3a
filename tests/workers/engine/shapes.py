"""Tiny meshes built in code, the shared real meshes (cached) and their measured counts.

Everything here is plain NumPy on the CPU; tests run operations with ``device="cpu"``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from tests.conftest import mesh_path
from workers.engine import TriMesh
from workers.engine.ops.stats import mesh_stats

CPU = "cpu"


def mesh(V: Any, F: Any, *, dtype: str = "float64", **kw: Any) -> TriMesh:
    return TriMesh.from_arrays(
        np.asarray(V, dtype=np.float64), np.asarray(F, dtype=np.int64), dtype=dtype, **kw
    )


def run(m: TriMesh, *steps: Any) -> Any:
    """Run steps on the CPU; returns the PipelineResult."""
    return m.run(list(steps), device=CPU)


def stats(m: TriMesh) -> dict[str, Any]:
    return mesh_stats(m)


# ------------------------------------------------------------------------------ tiny meshes
def tetrahedron() -> TriMesh:
    """Corner tetrahedron (volume 1/6), faces counter-clockwise seen from outside."""
    V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    F = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    return mesh(V, F)


CUBE_QUADS = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]


def cube() -> TriMesh:
    """Unit cube [0, 1]^3, vertex ``x + 2y + 4z``, 12 outward triangles."""
    V = [(i & 1, (i >> 1) & 1, (i >> 2) & 1) for i in range(8)]
    F = [t for a, b, c, d in CUBE_QUADS for t in ((a, b, c), (a, c, d))]
    return mesh(V, F)


def open_square() -> TriMesh:
    """Unit square in z = 0 as two triangles, normals +z."""
    return mesh([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], [(0, 1, 2), (0, 2, 3)])


def bowtie() -> TriMesh:
    """Two triangles sharing only vertex 0."""
    V = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (-1, 0, 0), (-1, -1, 0)]
    return mesh(V, [(0, 1, 2), (0, 3, 4)])


def three_on_an_edge() -> TriMesh:
    """Three triangles sharing edge (0, 1): one non-manifold edge."""
    V = [(0, 0, 0), (1, 0, 0), (0.5, 1, 0), (0.5, -1, 0), (0.5, 0, 1)]
    return mesh(V, [(0, 1, 2), (1, 0, 3), (0, 1, 4)])


def mobius(n: int = 8) -> TriMesh:
    """A Möbius strip of ``n`` quads (2n triangles): one boundary loop, chi = 0, non-orientable."""
    V = []
    for i in range(n):
        u = 2 * math.pi * i / n
        for w in (1.0, -1.0):
            r = 1 + 0.25 * w * math.cos(u / 2)
            V.append((r * math.cos(u), r * math.sin(u), 0.25 * w * math.sin(u / 2)))
    F = []
    for i in range(n):
        a, b = 2 * i, 2 * i + 1
        if i + 1 < n:
            c, d = 2 * i + 3, 2 * i + 2  # b_{i+1}, a_{i+1}
        else:
            c, d = 0, 1  # the twist: a_n is b_0 and b_n is a_0
        F += [(a, b, c), (a, c, d)]
    return mesh(V, F)


def cylinder(n: int = 8) -> TriMesh:
    """An open tube of ``n`` quads: two boundary loops, chi = 0, genus 0."""
    V = [
        (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n), z)
        for z in (0.0, 1.0)
        for i in range(n)
    ]
    F = []
    for i in range(n):
        j = (i + 1) % n
        F += [(i, j, n + j), (i, n + j, n + i)]
    return mesh(V, F)


def soup(m: TriMesh) -> TriMesh:
    """Every face with its own three vertices (what an STL holds)."""
    V = np.asarray(m.V)[np.asarray(m.F).ravel()]
    return mesh(V, np.arange(V.shape[0]).reshape(-1, 3), dtype=str(m.V.dtype))


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random proper rotation (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


# ------------------------------------------------------------------------------ shared meshes
class Counts(NamedTuple):
    v: int
    F: int
    unused: int
    v_weld: int
    dup_faces: int
    edges: int
    boundary_edges: int
    non_manifold_edges: int
    chi: int


#: the table of /work/shared/meshes/README.md ("Counts, read from the files themselves")
README_COUNTS: dict[str, Counts] = {
    "alligator.obj": Counts(3208, 5981, 0, 3208, 0, 9188, 433, 0, 1),
    "beetle.obj": Counts(1148, 2053, 0, 1148, 0, 3204, 296, 47, -3),
    "cheburashka.obj": Counts(6669, 13334, 0, 6669, 0, 20001, 0, 0, 2),
    "cow.obj": Counts(2903, 5804, 0, 2903, 0, 8706, 0, 0, 1),
    "fandisk.obj": Counts(6475, 12946, 0, 6475, 0, 19419, 0, 0, 2),
    "rocker-arm.obj": Counts(10044, 20088, 0, 10044, 0, 30132, 0, 0, 0),
    "rx-bumpy-cube.obj": Counts(19970, 39936, 0, 19970, 0, 59904, 0, 0, 2),
    "rx-cloth.obj": Counts(900, 1682, 0, 900, 0, 2581, 116, 0, 1),
    "rx-cube.obj": Counts(8, 12, 0, 8, 0, 18, 0, 0, 2),
    "rx-diamond.obj": Counts(4, 2, 0, 4, 0, 5, 4, 0, 1),
    "rx-dragon.obj": Counts(10000, 20000, 0, 10000, 0, 30000, 0, 0, 0),
    "rx-el_topo_sphere_1280.obj": Counts(642, 1280, 0, 642, 0, 1920, 0, 0, 2),
    "rx-giraffe.obj": Counts(3130, 6256, 0, 3130, 0, 9384, 0, 0, 2),
    "rx-plane_5.obj": Counts(25, 32, 0, 25, 0, 56, 16, 0, 1),
    "rx-sphere3.obj": Counts(386, 768, 0, 386, 0, 1152, 0, 0, 2),
    "rx-torus.obj": Counts(4608, 9216, 0, 4608, 0, 13824, 0, 0, 0),
    "spot.obj": Counts(2930, 5856, 0, 2930, 0, 8784, 0, 0, 2),
    "stanford-bunny.obj": Counts(35947, 69451, 1113, 34834, 0, 104288, 223, 0, -3),
    "suzanne.obj": Counts(507, 968, 0, 505, 1, 1472, 42, 1, 1),
    "teapot.obj": Counts(3644, 6320, 0, 3241, 0, 9560, 160, 0, 1),
    "woody.obj": Counts(694, 1267, 0, 694, 0, 1960, 119, 0, 1),
}
SHARED = sorted(README_COUNTS)
#: closed meshes (no boundary edges, no non-manifold edges)
CLOSED = [
    n
    for n in SHARED
    if README_COUNTS[n].boundary_edges == 0 and README_COUNTS[n].non_manifold_edges == 0
]
SPHERES = ["rx-sphere3.obj", "rx-el_topo_sphere_1280.obj"]


@functools.cache
def load(name: str) -> TriMesh:
    """A shared mesh as the file stores it (cached: tests must not modify it), without the
    texture coordinates a few hold (spot.obj): the tests that use this are about geometry and
    hold their bounds as measured on it; texture coordinates through operations are tested in
    test_corners.py and test_assets.py."""
    return TriMesh.load(mesh_path(name)).without_corners()


@functools.cache
def welded(name: str) -> TriMesh:
    """A shared mesh after an exact weld (which also drops unused vertices)."""
    return run(load(name), "weld").mesh


@functools.cache
def welded_stats(name: str) -> dict[str, Any]:
    """The ``stats`` op's report after an exact ``weld`` (which also drops unused vertices)."""
    return dict(run(load(name), "weld", "stats").reports["stats"])


#: non-manifold vertices after welding (bow-tie-like pinches); every other shared mesh has none
NON_MANIFOLD_VERTICES = {"cow.obj": 1, "suzanne.obj": 2, "teapot.obj": 1}
#: shared meshes with neither non-manifold edges nor non-manifold vertices after welding
MANIFOLD = [
    n for n in SHARED if README_COUNTS[n].non_manifold_edges == 0 and n not in NON_MANIFOLD_VERTICES
]


# ------------------------------------------------------------------------------ geometry helpers
@functools.cache
def unit_sphere(name: str) -> TriMesh:
    """One of the SPHERES, centred at its vertex mean and scaled so that the mean distance of
    its vertices from the centre is 1 (float64). rx-sphere3's vertices then lie on the unit
    sphere to 3e-8; el_topo's to 0.15 % (standard deviation of the radius)."""
    m = load(name)
    V = np.asarray(m.V, dtype=np.float64)
    V = V - V.mean(axis=0)
    V /= np.linalg.norm(V, axis=1).mean()
    return mesh(V, m.F)


def boundary_mask(m: TriMesh) -> np.ndarray:
    """(n_vertices,) bool: vertices on an edge with exactly one face."""
    topo = m.topology
    out = np.zeros(m.n_vertices, dtype=bool)
    out[np.asarray(topo.EV)[np.asarray(topo.boundary_edges)].ravel()] = True
    return out


def grid(n: int, *, jitter: float = 0.0, seed: int = 0) -> TriMesh:
    """An (n+1) x (n+1) vertex grid on [0, 1]^2 in z = 0, each square cut along its diagonal
    into two counter-clockwise triangles; interior vertices moved in the plane by up to
    ``jitter`` cell widths (seeded), which keeps every triangle positively oriented for
    ``jitter < 0.25``."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    V = np.stack([i.ravel() / n, j.ravel() / n, np.zeros(i.size)], axis=1)
    inner = (i.ravel() > 0) & (i.ravel() < n) & (j.ravel() > 0) & (j.ravel() < n)
    V[inner, :2] += rng.uniform(-jitter, jitter, size=(int(inner.sum()), 2)) / n
    idx = (i * (n + 1) + j)[:-1, :-1].ravel()
    a, b, c, d = idx, idx + (n + 1), idx + (n + 2), idx + 1
    F = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return mesh(V, F)


def vertex_normals64(m: TriMesh) -> np.ndarray:
    """(n_vertices, 3) unit area-weighted vertex normals, computed here in float64 (independent
    of the engine's operation)."""
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F)
    cross = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    N = np.zeros_like(V)
    for k in range(3):
        np.add.at(N, F[:, k], cross)
    length = np.linalg.norm(N, axis=1, keepdims=True)
    return N / np.where(length > 0, length, 1.0)


def with_normal_noise(m: TriMesh, scale: float, *, seed: int = 0) -> TriMesh:
    """The mesh with every vertex moved along its normal by a uniform random offset in
    ``[-scale, scale]`` times the mean edge length (seeded)."""
    rng = np.random.default_rng(seed)
    V = np.asarray(m.V, dtype=np.float64)
    offset = rng.uniform(-scale, scale, m.n_vertices) * mean_edge_length(m)
    return mesh(V + offset[:, None] * vertex_normals64(m), m.F)


def mean_edge_length(m: TriMesh) -> float:
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F)
    e = np.unique(np.sort(np.stack([F.ravel(), F[:, [1, 2, 0]].ravel()], 1), axis=1), axis=0)
    return float(np.linalg.norm(V[e[:, 0]] - V[e[:, 1]], axis=1).mean())


def roughness(m: TriMesh) -> float:
    """Mean distance of a vertex from the mean of its edge neighbours (the umbrella vector), in
    units of the mean edge length: 0 only where every vertex is the centroid of its one-ring."""
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F)
    e = np.unique(np.sort(np.stack([F.ravel(), F[:, [1, 2, 0]].ravel()], 1), axis=1), axis=0)
    e = e[e[:, 0] != e[:, 1]]
    acc = np.zeros_like(V)
    np.add.at(acc, e[:, 0], V[e[:, 1]])
    np.add.at(acc, e[:, 1], V[e[:, 0]])
    deg = np.bincount(e.ravel(), minlength=m.n_vertices)
    has = deg > 0
    umbrella = acc[has] / deg[has, None] - V[has]
    return float(np.linalg.norm(umbrella, axis=1).mean()) / mean_edge_length(m)


def mean_radius(m: TriMesh) -> float:
    """Mean distance of the vertices from their mean (the radius of a centred sphere)."""
    V = np.asarray(m.V, dtype=np.float64)
    return float(np.linalg.norm(V - V.mean(axis=0), axis=1).mean())


def radial_deviation(m: TriMesh) -> float:
    """Standard deviation over mean of the vertices' distances from their mean: the distance
    from a sphere, relative to its size (0 for points on a centred sphere)."""
    V = np.asarray(m.V, dtype=np.float64)
    r = np.linalg.norm(V - V.mean(axis=0), axis=1)
    return float(r.std() / r.mean())


def strip(n: int) -> TriMesh:
    """A 1 x n strip of unit squares along x, each cut into two triangles: 2 (n + 1) vertices,
    vertex ``2 i`` at ``(i, 0, 0)`` and ``2 i + 1`` at ``(i, 1, 0)``."""
    V = [(i, j, 0) for i in range(n + 1) for j in (0, 1)]
    F = []
    for i in range(n):
        a, b, c, d = 2 * i, 2 * i + 2, 2 * i + 3, 2 * i + 1
        F += [(a, b, c), (a, c, d)]
    return mesh(V, F)


EDGE_TABLE_FIELDS = ("key", "EV", "count", "s0", "s1", "of_side")


def assert_same_edge_table(got: Any, want: Any) -> None:
    """Every array of two edge tables (``_edges.EdgeTable``, NumPy or CuPy) equal, dtypes too."""
    for field in EDGE_TABLE_FIELDS:
        a, b = getattr(got, field), getattr(want, field)
        assert a.dtype == b.dtype, field
        np.testing.assert_array_equal(
            a.get() if hasattr(a, "get") else a, b.get() if hasattr(b, "get") else b, field
        )
