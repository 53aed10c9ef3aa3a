"""Files that had been read wrongly without a word: each is now refused with its own code and
plain words, or read right (polygons by ear clipping, ASCII PLY and STL by our own readers)."""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workers.engine.io.common import glb_bytes as _glb
from workers.engine import FormatError, MeshError
from workers.engine.io import load_bytes, serialize
from workers.engine.io.polygons import ear_clip, nonconvex, triangulate
from workers.engine.mesh import TriMesh

PLY_HEAD = (
    b"ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
    b"property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
)
PLY = PLY_HEAD + b"0 0 0\n1 0 0\n1 1 0\n0 1 0\n3 0 1 2\n3 0 2 3\n"
OFF = b"OFF\n4 2 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n3 0 1 2\n3 0 2 3\n"
FACET = (
    b"facet normal 0 0 1\n outer loop\n  vertex %d 0 0\n  vertex 1 0 0\n  vertex 1 1 0\n"
    b" endloop\nendfacet\n"
)


def _area(m: TriMesh) -> float:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F)
    return float(
        0.5
        * np.linalg.norm(np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]]), axis=1).sum()
    )


# ------------------------------------------------------------------------------ truncated files
@pytest.mark.parametrize(
    "data, element",
    [
        (PLY[:-6], "face"),  # the last face line gone
        (PLY[:-3], "face"),  # the last face line cut after a corner
        (PLY_HEAD + b"0 0 0\n1 0 0\n", "vertex"),  # ends among the vertices
    ],
)
def test_truncated_ascii_ply_is_refused(data: bytes, element: str) -> None:
    with pytest.raises(FormatError) as ei:
        load_bytes(data, "t.ply")
    assert ei.value.code == "format.truncated"
    assert ei.value.detail["element"] == element


def test_ascii_ply_with_more_numbers_than_declared_is_refused() -> None:
    with pytest.raises(FormatError) as ei:
        load_bytes(PLY + b"3 1 2 3\n", "t.ply")
    assert ei.value.code == "format.ply_trailing_data"


@pytest.mark.parametrize("cut", [8, 3, 9])
def test_truncated_off_is_refused(cut: int) -> None:
    assert load_bytes(OFF, "t.off").n_faces == 2
    with pytest.raises(FormatError) as ei:
        load_bytes(OFF[:-cut], "t.off")
    assert ei.value.code == "format.truncated"


def test_ascii_ply_reads_as_the_same_binary_ply() -> None:
    """Polygons of several sizes, a per-face property and a per-corner texcoord list: the ASCII
    file gives what the binary one gives (the binary reader is compared with trimesh elsewhere)."""
    header = (
        "ply\nformat {fmt} 1.0\nelement vertex 5\nproperty float x\nproperty float y\n"
        "property float z\nproperty float quality\nelement face 2\n"
        "property list uchar int vertex_indices\nproperty int region\nend_header\n"
    )
    V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0]], np.float32)
    q = np.arange(5, dtype=np.float32) + 0.5
    faces = [([0, 1, 2, 3], 7), ([1, 4, 2], 8)]
    text = header.format(fmt="ascii").encode()
    rows = zip(V.tolist(), q.tolist(), strict=True)
    text += b"".join(b"%g %g %g %g\n" % (*v, w) for v, w in rows)
    text += b"".join((f"{len(f)} " + " ".join(map(str, f)) + f" {r}\n").encode() for f, r in faces)
    binary = header.format(fmt="binary_little_endian").encode()
    binary += np.concatenate([V, q[:, None]], axis=1).astype("<f4").tobytes()
    for f, r in faces:
        binary += struct.pack("<B", len(f)) + struct.pack(f"<{len(f)}i", *f) + struct.pack("<i", r)
    a, b = load_bytes(text, "a.ply"), load_bytes(binary, "b.ply")
    np.testing.assert_array_equal(a.V, b.V)
    np.testing.assert_array_equal(a.F, b.F)
    assert a.n_faces == 3
    np.testing.assert_array_equal(a.vertex_attrs["quality"], b.vertex_attrs["quality"])
    np.testing.assert_array_equal(a.face_attrs["region"], [7, 7, 8])
    np.testing.assert_array_equal(b.face_attrs["region"], [7, 7, 8])


