"""Reading and writing: round trips through every output format, wrapped inputs, the OBJ parser,
and the errors of malformed, hostile or mislabelled files."""

from __future__ import annotations

import gzip
import io
import struct
import tracemalloc
import zipfile
from typing import Any

import numpy as np
import pytest

from tests.conftest import mesh_path
from tests.workers.engine.shapes import load, random_rotation, run, tetrahedron
from workers.engine import FormatError, MeshError, SpecError, TriMesh
from workers.engine.io import OUTPUT_FORMATS, load_bytes, serialize, sniff

TRI = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


@pytest.fixture(scope="module")
def rich() -> TriMesh:
    """A closed mesh with vertex normals, curvature and face normals."""
    return run(
        load("rx-sphere3.obj"), "weld", "vertex_normals", "gaussian_curvature", "face_normals"
    ).mesh


def _code(data: bytes, name: str = "", **kw: object) -> str:
    with pytest.raises((FormatError, MeshError)) as ei:
        load_bytes(data, name, **kw)
    return ei.value.code


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _same_mesh(a: TriMesh, b: TriMesh) -> None:
    np.testing.assert_array_equal(a.V, b.V)
    np.testing.assert_array_equal(a.F, b.F)
    assert a.V.dtype == np.float32 and a.F.dtype == np.int32


# ------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("fmt", ["ply", "obj", "off", "glb", "npz"])
def test_round_trip_keeps_positions_and_faces(rich: TriMesh, fmt: str) -> None:
    data = serialize(rich, fmt)
    assert sniff(data) == ("zip" if fmt == "npz" else fmt)
    _same_mesh(load_bytes(data, f"out.{fmt}"), rich)
    _same_mesh(load_bytes(data), rich)  # recognised from the bytes alone


def test_stl_round_trip_is_a_soup(rich: TriMesh) -> None:
    data = serialize(rich, "stl")
    assert len(data) == 84 + 50 * rich.n_faces
    back = load_bytes(data, "out.stl")
    assert (back.n_vertices, back.n_faces) == (3 * rich.n_faces, rich.n_faces)
    np.testing.assert_array_equal(
        np.asarray(back.V)[np.asarray(back.F)], np.asarray(rich.V)[np.asarray(rich.F)]
    )
    welded = run(back, "weld").mesh
    assert welded.n_vertices == rich.n_vertices
    np.testing.assert_array_equal(
        np.asarray(welded.V)[np.asarray(welded.F)], np.asarray(rich.V)[np.asarray(rich.F)]
    )
    assert back.vertex_attrs == {} and back.face_attrs == {}


@pytest.mark.parametrize(
    ("fmt", "vertex", "face"),
    [
        ("ply", ["vertex_normals", "gaussian_curvature"], ["face_normals"]),
        ("npz", ["vertex_normals", "gaussian_curvature"], ["face_normals"]),
        ("glb", ["vertex_normals", "gaussian_curvature"], []),
        ("obj", ["vertex_normals"], []),
        ("off", [], []),
        ("stl", [], []),
    ],
)
def test_round_trip_keeps_the_attributes_the_format_holds(
    rich: TriMesh, fmt: str, vertex: list[str], face: list[str]
) -> None:
    back = load_bytes(serialize(rich, fmt), f"out.{fmt}")
    assert sorted(back.vertex_attrs) == sorted(vertex)
    assert sorted(back.face_attrs) == sorted(face)
    for k in vertex:
        assert back.vertex_attrs[k].shape == rich.vertex_attrs[k].shape, k
        np.testing.assert_allclose(
            back.vertex_attrs[k],
            rich.vertex_attrs[k],
            rtol=0,
            atol=1e-7 if fmt == "glb" or fmt == "obj" else 0,
            err_msg=k,
        )
    for k in face:
        np.testing.assert_array_equal(back.face_attrs[k], rich.face_attrs[k])


def test_ply_header_names_the_properties(rich: TriMesh) -> None:
    data = serialize(rich, "ply")
    header = data[: data.index(b"end_header\n") + len(b"end_header\n")].decode("ascii")
    lines = header.splitlines()
    assert lines[:2] == ["ply", "format binary_little_endian 1.0"]
    n, m = rich.n_vertices, rich.n_faces
    vi, fi = lines.index(f"element vertex {n}"), lines.index(f"element face {m}")
    assert lines[vi + 1 : fi] == [
        "property float x",
        "property float y",
        "property float z",
        "property float nx",
        "property float ny",
        "property float nz",
        "property float gaussian_curvature",
    ]
    assert lines[fi + 1 : -1] == [
        "property list uchar int vertex_indices",
        "property float nx",
        "property float ny",
        "property float nz",
    ]
    vrow, frow = 7 * 4, 1 + 3 * 4 + 3 * 4
    assert len(data) == len(header) + n * vrow + m * frow


def test_ply_attribute_kinds_round_trip() -> None:
    t = tetrahedron()
    va = {
        "uv": np.arange(8, dtype=np.float64).reshape(4, 2),  # vector -> uv_0 uv_1
        "label": np.array([1, -2, 3, -4], dtype=np.int64),  # written as int
        "flag": np.array([True, False, True, True]),  # written as uchar
        "vertex_colors": np.array([[255, 0, 0, 255]] * 4, dtype=np.uint8),
    }
    fa = {"region": np.array([7, 7, 8, 9], dtype=np.int16)}
    data = serialize(t.with_attrs(vertex=va, face=fa), "ply")
    assert b"property double uv_0\nproperty double uv_1\n" in data
    assert b"property int label\n" in data and b"property uchar flag\n" in data
    assert b"property uchar red\nproperty uchar green\n" in data
    back = load_bytes(data, "t.ply")
    np.testing.assert_array_equal(back.vertex_attrs["uv"], va["uv"])
    np.testing.assert_array_equal(back.vertex_attrs["label"], va["label"])
    np.testing.assert_array_equal(back.vertex_attrs["flag"], [1, 0, 1, 1])
    np.testing.assert_array_equal(back.vertex_attrs["vertex_colors"], va["vertex_colors"])
    np.testing.assert_array_equal(back.face_attrs["region"], fa["region"])
    assert back.face_attrs["region"].dtype == np.int16


def test_glb_normals_follow_the_node_transform() -> None:
    import trimesh

    rng = np.random.default_rng(9)
    m = run(load("rx-sphere3.obj"), "vertex_normals").mesh
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F)
    N = m.vertex_attrs["vertex_normals"].astype(np.float64)
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng) @ np.diag([2.0, 1.0, 0.5])  # rotation after a stretch
    T[:3, 3] = [1.0, 2.0, 3.0]
    tm = trimesh.Trimesh(V, F, vertex_normals=N, process=False)
    scene = trimesh.Scene()
    scene.add_geometry(tm, transform=T)
    back = load_bytes(trimesh.exchange.gltf.export_glb(scene, include_normals=True), "t.glb")
    np.testing.assert_allclose(back.V, V @ T[:3, :3].T + T[:3, 3], atol=1e-5)
    expect = N @ np.linalg.inv(T[:3, :3])
    expect /= np.linalg.norm(expect, axis=1, keepdims=True)
    np.testing.assert_allclose(back.vertex_attrs["vertex_normals"], expect, atol=1e-6)


def test_glb_vertex_colors_round_trip() -> None:
    t = tetrahedron()
    colors = np.array(
        [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 128], [9, 9, 9, 255]], dtype=np.uint8
    )
    back = load_bytes(serialize(t.with_attrs(vertex={"vertex_colors": colors}), "glb"), "t.glb")
    np.testing.assert_array_equal(back.vertex_attrs["vertex_colors"], colors)


def test_obj_writer_pairs_normals_with_vertices(rich: TriMesh) -> None:
    text = serialize(rich, "obj", ["vertex_normals"]).decode()
    lines = text.splitlines()
    assert sum(ln.startswith("v ") for ln in lines) == rich.n_vertices
    assert sum(ln.startswith("vn ") for ln in lines) == rich.n_vertices
    a, b, c = (np.asarray(rich.F)[0] + 1).tolist()
    assert f"f {a}//{a} {b}//{b} {c}//{c}" in lines
    plain = serialize(rich, "obj", []).decode()
    assert "vn " not in plain and f"f {a} {b} {c}" in plain.splitlines()


