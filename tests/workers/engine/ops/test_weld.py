"""``weld``: exact and tolerance welding, on real meshes and on constructed point sets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from tests.workers.engine.shapes import (
    README_COUNTS,
    SHARED,
    load,
    mesh,
    run,
    soup,
    stats,
    tetrahedron,
)
from workers.engine import OpParamsError, TriMesh
from workers.engine.graph import compact_groups


def _weld(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("weld", params))
    return res.mesh, res.reports["weld"]


def _min_distance(V: np.ndarray) -> float:
    d, _ = cKDTree(V).query(V, k=2)
    return float(d[:, 1].min())


def _new_of_old(before: TriMesh, after: TriMesh) -> np.ndarray:
    """Where each used vertex went, read off the faces (weld keeps faces in place)."""
    out = np.full(before.n_vertices, -1, dtype=np.int64)
    out[np.asarray(before.F).ravel()] = np.asarray(after.F).ravel()
    return out


# ------------------------------------------------------------------------------ exact
@pytest.mark.parametrize("name", SHARED)
def test_exact_weld_report_matches_readme(name: str) -> None:
    c = README_COUNTS[name]
    m = load(name)
    out, rep = _weld(m)
    assert rep["vertices_before"] == c.v
    assert rep["vertices_after"] == out.n_vertices == c.v_weld
    assert rep["unused_removed"] == c.unused
    assert rep["merged"] == c.v - c.unused - c.v_weld
    assert rep["tolerance"] == 0.0
    assert out.n_faces == c.F
    assert out.F.dtype == np.int32 and out.V.dtype == m.V.dtype
    # an exact weld moves no corner: every face keeps its three positions
    np.testing.assert_array_equal(
        np.asarray(out.V)[np.asarray(out.F)], np.asarray(m.V)[np.asarray(m.F)]
    )


@pytest.mark.parametrize("name", ["spot.obj", "rx-torus.obj", "rx-cloth.obj"])
def test_weld_of_a_clean_mesh_is_the_identity(name: str) -> None:
    m = load(name)
    for tol in (0.0, 0.01 * _min_distance(np.asarray(m.V, dtype=np.float64))):
        out, rep = _weld(m, tolerance=tol)
        np.testing.assert_array_equal(out.V, m.V)
        np.testing.assert_array_equal(out.F, m.F)
        assert rep["merged"] == 0


def test_soup_welds_back_to_the_tetrahedron() -> None:
    t = tetrahedron()
    out, rep = _weld(soup(t))
    assert out.n_vertices == 4 and rep["merged"] == 8
    # first occurrence order: the soup's corners 0, 1, 2 (face 0 = (0, 2, 1)) come first
    np.testing.assert_array_equal(
        np.asarray(out.V)[np.asarray(out.F)], np.asarray(t.V)[np.asarray(t.F)]
    )
    assert stats(out)["closed"]


def test_negative_zero_welds_with_zero() -> None:
    V = [(0.0, 0.0, 0.0), (1, 0, 0), (0, 1, 0), (-0.0, -0.0, -0.0), (0, 0, 1)]
    out, _ = _weld(mesh(V, [(0, 1, 2), (3, 2, 1), (3, 1, 4)]))
    assert out.n_vertices == 4


def test_merged_vertices_average_their_attributes() -> None:
    s = soup(tetrahedron())
    value = np.arange(12, dtype=np.float64)
    out, _ = _weld(s.with_attrs(vertex={"value": value}))
    # original vertex v appears at the soup corners where F == v
    t = tetrahedron()
    expect = np.array([value[np.asarray(t.F).ravel() == v].mean() for v in range(4)])
    new_of_old = _new_of_old(s, out)
    # map each new vertex back to the tetrahedron's vertex through the corners
    orig_of_new = np.empty(4, dtype=np.int64)
    orig_of_new[new_of_old] = np.asarray(t.F).ravel()
    np.testing.assert_allclose(out.vertex_attrs["value"], expect[orig_of_new])
    assert out.vertex_attrs["value"].dtype == np.float64


def test_remove_unused_false_keeps_unused_vertices() -> None:
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), [[5.0, 5.0, 5.0], [1.0, 0.0, 0.0]]])  # 5: copy of 1
    m = mesh(V, t.F)
    kept, rep = _weld(m, remove_unused=False)
    assert kept.n_vertices == 5 and rep["unused_removed"] == 0 and rep["merged"] == 1
    dropped, rep = _weld(m)
    assert dropped.n_vertices == 4 and rep["unused_removed"] == 2 and rep["merged"] == 0


# ------------------------------------------------------------------------------ tolerance
@pytest.mark.parametrize(("name", "copies"), [("rx-sphere3.obj", 1), ("spot.obj", 3)])
def test_jittered_copies_weld_back(name: str, copies: int) -> None:
    rng = np.random.default_rng(7)
    m = load(name)
    V = np.asarray(m.V, dtype=np.float64)
    n = V.shape[0]
    tol = 0.1 * _min_distance(V)
    noise = 0.01 * tol
    Vj = [V] + [V + rng.uniform(-noise, noise, V.shape) for _ in range(copies)]
    # every corner picks one of the copies of its vertex at random
    F = np.asarray(m.F) + n * rng.integers(0, copies + 1, size=m.F.shape)
    jittered = mesh(np.concatenate(Vj), F, dtype=str(m.V.dtype))
    assert _weld(jittered)[0].n_vertices > n  # an exact weld does not see the copies

    out, rep = _weld(jittered, tolerance=tol)
    assert out.n_vertices == n
    assert rep["degenerate_faces"] == 0
    np.testing.assert_allclose(
        np.asarray(out.V)[np.asarray(out.F)], V[np.asarray(m.F)], rtol=0, atol=2 * noise
    )
    # with every vertex a candidate, each group's lowest index is the original vertex: groups
    # are numbered by it and keep its position, so the original mesh comes back exactly
    out, rep = _weld(jittered, tolerance=tol, remove_unused=False)
    assert rep["merged"] == copies * n
    np.testing.assert_array_equal(out.V, m.V)
    np.testing.assert_array_equal(out.F, m.F)


@pytest.mark.parametrize(
    ("ratio", "merges"),
    [
        (0.5, True),
        (0.99, True),
        (1.01, False),
        (1.5, False),
        (3.0, False),
    ],
)
def test_tolerance_is_a_distance_threshold(ratio: float, merges: bool) -> None:
    tol = 1e-3
    tri = np.array([(0, 0, 0), (1, 0, 0), (0, 1, 0)], dtype=np.float64)
    V = np.concatenate([tri, tri + [0.0, 0.0, ratio * tol]])
    out, rep = _weld(mesh(V, [(0, 1, 2), (3, 4, 5)]), tolerance=tol)
    assert out.n_vertices == (3 if merges else 6)
    assert rep["merged"] == (3 if merges else 0)


def test_chains_merge_transitively() -> None:
    tol = 0.01
    k = 10
    chain = [(0.9 * tol * i, 0.0, 0.0) for i in range(k)]  # ends 8.1 tol apart
    gap = 0.9 * tol * (k - 1) + 1.1 * tol  # a second chain just out of reach
    chain2 = [(gap + 0.9 * tol * i, 0.0, 0.0) for i in range(k)]
    a, b = 2 * k, 2 * k + 1
    V = chain + chain2 + [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
    F = [(i, a, b) for i in range(2 * k)]
    out, rep = _weld(mesh(V, F), tolerance=tol)
    assert out.n_vertices == 4
    assert rep["merged"] == 2 * (k - 1)
    # groups are numbered by their lowest vertex index and keep that vertex's position
    np.testing.assert_array_equal(out.V, np.array([V[0], V[k], V[a], V[b]]))
    np.testing.assert_array_equal(np.asarray(out.F)[:, 0], [0] * k + [1] * k)


def test_tolerance_weld_does_not_depend_on_vertex_order() -> None:
    rng = np.random.default_rng(3)
    # clustered points, so that some clusters chain and some do not
    centres = rng.uniform(0, 1, (40, 3))
    P = np.repeat(centres, 5, axis=0) + rng.normal(0, 0.004, (200, 3))
    F = rng.permuted(np.tile(np.arange(200), 3)).reshape(-1, 3)
    m = mesh(P, F)
    perm = rng.permutation(200)
    inv = np.argsort(perm)
    mp = mesh(P[perm], inv[F])
    tol = 0.01
    a = _new_of_old(m, _weld(m, tolerance=tol)[0])
    b = _new_of_old(mp, _weld(mp, tolerance=tol)[0])[inv]
    np.testing.assert_array_equal(compact_groups(np, a)[0], compact_groups(np, b)[0])


def test_relative_tolerance_scales_with_the_bounding_box() -> None:
    rng = np.random.default_rng(11)
    P = rng.uniform(0, 1, (300, 3))
    F = rng.integers(0, 300, (200, 3))
    for scale in (1.0, 1000.0):
        m = mesh(P * scale, F)
        diag = stats(m)["bbox_diagonal"]  # of the used vertices
        rel, rep_rel = _weld(m, tolerance=0.05, relative=True)
        ab, rep_ab = _weld(m, tolerance=0.05 * diag)
        assert rep_rel["tolerance"] == pytest.approx(0.05 * diag)
        np.testing.assert_array_equal(rel.F, ab.F)
        assert 0 < rep_rel["merged"] < 300
        if scale == 1.0:
            first = rel.F
        else:
            np.testing.assert_array_equal(rel.F, first)


def test_collapsed_faces_are_kept_and_counted() -> None:
    V = [(0, 0, 0), (1, 0, 0), (1, 1e-4, 0), (0, 1, 0)]
    out, rep = _weld(mesh(V, [(0, 1, 2), (0, 2, 3)]), tolerance=1e-3)
    assert out.n_faces == 2 and out.n_vertices == 3
    assert rep["degenerate_faces"] == 1
    assert stats(out)["degenerate_faces"] == 1


def test_too_large_a_tolerance_is_refused() -> None:
    with pytest.raises(OpParamsError) as ei:
        _weld(load("stanford-bunny.obj"), tolerance=1.0, relative=True)
    assert ei.value.code == "op.tolerance_too_large"


@pytest.mark.parametrize(
    "params",
    [
        {"tolerance": -1.0},  # negative
        {"tolerance": 1e7},  # above the bound
        {"tolerance": "a lot"},  # not a number
        {"tol": 0.1},  # unknown key
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _weld(tetrahedron(), **params)
    assert ei.value.code == "op.params_invalid"


def test_relative_tolerance_ignores_unused_vertices() -> None:
    # a stray unused vertex far away must not inflate the tolerance and collapse the mesh
    t = tetrahedron()
    m = mesh(np.concatenate([np.asarray(t.V), [[1e4, 1e4, 1e4]]]), t.F)
    for remove_unused in (True, False):
        out, rep = _weld(m, tolerance=0.01, relative=True, remove_unused=remove_unused)
        assert rep["tolerance"] == pytest.approx(0.01 * stats(t)["bbox_diagonal"])
        assert out.n_faces == 4 and rep["merged"] == 0 and rep["degenerate_faces"] == 0