def test_ascii_ply_triangle_strips_have_their_own_code() -> None:
    data = PLY_HEAD.replace(b"element face 2", b"element tristrips 1").replace(
        b"list uchar int", b"list int int"
    )
    with pytest.raises(FormatError) as ei:
        load_bytes(data + b"0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 3 2\n", "s.ply")
    assert ei.value.code == "format.ply_triangle_strips"


# ------------------------------------------------------------------------------ ASCII STL
def test_ascii_stl_solids_are_one_soup_whatever_their_endings() -> None:
    one = b"solid a\n" + FACET % 0 + FACET % 0 + b"endsolid a\n"
    two = one + b"solid b\n" + FACET % 5 + b"endsolid b\n"
    cases = {
        "one": (one, 2),
        "one, no endsolid": (one.replace(b"endsolid a\n", b""), 2),
        "two": (two, 3),
        "two, last endsolid missing": (two.replace(b"endsolid b\n", b""), 3),
    }
    for name, (data, faces) in cases.items():
        m = load_bytes(data, "s.stl")
        assert (m.n_vertices, m.n_faces) == (3 * faces, faces), name
    m = load_bytes(two, "s.stl")
    np.testing.assert_array_equal(np.asarray(m.V)[-3:], [[5, 0, 0], [1, 0, 0], [1, 1, 0]])
    # the same triangles as the binary STL of them
    binary = load_bytes(serialize(m, "stl"), "b.stl")
    np.testing.assert_array_equal(np.asarray(binary.V), np.asarray(m.V))
    np.testing.assert_array_equal(np.asarray(binary.F), np.asarray(m.F))


def test_ascii_stl_cut_inside_a_facet_is_refused_with_its_line() -> None:
    data = b"solid a\n" + FACET % 0 + (FACET % 0)[:60]
    with pytest.raises(FormatError) as ei:
        load_bytes(data, "s.stl")
    assert ei.value.code == "format.truncated" and ei.value.detail["line"] == 10  # its loop


def test_ascii_stl_facet_of_two_corners_is_refused() -> None:
    data = b"solid a\n" + (FACET % 0).replace(b"  vertex 1 1 0\n", b"") + b"endsolid a\n"
    with pytest.raises(FormatError) as ei:
        load_bytes(data, "s.stl")
    assert ei.value.code == "format.stl_bad_facet" and ei.value.detail["line"] == 3


# ------------------------------------------------------------------------------ polygons
def _star(n: int = 66) -> np.ndarray:
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    r = np.where(np.arange(n) % 2 == 0, 1.0, 0.3)
    return np.c_[r * np.cos(ang), r * np.sin(ang), np.zeros(n)]


