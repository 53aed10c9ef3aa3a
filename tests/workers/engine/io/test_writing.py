"""Writing: round trips through every output format, the writers' refusals, and the bytes each
writer produces."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.engine.io.common import (
    _owns_its_arrays,
    _reference_obj,
    _same_mesh,
    _same_read,
    errors,
    validate,
)
from tests.workers.engine.shapes import load, random_rotation, run, tetrahedron
from workers.engine import FormatError, SpecError, TriMesh
from workers.engine.io import OUTPUT_FORMATS, load_bytes, serialize, sniff


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


@pytest.mark.parametrize("fmt", ["objzip", "npz"])
def test_archives_are_the_same_bytes_at_any_time(rich: TriMesh, fmt: str, monkeypatch) -> None:
    """A zip's members carry a time stamp: the writers give them one fixed time, so the same
    mesh makes the same file whenever it is written (and the two halves of a file written in
    pieces agree)."""
    import time
    import zipfile

    first = serialize(rich, fmt)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 86400 * 400 + 3)
    assert serialize(rich, fmt) == first
    members = zipfile.ZipFile(io.BytesIO(first)).infolist()
    assert members and {m.date_time for m in members} == {(1980, 1, 1, 0, 0, 0)}


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


def test_ply_attribute_named_like_the_header_end_round_trips() -> None:
    m = TriMesh(
        np.eye(4, 3, dtype=np.float32),
        np.array([[0, 1, 2]], np.int32),
        {"end_header": np.arange(4, dtype=np.float32)},
        {},
    )
    back = load_bytes(serialize(m, "ply"), "m.ply")
    np.testing.assert_array_equal(back.vertex_attrs["end_header"], np.arange(4))


def _inf_normal() -> TriMesh:
    m = load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "x.obj")
    N = np.array([[np.inf, 0, 0], [0, 0, 1], [0, 0, 1]], np.float32)
    return m.with_attrs(vertex={"vertex_normals": N})


@pytest.mark.parametrize(
    "make",
    [
        # an unused vertex: vertex_normals gives it a zero normal
        lambda: load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 5 5 5\nf 1 2 3\n", "x.obj"),
        # a face of no area: zero normals
        lambda: load_bytes(b"v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n", "x.obj"),
        _inf_normal,
    ],
)
def test_a_glb_of_zero_or_non_finite_normals_has_unit_normals(make, tmp_path: Path) -> None:
    """vertex_normals leaves an unused vertex, or one of faces of no area, a zero normal; the
    plain GLB writer wrote it as it was (ACCESSOR_VECTOR3_NON_UNIT, or ACCESSOR_INVALID_FLOAT
    for inf), where the textured writer repairs it: now both take a face's normal or +z."""
    mesh = make()
    if "vertex_normals" not in mesh.vertex_attrs:
        mesh = run(mesh, "vertex_normals").mesh
    data = serialize(mesh, "glb")
    assert errors(validate(data, tmp_path)) == []
    N = load_bytes(data, "x.glb").vertex_attrs["vertex_normals"]
    np.testing.assert_allclose(np.linalg.norm(N, axis=1), 1.0, rtol=1e-6)
    good = np.isfinite(mesh.vertex_attrs["vertex_normals"]).all(1) & (
        np.linalg.norm(mesh.vertex_attrs["vertex_normals"], axis=1) > 0
    )
    assert not good.all()
    np.testing.assert_array_equal(N[good], mesh.vertex_attrs["vertex_normals"][good])


@pytest.mark.parametrize(
    ("obj", "dropped"),
    [
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 1e300 0 0\nf 1//1 2//1 3//1\n", "normals"),
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 1e300 0\nf 1/1 2/1 3/1\n", "texture coordinates"),
    ],
)
def test_obj_values_beyond_float32_are_dropped_as_non_finite_ones_are(
    obj: bytes, dropped: str
) -> None:
    """A ``vn`` or ``vt`` value finite as float64 but not as float32 was kept as inf (with a
    RuntimeWarning from the cast); NaN values are dropped and reported: so are these."""
    mesh = load_bytes(obj, "x.obj")
    assert not mesh.corner_attrs and "vertex_normals" not in mesh.vertex_attrs
    assert mesh.dropped.get(dropped)


def test_glb_colours_of_16_bit_or_wide_integers_are_scaled_or_clipped_not_wrapped() -> None:
    """A PLY's ``ushort`` colours (0..65535) were cast to bytes in the GLB: 300 became 44 and
    32768 became 0. Now 16-bit channels are scaled to 0..255 and other integers clipped."""
    m = load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "x.obj")
    cases = {
        np.uint16: ([[65535, 32768, 300]] * 3, [255, 128, 1, 255]),
        np.int64: ([[300, -5, 200]] * 3, [255, 0, 200, 255]),
        np.uint8: ([[255, 7, 0]] * 3, [255, 7, 0, 255]),
    }
    for dtype, (colors, want) in cases.items():
        mesh = m.with_attrs(vertex={"vertex_colors": np.array(colors, dtype)})
        back = load_bytes(serialize(mesh, "glb"), "x.glb").vertex_attrs["vertex_colors"]
        assert back.tolist() == [want] * 3, dtype
