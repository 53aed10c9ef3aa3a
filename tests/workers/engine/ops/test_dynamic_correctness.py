"""Correctness of the dynamic operations on meshes the project did not make: every split,
collapse and flip keeps the surface's non-manifold edges and vertices where they were and never
adds one (fins, two-sided sheets, spheres touching at a vertex)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import mesh, run, welded
from workers.engine import TriMesh
from workers.engine.dynamic._edges import Surface, edge_table
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
