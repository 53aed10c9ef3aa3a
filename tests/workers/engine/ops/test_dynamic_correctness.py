"""Correctness of the dynamic operations on meshes the project did not make: every split,
collapse and flip keeps the surface's non-manifold edges and vertices where they were and never
adds one (fins, two-sided sheets, spheres touching at a vertex); remeshing removes slivers
instead of locking them as features, and keeps the creases elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import grid, mesh, run, stats, welded
from workers.engine import TriMesh
from workers.engine.dynamic._edges import Surface, edge_table
from workers.engine.dynamic.slivers import face_angles, remove_slivers
from workers.engine.dynamic.split import split_round


def _non_manifold(m: TriMesh) -> tuple[int, int]:
    """(non-manifold edges, non-manifold vertices)."""
    topo = m.topology
    return int(topo.non_manifold_edges.shape[0]), int(topo.non_manifold_vertices.shape[0])


def _arrays(m: TriMesh) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(m.V, dtype=np.float64), np.asarray(m.F, dtype=np.int64)


def with_fins(m: TriMesh, faces: np.ndarray) -> TriMesh:
    """``m`` with a fin on the first edge ``a-b`` of each of ``faces``: the two back-to-back
    triangles ``(a, b, x)`` and ``(b, a, x)`` standing along the face's normal (``a-b`` then has
    four faces; ``a-x`` and ``b-x`` two each, whose opposite corners coincide)."""
    V, F = _arrays(m)
    tips, fins = [], []
    for f in faces:
        a, b, c = F[f]
        n = np.cross(V[b] - V[a], V[c] - V[a])
        n /= np.linalg.norm(n)
        tips.append(0.5 * (V[a] + V[b]) + n * np.linalg.norm(V[b] - V[a]))
        x = len(V) + len(tips) - 1
        fins += [(a, b, x), (b, a, x)]
    return mesh(np.vstack([V, tips]), np.vstack([F, fins]))


def with_sheet(m: TriMesh, face: int, rows: int = 4, height: float = 0.6) -> TriMesh:
    """``m`` with a two-sided strip (every triangle twice, opposite ways) of ``rows`` quads
    standing on the first edge of ``face``."""
    V, F = _arrays(m)
    a, b, c = F[face]
    n = np.cross(V[b] - V[a], V[c] - V[a])
    n /= np.linalg.norm(n)
    step = height * np.linalg.norm(V[b] - V[a]) * n
    pts = [V[a] + i * step for i in range(1, rows + 1)] + [
        V[b] + i * step for i in range(1, rows + 1)
    ]
    left = [a] + [len(V) + i for i in range(rows)]
    right = [b] + [len(V) + rows + i for i in range(rows)]
    T = []
    for i in range(rows):
        T += [(left[i], right[i], left[i + 1]), (right[i], right[i + 1], left[i + 1])]
    T = np.asarray(T)
    return mesh(np.vstack([V, pts]), np.vstack([F, T, T[:, ::-1]]))


def touching_spheres() -> TriMesh:
    """Two copies of rx-sphere3 meeting at one vertex (a non-manifold vertex, no other)."""
    V, F = _arrays(welded("rx-sphere3.obj"))
    i = int(np.argmax(V[:, 0]))
    W = V.copy()
    W[:, 0] = 2.0 * V[i, 0] - V[:, 0]
    mirrored = F[:, ::-1] + len(V)
    mirrored[mirrored == len(V) + i] = i
    return mesh(np.vstack([V, W]), np.vstack([F, mirrored]))


def _cases() -> dict[str, TriMesh]:
    sphere = welded("rx-sphere3.obj")
    faces = np.random.default_rng(1).choice(sphere.n_faces, 8, replace=False)
    return {
        "fins": with_fins(sphere, faces),
        "sheet": with_sheet(sphere, 5),
        "touching": touching_spheres(),
    }


CASES = _cases()

STEPS = [
    ("isotropic_remesh", {}),
    ("isotropic_remesh", {"target_edge_length": 0.5, "iterations": 3}),
    ("isotropic_remesh", {"target_edge_length": 0.5, "iterations": 3, "feature_angle": 180.0}),
    ("isotropic_remesh", {"target_edge_length": 1.5, "iterations": 3, "feature_angle": 180.0}),
    ("decimate", {"target_ratio": 0.1}),
    ("decimate", {"target_ratio": 0.01, "preserve_boundary": False}),
    ("collapse_short_edges", {"threshold": 3.0, "preserve_boundary": False}),
    ("delaunay_flip", {"feature_angle": 180.0}),
]


def test_the_cases_are_what_they_say() -> None:
    assert _non_manifold(CASES["fins"]) == (8, 0)
    assert _non_manifold(CASES["sheet"])[0] > 1
    assert _non_manifold(CASES["touching"]) == (0, 1)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"{s[0]}-{'-'.join(map(str, s[1].values()))}")
def test_no_new_non_manifold_edges_or_vertices(case: str, step: tuple[str, dict]) -> None:
    m = CASES[case]
    out = run(m, step).mesh
    e0, v0 = _non_manifold(m)
    e1, v1 = _non_manifold(out)
    assert e1 <= e0 and v1 <= v0, (e0, v0, e1, v1)


def test_a_fin_edge_is_never_split() -> None:
    """Every edge of two back-to-back triangles has two faces with the same opposite corner:
    splitting one would make the edge from the new vertex to that corner one of four faces. One
    of the triangles alone is split."""
    V = np.array([(0, 0, 0), (1, 0, 0), (0.5, 3.0, 0)], dtype=np.float64)
    F = np.array([(0, 1, 2), (1, 0, 2)], dtype=np.int64)

    def split(F: np.ndarray) -> tuple[np.ndarray, int]:
        S = Surface(V, F, None, np.arange(len(F)), np.zeros(3, bool), np.zeros(0, np.int64))
        out, k = split_round(np, S, 0.5)
        return out.F, k

    assert split(F)[1] == 0
    G, k = split(F[:1])
    assert k == 1 and int(edge_table(np, G).count.max()) == 2


@pytest.mark.parametrize("name", ["beetle.obj", "suzanne.obj"])
@pytest.mark.parametrize(
    "step",
    [("isotropic_remesh", {"iterations": 2}), ("decimate", {})],
    ids=lambda s: s[0],
)
def test_shared_non_manifold_meshes_keep_their_counts(name: str, step: tuple[str, dict]) -> None:
    """beetle: 47 non-manifold edges; suzanne: one, and two non-manifold vertices."""
    m = welded(name)
    e0, v0 = _non_manifold(m)
    assert e0 + v0 > 0
    e1, v1 = _non_manifold(run(m, step).mesh)
    assert e1 <= e0 and v1 <= v0, (e0, v0, e1, v1)


# ------------------------------------------------------------------------------ slivers
def _normals(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    N = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    return N / np.linalg.norm(N, axis=1)[:, None]


def with_slivers(m: TriMesh, k: int = 12, seed: int = 0) -> tuple[TriMesh, np.ndarray]:
    """``m`` with ``k`` slivers injected in flat regions (every face at a vertex of the face
    within 10 degrees of it; their one-rings pairwise apart and off the boundary), alternately
    caps (the third vertex moved onto the middle of the first edge) and needles (the second
    vertex moved next to the first), each a little off the surface so the sliver's normal is
    steep to its neighbours' (above 45 degrees: its vertices would be locked as features).
    Returns the mesh and the (n_vertices,) mask of the vertices of the faces around the
    slivers."""
    V, F = _arrays(m)
    V = V.copy()
    N = _normals(V, F)
    vf_face = np.argsort(F.ravel(), kind="stable") // 3
    vf_off = np.searchsorted(F.ravel()[np.argsort(F.ravel(), kind="stable")], np.arange(len(V) + 1))
    near = np.zeros(len(V), dtype=bool)
    boundary = np.asarray(m.topology.boundary_vertices)
    done = 0
    for f in np.random.default_rng(seed).permutation(len(F)):
        ring = np.concatenate([vf_face[vf_off[v] : vf_off[v + 1]] for v in F[f]])
        verts = np.unique(F[ring])
        if (
            near[verts].any()
            or boundary[verts].any()
            or (N[ring] @ N[f]).min() < np.cos(np.radians(10.0))
        ):
            continue
        a, b, c = F[f]
        e = np.linalg.norm(V[b] - V[a]) * N[f]
        if done % 2 == 0:
            V[c] = 0.5 * (V[a] + V[b]) + 0.003 * e
        else:
            V[b] = V[a] + 0.01 * (V[b] - V[a]) + 0.02 * e
        near[verts] = True
        done += 1
        if done == k:
            break
    assert done == k
    return mesh(V, F), near


def _crease_vertices(m: TriMesh, angle: float = 45.0) -> np.ndarray:
    """(n_vertices,) bool: vertices of the edges with a dihedral angle above ``angle``."""
    V, F = _arrays(m)
    E = edge_table(np, F)
    two = np.nonzero(E.count == 2)[0]
    N = _normals(V, F)
    cos = (N[E.s0[two] // 3] * N[E.s1[two] // 3]).sum(axis=1)
    out = np.zeros(len(V), dtype=bool)
    out[E.EV[two[cos < np.cos(np.radians(angle))]].ravel()] = True
    return out


def test_remeshing_fixes_injected_slivers_and_keeps_the_creases() -> None:
    base = welded("fandisk.obj")
    m, near = with_slivers(base)
    crease = _crease_vertices(base) & ~near
    assert crease.sum() > 300
    kept = run(m, ("isotropic_remesh", {"sliver_angle": 0.0})).reports["isotropic_remesh"]
    res = run(m, "isotropic_remesh")
    rep = res.reports["isotropic_remesh"]
    before = rep["quality_before"]["min_angle"]
    assert before < 1.0
    # without the sliver removal the slivers' vertices are locked as features and come back
    assert kept["quality_after"]["min_angle"] < 2.0 * before
    assert rep["quality_after"]["min_angle"] > max(10.0, 20.0 * before)
    assert rep["slivers_before"] >= 12 and rep["slivers_after"] == 0
    assert rep["slivers_collapsed"] > 0 and rep["slivers_flipped"] > 0
    # the creases away from the slivers are kept: their vertices are still there, unmoved
    out_pts = {tuple(p) for p in np.asarray(res.mesh.V)}
    assert all(tuple(p) in out_pts for p in np.asarray(m.V)[crease])
    # and the slivers' own false creases are gone
    assert rep["feature_edges"] < kept["feature_edges"]


def test_sliver_removal_keeps_a_plane_tiled() -> None:
    """On a jittered unit-square grid: the caps and needles go, the boundary stays, the faces
    still tile the square counter-clockwise."""
    m, _ = with_slivers(grid(16, jitter=0.1, seed=3), k=6, seed=2)
    V, F = _arrays(m)
    V[:, 2] = 0.0
    locked = np.zeros(len(V), dtype=bool)
    locked[np.asarray(m.topology.boundary_vertices)] = True
    S = Surface(V, F, None, np.arange(len(F)), locked, np.zeros(0, np.int64))
    S2, rep = remove_slivers(np, S, 5.0)
    assert rep["before"] >= 6 and rep["after"] == 0
    assert rep["collapses"] > 0 and rep["flips"] > 0
    z = np.cross(S2.V[S2.F[:, 1]] - S2.V[S2.F[:, 0]], S2.V[S2.F[:, 2]] - S2.V[S2.F[:, 0]])[:, 2]
    assert (z > 0).all() and abs(0.5 * z.sum() - 1.0) < 1e-12
    assert face_angles(np, S2.V, S2.F).min() > 5.0
    assert np.array_equal(S2.V[S2.locked], V[locked])
    assert stats(mesh(S2.V, S2.F))["euler_characteristic"] == 1


@pytest.mark.parametrize(("name", "floor"), [("spot.obj", 10.2), ("alligator.obj", 20.0)])
def test_the_last_relaxations_caps_are_removed_and_locked_vertices_kept(
    name: str, floor: float
) -> None:
    """The last relaxation pulled vertices nearly onto the line of two locked neighbours (caps
    of 8 degrees on spot, whose input's smallest angle is 10.2; of 12.9 between boundary vertices
    on alligator, input 30.1); the final sliver removal takes them out, and the boundary and the
    feature vertices are where they were."""
    m = welded(name)
    res = run(m, "isotropic_remesh")
    rep = res.reports["isotropic_remesh"]
    assert rep["final_flipped"] + rep["final_collapsed"] > 0
    assert rep["quality_after"]["min_angle"] > floor
    V, F = _arrays(m)
    keep = _crease_vertices(m) | np.asarray(m.topology.boundary_vertices)
    assert keep.sum() > 20
    out_pts = {tuple(p) for p in np.asarray(res.mesh.V)}
    assert all(tuple(p) in out_pts for p in V[keep])
    assert _non_manifold(res.mesh) == _non_manifold(m)
