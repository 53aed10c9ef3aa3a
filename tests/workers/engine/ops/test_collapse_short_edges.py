"""``collapse_short_edges``: invariants of the parallel collapse rounds on real and tiny meshes."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.spatial import cKDTree

from tests.workers.engine.shapes import (
    boundary_mask,
    cube,
    grid,
    mean_edge_length,
    run,
    stats,
    tetrahedron,
    welded,
)
from workers.engine import OpParamsError, TriMesh


def _collapse(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("collapse_short_edges", params))
    return res.mesh, res.reports["collapse_short_edges"]


@functools.cache
def _input(name: str) -> TriMesh:
    return welded(name)


@functools.cache
def _collapsed(name: str) -> tuple[TriMesh, dict]:
    """The shared mesh after collapsing edges below 0.8 of its mean edge length (cached: tests
    must not modify it)."""
    return _collapse(_input(name), threshold=0.8)


def edge_lengths(m: TriMesh) -> np.ndarray:
    EV = np.asarray(m.topology.EV)
    V = np.asarray(m.V, dtype=np.float64)
    return np.linalg.norm(V[EV[:, 0]] - V[EV[:, 1]], axis=1)


def assert_valid(before: TriMesh, after: TriMesh) -> None:
    """A valid indexed mesh with the input's topology where the collapses must keep it."""
    F = np.asarray(after.F)
    assert F.min() >= 0 and F.max() < after.n_vertices
    s0, s = stats(before), stats(after)
    assert s["degenerate_faces"] == 0
    assert s["duplicate_faces"] <= s0["duplicate_faces"]
    assert s["unused_vertices"] == 0
    assert s["euler_characteristic"] == s0["euler_characteristic"]
    assert s["components"] == s0["components"]
    assert s["non_manifold_edges"] == s0["non_manifold_edges"]
    assert s["non_manifold_vertices"] == s0["non_manifold_vertices"]
    if s0["manifold"]:
        assert s["manifold"]
    if s0["consistently_oriented"]:
        assert s["consistently_oriented"]
    if s0["genus"] is not None:
        assert s["genus"] == s0["genus"]


MESHES = [
    "spot.obj",  # closed, genus 0
    "rx-torus.obj",  # genus 1
    "stanford-bunny.obj",  # holes
    "beetle.obj",  # 47 non-manifold edges
    "suzanne.obj",  # a non-manifold edge, bow-ties, a duplicate face
    "cow.obj",  # closed, chi = 1, a bow-tie
    "rx-cube.obj",
    "rx-diamond.obj",
]


@pytest.mark.parametrize("name", MESHES)
def test_invariants_and_boundary_kept(name: str) -> None:
    m = _input(name)
    out, rep = _collapsed(name)
    assert_valid(m, out)
    assert stats(out)["boundary_loops"] == stats(m)["boundary_loops"]
    assert rep["faces_after"] == out.n_faces <= m.n_faces
    assert rep["collapses"] == sum(rep["collapses_per_round"])
    # every collapse removes one vertex and two faces (no boundary edge is collapsed)
    assert m.n_faces - out.n_faces == 2 * rep["collapses"]
    # preserve_boundary: the boundary vertices are still there, unmoved
    Vb = np.asarray(m.V)[boundary_mask(m)]
    Vb_out = np.asarray(out.V)[boundary_mask(out)]
    np.testing.assert_array_equal(np.unique(Vb, axis=0), np.unique(Vb_out, axis=0))


@pytest.mark.parametrize("name", ["spot.obj", "rx-torus.obj", "stanford-bunny.obj", "cow.obj"])
def test_short_edges_left_cannot_be_collapsed(name: str) -> None:
    m = _input(name)
    out, rep = _collapsed(name)
    h = rep["threshold"]
    assert h == pytest.approx(0.8 * mean_edge_length(m))
    short = int((edge_lengths(out) < h).sum())
    assert rep["short_edges_left"] == short
    assert rep["stopped"] in ("goal", "blocked")
    # the rounds stopped because nothing else is legal: running again changes nothing
    again, rep2 = _collapse(out, threshold=h, relative=False)
    assert rep2["collapses"] == 0 and again.n_faces == out.n_faces
    if name in ("spot.obj", "rx-torus.obj"):
        assert short <= 0.002 * out.n_faces  # closed meshes: almost none blocked
    assert short < 0.05 * int((edge_lengths(m) < h).sum()) + 10


