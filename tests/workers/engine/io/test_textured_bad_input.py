"""Textured assets from a careless or hostile user: malformed glTF material libraries, texture
coordinates of every legal and illegal shape, OBJ/MTL and PLY texture coordinates gone wrong,
and meshes whose corner values or materials cannot be written. Each gets a typed error with a
code, or is read right (and what is not carried is counted), never a raw Python exception."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import trimesh

from tests.conftest import ASSETS
from tests.workers.engine.io.common import GltfBuilder, _zip
from workers.engine import FormatError, MeshError, TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.materials import Materials

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


def _textured(uv: np.ndarray | None = None, component: int = 5126, **accessor: Any) -> GltfBuilder:
    """One textured triangle: TEXCOORD_0, a material reading texture 0, its image embedded."""
    b = GltfBuilder()
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    position = b.accessor(V, 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    if uv is None:
        uv = np.array([[0, 0], [1, 0], [0, 1]], np.float32)
    texcoord = b.accessor(uv, component, "VEC2", **accessor)
    b.primitive(attributes={"POSITION": position, "TEXCOORD_0": texcoord}, material=0)
    b.tree["images"] = [{"bufferView": b.view(PNG), "mimeType": "image/png"}]
    b.tree["textures"] = [{"source": 0, "sampler": 0}]
    b.tree["samplers"] = [{}]
    b.tree["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    return b


def _texture_ref(b: GltfBuilder) -> dict[str, Any]:
    return b.tree["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]


def _prim(b: GltfBuilder) -> dict[str, Any]:
    return b.tree["meshes"][0]["primitives"][0]


BAD_GLTF: list[tuple[str, Callable[[GltfBuilder], Any], str]] = [
    ("materials a string", lambda b: b.tree.update(materials="x"), "format.parse_error"),
    ("textures of strings", lambda b: b.tree.update(textures=["x"]), "format.parse_error"),
    ("texture source -1", lambda b: b.tree.update(textures=[{"source": -1}]), "format.parse_error"),
    ("texture source 7", lambda b: b.tree.update(textures=[{"source": 7}]), "format.parse_error"),
    (
        "texture source text",
        lambda b: b.tree["textures"][0].update(source="0"),
        "format.parse_error",
    ),
    ("sampler 3", lambda b: b.tree["textures"][0].update(sampler=3), "format.parse_error"),
    ("texture index 9", lambda b: _texture_ref(b).update(index=9), "format.parse_error"),
    ("texCoord a list", lambda b: _texture_ref(b).update(texCoord=[1]), "format.parse_error"),
    (
        "KHR_texture_transform junk",
        lambda b: _texture_ref(b).update(
            extensions={"KHR_texture_transform": {"offset": "a", "texCoord": [3]}}
        ),
        "format.parse_error",
    ),
    (
        "texture extensions a string",
        lambda b: _texture_ref(b).update(extensions="junk"),
        "format.parse_error",
    ),
    (
        "material extensions a list",
        lambda b: b.tree["materials"][0].update(extensions=["a"]),
        "format.parse_error",
    ),
    (
        "pbrMetallicRoughness a string",
        lambda b: b.tree["materials"][0].update(pbrMetallicRoughness="abc"),
        "format.parse_error",
    ),
    (
        "baseColorFactor a string",
        lambda b: b.tree["materials"][0]["pbrMetallicRoughness"].update(baseColorFactor="abcd"),
        "format.parse_error",
    ),
    (
        "material name a number",
        lambda b: b.tree["materials"][0].update(name=5),
        "format.parse_error",
    ),
    (
        "NaN in a material",
        lambda b: b.tree["materials"][0].update(emissiveFactor=[float("nan"), 0, 0]),
        "format.parse_error",
    ),
    (
        "image mimeType an object",
        lambda b: b.tree["images"][0].update(mimeType={"a": 1}),
        "format.parse_error",
    ),
    ("image name a list", lambda b: b.tree["images"][0].update(name=["a"]), "format.parse_error"),
    ("image uri a number", lambda b: b.tree.update(images=[{"uri": 5}]), "format.parse_error"),
    (
        "image bufferView 99",
        lambda b: b.tree["images"][0].update(bufferView=99),
        "format.parse_error",
    ),
    (
        "image bufferView 1.0",
        lambda b: b.tree["images"][0].update(bufferView=1.0),
        "format.parse_error",
    ),
    (
        "data uri not base64",
        lambda b: b.tree.update(images=[{"uri": "data:image/png,abc"}]),
        "format.parse_error",
    ),
    (
        "data uri of bad base64",
        lambda b: b.tree.update(images=[{"uri": "data:image/png;base64,@@@"}]),
        "format.parse_error",
    ),
    ("primitive material 5", lambda b: _prim(b).update(material=5), "format.parse_error"),
    ("primitive material 0.0", lambda b: _prim(b).update(material=0.0), "format.parse_error"),
    ("primitive material -1", lambda b: _prim(b).update(material=-1), "format.parse_error"),
    (
        "extensionsRequired of objects",
        lambda b: b.tree.update(extensionsRequired=[{"a": 1}]),
        "format.gltf_extension",
    ),
]


@pytest.mark.parametrize(("label", "change", "code"), BAD_GLTF, ids=[c[0] for c in BAD_GLTF])
def test_malformed_gltf_library_is_a_typed_error(label, change, code):
    b = _textured()
    load_bytes(b.glb(), "a.glb")  # the file before the change reads
    change(b)
    with pytest.raises(FormatError) as e:
        load_bytes(b.glb(), "a.glb")
    assert e.value.code == code, label


@pytest.mark.parametrize(
    ("component", "values", "scale"),
    [
        (5121, [[0, 0], [255, 0], [0, 51]], 255.0),  # normalized unsigned byte
        (5123, [[0, 0], [65535, 0], [0, 13107]], 65535.0),  # normalized unsigned short
        (5120, [[0, 0], [127, 0], [0, -127]], 127.0),  # normalized byte
        (5122, [[0, 0], [32767, 0], [0, -32767]], 32767.0),  # normalized short
    ],
)
def test_normalized_texcoords_are_read_as_fractions(component, values, scale):
    dtype = {5121: np.uint8, 5123: np.uint16, 5120: np.int8, 5122: np.int16}[component]
    raw = np.array(values, dtype)
    m = load_bytes(_textured(raw, component, normalized=True).glb(), "a.glb")
    uv = np.asarray(m.corner_attrs["uv"]).reshape(-1, 2)
    expected = raw.astype(np.float64)[np.asarray(m.F).reshape(-1)] / scale
    np.testing.assert_allclose(uv, expected, atol=1e-6)


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b.tree["accessors"][1].update(type="SCALAR"),  # not 2-vectors
        lambda b: b.tree["accessors"][1].update(type="MAT4"),  # more than its view holds
        lambda b: b.tree["accessors"][1].update(count=2),  # fewer than the vertices
        lambda b: b.tree["accessors"][1].update(count=10**12),  # a huge count
        lambda b: b.tree["accessors"][1].update(componentType=999),
        lambda b: _prim(b)["attributes"].update(TEXCOORD_0=55),  # no such accessor
        lambda b: _prim(b)["attributes"].update(TEXCOORD_0="1"),
    ],
)
def test_bad_texcoord_accessor_is_a_typed_error(change):
    b = _textured()
    change(b)
    with pytest.raises(FormatError):
        load_bytes(b.glb(), "a.glb")


def test_texcoord_set_with_leading_zero_is_not_another_set():
    b = _textured()
    _prim(b)["attributes"]["TEXCOORD_01"] = 1  # no set glTF defines: not TEXCOORD_1
    m = load_bytes(b.glb(), "a.glb")
    assert set(m.corner_attrs) == {"uv"}
    assert m.dropped.get("texture coordinate sets") == 1


@pytest.mark.parametrize("name", ["..", ".", "..."])
def test_image_named_by_dots_gets_a_file_name_and_round_trips_as_objzip(name):
    b = _textured()
    b.tree["images"][0]["name"] = name
    m = load_bytes(b.glb(), "a.glb")
    (file,) = m.materials.files
    assert file.strip(".") and "/" not in file
    back = load_bytes(serialize(m, "objzip"), "a.zip")
    assert list(back.materials.files.values()) == [PNG]


def test_gltf_image_outside_the_zip_is_not_read():
    b = _textured()
    b.tree["images"] = [{"uri": "../../etc/passwd"}]
    tree = dict(b.tree, buffers=[{"byteLength": len(b.binary), "uri": "a.bin"}])
    import json

    z = _zip({"d/a.gltf": json.dumps(tree).encode(), "d/a.bin": b.binary, "passwd": b"secret"})
    m = load_bytes(z, "a.zip")
    assert m.materials.files == {}
    assert m.dropped["images not sent with the file"] == 1


OBJ = (
    b"mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvn 0 0 1\n"
    b"usemtl a\nf 1/1/1 2/2/1 3/3/1\n"
)


def _obj_zip(obj: bytes = OBJ, mtl: bytes = b"newmtl a\nmap_Kd t.png\n") -> bytes:
    return _zip({"d/x.obj": obj, "d/m.mtl": mtl, "d/t.png": PNG})


@pytest.mark.parametrize(
    "mtl",
    [
        b"newmtl a\nmap_Kd ../../etc/passwd\n",
        b"newmtl a\nmap_Kd /etc/passwd\n",
        b"newmtl a\nmap_Kd ..\n",
        b"newmtl a\nmap_Kd\nmap_Kd -s 1 1\n",
        b"newmtl a\nmap_Kd -o x y z t.png\nKd a b c\nd nan\nNs inf\nKe 1\n",
        bytes(range(256)) * 50,  # binary garbage
    ],
)
def test_bad_mtl_reads_and_writes_back(mtl):
    m = load_bytes(_obj_zip(mtl=mtl), "a.zip")
    assert "uv" in m.corner_attrs
    assert all(data == PNG for data in m.materials.files.values())  # nothing from outside
    for fmt, name in (("objzip", "a.zip"), ("glb", "a.glb")):
        back = load_bytes(serialize(m, fmt), name)
        assert back.F.shape == m.F.shape


@pytest.mark.parametrize(
    "face",
    [
        b"f 1/999/1 2/2/1 3/3/1",
        b"f 1/0/1 2/2/1 3/3/1",
        b"f 1/-999/1 2/2/1 3/3/1",
        b"f 1/x/1 2/2/1 3/3/1",
    ],
)
def test_obj_bad_vt_reference_is_counted_not_carried(face):
    m = load_bytes(OBJ.replace(b"f 1/1/1 2/2/1 3/3/1", face), "a.obj")
    assert "uv" not in m.corner_attrs
    assert m.dropped["texture coordinates"] > 0


@pytest.mark.parametrize("vt", [b"vt 1\n", b"vt nan 0\n", b"vt inf 0\n"])
def test_obj_bad_vt_is_counted_not_carried(vt):
    m = load_bytes(OBJ.replace(b"vt 1 0\n", vt), "a.obj")
    assert "uv" not in m.corner_attrs
    assert m.dropped["texture coordinates"] > 0


def test_usemtl_without_a_name_reads():
    m = load_bytes(_obj_zip(obj=OBJ.replace(b"usemtl a", b"usemtl")), "a.zip")
    assert m.F.shape == (1, 3)


def _ply(
    faces: list[bytes], face_props: bytes = b"", vertex_props: bytes = b"", rows=None
) -> bytes:
    rows = rows or [b"0 0 0", b"1 0 0", b"1 1 0", b"0 1 0"]
    return (
        b"ply\nformat ascii 1.0\n"
        + f"element vertex {len(rows)}\n".encode()
        + b"property float x\nproperty float y\nproperty float z\n"
        + vertex_props
        + f"element face {len(faces)}\n".encode()
        + b"property list uchar int vertex_indices\n"
        + face_props
        + b"end_header\n"
        + b"\n".join(rows + faces)
        + b"\n"
    )


TEXCOORD = b"property list uchar float texcoord\n"


def test_ply_texcoord_of_polygons_of_several_sizes_is_read():
    data = _ply([b"4 0 1 2 3 8 0 0 .1 0 .1 .1 0 .1", b"3 0 2 3 6 5 5 6 6 7 7"], TEXCOORD)
    m = load_bytes(data, "a.ply")
    uv = np.asarray(m.corner_attrs["uv"])
    corner_uv = {0: (0, 0), 1: (0.1, 0), 2: (0.1, 0.1), 3: (0, 0.1)}  # the quad's
    F = np.asarray(m.F)
    for t in range(F.shape[0] - 1):
        for c in range(3):
            np.testing.assert_allclose(uv[t, c], corner_uv[int(F[t, c])], atol=1e-6)
    np.testing.assert_allclose(uv[-1], [[5, 5], [6, 6], [7, 7]])


def test_ply_texcoord_lists_of_wrong_lengths_are_counted():
    data = _ply([b"3 0 1 2 6 0 0 1 0 0 1", b"3 0 2 3 4 0 0 1 0"], TEXCOORD)
    m = load_bytes(data, "a.ply")
    assert "uv" not in m.corner_attrs
    assert m.dropped["texture coordinates"] == 1


@pytest.mark.parametrize(
    "data",
    [
        _ply([b"3 0 1 2 6 nan 0 1 0 0 1"], TEXCOORD),
        _ply(
            [b"3 0 1 2"],
            vertex_props=b"property float s\nproperty float t\n",
            rows=[b"0 0 0 nan 0", b"1 0 0 1 0", b"0 1 0 0 inf"],
        ),
    ],
)
def test_ply_non_finite_texcoords_are_counted_not_carried(data):
    m = load_bytes(data, "a.ply")
    assert "uv" not in m.corner_attrs
    assert m.dropped["texture coordinates"] == 1


V4 = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
F2 = np.array([[0, 1, 2], [1, 3, 2]])


def _library(**kw: Any) -> Materials:
    ref = {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}
    d: dict[str, Any] = {
        "names": ["a"],
        "gltf": {"materials": [ref], "textures": [{"source": 0}], "images": [{"uri": "t.png"}]},
        "files": {"t.png": PNG},
    }
    d.update(kw)
    return Materials(**d)


def _with(materials: Materials, material: Any = (0, 0)) -> TriMesh:
    uv = np.zeros((2, 3, 2), np.float32)
    return TriMesh(
        V4,
        F2,
        face_attrs={"material": np.asarray(material, np.int32)},
        corner_attrs={"uv": uv},
        materials=materials,
    )


OUTPUTS = [("glb", {}), ("glb", {"compression": "draco"}), ("objzip", {}), ("obj", {})]


@pytest.mark.parametrize(
    "mesh",
    [
        _with(_library(gltf={"materials": [{"a": {1, 2}}]})),  # a set
        _with(_library(gltf={"materials": [{"a": b"x"}]})),  # bytes
        _with(_library(gltf={"materials": [{"b": float("nan")}]})),
        _with(_library(gltf={"materials": "x"})),
        _with(_library(gltf={"materials": [{"pbrMetallicRoughness": "x"}]})),
        _with(_library(gltf={"materials": [{"pbrMetallicRoughness": {"baseColorFactor": "ab"}}]})),
        _with(_library(), material=(0, 5)),  # a face naming a material the library lacks
        _with(_library(), material=(0, -1)),
    ],
)
@pytest.mark.parametrize(("fmt", "kw"), OUTPUTS)
def test_unwritable_materials_are_a_typed_error(mesh, fmt, kw):
    with pytest.raises(MeshError) as e:
        serialize(mesh, fmt, **kw)
    assert e.value.code == "mesh.materials_invalid"


@pytest.mark.parametrize("compression", ["none", "draco"])
def test_non_finite_corner_uv_is_not_written_to_gltf(compression):
    uv = np.zeros((2, 3, 2), np.float32)
    uv[0, 0, 0] = np.nan
    uv[1, 1, 1] = np.inf
    with pytest.raises(MeshError) as e:
        serialize(TriMesh(V4, F2, corner_attrs={"uv": uv}), "glb", compression=compression)
    assert e.value.code == "mesh.non_finite"


@pytest.mark.parametrize("fmt", ["obj", "objzip", "ply", "npz"])
@pytest.mark.parametrize(
    ("name", "width", "bad"),
    [
        ("uv", 2, np.nan),  # as text: "nan"
        ("uv", 2, -np.inf),
        ("normal", 3, np.nan),
    ],
)
def test_non_finite_corner_values_are_not_written_to_obj_or_ply(fmt, name, width, bad):
    values = np.ones((2, 3, width), np.float32)
    values[1, 2, 0] = bad
    mesh = TriMesh(V4, F2, corner_attrs={name: values})
    if fmt == "ply" and name == "normal" or fmt == "npz":
        serialize(mesh, fmt)  # PLY does not hold corner normals; NPZ holds any float
        return
    with pytest.raises(MeshError) as e:
        serialize(mesh, fmt)
    assert e.value.code == "mesh.non_finite"
    assert e.value.detail["attribute"] == name


def test_finite_corner_values_are_written_to_obj_and_ply():
    uv = np.full((2, 3, 2), 0.25, np.float32)
    for fmt in ("obj", "ply"):
        back = load_bytes(serialize(TriMesh(V4, F2, corner_attrs={"uv": uv}), fmt), f"a.{fmt}")
        np.testing.assert_array_equal(back.corner_attrs["uv"], uv)


@pytest.mark.parametrize(
    "files",
    [
        {"../../evil.png": PNG},
        {"/etc/passwd": PNG},
        {"a/b c\nnewmtl x.png": PNG},
        {"..": PNG},
        {"a/../../b.png": PNG},
    ],
)
def test_objzip_writes_images_at_safe_paths_only(files):
    (name,) = files
    ref = {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}
    gltf = {"materials": [ref], "textures": [{"source": 0}], "images": [{"uri": name}]}
    data = serialize(_with(_library(files=files, gltf=gltf)), "objzip")
    members = zipfile.ZipFile(io.BytesIO(data)).namelist()
    for member in members:
        assert ".." not in member.split("/") and not member.startswith("/")
        assert all(ch.isprintable() and not ch.isspace() for ch in member)
    mtl = zipfile.ZipFile(io.BytesIO(data)).read("mesh.mtl").decode()
    assert mtl.count("newmtl") == 1
    back = load_bytes(data, "a.zip")
    assert back.F.shape == (2, 3)


@pytest.mark.parametrize(
    "F", [np.array([[0, 1, 2]]), np.array([[0, 0, 1], [2, 2, 2]])], ids=["one face", "degenerate"]
)
def test_draco_of_tiny_or_degenerate_meshes_is_readable(F):
    uv = np.zeros((F.shape[0], 3, 2), np.float32)
    for m in (TriMesh(V4, F), TriMesh(V4, F, corner_attrs={"uv": uv})):
        data = serialize(m, "glb", compression="draco")
        back = load_bytes(data, "a.glb")
        assert back.F.shape[0] == F.shape[0]
        trimesh.load(io.BytesIO(data), file_type="glb", force="mesh")


@pytest.mark.parametrize(
    "asset", sorted(p.name for p in [*ASSETS.glob("*.glb"), *ASSETS.glob("*.zip")])
)
def test_objzip_round_trip_of_shared_assets(asset):
    m = load_bytes((ASSETS / asset).read_bytes(), asset)
    back = load_bytes(serialize(m, "objzip"), "a.zip")
    assert back.F.shape == m.F.shape
    assert back.materials is not None and len(back.materials) == len(m.materials)
    assert sorted(back.materials.files.values()) == sorted(m.materials.files.values())
    from workers.engine.io.mtl import library_names

    # each face keeps its material, by name (the OBJ numbers them in the order it uses them)
    words, back_words = library_names(m.materials), back.materials.names
    assert [words[i] for i in np.asarray(m.face_attrs["material"])] == [
        back_words[i] for i in np.asarray(back.face_attrs["material"])
    ]
    np.testing.assert_array_equal(np.asarray(back.F), np.asarray(m.F))
    if "uv" in m.corner_attrs:
        np.testing.assert_allclose(
            np.asarray(back.corner_attrs["uv"]), np.asarray(m.corner_attrs["uv"]), atol=1e-6
        )
    if "normal" in m.corner_attrs:  # read back per corner, or per vertex where no edge is hard
        normal = back.corner_attrs.get("normal")
        if normal is None:
            normal = np.asarray(back.vertex_attrs["vertex_normals"])[np.asarray(back.F)]
        np.testing.assert_allclose(
            np.asarray(normal), np.asarray(m.corner_attrs["normal"]), atol=1e-5
        )
