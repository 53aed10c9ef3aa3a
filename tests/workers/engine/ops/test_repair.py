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


def _with_faults(mesh: TriMesh) -> TriMesh:
    """``mesh`` with faces turned over, one face twice and one with a repeated vertex: repair
    drops two faces and turns the others back (their corners with them)."""
    F = np.asarray(mesh.F).copy()
    F[::7] = F[::7, [0, 2, 1]]
    F = np.concatenate([F, F[:1], [[F[2, 0], F[2, 0], F[2, 1]]]])
    corners = {
        k: np.concatenate([np.asarray(v), np.asarray(v)[:1], np.asarray(v)[2:3]])
        for k, v in mesh.corner_attrs.items()
    }
    for k in corners:
        corners[k][:-2][::7] = corners[k][:-2][::7][:, [0, 2, 1]]
    faces = {k: np.concatenate([v, v[:1], v[2:3]]) for k, v in mesh.face_attrs.items()}
    out = TriMesh(mesh.V, F.astype(np.int32), dict(mesh.vertex_attrs), faces)
    out.corner_attrs, out.materials = corners, mesh.materials
    return out


@pytest.mark.parametrize(
    "name", ["spot.obj", "beetle.obj", "Duck.glb", "CesiumMilkTruck.glb", "fuze.zip"]
)
def test_repair_carries_each_corner_with_its_face_row_and_turn(name):
    """Repair keeps each face's row (turning some over, splitting vertices): it carries the
    corners itself, each the value the input face of its row had at the same position. The
    surface search of corners.transfer, used before, gave another face's value at 12 to 21
    corners of the turned faces of CesiumMilkTruck and Duck."""
    from tests.conftest import ASSETS, mesh_path
    from workers.engine import corners
    from workers.engine.io import load_bytes

    path = mesh_path(name) if name.endswith(".obj") else ASSETS / name
    mesh = _with_faults(load_bytes(path.read_bytes(), name).run(["weld"], device="cpu").mesh)
    assert mesh.corner_attrs and not set(mesh.corner_attrs) & set(corners.DERIVED)
    ran = mesh.run(["repair"], device="cpu")
    out, rep = ran.mesh, ran.steps[0].report
    assert rep["duplicate_faces_removed"] == rep["degenerate_faces_removed"] == 1
    assert rep["faces_flipped"] > 0 or name == "beetle.obj"  # beetle: a non-orientable part
    n = out.n_faces
    assert n == mesh.n_faces - 2  # the two faults at the end: row f of out is row f of mesh
    Vi, Fi = np.asarray(mesh.V), np.asarray(mesh.F)[:n]
    Vo, Fo = np.asarray(out.V), np.asarray(out.F)
    # the input corner of the same row at each output corner's position
    same = (Vo[Fo][:, :, None, :] == Vi[Fi][:, None, :, :]).all(axis=3)  # (n, 3 out, 3 in)
    assert (same.sum(axis=2) == 1).all()
    at = same.argmax(axis=2)
    rows = np.arange(n)[:, None]
    for k, values in mesh.corner_attrs.items():
        np.testing.assert_array_equal(np.asarray(out.corner_attrs[k]), np.asarray(values)[rows, at])
    assert out.materials is mesh.materials
    if "material" in mesh.face_attrs:
        np.testing.assert_array_equal(out.face_attrs["material"], mesh.face_attrs["material"][:n])