def _shoelace(P: np.ndarray) -> float:
    x, y = P[:, 0], P[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _star_files(P: np.ndarray) -> dict[str, bytes]:
    n = P.shape[0]
    verts = "".join(f"{x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in P)
    ply_head = (
        f"ply\nformat ascii 1.0\nelement vertex {n}\nproperty double x\nproperty double y\n"
        "property double z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
    )
    binary = (
        (
            f"ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty double x\n"
            "property double y\nproperty double z\nelement face 1\n"
            "property list uchar int vertex_indices\nend_header\n"
        ).encode()
        + P.astype("<f8").tobytes()
        + struct.pack("<B", n)
        + np.arange(n).astype("<i4").tobytes()
    )
    return {
        "s.obj": (
            "".join(f"v {v}" for v in verts.splitlines(True))
            + "f "
            + " ".join(str(i + 1) for i in range(n))
            + "\n"
        ).encode(),
        "s.off": (f"OFF\n{n} 1 0\n{verts}{n} " + " ".join(map(str, range(n))) + "\n").encode(),
        "a.ply": (ply_head + verts + f"{n} " + " ".join(map(str, range(n))) + "\n").encode(),
        "b.ply": binary,
    }


@pytest.mark.parametrize("name", ["s.obj", "s.off", "a.ply", "b.ply"])
def test_concave_polygon_is_ear_clipped_not_fanned(name: str) -> None:
    P = _star()
    m = load_bytes(_star_files(P)[name], name, dtype="float64")
    assert m.n_faces == P.shape[0] - 2
    assert _area(m) == pytest.approx(_shoelace(P), rel=1e-9)  # a fan had covered 15x this
    V, F = np.asarray(m.V), np.asarray(m.F)
    normals = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    assert bool((normals[:, 2] > 0).all())  # every triangle faces like the polygon


def test_convex_polygons_keep_their_fans() -> None:
    hexagon = (
        _star(6) * 0
        + np.c_[np.cos(np.arange(6) / 3 * np.pi), np.sin(np.arange(6) / 3 * np.pi), np.zeros(6)]
    )
    idx = np.arange(6)
    assert not nonconvex(hexagon, idx, np.array([6]))[0]
    np.testing.assert_array_equal(
        triangulate(hexagon, idx, np.array([6])), [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5]]
    )


def test_a_star_polygon_that_turns_twice_is_not_fanned_as_convex() -> None:
    pentagram = np.c_[
        np.cos(np.arange(5) * 4 * np.pi / 5), np.sin(np.arange(5) * 4 * np.pi / 5), np.zeros(5)
    ]
    assert nonconvex(pentagram, np.arange(5), np.array([5]))[0]


def test_concave_quad_in_binary_ply_takes_the_diagonal_through_its_reflex_corner() -> None:
    # an arrowhead: corner 1 is reflex, so the diagonal 0-2 of (0 1 2)(2 3 0) lies outside
    V = np.array([[0, 0, 0], [1, 0.2, 0], [2, 0, 0], [1, 1, 0]], np.float32)
    data = (
        (
            b"ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\n"
            b"property float y\nproperty float z\nelement face 1\n"
            b"property list uchar int vertex_indices\nend_header\n"
        )
        + V.tobytes()
        + struct.pack("<B4i", 4, 0, 1, 2, 3)
    )
    m = load_bytes(data, "q.ply", dtype="float64")
    assert _area(m) == pytest.approx(_shoelace(V.astype(np.float64)), rel=1e-6)


def test_ear_clip_refuses_a_polygon_with_no_area() -> None:
    assert ear_clip(np.zeros((5, 3))) is None


# ------------------------------------------------------------------------------ glTF
def _tree_and_bin() -> tuple[dict, bytes]:
    V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    tri, fan = np.array([0, 1, 2, 0, 2, 3], np.uint32), np.array([0, 1, 2, 3], np.uint32)
    binary = V.tobytes() + tri.tobytes() + fan.tobytes()
    tree = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [
            {
                "primitives": [
                    {"attributes": {"POSITION": 0}, "indices": 1, "mode": 4},
                    {"attributes": {"POSITION": 0}, "indices": 2, "mode": 6},
                ]
            }
        ],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": 4,
                "type": "VEC3",
                "min": [0, 0, 0],
                "max": [1, 1, 0],
            },
            {"bufferView": 1, "componentType": 5125, "count": 6, "type": "SCALAR"},
            {"bufferView": 2, "componentType": 5125, "count": 4, "type": "SCALAR"},
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 24},
            {"buffer": 0, "byteOffset": 72, "byteLength": 16},
        ],
        "buffers": [{"byteLength": len(binary)}],
    }
    return tree, binary


def _refused(data: bytes, name: str) -> FormatError:
    with pytest.raises(FormatError) as ei:
        load_bytes(data, name)
    assert not re.search(r"\b[A-Z][a-zA-Z]*Error\b", json.dumps(ei.value.to_dict()))
    return ei.value


def test_gltf_fans_beside_another_primitive_are_read() -> None:
    tree, binary = _tree_and_bin()
    m = load_bytes(_glb(tree, binary), "f.glb")
    assert m.n_faces == 4  # two triangles, and the fan's two
    np.testing.assert_array_equal(np.asarray(m.F)[2:], [[4, 5, 6], [4, 6, 7]])
    tree["meshes"][0]["primitives"].pop(0)  # the fan alone
    assert load_bytes(_glb(tree, binary), "f.glb").n_faces == 2


