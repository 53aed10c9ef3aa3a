"""OBJ with its material library and textures, and PLY texture coordinates: what a textured asset
carries (corner ``uv`` and ``normal``, the faces' ``material``, the MTL and its images) is read,
written back and read by others."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ASSETS
from workers.engine.io import load_bytes, obj, serialize
from workers.engine.materials import Materials
from workers.engine.mesh import TriMesh


def _members(data: bytes) -> dict[str, bytes]:
    z = zipfile.ZipFile(io.BytesIO(data))
    return {n: z.read(n) for n in z.namelist()}


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture(scope="module")
def fuze_members() -> dict[str, bytes]:
    return _members((ASSETS / "fuze.zip").read_bytes())


@pytest.fixture(scope="module")
def fuze() -> TriMesh:
    return load_bytes((ASSETS / "fuze.zip").read_bytes(), "fuze.zip")


def _reference_corners(text: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The file's triangles with each corner's vt and vn values, a line at a time (triangles
    only, 1-based positive references: what fuze.obj holds)."""
    vt, vn, faces, uv, nor = [], [], [], [], []
    for line in text.decode().splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "vt":
            vt.append([float(x) for x in w[1:3]])
        elif w[0] == "vn":
            vn.append([float(x) for x in w[1:4]])
        elif w[0] == "f":
            refs = [[int(x) for x in c.split("/")] for c in w[1:]]
            assert len(refs) == 3
            faces.append([r[0] - 1 for r in refs])
            uv.append([vt[r[1] - 1] for r in refs])
            nor.append([vn[r[2] - 1] for r in refs])
    return np.array(faces), np.array(uv), np.array(nor)


def test_fuze_is_read_with_its_corners_material_library_and_texture(fuze, fuze_members) -> None:
    F, uv, normal = _reference_corners(fuze_members["fuze.obj"])
    np.testing.assert_array_equal(fuze.F, F)
    np.testing.assert_allclose(fuze.corner_attrs["uv"], uv, rtol=1e-6)
    # one normal per vertex in the file: the vertex normals, not a second copy per corner
    np.testing.assert_allclose(fuze.vertex_attrs["vertex_normals"][F], normal, rtol=1e-6)
    assert set(fuze.corner_attrs) == {"uv"}
    assert fuze.corner_attrs["uv"].shape == (fuze.n_faces, 3, 2)
    # the texture atlas has seams: some vertex has two different UVs
    per_vertex = {}
    for v, t in zip(F.ravel().tolist(), uv.reshape(-1, 2).tolist(), strict=True):
        per_vertex.setdefault(v, set()).add(tuple(t))
    assert any(len(s) > 1 for s in per_vertex.values())
    m = fuze.materials
    assert m is not None and m.names == ["material_0"]
    np.testing.assert_array_equal(fuze.face_attrs["material"], np.zeros(fuze.n_faces))
    assert m.mtl == fuze_members["fuze.obj.mtl"].decode()
    assert m.files == {"fuze_uv.jpg": fuze_members["fuze_uv.jpg"]}
    material = m.gltf["materials"][0]
    pbr = material["pbrMetallicRoughness"]
    texture = m.gltf["textures"][pbr["baseColorTexture"]["index"]]
    assert m.gltf["images"][texture["source"]]["uri"] == "fuze_uv.jpg"
    assert pbr["baseColorFactor"] == [1.0, 1.0, 1.0, 1.0]  # Kd 1 1 1; MeshLab's "Tr 1": opaque
    assert fuze.dropped == {}
    fuze.check()


def test_fuze_reads_on_the_fast_path_as_line_by_line(fuze_members, monkeypatch) -> None:
    from workers.engine.io import _obj_scan, obj

    data = fuze_members["fuze.obj"]
    fast = _obj_scan.scan_arrays(data)
    assert fast is not None and fast.texcoords is not None and fast.mtl_names == [b"material_0"]
    for a, b in zip(fast, obj._scan_lines(data), strict=True):
        np.testing.assert_array_equal(a, b)
    got = obj.read_obj_mesh(data)
    monkeypatch.setattr(obj, "scan_arrays", lambda _: None)
    slow = obj.read_obj_mesh(data)
    for a, b in zip(got, slow, strict=True):
        np.testing.assert_array_equal(a, b)


