"""The NumPy fast paths of ``mesh_stats``, the topology and the graph primitives against the code
CuPy runs (``graph.NUMPY_FAST`` off), on every shared mesh, the hand-made odd shapes, damaged and
shuffled meshes: every field equal, to the bit. Also the weld that shares the input's faces and
topology, and the topology carried over when only unused vertices are dropped."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import scipy.sparse

from bench.meshes import midpoint_subdivide, shuffled
from tests.workers.engine.shapes import (
    SHARED,
    bowtie,
    cube,
    cylinder,
    load,
    mesh,
    mobius,
    open_square,
    run,
    soup,
    tetrahedron,
    three_on_an_edge,
    welded,
)
from workers.engine import TriMesh, graph
from workers.engine.geometry import face_corners64, face_cross64
from workers.engine.ops import stats as stats_mod
from workers.engine.ops.stats import mesh_stats
from workers.engine.reindex import remove_unused, weld
from workers.engine.topology import Topology

#: the memoised topology queries, by cache key
QUERIES: dict[str, Callable[[Topology], Any]] = {
    "efc": lambda t: t.edge_face_count,
    "bnd": lambda t: t.boundary_edges,
    "bndv": lambda t: t.boundary_vertices,
    "nme": lambda t: t.non_manifold_edges,
    "vfc": lambda t: t.vertex_face_count,
    "used": lambda t: t.used_vertices,
    "efp": lambda t: t.ef_pairs(),
    "fans": lambda t: t.vertex_fans(),
    "nmv": lambda t: t.non_manifold_vertices,
    "vcomp": lambda t: t.vertex_components(),
    "loops": lambda t: t.boundary_loop_labels(),
    "orient": lambda t: t.orientation(),
}


@pytest.fixture
def reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], Any]], Any]]:
    """``reference(f)``: ``f()`` with the NumPy fast paths off (the generic code, as on CuPy)."""

    def call(f: Callable[[], Any]) -> Any:
        with monkeypatch.context() as m:
            m.setattr(graph, "NUMPY_FAST", False)
            m.setattr(Topology, "_build_numpy", _must_not_run)
            m.setattr(Topology, "_fans_numpy", _must_not_run)
            m.setattr(stats_mod, "_stats_numpy", _must_not_run)
            return f()

    yield call


def _must_not_run(*args: Any, **kw: Any) -> Any:
    raise AssertionError("a NumPy fast path ran in the reference")


def _fresh(m: TriMesh) -> TriMesh:
    """The same arrays without any cached topology."""
    return TriMesh(m.V, m.F)


def _same(a: Any, b: Any) -> None:
    """Equal values, dtypes and shapes, through tuples."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b


