"""Polygon output: Catmull-Clark quads and dual polygons written as polygons to OBJ, PLY, OFF."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.io.polygons import group_polygons


def cc_cube() -> TriMesh:
    return shapes.run(shapes.cube(), {"op": "subdivide", "scheme": "catmull_clark"}).mesh


def sphere() -> TriMesh:
    return shapes.run(shapes.load("rx-sphere3.obj"), "weld").mesh


def faces_written(data: bytes, fmt: str) -> list[list[int]]:
    """The polygons in the file, 0-based, read one line (or PLY row) at a time: the reference."""
    if fmt == "obj":
        return [[int(t) - 1 for t in ln.split()[1:]] for ln in data.splitlines() if ln[:2] == b"f "]
    if fmt == "off":
        lines = data.splitlines()
        nv, nf, _ = map(int, lines[1].split())
        rows = [list(map(int, ln.split())) for ln in lines[2 + nv : 2 + nv + nf]]
        assert all(r[0] == len(r) - 1 for r in rows)
        return [r[1:] for r in rows]
    header = data[: data.index(b"end_header\n") + len(b"end_header\n")]
    nv = int(re.search(rb"element vertex (\d+)", header)[1])
    nf = int(re.search(rb"element face (\d+)", header)[1])
    if b"format ascii" in header:  # polygons of several sizes are written as text
        rows = [list(map(int, ln.split())) for ln in data[len(header) :].splitlines()[nv:]]
        assert len(rows) == nf
        return [r[1 : 1 + r[0]] for r in rows]
    size = {b"float": 4, b"double": 8, b"int": 4, b"uint": 4, b"uchar": 1}
    vertex, face = header.split(b"element face")[0], header.split(b"vertex_indices")[1]
    vrow = sum(size[ln.split()[1]] for ln in vertex.splitlines() if ln.startswith(b"property"))
    frow = sum(size[ln.split()[1]] for ln in face.splitlines() if ln.startswith(b"property"))
    assert b"property list uchar int vertex_indices" in header
    at = len(header) + nv * vrow
    out = []
    for _ in range(nf):
        k = data[at]
        out.append(np.frombuffer(data, "<i4", k, at + 1).tolist())
        at += 1 + 4 * k + frow
    assert at == len(data)
    return out


# ------------------------------------------------------------------------------ Catmull-Clark
@pytest.mark.parametrize("fmt", ["obj", "ply", "off"])
def test_catmull_clark_cube_is_written_as_quads(fmt: str) -> None:
    cube = shapes.cube()  # 12 triangles: one CC step makes 3 quads of each
    m = cc_cube()
    data = serialize(m, fmt)
    quads = faces_written(data, fmt)
    assert len(quads) == 36 and all(len(q) == 4 for q in quads)
    # the triangle pairs (a, b, c), (a, c, d) of quad q are the quad a b c d
    F = np.asarray(m.F).reshape(-1, 2, 3)
    np.testing.assert_array_equal(quads, np.concatenate([F[:, 0], F[:, 1, 2:]], axis=1))
    # quad k of face f: (corner k, edge point of side k, face point f, edge point of side k - 1)
    n, first = cube.n_vertices, np.asarray(cube.F)[0]
    assert [quads[k][0] for k in range(3)] == first.tolist()
    assert all(quads[k][2] == n for k in range(3))  # face points follow the old vertices
    assert quads[1][3] == quads[0][1] and quads[2][3] == quads[1][1] and quads[0][3] == quads[2][1]
    # read back: fanned into 72 triangles on the same surface
    back = load_bytes(data, f"cc.{fmt}")
    assert (back.n_vertices, back.n_faces) == (m.n_vertices, 72)
    np.testing.assert_allclose(back.V, m.V, rtol=1e-6)  # read as float32
    if fmt == "ply":  # quads come back as (0 1 2), (2 3 0): the other diagonal
        assert shapes.stats(back)["area"] == pytest.approx(shapes.stats(m)["area"], rel=1e-3)
        assert shapes.stats(back)["closed"] and shapes.stats(back)["euler_characteristic"] == 2
    else:
        np.testing.assert_array_equal(back.F, m.F)


def test_catmull_clark_quads_keep_their_face_attributes_in_ply() -> None:
    m = shapes.run(shapes.cube(), "face_normals", {"op": "subdivide", "scheme": "catmull_clark"})
    data = serialize(m.mesh, "ply")
    header = data[: data.index(b"end_header")].decode()
    assert "element face 36\nproperty list uchar int vertex_indices\n" in header
    assert "property int quad_id" in header and "property float nx" in header
    back = load_bytes(data, "cc.ply")  # all quads: the fixed-size reader
    assert back.n_faces == 72
    # each triangle takes its quad's properties: the two halves of a quad share them
    q = back.face_attrs["quad_id"]
    assert np.bincount(q).tolist() == [2] * 36
    n, before = back.face_attrs["face_normals"], m.mesh.face_attrs["face_normals"]
    assert n.shape == (72, 3)
    for i in range(36):
        a, b = np.flatnonzero(q == i)
        np.testing.assert_array_equal(n[a], n[b])
        np.testing.assert_array_equal(
            n[a], before[np.flatnonzero(m.mesh.face_attrs["quad_id"] == i)[0]]
        )


@pytest.mark.parametrize("fmt", ["obj", "ply", "off", "stl", "glb", "npz"])
def test_triangulate_on_request_and_for_formats_without_quads(fmt: str) -> None:
    m = cc_cube()
    back = load_bytes(serialize(m, fmt, polygons=False), f"t.{fmt}")
    if fmt == "stl":
        back = shapes.run(back, "weld").mesh
    assert (back.n_vertices, back.n_faces) == (m.n_vertices, m.n_faces)
    if fmt in ("obj", "ply", "off"):
        assert all(len(f) == 3 for f in faces_written(serialize(m, fmt, polygons=False), fmt))
        np.testing.assert_array_equal(back.F, m.F)


def test_later_levels_and_normals_in_obj() -> None:
    m = shapes.run(
        shapes.cube(), {"op": "subdivide", "scheme": "catmull_clark", "levels": 2}, "vertex_normals"
    ).mesh
    data = serialize(m, "obj")
    quads = faces_written(data.replace(b"//", b" ").replace(b"f ", b"f ", 1), "obj")
    lines = [ln for ln in data.splitlines() if ln[:2] == b"f "]
    assert len(lines) == 144 and all(len(ln.split()) == 5 for ln in lines)
    a = lines[0].split()[1]
    assert a.count(b"//") == 1 and a.split(b"//")[0] == a.split(b"//")[1]
    assert len(quads) == 144
    back = load_bytes(data, "n.obj")
    np.testing.assert_array_equal(
        back.vertex_attrs["vertex_normals"], m.vertex_attrs["vertex_normals"]
    )


# ------------------------------------------------------------------------------ dual mesh
@pytest.mark.parametrize("triangulation", ["centroid", "fan"])
@pytest.mark.parametrize("fmt", ["obj", "ply", "off"])
def test_dual_of_a_closed_mesh_is_written_as_polygons(triangulation: str, fmt: str) -> None:
    primal = sphere()
    dual = shapes.run(primal, {"op": "dual_mesh", "triangulation": triangulation}).mesh
    data = serialize(dual, fmt)
    polys = faces_written(data, fmt)
    valence = np.bincount(np.asarray(primal.F).ravel())
    assert len(polys) == primal.n_vertices  # one polygon per primal vertex, in vertex order
    assert [len(p) for p in polys] == valence.tolist()
    # vertices: one per primal face, the centroid triangulation's centres left out
    back = load_bytes(data, f"d.{fmt}")
    assert back.n_vertices == primal.n_faces
    np.testing.assert_allclose(back.V, np.asarray(dual.V)[: primal.n_faces], rtol=1e-6)
    assert back.n_faces == int((valence - 2).sum())
    if fmt == "ply":  # every triangle of a polygon carries the polygon's polygon_id
        pid = back.face_attrs["polygon_id"]
        assert np.bincount(pid).tolist() == (valence - 2).tolist()
    st = shapes.stats(back)
    assert st["closed"] and st["consistently_oriented"] and st["euler_characteristic"] == 2
    # the polygons keep the triangles' orientation: same signed volume
    assert st["volume"] == pytest.approx(shapes.stats(dual)["volume"], rel=0.05)
    assert st["volume"] > 0
    # triangles on request
    tris = faces_written(serialize(dual, fmt, polygons=False), fmt)
    assert len(tris) == dual.n_faces and all(len(t) == 3 for t in tris)


def test_polygons_start_at_the_first_corner_in_both_triangulations() -> None:
    primal = sphere()
    got = [
        faces_written(
            serialize(shapes.run(primal, {"op": "dual_mesh", "triangulation": t}).mesh, "off"),
            "off",
        )
        for t in ("centroid", "fan")
    ]
    assert got[0] == got[1]


# ------------------------------------------------------------------------------ not guessing
def test_group_polygons_of_a_quad_and_a_fan() -> None:
    F = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7], [4, 7, 8]])
    p = group_polygons(F, np.array([5, 5, 9, 9, 9]), 9)
    assert p is not None
    assert p.sizes.tolist() == [4, 5] and p.corners.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert p.first_face.tolist() == [0, 2]
    # around a centre vertex (8): the centre is left out and the rest renumbered
    F = np.array([[8, 0, 1], [8, 1, 2], [8, 2, 3], [8, 3, 0]])
    p = group_polygons(F, np.zeros(4, dtype=np.int32), 10)
    assert p is not None
    assert p.corners.tolist() == [0, 1, 2, 3] and p.vertices.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 9]


@pytest.mark.parametrize(
    ("F", "group"),
    [
        ([[0, 1, 2], [0, 3, 4]], [0, 0]),  # two triangles meeting at a vertex: 0 twice
        ([[0, 1, 2], [3, 4, 5]], [0, 0]),  # two separate loops
        ([[0, 1, 2], [0, 1, 3]], [0, 0]),  # edge 0-1 walked the same way twice
        ([[0, 1, 2], [0, 2, 3], [0, 2, 4]], [0, 0, 0]),  # edge 0-2 in three triangles
        ([[0, 1, 2], [0, 2, 1]], [0, 0]),  # a closed group: no sides
        ([[0, 1, 1], [0, 1, 2]], [0, 1]),  # a degenerate triangle
    ],
)
def test_group_that_is_not_one_simple_polygon_gives_none(F: list, group: list) -> None:
    assert group_polygons(np.array(F), np.array(group), 6) is None


def test_mesh_whose_groups_are_not_polygons_is_written_as_triangles() -> None:
    m = cc_cube()
    broken = TriMesh(m.V, m.F, dict(m.vertex_attrs), dict(m.face_attrs))
    q = np.array(broken.face_attrs["quad_id"])
    q[[0, 7]] = 99  # two triangles of different quads, far apart: no longer a polygon
    broken.face_attrs["quad_id"] = q
    for fmt in ("obj", "ply", "off"):
        faces = faces_written(serialize(broken, fmt), fmt)
        assert len(faces) == m.n_faces and all(len(f) == 3 for f in faces), fmt
    # a Loop step after dual_mesh: each polygon_id group has inner vertices, so triangles
    d = shapes.run(sphere(), {"op": "dual_mesh", "triangulation": "fan"}, "subdivide").mesh
    faces = faces_written(serialize(d, "off"), "off")
    assert len(faces) == d.n_faces and all(len(f) == 3 for f in faces)


def test_off_of_several_polygon_sizes_is_read_by_us() -> None:
    data = b"OFF\n5 2 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 2 0\n4 0 1 2 3\n3 1 4 2\n"
    m = load_bytes(data, "a.off")
    np.testing.assert_array_equal(m.F, [[0, 1, 2], [0, 2, 3], [1, 4, 2]])