def test_obj_zip_round_trip_keeps_faces_corners_library_and_images(fuze, fuze_members) -> None:
    data = serialize(fuze, "objzip")
    members = _members(data)
    assert set(members) == {"mesh.obj", "mesh.mtl", "fuze_uv.jpg"}
    assert members["mesh.mtl"] == fuze_members["fuze.obj.mtl"]  # written back unchanged
    assert members["fuze_uv.jpg"] == fuze_members["fuze_uv.jpg"]
    text = members["mesh.obj"]
    assert b"mtllib mesh.mtl\n" in text and text.count(b"usemtl material_0\n") == 1
    assert text.count(b"\nvt ") == len(np.unique(fuze.corner_attrs["uv"].reshape(-1, 2), axis=0))
    back = load_bytes(data, "back.zip")
    assert back.dropped == {}
    np.testing.assert_array_equal(back.F, fuze.F)
    np.testing.assert_array_equal(back.V, fuze.V)
    np.testing.assert_array_equal(back.corner_attrs["uv"], fuze.corner_attrs["uv"])
    np.testing.assert_array_equal(
        back.vertex_attrs["vertex_normals"], fuze.vertex_attrs["vertex_normals"]
    )
    np.testing.assert_array_equal(back.face_attrs["material"], fuze.face_attrs["material"])
    assert back.materials.names == fuze.materials.names
    assert back.materials.mtl == fuze.materials.mtl
    assert back.materials.files == fuze.materials.files
    assert back.materials.gltf == fuze.materials.gltf


def test_trimesh_reads_our_obj_zip_with_its_texture(fuze, tmp_path: Path) -> None:
    import trimesh

    for name, data in _members(serialize(fuze, "objzip")).items():
        (tmp_path / name).write_bytes(data)
    t = trimesh.load(tmp_path / "mesh.obj", process=False)
    assert isinstance(t.visual, trimesh.visual.texture.TextureVisuals)
    assert t.visual.uv is not None and t.visual.uv.shape == (len(t.vertices), 2)
    assert len(t.faces) == fuze.n_faces
    image = t.visual.material.image
    assert image is not None and image.size[0] > 0  # the JPEG found through the MTL
    # trimesh splits vertices at seams: each face corner's UV is still the one we wrote
    ours = np.asarray(fuze.corner_attrs["uv"]).reshape(-1, 2)
    theirs = np.asarray(t.visual.uv)[np.asarray(t.faces)].reshape(-1, 2)
    np.testing.assert_allclose(theirs, ours, atol=1e-6)


CONCAVE = (
    b"v 0 0 0\nv 4 0 0\nv 4 1 0\nv 1 1 0\nv 1 4 0\nv 0 4 0\n"
    # vt listed in reverse, so a texture index is never the vertex index
    b"vt 0 4\nvt 1 4\nvt 1 1\nvt 4 1\nvt 4 0\nvt 0 0\n"
    b"vn 0 0 1\n"
)


def test_a_concave_polygon_keeps_its_corners_through_ear_clipping() -> None:
    """An L-shaped hexagon: a fan from its first corner would cover area outside it. Each vt is
    the vertex's own x y, so every triangle corner must carry its vertex's position as UV."""
    data = CONCAVE + b"f 4/3/1 5/2/1 6/1/1 1/6/1 2/5/1 3/4/1\n"
    m = load_bytes(data, "l.obj")
    V, F = np.asarray(m.V), np.asarray(m.F)
    assert m.n_faces == 4
    np.testing.assert_array_equal(m.corner_attrs["uv"], V[F][:, :, :2])
    np.testing.assert_array_equal(m.vertex_attrs["vertex_normals"], np.tile([0, 0, 1.0], (6, 1)))
    e1, e2 = V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]]
    area = 0.5 * np.cross(e1, e2)[:, 2]
    assert bool((area > 0).all()) and area.sum() == pytest.approx(7.0)  # the L, not its hull
    assert m.dropped == {}
    back = load_bytes(serialize(m, "obj"), "back.obj")
    np.testing.assert_array_equal(back.corner_attrs["uv"], m.corner_attrs["uv"])


