"""``delaunay_flip``: no non-Delaunay interior edge left but the counted blocked ones; topology,
vertices, orientation and attributes kept; preconditions refuse what they must."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, grid, mesh, run, stats, tetrahedron, welded
from workers.engine import TriMesh


def _flip(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("delaunay_flip", params))
    return res.mesh, res.reports["delaunay_flip"]


def non_delaunay(m: TriMesh, tol: float = 1e-9) -> int:
    """Interior edges (two faces, walked in opposite directions) whose opposite angles sum to
    more than pi + tol: computed here with plain NumPy, independently of the engine."""
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F, dtype=np.int64)
    a, b, c = F.ravel(), F[:, [1, 2, 0]].ravel(), F[:, [2, 0, 1]].ravel()
    u, w = V[a] - V[c], V[b] - V[c]
    ang = np.arctan2(np.linalg.norm(np.cross(u, w), axis=1), (u * w).sum(axis=1))
    key = np.minimum(a, b) * len(V) + np.maximum(a, b)
    uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    total = np.bincount(inv, weights=ang)
    forward = np.bincount(inv, weights=(a < b).astype(float))
    interior = (cnt == 2) & (forward == 1)
    return int((interior & (total > np.pi + tol)).sum())


@pytest.mark.parametrize("name", SHARED)
def test_every_interior_edge_delaunay_but_the_blocked_ones(name: str) -> None:
    m = welded(name)
    s0 = stats(m)
    out, rep = _flip(m)
    s1 = stats(out)
    assert rep["unresolved"] == 0
    left = non_delaunay(out)
    assert left == rep["non_delaunay_after"] == sum(rep["blocked"].values())
    assert rep["non_delaunay_before"] == non_delaunay(m)
    # connectivity changes only: same vertices, same counts, same topology and orientation
    np.testing.assert_array_equal(np.asarray(out.V), np.asarray(m.V))
    for k in (
        "vertices",
        "faces",
        "edges",
        "euler_characteristic",
        "boundary_edges",
        "boundary_loops",
        "non_manifold_edges",
        "components",
        "consistently_oriented",
    ):
        assert s1[k] == s0[k], k
    assert s1["degenerate_faces"] == 0 and s1["duplicate_faces"] == s0["duplicate_faces"]
    if s0["volume"] is not None:
        assert s1["volume"] * s0["volume"] > 0


@pytest.mark.parametrize("name", ["rx-dragon.obj", "rx-giraffe.obj", "cow.obj"])
def test_without_features_nothing_is_left(name: str) -> None:
    out, rep = _flip(welded(name), feature_angle=180.0)
    assert rep["flips"] > 0
    assert (
        non_delaunay(out)
        == rep["non_delaunay_after"]
        == rep["blocked"]["exists"] + rep["blocked"]["fold"] + rep["blocked"]["no_improvement"]
    )
    assert rep["non_delaunay_after"] <= 0.005 * rep["interior_edges"]


def test_planar_grid_becomes_delaunay_and_a_second_run_does_nothing() -> None:
    m = grid(12, jitter=0.2, seed=3)
    assert non_delaunay(m) > 10
    out, rep = _flip(m)
    assert non_delaunay(out) == 0 and rep["non_delaunay_after"] == 0 and rep["flips"] > 10
    # every face still counter-clockwise in the plane
    V, F = np.asarray(out.V), np.asarray(out.F)
    assert (np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])[:, 2] > 0).all()
    again, rep2 = _flip(out)
    assert rep2["flips"] == 0
    np.testing.assert_array_equal(np.asarray(again.F), F)


def test_rhombus_flips_its_long_diagonal_and_keeps_face_attributes() -> None:
    V = [(0, 0, 0), (2, 0, 0), (1, 0.3, 0), (1, -0.3, 0)]
    m = mesh(V, [(0, 1, 2), (1, 0, 3)], face_attrs={"label": np.array([7, 9])})
    out, rep = _flip(m)
    assert rep["flips"] == 1 and rep["non_delaunay_after"] == 0
    F = np.asarray(out.F)
    np.testing.assert_array_equal(F, [(0, 3, 2), (1, 2, 3)])
    np.testing.assert_array_equal(np.asarray(out.face_attrs["label"]), [7, 9])


def test_feature_edge_is_not_flipped() -> None:
    # faces at a right angle across a-b with very obtuse opposite angles
    V = [(0, 0, 0), (1, 0, 0), (0.5, 0.05, 0), (0.5, 0.0, -0.05)]
    m = mesh(V, [(0, 1, 2), (1, 0, 3)])
    _, rep = _flip(m)
    assert rep["flips"] == 0 and rep["blocked"]["feature"] == 1
    _, rep = _flip(m, feature_angle=180.0)
    assert rep["flips"] == 1


def test_flip_that_would_duplicate_an_edge_is_refused() -> None:
    # a tetrahedron whose base has a very obtuse corner: every flip would make an existing edge
    V = [(0, 0, 0), (1, 0, 0), (0.5, 0.1, 0), (0.5, 0.5, 0.5)]
    m = tetrahedron()
    m = mesh(V, np.asarray(m.F))
    assert non_delaunay(m) >= 1
    out, rep = _flip(m, feature_angle=180.0)
    assert rep["flips"] == 0 and rep["blocked"]["exists"] == rep["non_delaunay_after"] >= 1
    np.testing.assert_array_equal(np.asarray(out.F), np.asarray(m.F))


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("cow.obj", "cpu"),
        ("teapot.obj", "cpu"),
        pytest.param("cow.obj", "gpu", marks=pytest.mark.gpu),
    ],
)
def test_the_followed_edge_table_flips_as_a_rebuilt_one(
    name: str, device: str, monkeypatch
) -> None:
    """The op's edge table follows the flips (``edges_after_flips``; on the GPU from
    ``FOLLOW_MIN_FACES``, here from any size); built again every round instead, the op makes
    the same flips in the same rounds."""
    from workers.engine.dynamic import _edges
    from workers.engine.dynamic._edges import edge_table
    from workers.engine.ops import delaunay_flip as op

    monkeypatch.setattr(_edges, "FOLLOW_MIN_FACES", 0)
    m = welded(name).to("cupy" if device == "gpu" else "numpy")
    calls = []
    follow = op.edges_after_flips
    monkeypatch.setattr(op, "edges_after_flips", lambda *a: calls.append(1) or follow(*a))
    a = op.delaunay(m, op.Params())
    assert len(calls) == a.report["rounds"] > 0  # one update a round, no build
    last = {}
    apply = op.apply_flips
    monkeypatch.setattr(op, "apply_flips", lambda *a: last.update(F=apply(*a)) or last["F"])
    monkeypatch.setattr(op, "edges_after_flips", lambda xp, *a: edge_table(xp, last["F"]))
    b = op.delaunay(m, op.Params())
    assert a.report["flips"] > 0 and a.report == b.report
    np.testing.assert_array_equal(a.mesh.to("numpy").F, b.mesh.to("numpy").F)


@pytest.mark.parametrize("name", ["beetle.obj", "suzanne.obj"])
def test_the_edge_table_is_built_again_on_meshes_with_non_manifold_edges(name: str, monkeypatch):
    """``edges_after_flips`` holds two sides an edge: with an edge of three faces or more the op
    builds the table every round, and still flips."""
    from workers.engine.ops import delaunay_flip as op

    m = welded(name)
    assert stats(m)["non_manifold_edges"] > 0
    monkeypatch.setattr(op, "edges_after_flips", lambda *a: pytest.fail("followed the flips"))
    rep = op.delaunay(m, op.Params(feature_angle=180.0)).report
    assert rep["flips"] > 0 and rep["unresolved"] == 0
