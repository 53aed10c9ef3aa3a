"""Reading: wrapped inputs (archives, gzip), the OBJ parser, hostile and mislabelled files,
sniffing, PLY variants, and our fast readers against trimesh's."""

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
from tests.workers.engine.io.common import (
    _PLY_TYPES,
    ASCII_PLY,
    COLORS,
    NORMALS,
    TRI,
    XYZ,
    _binary_ply,
    _binary_stl,
    _code,
    _glb_cases,
    _npz,
    _obj_variants,
    _outcome,
    _owns_its_arrays,
    _ply_header,
    _same_mesh,
    _same_outcome,
    _same_read,
    _zip,
)
from tests.workers.engine.shapes import load, run, tetrahedron
from workers.engine import MeshError, TriMesh
from workers.engine.io import FILE_EXTENSIONS, OUTPUT_FORMATS, load_bytes, serialize, sniff


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
            f"folder/model.{FILE_EXTENSIONS[fmt]}": serialize(rich, fmt),
            "readme.txt": b"hello",
            f"__MACOSX/folder/._model.{FILE_EXTENSIONS[fmt]}": b"\x00\x05\x16\x07",
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


def _interleaved_obj(n: int) -> bytes:
    """``n`` vertices on a circle, each ``v`` line followed by its ``vn`` and ``vt`` lines (as
    MeshLab writes them), then a fan of ``f a/b/c`` triangles with a comment and a ``usemtl``
    line among them."""
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    lines = []
    for i, a in enumerate(t.tolist()):
        lines += [f"v {np.cos(a):.6f} {np.sin(a):.6f} {i}", f"vn 0 0 {i + 1}", f"vt {i} 0.5"]
    for i in range(2, n):
        lines += [f"f 1/1/1 {i}/{i}/{i} {i + 1}/{i + 1}/{i + 1}"]
        if i == n // 2:
            lines += ["# half way", "usemtl other"]
    return ("\n".join(lines) + "\n").encode()


def test_obj_lines_of_kinds_that_alternate_are_parsed_once_per_kind(monkeypatch) -> None:
    """``v``, ``vn`` and ``vt`` lines that alternate (a run of one line each) are read on the
    fast path with one number-parser call per kind, not one per line, and as the line reader
    reads them."""
    from workers.engine.io import _obj_scan, obj

    data = _interleaved_obj(60)
    calls: list[int] = []
    parse = _obj_scan.parse_floats
    monkeypatch.setattr(_obj_scan, "parse_floats", lambda text: calls.append(1) or parse(text))
    scan = _obj_scan.scan_arrays(data)
    assert scan is not None
    assert len(calls) == 3  # v, vn, vt
    _same_outcome(scan, obj._scan_lines(data))
    np.testing.assert_array_equal(scan.V[:, 2], np.arange(60))
    np.testing.assert_array_equal(scan.normals[:, 2], np.arange(1, 61))
    np.testing.assert_array_equal(scan.texcoords[:, 0], np.arange(60))
    got = obj.read_obj_mesh(data)
    monkeypatch.setattr(obj, "scan_arrays", lambda _: None)
    _same_outcome(got, obj.read_obj_mesh(data))


@pytest.mark.parametrize(
    "normals",
    [
        b"vn 0 0 1 1\nvn 0 1\nvn 1 0 0\n",  # 9 numbers on 3 lines, not 3 on each
        b"vn 0 0 1 1\nv 9 9 9\nvn 0 1\nvn 1 0 0\n",
    ],
)
def test_obj_normal_lines_are_checked_one_by_one(normals: bytes, monkeypatch) -> None:
    """A ``vn`` line without three numbers sends the file to the line reader (which drops the
    normals), even when the lines' numbers add up to three per line."""
    from workers.engine.io import _obj_scan, obj

    data = b"v 0 0 0\nv 1 0 0\nv 0 1 0\n" + normals + b"f 1//1 2//2 3//3\n"
    assert _obj_scan.scan_arrays(data) is None
    got = obj.read_obj_mesh(data)
    assert got.vertex_normals is None and got.normal is None
    monkeypatch.setattr(obj, "scan_arrays", lambda _: None)
    _same_outcome(got, obj.read_obj_mesh(data))


def test_npz_members_that_are_not_arrays_are_ignored() -> None:
    buf = io.BytesIO()
    np.savez(buf, V=np.eye(3), F=np.array([[0, 1, 2]]), **{"vertex.k": np.arange(3.0)})
    with zipfile.ZipFile(buf, "a") as z:
        z.writestr("README.txt", b"made by hand")
    m = load_bytes(buf.getvalue(), "m.npz")
    assert (m.n_vertices, m.n_faces) == (3, 1)
    np.testing.assert_array_equal(m.vertex_attrs["k"], np.arange(3.0))


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


@pytest.mark.parametrize("tail", [b"", b"\n"])
def test_binary_ply_with_per_corner_texcoords_as_meshlab_writes(tail: bytes) -> None:
    """A second list in the face element (MeshLab's ``texcoord``, u v per corner) becomes the
    corner attribute ``uv``; a line break after the last row is no data."""
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
    np.testing.assert_array_equal(m.corner_attrs["uv"], uv.reshape(-1, 3, 2))
    assert "texcoord" not in m.face_attrs


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