def test_selected_attributes_only(rich: TriMesh) -> None:
    back = load_bytes(serialize(rich, "ply", ["gaussian_curvature"]), "x.ply")
    assert list(back.vertex_attrs) == ["gaussian_curvature"] and back.face_attrs == {}
    back = load_bytes(serialize(rich, "npz", []), "x.npz")
    assert back.vertex_attrs == {} and back.face_attrs == {}


@pytest.mark.parametrize(
    ("fmt", "attrs", "code"),
    [
        ("ply", ["mean_curvature"], "spec.unknown_attribute"),  # not on the mesh
        ("obj", ["gaussian_curvature"], "spec.attribute_not_supported"),  # OBJ holds normals only
        ("stl", ["vertex_normals"], "spec.attribute_not_supported"),  # STL holds nothing
        ("glb", ["face_normals"], "spec.attribute_not_supported"),  # GLB holds vertex attributes
        ("off", ["vertex_normals"], "spec.attribute_not_supported"),  # OFF holds nothing
        ("vtk", None, "spec.unknown_format"),  # neither
    ],
)
def test_serialize_errors(rich: TriMesh, fmt: str, attrs: list[str] | None, code: str) -> None:
    with pytest.raises(SpecError) as ei:
        serialize(rich, fmt, attrs)
    assert ei.value.code == code


def test_float64_mesh_writes_and_reads() -> None:
    t = tetrahedron()  # float64 positions
    for fmt in OUTPUT_FORMATS:
        back = load_bytes(serialize(t, fmt), f"t.{fmt}", dtype="float64")
        assert back.V.dtype == np.float64
        assert back.n_faces == 4


# ------------------------------------------------------------------------------ wrapped inputs
@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_gzip_wrapped(rich: TriMesh, fmt: str) -> None:
    data = gzip.compress(serialize(rich, fmt))
    for name in (f"m.{fmt}.gz", "m.gz", ""):
        back = load_bytes(data, name)
        assert back.n_faces == rich.n_faces, name
        assert back.source == (name or None)


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_zip_wrapped(rich: TriMesh, fmt: str) -> None:
    data = _zip(
        {
            f"folder/model.{fmt}": serialize(rich, fmt),
            "readme.txt": b"hello",
            f"__MACOSX/folder/._model.{fmt}": b"\x00\x05\x16\x07",
        }
    )
    back = load_bytes(data, "upload.zip")
    assert back.n_faces == rich.n_faces
    np.testing.assert_array_equal(
        np.asarray(back.V)[np.asarray(back.F)], np.asarray(rich.V)[np.asarray(rich.F)]
    )


def test_concatenated_gzip_members() -> None:
    half = len(TRI) // 2
    data = gzip.compress(TRI[:half]) + gzip.compress(TRI[half:])
    assert load_bytes(data, "x.obj.gz").n_faces == 1


def test_gltf_with_its_buffer_in_a_zip() -> None:
    import trimesh

    t = tetrahedron()
    files = trimesh.Trimesh(np.asarray(t.V), np.asarray(t.F), process=False).export(
        file_type="gltf"
    )
    back = load_bytes(_zip({f"scene/{k}": v for k, v in files.items()}), "scene.zip")
    assert (back.n_vertices, back.n_faces) == (4, 4)


# ------------------------------------------------------------------------------ OBJ parsing
def test_obj_polygons_are_fanned() -> None:
    data = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv -1 0.5 0\nf 1 2 3 4\nf 1 2 3\nf 1 2 3 4 5\n"
    m = load_bytes(data, "p.obj")
    np.testing.assert_array_equal(
        m.F, [[0, 1, 2], [0, 2, 3], [0, 1, 2], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    )


def test_obj_negative_indices_count_back_from_the_vertices_read_so_far() -> None:
    data = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\nv 1 1 0\nf -3 -1 -2\nf 1 -1 3\n"
    np.testing.assert_array_equal(load_bytes(data, "n.obj").F, [[0, 1, 2], [1, 3, 2], [0, 3, 2]])


def test_obj_slash_forms() -> None:
    data = (
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvn 0 0 1\n"
        b"f 1/1/1 2/2/1 3/1/1\nf 2//1 4//1 3//1\nf 1/1 2/2 4/1\nf -4/-2/-1 -3/-1/-1 -1/-2/-1\n"
    )
    m = load_bytes(data, "s.obj")
    np.testing.assert_array_equal(m.F, [[0, 1, 2], [1, 3, 2], [0, 1, 3], [0, 1, 3]])


def test_obj_tolerates_the_usual_clutter() -> None:
    data = (
        b"\xef\xbb\xbf# exported\r\nmtllib a.mtl\r\no thing\r\ng group\r\n"
        b"v 0 0 0 1.0\r\nv\t1 0 0\r\n  v 0 1 0 0.5 0.5 0.5\r\n\r\n"
        b"usemtl red\r\ns off\r\nvt 0 0\r\nl 1 2\r\nf 1 2 3\r\n"
    )
    m = load_bytes(data, "c.obj")
    np.testing.assert_array_equal(m.V, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(m.F, [[0, 1, 2]])


def test_obj_with_a_byte_order_mark_keeps_its_first_vertex() -> None:
    m = load_bytes(b"\xef\xbb\xbf" + b"v 5 5 5\n" + TRI.replace(b"f 1 2 3", b"f 2 3 4"), "b.obj")
    assert m.n_vertices == 4
    np.testing.assert_array_equal(m.V[0], [5, 5, 5])


def test_obj_reads_positions_only_so_uv_seams_stay_closed() -> None:
    # two triangles sharing an edge whose corners carry different texture coordinates
    data = (
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt 1 1\nvt 0.5 0.5\n"
        b"f 1/1 2/2 3/3\nf 2/5 4/4 3/5\n"
    )
    m = load_bytes(data, "uv.obj")
    assert m.n_vertices == 4
    assert run(m, "stats").reports["stats"]["boundary_edges"] == 4


def test_obj_normals_one_per_vertex_become_vertex_normals() -> None:
    data = (
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 1\nvn 0 0.6 0.8\n"
        b"f 1/1/1 2/1/1 3/1/2\nvn 1 0 0\nf 2//-3 4//-1 3//-2\n"
    )
    m = load_bytes(data, "n.obj")
    np.testing.assert_array_equal(
        m.vertex_attrs["vertex_normals"],
        np.array([(0, 0, 1), (0, 0, 1), (0, 0.6, 0.8), (1, 0, 0)], dtype=np.float32),
    )


@pytest.mark.parametrize(
    "faces",
    [
        b"f 1//1 2//1 3//1\nf 2 4 3\n",  # some corners have no normal
        b"f 1//1 2//1 3//1\nf 2//1 4//9 3//1\n",  # a reference past the vn lines
        b"f 1//1 2//1 3//1\nf 2//1 4//0 3//1\n",  # normal index 0
        b"f 1//1 2//1 3//1\nf 2//x 4//1 3//1\n",  # not a number
    ],
)
def test_obj_broken_normal_references_are_ignored(faces: bytes) -> None:
    m = load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 1\n" + faces, "n.obj")
    assert m.vertex_attrs == {} and m.n_faces == 2


def test_obj_normals_per_corner_that_disagree_are_not_vertex_normals() -> None:
    data = (
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 -1\nvn 0 -1 0\n"
        b"f 1//1 3//1 2//1\nf 1//2 2//2 4//2\n"
    )
    m = load_bytes(data, "hard.obj")
    assert m.vertex_attrs == {}
    assert m.n_vertices == 4


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "mesh.obj_zero_index"),  # OBJ is 1-based
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", "mesh.index_out_of_range"),  # past the end
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -4\n", "mesh.index_out_of_range"),  # too far back
        (b"v 0 0 0\nv 1 0 0\nf -1 -2 -3\nv 0 1 0\n", "mesh.index_out_of_range"),  # not read yet
        (b"v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "mesh.non_finite"),  # NaN
        (b"v 0 0 0\nv 1e999 0 0\nv 0 1 0\nf 1 2 3\n", "mesh.non_finite"),  # overflows float64
        (b"v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n", "mesh.non_finite"),  # overflows float32
        (b"", "mesh.empty"),  # empty file
        (b"# nothing here\n", "mesh.empty"),  # comments only
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", "mesh.no_faces"),  # points only
        (b"v 0 0\nv 1 0\nv 0 1\nf 1 2 3\n", "format.obj_bad_vertex"),  # two coordinates
        (b"v 0 0 zero\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "format.obj_bad_vertex"),  # not a number
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", "format.obj_bad_face"),  # two corners
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n", "format.obj_bad_face"),  # not an integer
    ],
)
def test_obj_errors(data: bytes, code: str) -> None:
    assert _code(data, "bad.obj") == code


def test_obj_index_error_detail_is_one_based() -> None:
    with pytest.raises(MeshError) as ei:
        load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n", "x.obj")
    assert ei.value.detail == {"min_index": 1, "max_index": 7, "n_vertices": 3, "line": 4}


# ------------------------------------------------------------------------------ hostile files
def _ply_header(fmt: str, nv: int, nf: int) -> bytes:
    return (
        f"ply\nformat {fmt} 1.0\nelement vertex {nv}\nproperty float x\nproperty float y\n"
        f"property float z\nelement face {nf}\nproperty list uchar int vertex_indices\n"
        "end_header\n"
    ).encode()


@pytest.mark.parametrize("fmt", ["binary_little_endian", "binary_big_endian", "ascii"])
def test_ply_declaring_four_billion_vertices_allocates_nothing(fmt: str) -> None:
    data = _ply_header(fmt, 4_000_000_000, 1) + b"\x00" * 64
    tracemalloc.start()
    try:
        code = _code(data, "huge.ply")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == "format.count_exceeds_size"
    assert peak < 16 << 20


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (_ply_header("binary_little_endian", 1000, 1) + b"\x00" * 100, "format.count_exceeds_size"),
        (
            _ply_header("ascii", 3, 1000) + b"0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
            "format.count_exceeds_size",
        ),
        (b"ply\nformat ascii 1.0\nelement vertex 3\n", "format.ply_bad_header"),  # no end_header
        (
            b"ply\nformat ascii 1.0\nelement vertex 3\nproperty quad x\nend_header\n",
            "format.ply_bad_header",
        ),  # unknown type
        (b"ply\nformat utf8 1.0\nelement vertex 0\nend_header\n", "format.ply_bad_header"),
        (b"ply\nformat ascii 1.0\nelement vertex -3\nend_header\n", "format.ply_bad_header"),
    ],
)
def test_ply_header_errors(data: bytes, code: str) -> None:
    assert _code(data, "x.ply") == code