def test_gltf_1_missing_buffers_and_unknown_extensions_have_their_own_codes() -> None:
    tree, binary = _tree_and_bin()
    tree["meshes"][0]["primitives"].pop()
    old = json.loads(json.dumps(tree))
    old["asset"]["version"] = "1.0"
    assert _refused(json.dumps(old).encode(), "o.gltf").code == "format.gltf_version"
    lone = json.loads(json.dumps(tree))
    lone["buffers"][0]["uri"] = "mesh.bin"
    e = _refused(json.dumps(lone).encode(), "l.gltf")
    assert e.code == "format.gltf_missing_buffer" and "mesh.bin" in e.message
    t = json.loads(json.dumps(tree))
    t["extensionsUsed"] = t["extensionsRequired"] = ["EXT_made_up"]
    assert _refused(_glb(t, binary), "c.glb").code == "format.gltf_extension"
    # a Draco extension whose data is not Draco: its own code, not a crash
    t = json.loads(json.dumps(tree))
    t["extensionsUsed"] = t["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    t["meshes"][0]["primitives"][0]["extensions"] = {
        "KHR_draco_mesh_compression": {"bufferView": 1, "attributes": {"POSITION": 0}}
    }
    assert _refused(_glb(t, binary), "c.glb").code == "format.gltf_draco"


def test_a_readers_exception_is_not_passed_on_as_python_text() -> None:
    tree, binary = _tree_and_bin()
    tree["meshes"][0]["primitives"] = [{"attributes": {"NORMAL": 0}, "indices": 1}] * 2
    e = _refused(_glb(tree, binary), "x.glb")
    assert e.code == "format.parse_error"


# ------------------------------------------------------------------------------ text encodings
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le-bom", "utf-16-be-bom", "utf-8-sig"])
def test_text_files_in_other_unicode_encodings_are_read(encoding: str) -> None:
    obj = "# made on Windows\nv 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n"
    data = {
        "utf-16": obj.encode("utf-16"),
        "utf-16-le-bom": b"\xff\xfe" + obj.encode("utf-16-le"),
        "utf-16-be-bom": b"\xfe\xff" + obj.encode("utf-16-be"),
        "utf-8-sig": obj.encode("utf-8-sig"),
    }[encoding]
    m = load_bytes(data, "w.obj")
    assert (m.n_vertices, m.n_faces) == (3, 1)
    assert load_bytes(b"\xef\xbb\xbf" + PLY, "w.ply").n_faces == 2


# ------------------------------------------------------------------------------ line numbers
@pytest.mark.parametrize(
    "text, code, line",
    [
        (b"v 0 0 0\nv 1 0 0\nv 1 x 0\nf 1 2 3\n", "format.obj_bad_vertex", 3),
        (b"v 0 0 0\nv 1 0 0\nv 1 1 0\n\nf 1 2 3\nf 1 2 9\n", "mesh.index_out_of_range", 6),
        (b"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2\n", "format.obj_bad_face", 4),
        (b"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 a\n", "format.obj_bad_face", 4),
        (b"v 0 0 0\r\nv 1 0 0\r\nv 1 1 0\r\nf 0 1 2\r\n", "mesh.obj_zero_index", 4),
    ],
)
def test_obj_errors_name_their_line(text: bytes, code: str, line: int) -> None:
    with pytest.raises((FormatError, MeshError)) as ei:
        load_bytes(text, "e.obj")
    assert ei.value.code == code and ei.value.detail["line"] == line


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300).map(lambda b: bytes(c % 8 + 92 for c in b)),  # few distinct bytes
    st.sampled_from([(b"\\\n", 0), (b"vt", 1), (b"mtllib", 5), (b"_`a", 2), (b"^^", 0)]),
    st.integers(0, 40),
)
def test_the_rare_byte_search_finds_what_bytes_find_finds(data, case, start):
    from workers.engine.io._text import find

    needle, rare = case
    # hits of the rare byte that are not the needle, past the 64 it looks at one by one
    text = data + needle[rare : rare + 1] * 70 + data + needle + data
    for t in (data, text, needle + data, data + needle):
        assert find(t, needle, rare, start) == t.find(needle, start)