def _same_stats(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Field for field, float bits included (repr tells -0.0 from 0.0 and shows NaN)."""
    assert list(a) == list(b)
    for k in a:
        assert repr(a[k]) == repr(b[k]), (k, a[k], b[k])
        assert type(a[k]) is type(b[k]), k


def check_mesh(m: TriMesh, reference: Callable[[Callable[[], Any]], Any]) -> None:
    """Fast and reference agree on ``mesh_stats``, on the topology's arrays and on every
    memoised query."""
    ref_topo = reference(lambda: Topology.build(m.F, m.n_vertices))
    fast_topo = Topology.build(m.F, m.n_vertices)
    for name in ("EV", "FE", "ef_offsets", "ef_sides"):
        _same(getattr(fast_topo, name), getattr(ref_topo, name))
    for query in QUERIES.values():
        _same(query(fast_topo), reference(lambda q=query: q(ref_topo)))
    _same_stats(mesh_stats(_fresh(m)), reference(lambda: mesh_stats(_fresh(m))))


# ------------------------------------------------------------------------------ inputs
def _damaged(seed: int, *, consistent: bool) -> TriMesh:
    """rx-sphere3 with holes, pinched vertex pairs (bow-ties, non-manifold edges), degenerate and
    duplicate faces, optionally flipped faces, an unused vertex, shuffled face order."""
    rng = np.random.default_rng(seed)
    m = welded("rx-sphere3.obj")
    F = np.asarray(m.F)
    F = F[rng.random(F.shape[0]) > 0.2]
    merge = np.arange(m.n_vertices)
    a, b = rng.integers(0, m.n_vertices, (2, 6))
    merge[a] = b
    F = merge[F]
    F = np.concatenate([F, F[:5], F[7:9, ::-1]])  # duplicate faces, one reversed
    F = np.concatenate([F, [[3, 3, 4], [5, 5, 5]]])  # degenerate faces
    if not consistent:
        flip = rng.random(F.shape[0]) < 0.1
        F[flip] = F[flip, ::-1]
    F = F[rng.permutation(F.shape[0])]
    V = np.concatenate([np.asarray(m.V, dtype=np.float64), [[9.0, 9.0, 9.0]]])
    return mesh(V, F)


def _join(*meshes: TriMesh) -> TriMesh:
    V, F, off = [], [], 0
    for m in meshes:
        V.append(np.asarray(m.V, dtype=np.float64))
        F.append(np.asarray(m.F) + off)
        off += m.n_vertices
    return mesh(np.concatenate(V), np.concatenate(F))


def _flip_one(m: TriMesh) -> TriMesh:
    """One face reversed: inconsistent, still orientable."""
    F = np.asarray(m.F).copy()
    F[5] = F[5, ::-1]
    return mesh(m.V, F)


def _signed_zeros() -> TriMesh:
    """Duplicate positions that differ only in the sign of a zero, and repeated rows."""
    V = [(0.0, 0.0, 0.0), (-0.0, 0.0, -0.0), (1, 0, 0), (0, 1, 0), (1, 0, 0), (0, 0, 1)]
    return mesh(V, [(0, 2, 3), (1, 3, 4), (0, 4, 5), (1, 5, 2)], dtype="float32")


SHAPES: dict[str, Callable[[], TriMesh]] = {
    "tetrahedron": tetrahedron,
    "cube": cube,
    "open_square": open_square,
    "bowtie": bowtie,
    "three_on_an_edge": three_on_an_edge,
    "mobius": mobius,
    "cylinder": cylinder,
    "tetra_soup": lambda: soup(tetrahedron()),
    "cube_soup_float32": lambda: soup(mesh(cube().V, cube().F, dtype="float32")),
    "components": lambda: _join(tetrahedron(), mobius(5), cube(), open_square()),
    "signed_zeros": _signed_zeros,
    "damaged_consistent": lambda: _damaged(1, consistent=True),
    "damaged_flipped": lambda: _damaged(2, consistent=False),
    "flipped_cube_face": lambda: _flip_one(cube()),
    "single_face": lambda: mesh([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)]),
    "all_degenerate": lambda: mesh([(0, 0, 0), (1, 0, 0)], [(0, 0, 1), (1, 1, 1), (0, 1, 1)]),
}


# ------------------------------------------------------------------------------ the comparisons
@pytest.mark.parametrize("name", SHARED)
def test_shared_meshes_as_stored(name: str, reference: Any) -> None:
    check_mesh(load(name), reference)


@pytest.mark.parametrize("name", SHARED)
def test_shared_meshes_welded(name: str, reference: Any) -> None:
    check_mesh(welded(name), reference)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_odd_shapes(name: str, reference: Any) -> None:
    check_mesh(SHAPES[name](), reference)


def test_empty_and_faceless_meshes(reference: Any) -> None:
    for V in (np.zeros((0, 3), np.float32), np.ones((4, 3), np.float32)):
        m = TriMesh(V, np.zeros((0, 3), np.int32))
        check_mesh(m, reference)


def test_subdivided_shuffled_bunny(reference: Any) -> None:
    """A larger mesh (277,804 faces, 5 holes) in random vertex and face order."""
    m = midpoint_subdivide(welded("stanford-bunny.obj"))
    check_mesh(shuffled(m, seed=3), reference)


def test_reference_differs_from_a_broken_fast_path(
    reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison can fail: a fast path that miscounts is caught."""
    m = load("suzanne.obj")  # one duplicate face
    real = stats_mod._distinct_faces_numpy
    monkeypatch.setattr(stats_mod, "_distinct_faces_numpy", lambda t: real(t) + 1)
    with pytest.raises(AssertionError):
        check_mesh(m, reference)


# ------------------------------------------------------------------------------ pieces
@pytest.mark.parametrize("seed", range(8))
def test_components_match_scipy_reference(seed: int, reference: Any) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, 2 * n))
    i, j = rng.integers(0, n, (2, m))
    _same(
        graph.connected_components(np, n, i, j),
        reference(lambda: graph.connected_components(np, n, i, j)),
    )


