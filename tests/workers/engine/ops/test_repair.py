"""repair: degenerate and duplicate faces, non-manifold edges and vertices, orientation."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine import TriMesh
from workers.engine.ops.repair import OP, Params


def repaired(mesh: TriMesh, **kw):
    out = OP.numpy(mesh, Params(**kw))
    return out.mesh, out.report


@pytest.mark.parametrize("name", shapes.SHARED)
def test_shared_meshes_come_out_manifold_and_consistent(name):
    before = shapes.welded_stats(name)
    mesh, rep = repaired(shapes.welded(name))
    after = shapes.stats(mesh)
    counts = shapes.README_COUNTS[name]
    assert rep["duplicate_faces_removed"] == counts[4]
    assert rep["non_manifold_edges"] == counts[7] == before["non_manifold_edges"]
    assert rep["non_manifold_vertices"] == before["non_manifold_vertices"]
    assert after["non_manifold_edges"] == 0 and after["non_manifold_vertices"] == 0
    assert after["duplicate_faces"] == 0 and after["degenerate_faces"] == 0
    assert after["orientable"] and after["consistently_oriented"]
    assert rep["non_manifold_edges_after"] == rep["non_manifold_vertices_after"] == 0
    assert mesh.n_faces == before["faces"] - rep["duplicate_faces_removed"]
    assert mesh.n_vertices == before["vertices"] + rep["vertices_added"]
    if after["closed"]:
        assert after["volume"] > 0


def test_clean_mesh_is_unchanged():
    mesh = shapes.welded("rx-torus.obj")
    out, rep = repaired(mesh)
    np.testing.assert_array_equal(out.F, mesh.F)
    np.testing.assert_array_equal(out.V, mesh.V)
    assert rep["faces_flipped"] == rep["vertices_added"] == 0


def test_bowtie_vertex_gets_one_copy_per_fan():
    mesh, rep = repaired(shapes.bowtie())
    assert rep["non_manifold_vertices"] == 1 and rep["vertices_added"] == 1
    assert mesh.n_vertices == 6
    np.testing.assert_array_equal(mesh.V[5], mesh.V[0])
    assert shapes.stats(mesh)["components"] == 2


def test_fin_on_an_edge_gets_its_own_edge():
    mesh, rep = repaired(shapes.three_on_an_edge())
    assert rep["non_manifold_edges"] == 1 and rep["vertices_added"] == 2
    st = shapes.stats(mesh)
    assert st["non_manifold_edges"] == 0 and st["components"] == 2
    # faces 0 and 1 run the edge both ways: they stay together, the fin (face 2) is cut loose
    assert set(mesh.F[2].tolist()) & set(mesh.F[0].tolist()) == set()


def test_duplicates_and_degenerates_counted_and_attributes_follow():
    cube = shapes.cube()
    F = np.vstack([cube.F, cube.F[3][[0, 2, 1]], [[0, 0, 1]]])
    mesh = shapes.mesh(
        cube.V,
        F,
        face_attrs={"id": np.arange(14)},
        vertex_attrs={"w": np.arange(8.0)},
    )
    out, rep = repaired(mesh)
    assert rep["duplicate_faces_removed"] == 1 and rep["degenerate_faces_removed"] == 1
    np.testing.assert_array_equal(out.face_attrs["id"], np.arange(12))
    np.testing.assert_array_equal(out.vertex_attrs["w"], np.arange(8.0))
    assert shapes.stats(out)["volume"] == pytest.approx(1.0)


def test_flipped_faces_are_made_consistent_and_outward():
    cube = shapes.cube()
    F = cube.F.copy()
    F[[1, 4, 7]] = F[[1, 4, 7]][:, [0, 2, 1]]
    out, rep = repaired(shapes.mesh(cube.V, F))
    assert rep["faces_flipped"] == 3
    np.testing.assert_array_equal(out.F, cube.F)
    inside_out = shapes.mesh(cube.V, cube.F[:, [0, 2, 1]])
    out, rep = repaired(inside_out)
    assert rep["components_turned_outward"] == 1 and rep["faces_flipped"] == 12
    assert shapes.stats(out)["volume"] == pytest.approx(1.0)
    out, rep = repaired(inside_out, outward=False)
    assert rep["faces_flipped"] == 0


def test_open_sheet_follows_the_majority():
    sq = shapes.welded("rx-plane_5.obj")
    F = sq.F.copy()
    F[0] = F[0][[0, 2, 1]]
    out, rep = repaired(shapes.mesh(sq.V, F))
    assert rep["faces_flipped"] == 1 and rep["closed_components"] == 0
    np.testing.assert_array_equal(out.F, sq.F)


def test_mobius_is_left_as_is_and_reported():
    m = shapes.mobius()
    out, rep = repaired(m)
    assert rep["non_orientable_components"] == 1 and rep["faces_flipped"] == 0
    np.testing.assert_array_equal(out.F, m.F)


@pytest.mark.parametrize("name", ["beetle.obj", "suzanne.obj", "cow.obj"])
def test_result_does_not_depend_on_the_component_algorithm(name, monkeypatch):
    """The GPU runs label propagation where the CPU runs SciPy's union-find: labels differ, and
    every use is made canonical (numbered by first element), so the output must not."""
    from workers.engine import graph, topology
    from workers.engine.ops import repair as repair_mod
    from workers.engine.ops import slice_plane as slice_mod

    mesh = shapes.welded(name)
    ref, rep = repaired(mesh)
    ref_cut = slice_mod.OP.numpy(mesh, slice_mod.Params(keep="both", cap=True)).mesh

    def propagate(xp, n, i, j):
        return graph.label_propagation(xp, n, i, j)

    for mod in (repair_mod, topology, slice_mod):
        monkeypatch.setattr(mod, "connected_components", propagate)
    got, rep2 = repaired(mesh)
    np.testing.assert_array_equal(got.F, ref.F)
    np.testing.assert_array_equal(got.V, ref.V)
    assert rep2 == rep
    cut = slice_mod.OP.numpy(mesh, slice_mod.Params(keep="both", cap=True)).mesh
    np.testing.assert_array_equal(cut.F, ref_cut.F)
    np.testing.assert_array_equal(cut.V, ref_cut.V)