def _binary_stl(n_declared: int, n_written: int, header: bytes = b"") -> bytes:
    tri = struct.pack("<12fH", 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0)
    return header.ljust(80, b" ") + struct.pack("<I", n_declared) + tri * n_written


def test_binary_stl_reads() -> None:
    for header in (b"", b"solid exported by a CAD program"):  # "solid" in a binary header
        m = load_bytes(_binary_stl(3, 3, header), "x.stl")
        assert (m.n_vertices, m.n_faces) == (9, 3)


@pytest.mark.parametrize(("declared", "written"), [(5, 3), (2, 3), (4_000_000_000, 3)])
@pytest.mark.parametrize("header", [b"", b"solid exported by a CAD program"])
def test_binary_stl_with_the_wrong_count(declared: int, written: int, header: bytes) -> None:
    assert _code(_binary_stl(declared, written, header), "x.stl") == "format.count_exceeds_size"


def test_ascii_stl_reads() -> None:
    import trimesh

    t = tetrahedron()
    text = trimesh.exchange.stl.export_stl_ascii(
        trimesh.Trimesh(np.asarray(t.V), np.asarray(t.F), process=False)
    ).encode()
    m = load_bytes(text, "t.stl")
    assert (m.n_vertices, m.n_faces) == (12, 4)
    assert run(m, "weld").mesh.n_vertices == 4


def test_off_reads_and_checks_its_counts() -> None:
    off = b"OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n"
    m = load_bytes(off, "t.off")
    np.testing.assert_array_equal(m.F, tetrahedron().F)
    assert _code(b"OFF\n400000 4 0\n0 0 0\n", "t.off") == "format.count_exceeds_size"
    assert _code(b"OFF\nfour four zero\n", "t.off") == "format.off_bad_header"


@pytest.mark.parametrize(
    "off",
    [
        # a comment after the counts, and after values
        b"OFF\n4 4 0 # counts\n0 0 0 # v0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1 # f0\n3 0 1 3\n"
        b"3 0 3 2\n3 1 2 3\n",
        # OFF is whitespace-separated: vertices need not be one per line
        b"OFF\n4 4 0\n0 0 0 1 0 0 0 1 0 0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n",
        b"OFF 4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3",
        # comment lines before the header
        b"# made by hand\n# twice\nOFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n"
        b"3 0 1 3\n3 0 3 2\n3 1 2 3\n",
        # colours on face lines: trimesh's path, comments blanked for it too
        b"OFF\n4 4 0 # c\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1 255 0 0\n3 0 1 3 255 0 0\n"
        b"3 0 3 2 0 0 0\n3 1 2 3 1 1 1 # x\n",
        # COFF (colours on vertex lines) with a comment line among the vertices
        b"COFF\n4 4 0\n0 0 0 9 9 9 255\n1 0 0 9 9 9 255\n# x\n0 1 0 9 9 9 255\n0 0 1 9 9 9 255\n"
        b"3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n",
    ],
)
def test_off_comments_and_line_breaks_do_not_change_the_mesh(off: bytes) -> None:
    m = load_bytes(off, "t.off")
    np.testing.assert_array_equal(m.F, tetrahedron().F)
    np.testing.assert_array_equal(m.V, tetrahedron().V)


@pytest.mark.parametrize(
    ("data", "name", "code"),
    [
        (TRI, "mesh.ply", "format.mismatch"),  # OBJ text named .ply
        (TRI, "mesh.stl", "format.mismatch"),  # OBJ text named .stl
        (TRI, "mesh.obj.zip", "format.mismatch"),  # OBJ text named .zip
        (TRI, "mesh.txt", "format.unsupported"),  # an extension we do not read
        (b"\x00\x01\x02 not a mesh", "x.obj", "format.mismatch"),
        (b"hello world", "", "format.unsupported"),
    ],
)
def test_format_detection_errors(data: bytes, name: str, code: str) -> None:
    assert _code(data, name) == code


def test_generic_extensions_are_read_by_content() -> None:
    for name in ("upload.bin", "upload.dat", "upload.mesh", "upload"):
        assert load_bytes(TRI, name).n_faces == 1


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes_are_refused(seed: int) -> None:
    data = np.random.default_rng(seed).bytes(2000)
    for name in ("", "x.bin", "x.obj", "x.ply", "x.glb"):
        assert _code(data, name) in ("format.unsupported", "format.mismatch"), name


def test_empty_file() -> None:
    for name in ("", "x.ply", "x.obj.gz"):
        assert _code(b"", name) == "mesh.empty"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("../evil.obj", "format.archive_unsafe_name"),
        ("a/../../evil.obj", "format.archive_unsafe_name"),
        ("/etc/evil.obj", "format.archive_unsafe_name"),
        ("dir\\evil.obj", "format.archive_unsafe_name"),
    ],
)
def test_zip_member_names(name: str, code: str) -> None:
    assert _code(_zip({name: TRI}), "x.zip") == code


def test_zip_errors() -> None:
    assert (
        _code(_zip({"a.obj": TRI, "b/c.ply": serialize(tetrahedron(), "ply")}), "x.zip")
        == "format.archive_multiple_meshes"
    )
    assert _code(_zip({"notes.txt": b"no mesh"}), "x.zip") == "format.archive_no_mesh"
    assert _code(b"PK\x03\x04" + b"\x00" * 200, "x.zip") == "format.archive_corrupt"
    many = {f"f{i}.txt": b"" for i in range(1001)} | {"m.obj": TRI}
    assert _code(_zip(many, zipfile.ZIP_STORED), "x.zip") == "format.archive_too_many_members"


def test_zip_bomb() -> None:
    data = _zip({"big.obj": b"# " + b"x" * (8 << 20)})
    assert len(data) < 100_000
    assert _code(data, "x.zip", max_expanded=1 << 20) == "format.archive_too_large"
    assert load_bytes(_zip({"a.obj": TRI}), "x.zip", max_expanded=len(TRI)).n_faces == 1