def test_public_traversal_fallback_gives_the_same_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    i, j = rng.integers(0, 500, (2, 400))
    fast = graph.scipy_components(500, i, j)
    monkeypatch.setattr(graph, "_TRAVERSAL", [None])
    public = graph.scipy_components(500, i, j)
    assert fast[0] == public[0]
    np.testing.assert_array_equal(fast[1], public[1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("compiled", [True, False])
def test_bucket_sort_is_a_stable_sort(
    dtype: type, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:  # SciPy without its compiled helpers: the argsort fallback
        monkeypatch.delattr(scipy.sparse, "_sparsetools")
        monkeypatch.setitem(sys.modules, "scipy.sparse._sparsetools", None)
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, 1000).astype(dtype)
    values = np.arange(1000, dtype=dtype)[::-1].copy()
    carry = rng.random(1000)
    offsets, v, c = graph.bucket_sort(keys, 60, values, carry)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(v, values[order])
    np.testing.assert_array_equal(c, carry[order])
    np.testing.assert_array_equal(
        offsets, np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=60))])
    )


def test_compact_ordered_equals_compact_groups() -> None:
    for labels, n in (([0, 0, 2, 2, 5, 2], 6), ([3, 1, 1, 3, 0], 4), ([], 3), ([1], 2)):
        lab = np.array(labels, dtype=np.int32)
        new_id, first = graph.compact_groups(np, lab)
        got, count = graph.compact_ordered(lab, n)
        np.testing.assert_array_equal(got, new_id)
        assert count == first.shape[0]


def test_distinct_rows_exact_under_hash_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows whose keys repeat are compared exactly: with every key equal (a degenerate hash),
    NaN rows and repeated rows still count as ``group_rows`` counts them."""
    rng = np.random.default_rng(0)
    P = rng.integers(0, 4, (200, 3)).astype(np.float32)
    P[::17] = np.nan
    expect = int(graph.group_rows(np, P).max() + 1)
    assert stats_mod._distinct_rows_numpy(P) == expect
    monkeypatch.setattr(stats_mod, "_MIX", (0, 0, 0))
    assert stats_mod._distinct_rows_numpy(P) == expect


@pytest.mark.parametrize("row_sum_left", [True, False])
@pytest.mark.parametrize(
    "make", [lambda: load("stanford-bunny.obj"), lambda: _damaged(4, consistent=False), cube]
)
def test_face_norms_and_products_are_the_generic_bits(
    make: Callable[[], TriMesh], row_sum_left: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per face, not only in the sums (where a last-bit difference can vanish)."""
    m = make()
    monkeypatch.setattr(stats_mod, "_ROW_SUM_LEFT", row_sum_left)
    norms, prod = stats_mod._face_norms_numpy(m.V, m.F, True)
    cross = face_cross64(np, m.V, m.F)
    a, _, _ = face_corners64(np, m.V, m.F)
    _same(norms.view(np.uint64), np.linalg.norm(cross, axis=1).view(np.uint64))
    _same(prod.view(np.uint64), (a * cross).view(np.uint64))


def test_area_without_the_row_sum_order(monkeypatch: pytest.MonkeyPatch, reference: Any) -> None:
    m = load("rx-torus.obj")
    monkeypatch.setattr(stats_mod, "_ROW_SUM_LEFT", False)
    _same_stats(mesh_stats(_fresh(m)), reference(lambda: mesh_stats(_fresh(m))))


