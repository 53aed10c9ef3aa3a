"""slice_plane: exact cuts keyed by edge, both sides, caps, section polylines, attributes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine import OpParamsError
from workers.engine.ops.slice_plane import OP, Params


def cut(mesh, **kw):
    out = OP.numpy(mesh, Params(**kw))
    return out.mesh, out.report, out.artifacts


def test_cube_half_capped_is_a_closed_half_cube():
    mesh, rep, art = cut(shapes.cube(), point=[0, 0, 0.5], cap=True)
    st = shapes.stats(mesh)
    assert st["closed"] and st["manifold"] and st["consistently_oriented"]
    assert st["volume"] == pytest.approx(0.5) and st["euler_characteristic"] == 2
    assert rep["vertices_created"] == 8 and rep["closed_loops"] == 1 and rep["cap_faces"] == 8
    assert st["duplicate_vertices"] == 0
    assert np.all(mesh.V[:, 2] >= 0.5)
    np.testing.assert_allclose(art["section"][:, 2], 0.5)


@pytest.mark.parametrize("name", ["rx-el_topo_sphere_1280.obj", "rx-sphere3.obj", "rx-cube.obj"])
def test_both_sides_capped_make_two_closed_parts(name):
    mesh = shapes.welded(name)
    whole = shapes.stats(mesh)
    rng = np.random.default_rng(3)
    normal = rng.normal(size=3).tolist()
    point = mesh.V.mean(axis=0).tolist()
    out, rep, _ = cut(mesh, point=point, normal=normal, keep="both", cap=True)
    st = shapes.stats(out)
    assert st["components"] == 2 and st["closed"] and st["manifold"]
    assert st["consistently_oriented"] and st["euler_characteristic"] == 4
    assert st["volume"] == pytest.approx(whole["volume"], rel=1e-5)
    side = out.face_attrs["slice_side"]
    assert set(np.unique(side).tolist()) == {-1, 1}
    assert rep["faces_above"] + rep["faces_below"] == out.n_faces


@pytest.mark.parametrize("name", ["stanford-bunny.obj", "rx-torus.obj", "teapot.obj", "cow.obj"])
def test_one_vertex_per_crossing_edge_and_no_duplicates(name):
    mesh = shapes.welded(name)
    point = mesh.V.mean(axis=0).tolist()
    normal = [0.3, 1.0, -0.2]
    V = mesh.V.astype(np.float64)
    n = np.asarray(normal) / np.linalg.norm(normal)
    d = (V - np.asarray(point)) @ n
    topo = mesh.topology
    crossing = int((np.sign(d[topo.EV[:, 0]]) * np.sign(d[topo.EV[:, 1]]) < 0).sum())
    out, rep, _ = cut(mesh, point=point, normal=normal, keep="both", snap=False)
    assert rep["vertices_created"] == crossing
    whole = shapes.stats(mesh)
    st = shapes.stats(out)
    assert st["area"] == pytest.approx(whole["area"], rel=1e-6)
    for keep in ("above", "below"):
        part, _, _ = cut(mesh, point=point, normal=normal, keep=keep, snap=False)
        pst = shapes.stats(part)
        assert pst["duplicate_vertices"] == 0 and pst["non_manifold_edges"] == 0
        assert pst["degenerate_faces"] == 0
        assert pst["consistently_oriented"] == whole["consistently_oriented"]


def test_vertices_on_the_plane_are_reused():
    mesh = shapes.welded("rx-sphere3.obj")  # 32 vertices on the equator z = 0.5
    out, rep, art = cut(mesh, point=[0.5, 0.5, 0.5], cap=True, snap=False)
    assert rep["vertices_created"] == 0 and rep["faces_split"] == 0
    assert rep["vertices_on_plane"] == 32 and rep["section_points"] == 32
    assert shapes.stats(out)["closed"]


def test_snapping_avoids_duplicate_vertices_next_to_the_plane():
    mesh = shapes.welded("rx-torus.obj")  # vertices at z = 0; the plane 8e-9 above them
    point = [0.0, 0.0, 8.3e-9]
    _, rep, _ = cut(mesh, point=point)
    assert rep["vertices_created"] == 0
    out, rep, _ = cut(mesh, point=point, snap=False)
    assert rep["vertices_created"] > 0 and shapes.stats(out)["duplicate_vertices"] > 0


def test_section_polyline_is_walked_in_order():
    mesh = shapes.welded("rx-el_topo_sphere_1280.obj")
    _, rep, art = cut(mesh, point=[0, 0, 0.1], normal=[0.1, 0.2, 1.0])
    assert rep["section_loops"] == 1 and len(rep["section"][0]) == art["section"].shape[0]
    P = art["section"][:, :3]
    steps = np.linalg.norm(np.roll(P, -1, axis=0) - P, axis=1)
    r = np.linalg.norm(P.mean(axis=0) - P, axis=1).mean()
    # consecutive points are neighbours: the polygon's perimeter is the circle's
    assert steps.sum() == pytest.approx(2 * math.pi * r, rel=0.01)
    assert steps.max() < 0.1 * r * 2 * math.pi


def test_open_sheet_gives_an_open_chain_with_both_ends():
    mesh = shapes.welded("rx-plane_5.obj")
    lo, hi = mesh.V.min(axis=0), mesh.V.max(axis=0)
    mid = ((lo + hi) / 2).tolist()
    axis = int(np.argmax(hi - lo))
    normal = [0.0, 0.0, 0.0]
    normal[axis] = 1.0
    normal[(axis + 1) % 3] = 0.37
    out, rep, art = cut(mesh, point=mid, normal=normal, cap=True)
    assert rep["section_loops"] == 1 and rep["closed_loops"] == 0 and rep["cap_faces"] == 0
    P = art["section"][:, :3]
    assert P.shape[0] == rep["vertices_created"] + rep["vertices_on_plane"]


def test_attributes_are_interpolated_and_carried():
    cube = shapes.cube()
    mesh = shapes.mesh(
        cube.V,
        cube.F,
        vertex_attrs={"z": cube.V[:, 2].copy(), "id": np.arange(8, dtype=np.int32)},
        face_attrs={"fid": np.arange(12, dtype=np.int32)},
    )
    out, _, _ = cut(mesh, point=[0, 0, 0.25], keep="below")
    np.testing.assert_allclose(out.vertex_attrs["z"], out.V[:, 2], atol=1e-12)
    assert out.vertex_attrs["id"].dtype == np.int32
    # every face keeps its parent's id: the parent contains the face
    assert set(out.face_attrs["fid"].tolist()) <= set(range(12))
    assert np.all(out.face_attrs["slice_side"] == -1)


def test_zero_normal_is_refused():
    with pytest.raises(OpParamsError):
        OP.parse_params({"normal": [0, 0, 0]})