def test_gzip_bomb() -> None:
    data = gzip.compress(b"\x00" * (16 << 20), 9)
    assert len(data) < 100_000
    assert _code(data, "x.obj.gz", max_expanded=1 << 20) == "format.archive_too_large"
    # exactly at the limit is fine
    assert load_bytes(gzip.compress(TRI), "x.obj.gz", max_expanded=len(TRI)).n_faces == 1
    assert (
        _code(gzip.compress(TRI), "x.obj.gz", max_expanded=len(TRI) - 1)
        == "format.archive_too_large"
    )


def test_gzip_corrupt_or_truncated() -> None:
    data = gzip.compress(TRI * 10)
    assert _code(data[: len(data) // 2], "x.obj.gz") == "format.archive_corrupt"
    assert _code(data[:10] + b"\xff" * 20, "x.obj.gz") == "format.archive_corrupt"


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("arrays", "code"),
    [
        ({"V": np.zeros((3, 3))}, "format.npz_missing_arrays"),  # no F
        ({"V": np.eye(3), "F": np.array([[0.0, 1.0, 2.0]])}, "mesh.bad_indices"),  # float F
        ({"V": np.eye(3), "F": np.array([0, 1, 2])}, "mesh.bad_shape"),  # flat F
        ({"V": np.eye(3), "F": np.array([[0, 1, 3]])}, "mesh.index_out_of_range"),
        (
            {"V": np.eye(3), "F": np.array([[0, 1, 2]], dtype=object)},
            "format.parse_error",
        ),  # pickle
    ],
)
def test_npz_errors(arrays: dict, code: str) -> None:
    assert _code(_npz(**arrays), "x.npz") == code


def test_npz_with_attributes() -> None:
    data = _npz(
        V=np.eye(3),
        F=np.array([[0, 1, 2]]),
        **{"vertex.k": np.arange(3.0), "face.id": np.array([4])},
    )
    m = load_bytes(data, "x.npz")
    np.testing.assert_array_equal(m.vertex_attrs["k"], [0, 1, 2])
    np.testing.assert_array_equal(m.face_attrs["id"], [4])


# ------------------------------------------------------------------------------ sniffing
def test_sniff() -> None:
    t = tetrahedron()
    assert sniff(serialize(t, "ply")) == "ply"
    assert sniff(serialize(t, "glb")) == "glb"
    assert sniff(serialize(t, "stl")) == "stl"
    assert sniff(serialize(t, "obj")) == "obj"
    assert sniff(serialize(t, "npz")) == "zip"
    assert sniff(gzip.compress(b"x")) == "gz"
    assert sniff(b"OFF\n3 1 0\n") == "off"
    assert sniff(b'{"asset": {"version": "2.0"}}') == "gltf"
    assert sniff(b"solid x\nendsolid x\n") == "stl"
    assert sniff(b"o thing\nv 1 2 3\n") == "obj"
    assert sniff(b"\x00\x01garbage") is None


def test_shared_meshes_load_through_every_wrapper() -> None:
    raw = mesh_path("rx-cube.obj").read_bytes()
    for data, name in [
        (raw, "c.obj"),
        (gzip.compress(raw), "c.obj.gz"),
        (_zip({"c.obj": raw}), "c.zip"),
    ]:
        m = load_bytes(data, name)
        _same_mesh(m, load("rx-cube.obj"))
        assert m.source == name


# ------------------------------------------------------------------------------ PLY variants
ASCII_PLY = b"""ply
format ascii 1.0
comment quads, colours, normals, a vector and a face property
element vertex 5
property float x
property float y
property float z
property float nx
property float ny
property float nz
property uchar red
property uchar green
property uchar blue
property float quality
property float uv_0
property float uv_1
element face %d
property list uchar int vertex_indices
property int region
end_header
0 0 0 0 0 1 10 20 30 0.5 0 0
1 0 0 0 0 1 10 20 30 1.5 1 0
1 1 0 0 0 1 10 20 30 2.5 1 1
0 1 0 0 0 1 10 20 30 3.5 0 1
-1 0 0 0 0 1 10 20 30 4.5 -1 0
"""


def test_ascii_ply_with_properties() -> None:
    m = load_bytes(ASCII_PLY % 2 + b"3 0 1 2 7\n3 0 2 3 8\n", "a.ply")
    np.testing.assert_array_equal(m.F, [[0, 1, 2], [0, 2, 3]])
    np.testing.assert_array_equal(m.vertex_attrs["vertex_normals"], np.tile([0, 0, 1], (5, 1)))
    np.testing.assert_array_equal(m.vertex_attrs["vertex_colors"], np.tile([10, 20, 30], (5, 1)))
    np.testing.assert_array_equal(m.vertex_attrs["quality"], [0.5, 1.5, 2.5, 3.5, 4.5])
    np.testing.assert_array_equal(m.vertex_attrs["uv"][4], [-1, 0])
    np.testing.assert_array_equal(m.face_attrs["region"], [7, 8])


def test_ply_polygons_keep_the_mesh_and_vertex_properties() -> None:
    # a quad becomes two triangles, each with the quad's properties (as in binary PLY)
    m = load_bytes(ASCII_PLY % 2 + b"4 0 1 2 3 7\n3 0 3 4 8\n", "q.ply")
    assert m.n_faces == 3
    np.testing.assert_array_equal(m.face_attrs["region"], [7, 7, 8])
    assert run(m, "stats").reports["stats"]["area"] == pytest.approx(1.5)
    np.testing.assert_array_equal(m.vertex_attrs["quality"], [0.5, 1.5, 2.5, 3.5, 4.5])


def test_big_endian_ply() -> None:
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], ">f4")
    data = (
        b"ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty float x\n"
        b"property float y\nproperty float z\nelement face 1\n"
        b"property list uchar int vertex_indices\nend_header\n"
        + V.tobytes()
        + b"\x03"
        + np.array([0, 1, 2], ">i4").tobytes()
    )
    m = load_bytes(data, "be.ply")
    np.testing.assert_array_equal(m.V, V.astype(np.float32))
    np.testing.assert_array_equal(m.F, [[0, 1, 2]])


def test_ply_index_past_the_end_is_an_input_error() -> None:
    # trimesh itself trips over it while reading (format.parse_error); either way a 422
    code = _code(ASCII_PLY % 1 + b"3 0 1 9 7\n", "x.ply")
    assert code in ("mesh.index_out_of_range", "format.parse_error")


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (
            ASCII_PLY.replace(b"0 0 0 0 0 1", b"nan 0 0 0 0 1") % 1 + b"3 0 1 2 7\n",
            "mesh.non_finite",
        ),  # NaN position
        (
            ASCII_PLY.split(b"element face")[0]
            + b"end_header\n"
            + ASCII_PLY.split(b"end_header\n")[1],
            "mesh.no_faces",
        ),  # points only
    ],
)
def test_ply_mesh_errors(data: bytes, code: str) -> None:
    assert _code(data, "x.ply") == code


# ------------------------------------------------------------------------------ writer refusals
@pytest.mark.parametrize(
    ("fmt", "vertex", "face"),
    [
        ("ply", {"x": np.ones(4)}, {}),  # clashes with the position property
        ("ply", {"nx": np.ones(4), "vertex_normals": np.ones((4, 3))}, {}),  # clashes with normals
        ("ply", {}, {"vertex_indices": np.ones(4)}),  # clashes with the face list
        ("ply", {"my attr": np.ones(4)}, {}),  # a property name is one word
        ("ply", {"half": np.ones(4, np.float16)}, {}),  # no PLY type
        ("glb", {"vec5": np.ones((4, 5))}, {}),  # glTF vectors have at most 4 components
        ("glb", {"vertex_normals": np.ones((4, 2))}, {}),  # normals are 3-vectors
    ],
)
def test_attributes_a_format_cannot_write(fmt: str, vertex: dict, face: dict) -> None:
    m = tetrahedron().with_attrs(vertex=vertex, face=face)
    with pytest.raises(FormatError) as ei:
        serialize(m, fmt)
    assert ei.value.code == "format.unsupported_attribute"


def test_ply_attribute_names_cannot_clash_with_record_fields() -> None:
    fa = {"n": np.arange(4, dtype=np.int32), "i": np.arange(4.0), "a0": np.ones(4, np.uint8)}
    back = load_bytes(serialize(tetrahedron().with_attrs(face=fa), "ply"), "t.ply")
    np.testing.assert_array_equal(back.F, tetrahedron().F)
    for k, v in fa.items():
        np.testing.assert_array_equal(back.face_attrs[k], v)