# ------------------------------------------------------------------------------ weld and reuse
def test_weld_without_merges_shares_faces_and_topology() -> None:
    m = welded("rx-torus.obj")
    m = TriMesh(m.V, m.F, {"w": np.arange(m.n_vertices, dtype=np.float32)})
    topo = m.topology
    s = mesh_stats(m)
    out, report = weld(m)
    assert out.F is m.F and out.V is m.V and out._topology is topo
    assert report == {
        "vertices_before": m.n_vertices,
        "vertices_after": m.n_vertices,
        "merged": 0,
        "unused_removed": 0,
        "degenerate_faces": 0,
    }
    np.testing.assert_array_equal(out.vertex_attrs["w"], m.vertex_attrs["w"])
    assert mesh_stats(out) == s


def test_pipeline_keeps_the_topology_through_weld_and_attribute_ops() -> None:
    m = _fresh(welded("rx-torus.obj"))
    topo = m.topology
    res = run(m, "weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature")
    assert res.mesh._topology is topo


def test_weld_that_merges_builds_a_new_topology() -> None:
    m = _fresh(load("teapot.obj"))  # 403 duplicate positions
    assert m.topology is not None
    out, report = weld(m)
    assert report["merged"] == 403
    assert out._topology is None and out.F is not m.F


@pytest.mark.parametrize("drop", [weld, remove_unused])
def test_dropping_unused_vertices_carries_the_topology(drop: Any, reference: Any) -> None:
    """stanford-bunny has 1,113 unused vertices and no duplicate position: the result's topology
    is carried over, equal to one built afresh, memoised queries included."""
    m = _fresh(load("stanford-bunny.obj"))
    s = mesh_stats(m)
    m.topology.vertex_fans()
    out, _ = drop(m)
    carried = out._topology
    assert carried is not None and carried is not m.topology
    fresh = reference(lambda: Topology.build(out.F, out.n_vertices))
    for name in ("EV", "FE", "ef_offsets", "ef_sides"):
        _same(getattr(carried, name), getattr(fresh, name))
    assert {"fans", "vcomp", "loops", "orient", "stats"} <= set(carried._cache)
    for key in carried._cache:
        if key in QUERIES:
            _same(QUERIES[key](carried), reference(lambda k=key: QUERIES[k](fresh)))
    got = mesh_stats(out)
    _same_stats(got, reference(lambda: mesh_stats(_fresh(out))))
    assert got["unused_vertices"] == 0 and s["unused_vertices"] == 1113


# ------------------------------------------------------------------------------ memoised stats
def test_stats_of_moved_or_modified_positions_are_recomputed(reference: Any) -> None:
    """The figures of the positions are memoised with a copy of the positions: moved vertices
    (a new array on the same topology) and positions changed in place are seen, a sign of zero
    included."""
    m = _fresh(welded("rx-torus.obj"))
    first = mesh_stats(m)
    assert mesh_stats(m) == first
    moved = m.with_geometry(np.asarray(m.V) * 2.0 + 1.0)
    assert moved.topology is m.topology
    _same_stats(mesh_stats(moved), reference(lambda: mesh_stats(_fresh(moved))))
    V = m.V.copy()
    V[:, 0] -= V[:, 0].min()  # the smallest x becomes 0.0 ...
    changed = m.with_geometry(V)
    _same_stats(mesh_stats(changed), reference(lambda: mesh_stats(_fresh(changed))))
    V[V[:, 0] == 0.0, 0] = -0.0  # ... then -0.0, in place
    _same_stats(mesh_stats(changed), reference(lambda: mesh_stats(_fresh(changed))))
    assert repr(mesh_stats(changed)["bbox_min"][0]) == "-0.0"


def test_stats_lists_are_the_callers_own() -> None:
    m = _fresh(cube())
    s = mesh_stats(m)
    s["bbox_min"].append(5.0)
    assert mesh_stats(m)["bbox_min"] == [0.0, 0.0, 0.0]