def test_open_boundary_collapses_keep_the_loop_count() -> None:
    m = grid(12, jitter=0.2)
    out, rep = _collapse(m, threshold=1.5, preserve_boundary=False)
    assert_valid(m, out)
    s = stats(out)
    assert s["boundary_loops"] == 1 and s["euler_characteristic"] == 1
    assert rep["collapses"] > 0 and out.n_faces < m.n_faces // 2
    # the boundary may move (midpoints of boundary edges cut the corners), but stays near the
    # square's sides
    V = np.asarray(out.V)[boundary_mask(out)][:, :2]
    to_side = np.minimum(V, 1.0 - V).min(axis=1)
    assert to_side.max() < rep["threshold"]
    assert (to_side < 1e-12).mean() > 0.5


@pytest.mark.parametrize("preserve_boundary", [True, False])
def test_no_fold_over_on_a_plane(preserve_boundary: bool) -> None:
    # a flat jittered grid: every face of the result must still face +z, and not be a sliver
    m = grid(16, jitter=0.24, seed=1)
    out, rep = _collapse(m, threshold=2.0, preserve_boundary=preserve_boundary)
    assert rep["collapses"] > 50
    V, F = np.asarray(out.V), np.asarray(out.F)
    cross = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    assert (cross[:, 2] > 0).all()
    assert np.abs(cross[:, :2]).max() < 1e-12


def test_attributes_are_interpolated_and_faces_keep_theirs() -> None:
    m = _input("spot.obj")
    V = np.asarray(m.V, dtype=np.float64)
    m = m.with_attrs(vertex={"pos": V.copy()}, face={"fid": np.arange(m.n_faces, dtype=np.int32)})
    out, _ = _collapse(m, threshold=0.8)
    # midpoints interpolate the positions attribute to the new position exactly
    np.testing.assert_allclose(out.vertex_attrs["pos"], np.asarray(out.V), atol=1e-6)
    fid = np.asarray(out.face_attrs["fid"])
    assert len(np.unique(fid)) == out.n_faces and (np.diff(fid) > 0).all()


def test_close_to_the_input_surface() -> None:
    m = _input("stanford-bunny.obj")
    out, rep = _collapsed("stanford-bunny.obj")
    # every new vertex is a midpoint of a few short edges: within a few thresholds of the input
    d, _ = cKDTree(np.asarray(m.V)).query(np.asarray(out.V))
    assert d.max() < 2.0 * rep["threshold"]


def test_max_edge_length_is_respected() -> None:
    m = _input("rx-torus.obj")
    out, rep = _collapse(m, threshold=1.0, max_edge_length=1.3)
    free, _ = _collapse(m, threshold=1.0)
    limit = 1.3 * mean_edge_length(m)
    assert edge_lengths(out).max() <= max(limit, edge_lengths(m).max()) + 1e-9
    assert edge_lengths(free).max() > limit  # the limit had something to do
    assert rep["rejected"]["long_edge"] > 0


def test_deterministic() -> None:
    m = _input("rx-torus.obj")
    a, ra = _collapse(m, threshold=0.9)
    b, rb = _collapse(m, threshold=0.9)
    np.testing.assert_array_equal(np.asarray(a.F), np.asarray(b.F))
    np.testing.assert_array_equal(np.asarray(a.V), np.asarray(b.V))
    assert ra == rb


def test_tiny_meshes_stop_at_the_smallest_legal_mesh() -> None:
    # a tetrahedron has no legal collapse (every one would make two faces coincide)
    t = tetrahedron()
    out, rep = _collapse(t, threshold=100.0, relative=False)
    assert out.n_faces == 4 and rep["collapses"] == 0 and rep["rejected"]["link"] > 0
    # a closed cube shrinks to a tetrahedron, never further
    out, rep = _collapse(cube(), threshold=100.0, relative=False)
    assert_valid(cube(), out)
    assert out.n_faces == 4 and out.n_vertices == 4
    # a sphere with every edge short: a small closed genus-0 mesh remains
    m = _input("rx-sphere3.obj")
    out, _ = _collapse(m, threshold=1e3)
    assert_valid(m, out)
    assert 4 <= out.n_faces < 200


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"threshold": 0.0}, "op.params_invalid"),  # not positive
        ({"threshold": 0.5, "max_edge_length": 0.4}, "op.max_edge_length_too_small"),
        ({"threshold": 0.5, "max_edge_length": 0.5}, "op.max_edge_length_too_small"),
        ({"max_rounds": 0}, "op.params_invalid"),
        ({"preserve_boundaries": True}, "op.params_invalid"),  # unknown key
    ],
)
def test_bad_params_are_refused(params: dict, code: str) -> None:
    with pytest.raises(OpParamsError) as exc:
        run(_input("rx-cube.obj"), ("collapse_short_edges", params))
    assert exc.value.code == code