# ------------------------------------------------------------------------------ fast paths
# Binary PLY, binary STL, GLB and OBJ are read by vectorized code of ours; each must give what
# the reference reader (trimesh, or our line-by-line OBJ reader) gives, and fall back to it for
# the shapes of file it does not handle.
def _same_read(a: TriMesh, b: TriMesh) -> None:
    """Same arrays and attributes, with the same dtypes (byte order aside)."""
    _same_mesh(a, b)
    assert list(a.vertex_attrs) == list(b.vertex_attrs)
    assert list(a.face_attrs) == list(b.face_attrs)
    for x, y in [*zip(a.vertex_attrs.values(), b.vertex_attrs.values(), strict=True)] + [
        *zip(a.face_attrs.values(), b.face_attrs.values(), strict=True)
    ]:
        assert x.dtype == y.dtype.newbyteorder("=") and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _owns_its_arrays(m: TriMesh) -> None:
    """No array is a view of the file's (read-only) bytes."""
    for a in [m.V, m.F, *m.vertex_attrs.values(), *m.face_attrs.values()]:
        assert np.asarray(a).flags.writeable and np.asarray(a).dtype.isnative


_PLY_TYPES = {"float": "f4", "double": "f8", "uchar": "u1", "char": "i1", "short": "i2"}
_PLY_TYPES |= {"ushort": "u2", "int": "i4", "uint": "u4"}
XYZ = [("float", "x"), ("float", "y"), ("float", "z")]


def _binary_ply(
    vertex: list[tuple[str, str]],
    k: int | list[int] = 3,
    face: list[tuple[str, str]] = (("int", "region"),),  # type: ignore[assignment]
    *,
    big: bool = False,
    count: str = "uchar",
    index: str = "int",
    name: str = "vertex_indices",
    face_first: bool = False,
) -> bytes:
    """A binary PLY of 7 vertices and 5 polygons of ``k`` corners (one ``k`` per polygon when a
    list), the properties filled with seeded random values."""
    rng = np.random.default_rng(3)
    e = ">" if big else "<"
    nv, ks = 7, [k] * 5 if isinstance(k, int) else k
    vrec = np.zeros(nv, [(n, e + _PLY_TYPES[t]) for t, n in vertex])
    for t, n in vertex:
        vrec[n] = rng.integers(0, 100, nv) if _PLY_TYPES[t][0] in "iu" else rng.random(nv)
    rows = []
    for kk in ks:
        fdt = [("c", e + _PLY_TYPES[count]), ("i", e + _PLY_TYPES[index], (kk,))]
        rec = np.zeros(1, fdt + [(n, e + _PLY_TYPES[t]) for t, n in face])
        rec["c"], rec["i"] = kk, rng.integers(0, nv, (1, kk))
        for _, n in face:
            rec[n] = rng.integers(0, 100)
        rows.append(rec.tobytes())
    fmt = "big" if big else "little"
    ve = f"element vertex {nv}\n" + "".join(f"property {t} {n}\n" for t, n in vertex)
    fe = f"element face {len(ks)}\nproperty list {count} {index} {name}\n"
    fe += "".join(f"property {t} {n}\n" for t, n in face)
    header = f"ply\nformat binary_{fmt}_endian 1.0\ncomment test\n"
    header += (fe + ve if face_first else ve + fe) + "end_header\n"
    body = [b"".join(rows), vrec.tobytes()] if face_first else [vrec.tobytes(), b"".join(rows)]
    return header.encode() + b"".join(body)


NORMALS = [("float", "nx"), ("float", "ny"), ("float", "nz")]
COLORS = [("uchar", "red"), ("uchar", "green"), ("uchar", "blue"), ("uchar", "alpha")]


