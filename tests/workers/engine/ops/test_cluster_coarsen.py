"""``cluster_coarsen``: grid clustering with KEY-WELD merging, on constructed and real meshes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import cube, grid, load, mesh, run, stats
from workers.engine import OpParamsError, TriMesh


def _coarsen(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("cluster_coarsen", params))
    return res.mesh, res.reports["cluster_coarsen"]


def test_fine_grid_becomes_the_coarse_grid() -> None:
    # an 8 x 8 grid of squares (81 vertices) on cells a hair under 0.25 wide: columns i = 0..8
    # fall in cells i // 2 (the last column alone in a fifth)
    fine = grid(8)
    h = 0.25 - 1e-9
    out, rep = _coarsen(fine, cell_size=h, relative=False)
    assert rep["clusters"] == 25 and out.n_vertices == 25
    assert rep["merged"] == 81 - 25
    # the result is a 4 x 4 grid of squares with the same diagonals: 32 triangles
    assert out.n_faces == 32
    s = stats(out)
    assert s["euler_characteristic"] == 1 and s["boundary_loops"] == 1
    assert s["non_manifold_edges"] == 0 and s["consistently_oriented"]
    assert rep["degenerate_removed"] + rep["duplicates_removed"] == 128 - 32
    # positions: means of the members (sum, then normalize)
    V = np.asarray(fine.V)
    cell = np.floor(V[:, :2] / h).astype(int)
    W = np.asarray(out.V)
    for cx, cy in [(0, 0), (1, 2), (4, 4), (3, 4)]:
        members = V[(cell[:, 0] == cx) & (cell[:, 1] == cy)]
        hit = np.abs(W - members.mean(axis=0)).max(axis=1) < 1e-12
        assert hit.sum() == 1


def test_clusters_lie_in_distinct_cells_and_attributes_are_means() -> None:
    m = load("stanford-bunny.obj")
    V = np.asarray(m.V, dtype=np.float64)
    m = m.with_attrs(vertex={"pos": V.copy()}, face={"fid": np.arange(m.n_faces, dtype=np.int32)})
    out, rep = _coarsen(m, cell_size=0.02)
    h = rep["cell_size"]
    used = np.unique(np.asarray(m.F))
    lo = V[used].min(axis=0)
    assert h == pytest.approx(0.02 * np.linalg.norm(V[used].max(axis=0) - lo))
    W = np.asarray(out.V, dtype=np.float64)
    # the mean of points in a cube lies in that cube: every cluster in its own cell
    cells = np.floor((W - lo) / h + 1e-9).astype(np.int64)
    assert len(np.unique(cells, axis=0)) == out.n_vertices
    # the averaged position attribute is the averaged position
    np.testing.assert_allclose(out.vertex_attrs["pos"], W, atol=1e-6)
    # faces keep the attribute of the input face they come from: same cells as before
    fid = np.asarray(out.face_attrs["fid"])
    assert (np.diff(fid) > 0).all()
    Fin = np.asarray(m.F)[fid]
    before = np.sort(np.floor((V[Fin] - lo) / h).astype(np.int64).sum(axis=2), axis=1)
    Wc = np.floor((W[np.asarray(out.F)] - lo) / h + 1e-9).astype(np.int64)
    after = np.sort(Wc.sum(axis=2), axis=1)
    np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("remove_non_manifold", [False, True])
@pytest.mark.parametrize("name", ["stanford-bunny.obj", "rx-dragon.obj", "suzanne.obj"])
def test_report_adds_up_and_result_is_clean(name: str, remove_non_manifold: bool) -> None:
    m = load(name)
    out, rep = _coarsen(m, cell_size=0.03, remove_non_manifold=remove_non_manifold)
    assert (
        rep["faces_after"]
        == out.n_faces
        == (
            m.n_faces
            - rep["degenerate_removed"]
            - rep["duplicates_removed"]
            - rep["non_manifold_faces_removed"]
        )
    )
    assert rep["vertices_after"] == out.n_vertices == rep["clusters"] - rep["orphans_removed"]
    assert rep["clusters"] + rep["merged"] + rep["unused_removed"] == m.n_vertices
    s = stats(out)
    assert s["degenerate_faces"] == 0 and s["duplicate_faces"] == 0
    assert s["unused_vertices"] == 0
    assert s["non_manifold_edges"] == rep["non_manifold_edges"]
    if remove_non_manifold:
        assert s["non_manifold_edges"] == 0
    else:
        assert rep["non_manifold_faces_removed"] == 0
    assert out.n_faces < 0.75 * m.n_faces


def test_a_thin_slab_collapses_to_one_sheet() -> None:
    # KEY-WELD's figure 7: two faces of a thin part merge; the duplicate (reversed) copy goes
    c = cube()
    V = np.asarray(c.V) * np.array([1.0, 1.0, 1e-3])
    out, rep = _coarsen(mesh(V, np.asarray(c.F)), cell_size=0.6, relative=False)
    assert (out.n_vertices, out.n_faces) == (4, 2)
    assert rep["degenerate_removed"] == 8 and rep["duplicates_removed"] == 2
    s = stats(out)
    assert s["boundary_loops"] == 1 and s["euler_characteristic"] == 1


def test_relative_and_absolute_cell_sizes_agree() -> None:
    m = load("spot.obj")
    a, ra = _coarsen(m, cell_size=0.05)
    b, rb = _coarsen(m, cell_size=ra["cell_size"], relative=False)
    np.testing.assert_array_equal(np.asarray(a.F), np.asarray(b.F))
    np.testing.assert_array_equal(np.asarray(a.V), np.asarray(b.V))


def test_tiny_cells_are_refused_and_huge_cells_leave_nothing() -> None:
    m = load("spot.obj")
    with pytest.raises(OpParamsError) as exc:
        run(m, ("cluster_coarsen", {"cell_size": 1e-7}))
    assert exc.value.code == "op.cell_size_too_small"
    out, rep = _coarsen(m, cell_size=1e-4)  # no two vertices share a cell: nothing changes
    assert rep["clusters"] == m.n_vertices and out.n_faces == m.n_faces
    np.testing.assert_allclose(np.asarray(out.V), np.asarray(m.V))