@pytest.mark.parametrize("reader", ["scan", "lines"])
def test_corners_without_a_texture_reference_get_zeros_and_are_counted(reader, monkeypatch):
    """Faces with vt keep theirs, the corners without one get (0, 0) (what the glTF reader
    gives a primitive without the set), and the read report counts their faces."""
    if reader == "lines":  # the line-by-line reader, as for files the scan declines
        monkeypatch.setattr(obj, "scan_arrays", lambda data: None)
    data = CONCAVE + b"f 1/6 2/5 3/4\nf 1 3 4\nf 4/3 5 6/1\n"
    m = load_bytes(data, "p.obj")
    uv = np.asarray(m.corner_attrs["uv"])
    np.testing.assert_array_equal(uv[0], [[0, 0], [4, 0], [4, 1]])
    np.testing.assert_array_equal(uv[1], np.zeros((3, 2)))
    np.testing.assert_array_equal(uv[2], [[1, 1], [0, 0], [0, 4]])
    assert m.dropped == {"faces without texture coordinates (read as 0, 0)": 2, "normals": 1}


@pytest.mark.parametrize("reader", ["scan", "lines"])
def test_corners_without_a_normal_reference_get_their_face_normal(reader, monkeypatch):
    if reader == "lines":
        monkeypatch.setattr(obj, "scan_arrays", lambda data: None)
    data = CONCAVE + b"vn 1 0 0\nf 1//1 2//2 3//1\nf 1 3 4\n"
    m = load_bytes(data, "p.obj")
    normal = np.asarray(m.corner_attrs["normal"])
    np.testing.assert_array_equal(normal[0], [[0, 0, 1], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(normal[1], np.tile([0, 0, 1], (3, 1)))  # the face's own
    assert m.dropped == {"faces without normals (read as their own)": 1, "texture coordinates": 6}


def test_a_file_whose_faces_reference_no_vt_still_drops_the_vt_lines() -> None:
    m = load_bytes(CONCAVE + b"f 1 2 3\n", "p.obj")
    assert "uv" not in m.corner_attrs
    assert m.dropped == {"texture coordinates": 6, "normals": 1}


def test_usemtl_names_in_order_of_use_and_a_default_for_faces_before_any() -> None:
    data = (
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n"
        b"f 1 2 3\nusemtl blue\nf 2 4 3\nusemtl red\nf 1 2 4\nusemtl blue\nf 1 4 3\n"
    )
    m = load_bytes(data, "m.obj")
    assert m.materials.names == ["blue", "red", "default"]
    np.testing.assert_array_equal(m.face_attrs["material"], [2, 0, 1, 0])
    assert m.dropped == {}
    text = serialize(m, "obj")
    assert text.count(b"usemtl ") == 4  # one per run of faces, order kept
    back = load_bytes(text, "m.obj")
    assert [back.materials.names[i] for i in back.face_attrs["material"]] == [
        m.materials.names[i] for i in m.face_attrs["material"]
    ]


def test_a_missing_library_or_texture_is_reported(fuze_members) -> None:
    obj, mtl = fuze_members["fuze.obj"], fuze_members["fuze.obj.mtl"]
    alone = load_bytes(obj, "fuze.obj")
    assert alone.dropped == {"material libraries": 1}
    assert alone.materials.names == ["material_0"] and alone.materials.files == {}
    no_library = load_bytes(_zip({"fuze.obj": obj}), "f.zip")
    assert no_library.dropped == {"material libraries": 1}
    no_texture = load_bytes(_zip({"fuze.obj": obj, "fuze.obj.mtl": mtl}), "f.zip")
    assert no_texture.dropped == {"textures": 1}
    assert no_texture.materials.mtl == mtl.decode() and no_texture.materials.files == {}
    assert "baseColorTexture" not in no_texture.materials.gltf["materials"][0].get(
        "pbrMetallicRoughness", {}
    )
    extra = load_bytes(_zip({"fuze.obj": obj, "fuze.obj.mtl": mtl, "notes.txt": b"hi"}), "f.zip")
    assert extra.dropped == {"textures": 1, "other files in the archive": 1}


def test_textures_are_found_case_insensitively_and_by_file_name(fuze_members) -> None:
    obj, jpg = fuze_members["fuze.obj"], fuze_members["fuze_uv.jpg"]
    mtl = fuze_members["fuze.obj.mtl"]
    shouting = load_bytes(
        _zip({"a/fuze.obj": obj, "a/fuze.obj.mtl": mtl, "a/FUZE_UV.JPG": jpg}), "f.zip"
    )
    assert shouting.materials.files == {"fuze_uv.jpg": jpg} and shouting.dropped == {}
    windows = mtl.replace(b"map_Kd fuze_uv.jpg", b"map_Kd C:\\textures\\fuze_uv.jpg")
    absolute = load_bytes(
        _zip({"fuze.obj": obj, "fuze.obj.mtl": windows, "tex/fuze_uv.jpg": jpg}), "f.zip"
    )
    assert absolute.materials.files == {"fuze_uv.jpg": jpg} and absolute.dropped == {}
    # written back: the library unchanged, the image where a reader of it finds it again
    again = load_bytes(serialize(absolute, "objzip"), "again.zip")
    assert again.materials.files == {"fuze_uv.jpg": jpg} and again.dropped == {}


def test_mtl_statements_translate_to_gltf_terms() -> None:
    from workers.engine.io import mtl

    text = (
        "newmtl glass\nKd 0.2 0.4 0.6\nd 0.25\nNs 98\nmap_Kd -s 2 2 1 -o 0.5 0.5 tex/a b.png\n"
        "map_Bump -bm 0.5 n.png\nKe 0.1 0 0\n\nnewmtl matte\nKd 0.5\nTr 0.5\n"
    )
    m, dropped, used = mtl.read_materials(
        ["matte", "glass"],
        ["lib.mtl"],
        {"m.obj": b"", "lib.mtl": text.encode(), "tex/a b.png": b"A", "n.png": b"N"},
        "m.obj",
    )
    assert m.names == ["matte", "glass"] and dropped == {}
    assert used == {"lib.mtl", "tex/a b.png", "n.png"}
    assert m.files == {"tex/a b.png": b"A", "n.png": b"N"}
    matte, glass = m.gltf["materials"]
    assert matte["pbrMetallicRoughness"]["baseColorFactor"] == [0.5, 0.5, 0.5, 0.5]
    assert matte["alphaMode"] == "BLEND"
    pbr = glass["pbrMetallicRoughness"]
    assert pbr["baseColorFactor"] == [0.2, 0.4, 0.6, 0.25]
    assert pbr["roughnessFactor"] == pytest.approx(0.1414, abs=1e-3)
    assert pbr["metallicFactor"] == 0.0
    base = m.gltf["images"][m.gltf["textures"][pbr["baseColorTexture"]["index"]]["source"]]
    assert base == {"uri": "tex/a b.png", "mimeType": "image/png"}
    assert glass["normalTexture"]["scale"] == 0.5
    assert glass["emissiveFactor"] == [0.1, 0.0, 0.0]


def test_a_library_is_made_from_gltf_terms_when_there_is_no_text() -> None:
    """A mesh whose materials came without MTL text (from a glTF, say) is written with a
    library made from them: base colour as Kd, its texture as map_Kd with the image beside."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    materials = Materials(
        ["red", "wood"],
        gltf={
            "materials": [
                {"name": "red", "pbrMetallicRoughness": {"baseColorFactor": [1, 0, 0, 1]}},
                {
                    "name": "wood",
                    "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}},
                },
            ],
            "textures": [{"source": 0}],
            "images": [{"uri": "images/wood.png"}],
        },
        files={"images/wood.png": png},
    )
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    F = np.array([[0, 1, 2], [1, 3, 2]], np.int32)
    uv = V[F][:, :, :2].copy()
    mesh = TriMesh(
        V, F, face_attrs={"material": np.array([0, 1], np.int32)}, corner_attrs={"uv": uv}
    )
    mesh.materials = materials
    members = _members(serialize(mesh, "objzip"))
    assert set(members) == {"mesh.obj", "mesh.mtl", "images/wood.png"}
    library = members["mesh.mtl"].decode()
    assert "newmtl red\nKd 1 0 0\n" in library and "map_Kd images/wood.png" in library
    back = load_bytes(serialize(mesh, "objzip"), "back.zip")
    assert back.materials.names == ["red", "wood"] and back.dropped == {}
    assert back.materials.files == {"images/wood.png": png}
    got = back.materials.gltf["materials"]
    assert got[0]["pbrMetallicRoughness"]["baseColorFactor"] == [1.0, 0.0, 0.0, 1.0]
    assert "baseColorTexture" in got[1]["pbrMetallicRoughness"]
    np.testing.assert_array_equal(back.corner_attrs["uv"], uv)


# ----------------------------------------------------------------------------- PLY texcoord
def test_ply_texcoord_round_trip_read_by_plyfile_and_trimesh(fuze) -> None:
    import plyfile
    import trimesh

    data = serialize(fuze, "ply")
    back = load_bytes(data, "f.ply")
    np.testing.assert_array_equal(back.corner_attrs["uv"], fuze.corner_attrs["uv"])
    np.testing.assert_array_equal(back.F, fuze.F)
    assert "texcoord" not in back.face_attrs
    ply = plyfile.PlyData.read(io.BytesIO(data))
    texcoord = np.stack(list(ply["face"]["texcoord"]))
    np.testing.assert_array_equal(texcoord, np.asarray(fuze.corner_attrs["uv"]).reshape(-1, 6))
    faces = np.stack(list(ply["face"]["vertex_indices"]))
    np.testing.assert_array_equal(faces, fuze.F)
    t = trimesh.load(io.BytesIO(data), file_type="ply", process=False)
    assert isinstance(t.visual, trimesh.visual.texture.TextureVisuals)
    theirs = np.asarray(t.visual.uv)[np.asarray(t.faces)]
    np.testing.assert_allclose(theirs, fuze.corner_attrs["uv"], atol=1e-6)


def _ascii_ply(faces: list[list[int]], texcoords: list[list[float]]) -> bytes:
    head = (
        "ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\n"
        f"property float z\nelement face {len(faces)}\nproperty list uchar int vertex_indices\n"
        "property list uchar float texcoord\nend_header\n"
    )
    V = ["0 0 0", "4 0 0", "4 4 0", "0 4 0", "2 1 0"]
    rows = [
        f"{len(f)} {' '.join(map(str, f))} {len(t)} {' '.join(map(str, t))}"
        for f, t in zip(faces, texcoords, strict=True)
    ]
    return (head + "\n".join(V + rows) + "\n").encode()


def test_ascii_ply_texcoord_lists_follow_the_triangles_of_polygons() -> None:
    """Per-corner texcoords of a concave pentagon: each triangle corner (after ear clipping)
    takes its polygon corner's UV (here the vertex's x y / 4)."""
    ring = [0, 1, 4, 2, 3]  # vertex 4 (2, 1) is a reflex corner
    xy = {0: (0, 0), 1: (4, 0), 2: (4, 4), 3: (0, 4), 4: (2, 1)}
    tc = [c / 4 for v in ring for c in xy[v]]
    m = load_bytes(_ascii_ply([ring], [tc]), "p.ply")
    assert m.n_faces == 3
    V, F = np.asarray(m.V), np.asarray(m.F)
    np.testing.assert_allclose(m.corner_attrs["uv"], V[F][:, :, :2] / 4)
    tri = load_bytes(_ascii_ply([[0, 1, 2]], [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]), "t.ply")
    np.testing.assert_allclose(tri.corner_attrs["uv"], [[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]])


@pytest.mark.parametrize("names", [("s", "t"), ("u", "v"), ("texture_u", "texture_v")])
def test_ply_per_vertex_texture_coordinates_become_corner_uv(names: tuple[str, str]) -> None:
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], "<f4")
    st = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]], "<f4")
    F = np.array([[0, 1, 2], [1, 3, 2]])
    head = (
        "ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\n"
        f"property float y\nproperty float z\nproperty float {names[0]}\n"
        f"property float {names[1]}\nelement face 2\nproperty list uchar int vertex_indices\n"
        "end_header\n"
    ).encode()
    rows = np.concatenate([V, st], axis=1).astype("<f4").tobytes()
    rows += b"".join(struct.pack("<B3i", 3, *f) for f in F.tolist())
    m = load_bytes(head + rows, "st.ply")
    np.testing.assert_array_equal(m.corner_attrs["uv"], st[F])
    assert not set(names) & set(m.vertex_attrs)


TEXTURED = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n"


@pytest.mark.parametrize(
    ("texcoords", "faces", "fast"),
    [
        (b"vt 0.1 0.2\nvt 0.3 0.4\nvt 0.5 0.6\n", b"f 1/1 2/2 3/3\nf 2/2 4/1 3/3\n", True),
        (b"vt 0.1 0.2 0\nvt 0.3 0.4 0\nvt 0.5 0.6 0\n", b"f 1/1 2/2 3/3\nf 2/2 4/1 3/3\n", True),
        (b"vt 0.1 0.2\nvt 0.3 0.4 0\nvt 0.5 0.6\n", b"f 1/1 2/2 3/3\nf 2/2 4/1 3/3\n", False),
        (b"vt 0.1 0.2\nvt 0.3 0.4\nvt 0.5 0.6\n", b"f -4/-3 -3/-2 -2/-1\nf 2/2 4/1 3/3\n", True),
        (b"vt 0.1 0.2\nvt 0.3 0.4\nvt 0.5 0.6\n", b"f 1/1/1 2/2/1 3/3/1\nf 2//1 4//1 3//1\n", True),
        (b"vt 0.1 0.2\nvt 0.3 0.4\nvt 0.5 0.6\n", b"f 1/1 2/2 3/9\nf 2/2 4/1 3/3\n", True),
        (b"vt 0.1 0.2 # c\nvt 0.3 0.4\nvt 0.5 0.6\n", b"f 1/1 2/2 3/3\nf 2/2 4/1 3/3\n", False),
    ],
)
def test_texture_references_read_alike_on_both_paths(
    texcoords: bytes, faces: bytes, fast: bool, monkeypatch
) -> None:
    """The buffer scan and the line-by-line reader give the same corners; a reference out of
    range leaves the UVs out (reported), never guessed; a corner without one reads (0, 0), and
    its face is counted."""
    from workers.engine.io import _obj_scan, obj

    data = TEXTURED + texcoords + b"vn 0 0 1\nusemtl a\n" + faces
    assert (_obj_scan.scan_arrays(data) is not None) == fast
    got = obj.read_obj_mesh(data)
    monkeypatch.setattr(obj, "scan_arrays", lambda _: None)
    for a, b in zip(got, obj.read_obj_mesh(data), strict=True):
        np.testing.assert_array_equal(a, b)
    whole = b"f 1/1 2/2 3/3\nf 2/2 4/1 3/3\n"
    vt = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], np.float32)
    if faces in (whole, b"f -4/-3 -3/-2 -2/-1\nf 2/2 4/1 3/3\n"):
        np.testing.assert_array_equal(got.uv, vt[[[0, 1, 2], [1, 0, 2]]])
    elif faces == b"f 1/1/1 2/2/1 3/3/1\nf 2//1 4//1 3//1\n":  # the second face has no vt
        np.testing.assert_array_equal(got.uv, [vt, np.zeros((3, 2))])
        assert got.faces_without_uv == 1
    else:
        assert got.uv is None
        assert "texture coordinates" in load_bytes(data, "t.obj").dropped


def test_generated_library_names_are_single_distinct_words() -> None:
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    F = np.array([[0, 1, 2], [1, 3, 2]], np.int32)
    mesh = TriMesh(V, F, face_attrs={"material": np.array([0, 1], np.int32)})
    mesh.materials = Materials(["Wood Planks", "Wood_Planks"], gltf={"materials": [{}, {}]})
    members = _members(serialize(mesh, "objzip"))
    assert b"usemtl Wood_Planks\n" in members["mesh.obj"]
    assert b"usemtl Wood_Planks_2\n" in members["mesh.obj"]
    library = members["mesh.mtl"].decode()
    assert "newmtl Wood_Planks\n" in library and "newmtl Wood_Planks_2\n" in library
    back = load_bytes(serialize(mesh, "objzip"), "b.zip")
    assert back.materials.names == ["Wood_Planks", "Wood_Planks_2"] and back.dropped == {}
    np.testing.assert_array_equal(back.face_attrs["material"], [0, 1])


def test_a_generated_library_name_holds_no_comment_sign() -> None:
    """A glTF material named ``#c`` was written ``usemtl #c``, which readers take for a
    comment: its faces came back with the first material."""
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    F = np.array([[0, 1, 2], [1, 3, 2]], np.int32)
    mesh = TriMesh(V, F, face_attrs={"material": np.array([0, 1], np.int32)})
    mesh.materials = Materials(["a", "#c"], gltf={"materials": [{}, {}]})
    back = load_bytes(serialize(mesh, "objzip"), "b.zip")
    assert back.materials.names == ["a", "_c"]
    np.testing.assert_array_equal(back.face_attrs["material"], [0, 1])


def test_hard_edges_keep_a_normal_per_corner() -> None:
    """Two faces of a box edge: the edge's vertices have one normal on each face, so no vertex
    normal can hold them; the corners do, and the written OBJ gives each corner its own."""
    data = (
        b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 1 0 -1\nv 1 1 -1\n"
        b"vn 0 0 1\nvn 1 0 0\n"
        b"f 1//1 2//1 3//1\nf 1//1 3//1 4//1\nf 2//2 5//2 6//2\nf 2//2 6//2 3//2\n"
    )
    m = load_bytes(data, "box.obj")
    assert "vertex_normals" not in m.vertex_attrs and m.dropped == {}
    want = np.array([[0, 0, 1.0]] * 2 + [[1, 0, 0]] * 2)[:, None, :].repeat(3, axis=1)
    np.testing.assert_array_equal(m.corner_attrs["normal"], want)
    text = serialize(m, "obj")
    assert text.count(b"\nvn ") == 2 and b"f 2//2 5//2 6//2\n" in text
    back = load_bytes(text, "back.obj")
    np.testing.assert_array_equal(back.corner_attrs["normal"], want)
    np.testing.assert_array_equal(back.F, m.F)


@pytest.mark.parametrize(
    "text",
    [
        b"mtllib a.mtl\nv 0 0 0\n",
        b"# mtllib not.mtl\n  mtllib\ta.mtl b.mtl # note\r\nmtllib a.mtl\nmtllib\n",
        b"v 0 0 0\nx mtllib no.mtl\nmtllib mtllib c.mtl\n\t mtllib  d.mtl\rmtllib e.mtl",
        b"mtllibx.mtl\nmtllib\nmtllib \nmtllib  f.mtl",
        b"no library here\n",
    ],
)
def test_mtl_libraries_are_the_lines_the_expression_matches(text: bytes) -> None:
    """The library names, found by plain searches for the word, are what the expression run
    over the whole file finds (only lines that start with ``mtllib``; a ``#`` ends the name)."""
    import re

    from workers.engine.io import obj

    every = [m.decode().strip() for m in obj._MTLLIB.findall(text)]
    assert obj.mtl_libraries(text) == [n for i, n in enumerate(every) if n and n not in every[:i]]
    assert bool(obj.mtl_libraries(text)) == bool(re.search(rb"(?m)^[ \t]*mtllib[ \t]+[^\s#]", text))