@pytest.mark.parametrize(
    "data",
    [
        _binary_ply(XYZ),
        _binary_ply(XYZ + NORMALS + COLORS + [("double", "q_0"), ("double", "q_1")], big=True),
        _binary_ply([("double", "x"), ("double", "y"), ("double", "z")], count="int", index="uint"),
        _binary_ply(XYZ + [("float", "quality")], k=4),  # quads: (0 1 2), then (2 3 0)
        _binary_ply(XYZ, k=5, index="ushort"),  # fans
        _binary_ply(XYZ, k=6, big=True),
        _binary_ply(XYZ, face_first=True),
        _binary_ply(XYZ, name="vertex_index"),
        _binary_ply(XYZ, face=NORMALS + [("int", "a_0"), ("int", "a_1"), ("char", "b_1")]),
        _binary_ply([("int", "x"), ("int", "y"), ("int", "z"), ("short", "w_0"), ("short", "w_2")]),
        _binary_ply([("float", "x"), ("uchar", "flag"), ("float", "y"), ("float", "z")]),
    ],
)
def test_binary_ply_is_read_as_trimesh_reads_it(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same mesh as trimesh reads; where trimesh drops the properties of polygons (one value
    per polygon, several triangles each), every triangle takes its polygon's. The polygons here
    have random corners: with ear clipping of non-convex polygons turned off (trimesh fans them
    all), the triangles are trimesh's."""
    from workers.engine.io import _parse_trimesh, ply, polygons

    def none_flagged(V: np.ndarray, idx: np.ndarray, k: np.ndarray) -> np.ndarray:
        return np.zeros(k.shape[0], dtype=bool)

    monkeypatch.setattr(polygons, "nonconvex", none_flagged)
    monkeypatch.setattr(ply, "nonconvex", none_flagged)

    assert ply.read_binary(data) is not None
    fast = load_bytes(data, "x.ply")
    ref = _parse_trimesh(data, "ply", dtype="float32")
    if fast.n_faces > 5:  # 5 polygons, triangulated
        region = fast.face_attrs["region"]
        of_polygon = (
            np.tile(np.arange(5), 2)
            if fast.n_faces == 10
            else np.arange(fast.n_faces) // (fast.n_faces // 5)
        )
        assert np.unique(region[of_polygon == 0]).shape == (1,)
        np.testing.assert_array_equal(
            region, region[np.unique(of_polygon, return_index=True)[1]][of_polygon]
        )
        fast = TriMesh(fast.V, fast.F, fast.vertex_attrs, {})
    _same_read(fast, ref)
    _owns_its_arrays(load_bytes(data, "x.ply"))


@pytest.mark.parametrize(
    "data",
    [
        _binary_ply(XYZ, k=[3, 4, 3, 3, 3], face_first=True),  # several sizes, faces first
        _binary_ply(XYZ, k=[4, 3, 5, 3, 3])[:-1],  # several sizes, a byte short
        _binary_ply(XYZ, k=[4, 3, 5, 3, 3]) + b"\x00",  # several sizes, a byte over
        _binary_ply(XYZ)[:-1],  # a byte short
        _binary_ply(XYZ) + b"\x00",  # a byte over
        _binary_ply(XYZ).replace(b"end_header", b"element edge 0\nend_header"),
        _binary_ply(XYZ).replace(b"vertex_indices", b"corners"),
        _binary_ply(XYZ).replace(b"comment test\n", b""),  # no comment: still read
    ],
)
def test_binary_ply_of_other_shapes_goes_to_trimesh(data: bytes) -> None:
    from workers.engine.io import ply

    expect_fast = b"comment" not in data
    assert (ply.read_binary(data) is not None) == expect_fast


@pytest.mark.parametrize(
    ("ks", "kw"),
    [
        ([3, 4, 3, 3, 3], {}),
        ([4, 3, 7, 3, 5], {"big": True, "count": "int", "index": "ushort"}),
        ([6, 3, 3, 4, 3], {"face": NORMALS, "count": "ushort"}),
    ],
)
def test_binary_ply_polygons_of_several_sizes_are_fanned(ks: list[int], kw: Any) -> None:
    # trimesh cannot read these (its binary reader needs one row size): read by us
    from workers.engine.io import ply

    data = _binary_ply(XYZ, k=ks, **kw)
    body = data[data.index(b"end_header\n") + len(b"end_header\n") :]
    e = ">" if kw.get("big") else "<"
    c = np.dtype(e + _PLY_TYPES[kw.get("count", "uchar")])
    i = np.dtype(e + _PLY_TYPES[kw.get("index", "int")])
    props = kw.get("face", [("int", "region")])
    rest = np.dtype([(n, e + _PLY_TYPES[t]) for t, n in props])
    at, expected, values = 7 * 3 * 4, [], []
    for k in ks:  # the reference: one row at a time
        assert int(np.frombuffer(body, c, 1, at)[0]) == k
        idx = np.frombuffer(body, i, k, at + c.itemsize).astype(np.int64)
        expected += [[idx[0], idx[j], idx[j + 1]] for j in range(1, k - 1)]
        values += [np.frombuffer(body, rest, 1, at + c.itemsize + k * i.itemsize)] * (k - 2)
        at += c.itemsize + k * i.itemsize + rest.itemsize
    assert ply.read_binary(data) is not None
    mesh = load_bytes(data, "x.ply")
    np.testing.assert_array_equal(mesh.F, np.array(expected))
    assert mesh.n_vertices == 7
    # every triangle takes its polygon's properties
    rows = np.concatenate(values)
    if "nx" in rest.names:
        want = np.stack([rows["nx"], rows["ny"], rows["nz"]], axis=1)
        np.testing.assert_array_equal(mesh.face_attrs["face_normals"], want)
    else:
        np.testing.assert_array_equal(mesh.face_attrs["region"], rows["region"])


def test_ply_rows_are_packed_as_the_header_says(rich: TriMesh) -> None:
    data = serialize(rich, "ply")
    body = data[data.index(b"end_header\n") + len(b"end_header\n") :]
    n, m = rich.n_vertices, rich.n_faces
    vrow = np.dtype([("p", "<f4", (3,)), ("n", "<f4", (3,)), ("k", "<f4")])
    frow = np.dtype([("c", "u1"), ("i", "<i4", (3,)), ("n", "<f4", (3,))])
    vertices = np.frombuffer(body, vrow, count=n)
    faces = np.frombuffer(body, frow, count=m, offset=n * vrow.itemsize)
    np.testing.assert_array_equal(vertices["p"], rich.V)
    np.testing.assert_array_equal(vertices["n"], rich.vertex_attrs["vertex_normals"])
    np.testing.assert_array_equal(vertices["k"], rich.vertex_attrs["gaussian_curvature"])
    assert (faces["c"] == 3).all()
    np.testing.assert_array_equal(faces["i"], rich.F)
    np.testing.assert_array_equal(faces["n"], rich.face_attrs["face_normals"])


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_files_written_in_pieces_are_the_same_bytes(rich: TriMesh, fmt: str, tmp_path, monkeypatch):
    """Binary PLY, STL and GLB come out in pieces that are written as they are made; the pieces
    in any size make the same file, each stays valid after the next (a job's store and
    ``save_path`` write them one by one), and a half-written file is never left behind."""
    from workers.engine.io import _records, save_path, serialize_chunks, stl

    whole = serialize(rich, fmt)
    monkeypatch.setattr(_records, "CHUNK_ROWS", 7)
    monkeypatch.setattr(stl, "_CHUNK", 5)
    pieces = list(serialize_chunks(rich, fmt))
    assert b"".join(pieces) == whole
    if fmt in ("ply", "stl", "glb"):
        assert len(pieces) > 3
    if fmt in ("ply", "stl"):  # rows packed a few at a time: every row of the file is in one
        assert max(memoryview(p).nbytes for p in pieces[1:]) <= 7 * 50
    save_path(rich, tmp_path / f"m.{fmt}")
    assert (tmp_path / f"m.{fmt}").read_bytes() == whole


def test_save_path_removes_a_half_written_file(rich: TriMesh, tmp_path, monkeypatch) -> None:
    from workers.engine.io import save_path, stl

    def broken(V: Any, F: Any) -> Any:
        yield b"header"
        raise MemoryError

    monkeypatch.setattr(stl, "stl_chunks", broken)
    with pytest.raises(MemoryError):
        save_path(rich, tmp_path / "m.stl")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stl_is_written_and_read_as_trimesh_does(rich: TriMesh, dtype: str) -> None:
    import trimesh

    from workers.engine.io import _parse_trimesh

    V = np.array(rich.V, dtype=dtype)  # a copy: the mesh shares its positions
    V[:3] = V[0]  # a degenerate face or two: zero normals
    m = TriMesh.from_arrays(V, rich.F, dtype=dtype)
    data = serialize(m, "stl")
    assert data == trimesh.exchange.stl.export_stl(trimesh.Trimesh(V, rich.F, process=False))
    fast = load_bytes(data, "x.stl")
    _same_read(fast, _parse_trimesh(data, "stl", dtype="float32"))
    _owns_its_arrays(fast)


def test_glb_we_write_loads_in_trimesh(rich: TriMesh) -> None:
    import json

    import trimesh

    colors = np.arange(4 * rich.n_vertices).reshape(-1, 4) % 256
    m = rich.with_attrs(vertex={"vertex_colors": colors.astype(np.uint8)})
    data = serialize(m, "glb")
    (tm,) = trimesh.load_scene(io.BytesIO(data), file_type="glb", process=False).geometry.values()
    np.testing.assert_array_equal(tm.vertices, rich.V)
    np.testing.assert_array_equal(tm.faces, rich.F)
    np.testing.assert_allclose(tm.vertex_normals, rich.vertex_attrs["vertex_normals"], atol=1e-6)
    np.testing.assert_array_equal(tm.visual.vertex_colors, colors)
    np.testing.assert_array_equal(
        tm.vertex_attributes["_gaussian_curvature"].ravel(),
        rich.vertex_attrs["gaussian_curvature"],
    )
    tree = json.loads(data[20 : 20 + int.from_bytes(data[12:16], "little")])
    position = tree["accessors"][tree["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]
    assert position["min"] == np.asarray(rich.V).min(axis=0).tolist()
    assert position["max"] == np.asarray(rich.V).max(axis=0).tolist()


def _trimesh_glb(m: TriMesh, normals: np.ndarray | None = None, **kw: object) -> bytes:
    import trimesh

    tm = trimesh.Trimesh(np.asarray(m.V), np.asarray(m.F), vertex_normals=normals, **kw)
    return trimesh.exchange.gltf.export_glb(
        trimesh.Scene(tm), include_normals=normals is not None, unitize_normals=False
    )


def _glb_cases() -> list[bytes]:
    rng = np.random.default_rng(5)
    m = load("rx-sphere3.obj")
    n = m.n_vertices
    raw = rng.normal(size=(n, 3)) * 3  # not unit length; zero, NaN and infinite rows too
    raw[0], raw[1, 1], raw[2, 0] = 0, np.nan, np.inf
    rgb = rng.integers(0, 256, (n, 3)).astype(np.uint8)
    ours = m.with_attrs(
        vertex={"vertex_colors": rgb, "uv": rng.random((n, 2)), "frame": rng.random((n, 2, 2))}
    )
    return [
        serialize(ours, "glb"),
        _trimesh_glb(m, raw, process=False),
        _trimesh_glb(m, None, process=False, vertex_colors=rgb),
    ]


@pytest.mark.parametrize("data", _glb_cases())
def test_glb_fast_path_reads_as_the_general_reader(data: bytes) -> None:
    from workers.engine.io import glb, gltf

    assert glb.read_simple(data) is not None
    fast = load_bytes(data, "x.glb")
    s = gltf.read_scene(data)
    slow = TriMesh.from_arrays(s.V, s.F, dtype="float32", vertex_attrs=s.vertex_attrs)
    a, b = (
        fast.vertex_attrs.pop("vertex_normals", None),
        slow.vertex_attrs.pop("vertex_normals", None),
    )
    _same_read(fast, slow)
    if a is not None or b is not None:
        np.testing.assert_array_equal(a, b)  # NaN where the file's normal has NaN or inf
    _owns_its_arrays(fast)


@pytest.mark.parametrize(
    "name", ["Duck.glb", "BoxTextured.glb", "CesiumMilkTruck.glb", "2CylinderEngine.glb"]
)
def test_glb_scenes_are_read_as_trimesh_reads_them(name: str) -> None:
    """The general reader against trimesh's on real scenes (node hierarchies, several meshes
    and primitives): the same vertices (as a set: the parts may come in another order), the
    same faces' area and signed volume, normals of unit length."""
    import trimesh

    from tests.conftest import ASSETS

    data = (ASSETS / name).read_bytes()
    ours = load_bytes(data, name)
    ref = trimesh.load_scene(io.BytesIO(data), file_type="glb", process=False).to_mesh()
    assert (ours.n_vertices, ours.n_faces) == (len(ref.vertices), len(ref.faces))
    V = np.asarray(ours.V, dtype=np.float64)
    F = np.asarray(ours.F)
    cross = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    assert 0.5 * np.linalg.norm(cross, axis=1).sum() == pytest.approx(ref.area, rel=1e-6)

    def signed_volume(V: np.ndarray, F: np.ndarray) -> float:
        return float(np.einsum("ij,ij->i", V[F[:, 0]], np.cross(V[F[:, 1]], V[F[:, 2]])).sum())

    assert signed_volume(V, F) == pytest.approx(
        signed_volume(np.asarray(ref.vertices), np.asarray(ref.faces)), rel=1e-6
    )
    np.testing.assert_allclose(V.min(axis=0), ref.vertices.min(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(V.max(axis=0), ref.vertices.max(axis=0), rtol=1e-6, atol=1e-6)
    N = np.asarray(ours.vertex_attrs["vertex_normals"], dtype=np.float64)
    np.testing.assert_allclose(np.linalg.norm(N, axis=1), 1.0, atol=1e-5)


def test_glb_with_a_node_transform_is_read_by_the_general_reader() -> None:
    import trimesh

    from workers.engine.io import glb

    t = tetrahedron()
    scene = trimesh.Scene()
    scene.add_geometry(
        trimesh.Trimesh(np.asarray(t.V), np.asarray(t.F), process=False),
        transform=trimesh.transformations.translation_matrix([1, 2, 3]),
    )
    data = trimesh.exchange.gltf.export_glb(scene)
    assert glb.read_simple(data) is None
    np.testing.assert_allclose(load_bytes(data, "t.glb").V, np.asarray(t.V) + [1, 2, 3])


def _reference_obj(V: np.ndarray, F: np.ndarray, N: np.ndarray | None) -> bytes:
    """The OBJ writer as it was, a line at a time."""
    lines = ["# written by tessera"]
    lines += ["v" + " %.9g" * V.shape[1] % tuple(r) for r in V.astype(np.float64).tolist()]
    if N is not None:
        lines += ["vn" + " %.9g" * N.shape[1] % tuple(r) for r in N.astype(np.float64).tolist()]
    for a, b, c in (F + 1).tolist():
        lines.append(f"f {a}//{a} {b}//{b} {c}//{c}" if N is not None else f"f {a} {b} {c}")
    return ("\n".join(lines) + "\n").encode()


def test_obj_numbers_are_written_as_printf_writes_them() -> None:
    rng = np.random.default_rng(11)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-5, 9.9999999999e-5, 1e-4, 0.5, 2.5, 1e8]
    special += [123456789.5, 999999999.5, 1e9, 1e-300, 5e-324, 1.7976931348623157e308, 1 / 3]
    values = np.concatenate(
        [
            rng.normal(size=30000) * 10.0 ** rng.integers(-12, 12, 30000),
            rng.random(30000).astype(np.float32),  # float32 positions, as meshes have
            np.round(rng.normal(size=30000) * 1000, 3),  # short decimals: trailing zeros
            rng.integers(-(10**9), 10**9, 30000) / 8.0,
            special,
        ]
    )
    values = values[: values.shape[0] // 3 * 3].reshape(-1, 3)
    F = rng.integers(0, values.shape[0], (2000, 3))
    from workers.engine.io.obj import write_obj

    for N in (None, values[::-1]):
        assert write_obj(values, F, N) == _reference_obj(values, F, N)
    ints = np.concatenate([rng.integers(-(10**11), 10**11, 5000), np.arange(-1001, 1001)])
    from workers.engine.io._text import format_ints

    text = format_ints(ints)
    assert [bytes(r[r != 0]) for r in text] == [b"%d" % v for v in ints.tolist()]


OBJ_BODY = (
    b"# a cube corner\nmtllib a.mtl\no thing\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
    b"v 0.5 0.5 1e-3\nvt 0 0\nvt 1 0\nvn 0 0 1\nvn 0 0.6 0.8\ng group\nusemtl red\n"
    b"f 1//1 2//1 3//1\nf 1//1 3//1 4//1\nvn 1 0 0\nf -5//-3 -3//-1 -1//-2\n"
)
OBJ_FACES = [
    (b"f 1 2 3\nf 1 3 4 5\nf 2 3 4 5 1\n", True),  # plain, polygons
    (b"f 1/1 2/2 3/1\nf 1/2 3/1 4/2\n", True),  # a/b
    (b"f 1/1/1 2/2/1 3/1/2\nf 1/2/2 3/1/1 4/2/2\n", True),  # a/b/c
    (b"f 1//1 2//2 3//1\nf 1 3//1 4/2\nf 5/1/ 1// 2/1\n", True),  # mixed forms
    (b"f -1 -2 -3\nf 5//-1 4//-2 1//1\n", True),  # negative indices
    (b"f 1 2\n", True),  # too few corners
    (b"f 1 2 0\n", True),  # index 0
    (b"f 1 2 6\n", True),  # past the end
    (b"f 1/x 2 3\n", False),  # not an integer
    (b"f /1 2 3\n", False),  # no vertex field
    (b"f 1 2 3 # comment\n", False),
]


def _obj_variants() -> list[tuple[bytes, bool]]:
    out = []
    for faces, fast in OBJ_FACES:
        d = OBJ_BODY + faces
        out += [(d, fast), (d.replace(b"\n", b"\r\n"), fast), (d.replace(b"\n", b" \t\n"), fast)]
        out += [(d.rstrip(b"\n"), fast), (d.replace(b" ", b"  "), fast)]
        out += [(d.replace(b"\nv ", b"\n  v\t").replace(b"\nf ", b"\n\tf  "), fast)]
    out += [(OBJ_BODY.replace(b"v 0 0 0", b"v 0 0 0 1"), False)]  # a w coordinate
    out += [(OBJ_BODY.replace(b"vn 1 0 0", b"vn 1 0"), False)]  # a short normal
    out += [(OBJ_BODY.replace(b"v 1 0 0", b"v 1 0 zero"), False)]
    out += [(OBJ_BODY.replace(b"\n", b"\r", 2), False)]  # old Mac line ends
    return out


def _outcome(read: Any, data: bytes) -> Any:
    try:
        return read(data)
    except (FormatError, MeshError) as exc:
        return exc.code, exc.detail


def _same_outcome(a: Any, b: Any) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


@pytest.mark.parametrize(("data", "fast"), _obj_variants())
def test_obj_buffer_scan_reads_what_the_line_scan_reads(
    data: bytes, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.engine.io import _obj_scan, obj

    scan = _obj_scan.scan_arrays(data)
    assert (scan is not None) == fast
    lines = _outcome(obj._scan_lines, data)
    if scan is not None and isinstance(lines, obj.Scan):
        _same_outcome(scan, lines)
    result = _outcome(obj.read_obj, data)
    monkeypatch.setattr(obj, "scan_arrays", lambda _: None)
    _same_outcome(result, _outcome(obj.read_obj, data))


def test_obj_buffer_scan_reads_large_files_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from workers.engine.io import _obj_scan, obj

    m = run(load("rx-sphere3.obj"), "vertex_normals").mesh
    data = serialize(m, "obj")
    whole = _obj_scan.scan_arrays(data)
    monkeypatch.setattr(_obj_scan, "_BLOCK", 100)  # a block every few lines
    blocks = _obj_scan.scan_arrays(data)
    assert whole is not None and blocks is not None
    for a, b, c in zip(whole, blocks, obj._scan_lines(data), strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    back = load_bytes(data, "m.obj")
    _same_mesh(back, m)
    np.testing.assert_array_equal(
        back.vertex_attrs["vertex_normals"], m.vertex_attrs["vertex_normals"]
    )


def test_npz_members_that_are_not_arrays_are_ignored() -> None:
    buf = io.BytesIO()
    np.savez(buf, V=np.eye(3), F=np.array([[0, 1, 2]]), **{"vertex.k": np.arange(3.0)})
    with zipfile.ZipFile(buf, "a") as z:
        z.writestr("README.txt", b"made by hand")
    m = load_bytes(buf.getvalue(), "m.npz")
    assert (m.n_vertices, m.n_faces) == (3, 1)
    np.testing.assert_array_equal(m.vertex_attrs["k"], np.arange(3.0))


def test_attributes_come_back_as_written() -> None:
    """GLB keeps a leading underscore of a name, OBJ the normal of a vertex no face uses, and
    PLY refuses 64-bit integers it cannot hold rather than wrapping them."""
    V = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]])
    F = np.array([[0, 1, 2]])
    normals = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 1], [1, 0, 0]], dtype=np.float32)
    m = TriMesh.from_arrays(V, F, vertex_attrs={"vertex_normals": normals})
    back = load_bytes(serialize(m, "obj"), "m.obj")
    np.testing.assert_array_equal(back.vertex_attrs["vertex_normals"], normals)
    m = TriMesh(m.V, m.F, {"_u": np.arange(4, dtype=np.float32)}, {})
    back = load_bytes(serialize(m, "glb"), "m.glb")
    assert list(back.vertex_attrs) == ["_u"]
    fits = TriMesh(m.V, m.F, {"k": np.array([1, 2, 3, -(2**31)], dtype=np.int64)}, {})
    np.testing.assert_array_equal(
        load_bytes(serialize(fits, "ply"), "m.ply").vertex_attrs["k"], fits.vertex_attrs["k"]
    )
    wide = TriMesh(m.V, m.F, {"k": np.array([1, 2, 3, 2**40], dtype=np.int64)}, {})
    with pytest.raises(FormatError) as e:
        serialize(wide, "ply")
    assert e.value.code == "format.unsupported_attribute"


@pytest.mark.parametrize(
    "text",
    [
        b"v\t0 0 0\nv\t1 0 0\nv\t0 1 0\nf\t1 2 3\n",  # tabs after the tags
        b"  v 0 0 0\n  v 1 0 0\n  v 0 1 0\n  f 1 2 3\n",  # indented lines
        b"o x\rv 0 0 0\rv 1 0 0\rv 0 1 0\rf 1 2 3\r",  # lone carriage returns
        b"vt 0 0\n" * 200_000 + b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",  # first v past 1 MB
        b"v 0 0 0 # origin\nv 1 0 0\nv 0 1 0\nf 1 2 3 # the face\n",  # comments after values
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 \\\n 2 3\n",  # a line continued by a backslash
    ],
)
def test_obj_files_of_every_common_shape_are_recognized_and_read(text: bytes) -> None:
    assert sniff(text) == "obj"
    m = load_bytes(text, "a.obj")
    np.testing.assert_array_equal(m.V, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(m.F, [[0, 1, 2]])


@pytest.mark.parametrize(
    ("vertex", "face", "code"),
    [
        # would come back as one vector "a", as vertex_colors, as one uv of three columns
        ({"a_0": np.zeros(4), "a_1": np.zeros(4)}, {}, "format.unsupported_attribute"),
        (
            {"red": np.zeros(4), "green": np.zeros(4), "blue": np.zeros(4)},
            {},
            "format.unsupported_attribute",
        ),
        ({"uv": np.zeros((4, 2)), "uv_2": np.zeros(4)}, {}, "format.unsupported_attribute"),
        # normals and colours under the other element's name: PLY cannot hold them
        ({"face_normals": np.zeros((4, 3))}, {}, "spec.attribute_not_supported"),
        ({}, {"vertex_colors": np.zeros((1, 3), dtype=np.uint8)}, "spec.attribute_not_supported"),
    ],
)
def test_ply_refuses_names_it_would_read_back_as_other_attributes(vertex, face, code) -> None:
    m = TriMesh(np.eye(4, 3, dtype=np.float32), np.array([[0, 1, 2]], np.int32), vertex, face)
    with pytest.raises((FormatError, SpecError)) as e:
        serialize(m, "ply", attributes=[*vertex, *face])
    assert e.value.code == code
    if code == "spec.attribute_not_supported":  # not asked for by name: left out
        back = load_bytes(serialize(m, "ply"), "m.ply")
        assert not back.vertex_attrs and not back.face_attrs


def test_ply_column_attributes_come_back_as_scalars() -> None:
    k = np.arange(4, dtype=np.float32)[:, None]
    m = TriMesh(np.eye(4, 3, dtype=np.float32), np.array([[0, 1, 2]], np.int32), {"k": k}, {})
    back = load_bytes(serialize(m, "ply"), "m.ply")
    np.testing.assert_array_equal(back.vertex_attrs["k"], k[:, 0])


@pytest.mark.parametrize("tail", [b"", b"\n"])
def test_binary_ply_with_per_corner_texcoords_as_meshlab_writes(tail: bytes) -> None:
    """A second list in the face element (MeshLab's ``texcoord``, u v per corner) becomes a face
    attribute; a line break after the last row is no data."""
    V = tetrahedron().V.astype("<f4")
    F = np.asarray(tetrahedron().F)
    uv = np.arange(6 * len(F), dtype="<f4").reshape(-1, 6)
    header = (
        b"ply\nformat binary_little_endian 1.0\ncomment TextureFile t.png\nelement vertex 4\n"
        b"property float x\nproperty float y\nproperty float z\nelement face 4\n"
        b"property list uchar int vertex_indices\nproperty list uchar float texcoord\nend_header\n"
    )
    rows = b"".join(
        bytes([3]) + f.astype("<i4").tobytes() + bytes([6]) + t.tobytes()
        for f, t in zip(F, uv, strict=True)
    )
    m = load_bytes(header + V.tobytes() + rows + tail, "m.ply")
    np.testing.assert_array_equal(m.F, F)
    np.testing.assert_array_equal(m.face_attrs["texcoord"], uv)


def test_glb_triangle_fan_is_read_as_triangles() -> None:
    import json

    V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [-1, 1, 0]], "<f4")
    idx = np.arange(5, dtype="<u4")
    binary = V.tobytes() + idx.tobytes()
    tree = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "mode": 6}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 5, "type": "VEC3"},
            {"bufferView": 1, "componentType": 5125, "count": 5, "type": "SCALAR"},
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 60},
            {"buffer": 0, "byteOffset": 60, "byteLength": 20},
        ],
        "buffers": [{"byteLength": 80}],
    }
    j = json.dumps(tree).encode()
    j += b" " * (-len(j) % 4)
    body = struct.pack("<2I", len(j), 0x4E4F534A) + j + struct.pack("<2I", 80, 0x004E4942) + binary
    data = struct.pack("<3I", 0x46546C67, 2, 12 + len(body)) + body
    m = load_bytes(data, "fan.glb")
    np.testing.assert_array_equal(m.F, [[0, 1, 2], [0, 2, 3], [0, 3, 4]])
    np.testing.assert_array_equal(m.V, V)


def test_ply_attribute_named_like_the_header_end_round_trips() -> None:
    m = TriMesh(
        np.eye(4, 3, dtype=np.float32),
        np.array([[0, 1, 2]], np.int32),
        {"end_header": np.arange(4, dtype=np.float32)},
        {},
    )
    back = load_bytes(serialize(m, "ply"), "m.ply")
    np.testing.assert_array_equal(back.vertex_attrs["end_header"], np.arange(4))


def test_binary_ply_second_list_of_varying_length_is_refused() -> None:
    header = (
        b"ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\n"
        b"property float y\nproperty float z\nelement face 2\n"
        b"property list uchar int vertex_indices\nproperty list uint float tc\nend_header\n"
    )
    rows = (
        bytes([3])
        + np.array([0, 1, 2], "<i4").tobytes()
        + np.array([2], "<u4").tobytes()
        + np.array([3, 4], "<f4").tobytes()
        + bytes([3])
        + np.array([0, 1, 3], "<i4").tobytes()
        + np.array([1], "<u4").tobytes()
        + np.array([1], "<f4").tobytes()
    )
    data = header + np.eye(4, 3, dtype="<f4").tobytes() + rows
    assert _code(data, "m.ply") == "format.unsupported_feature"


def test_glb_accessor_fields_of_the_wrong_type_are_format_errors() -> None:
    from tests.reliability.test_bad_input import glb

    bad = glb({"bufferView": 0, "componentType": [5126], "count": 1, "type": "VEC3"})
    assert _code(bad, "a.glb") == "format.parse_error"
    bad = glb({"bufferView": 0, "componentType": 5126, "count": 1, "type": {"a": 1}})
    assert _code(bad, "a.glb") == "format.parse_error"
