"""Textured glTF through Tessera: texture coordinates and normals per corner, each face's
material, and the document's materials, textures, samplers and images are read, and written back
as a GLB with one primitive per material, vertices split at seams, that the Khronos glTF
validator (npm ``gltf-validator``, run by ``tests/tools/validate_gltf.mjs``) finds no error in.

The real assets are the GLBs of the shared assets folder; the files with two texture coordinate
sets, vertex colours, a texture transform, a primitive without a material or without texture
coordinates, an external image in a zip and Draco texture coordinates are made here."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import DracoPy
import numpy as np
import pytest

from tests.conftest import ASSETS
from tests.workers.engine.io.common import GltfBuilder, _zip, errors, validate
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.io.formats import format_can_hold
from workers.engine.io.gltf import read_scene, split_glb
from workers.engine.io.stored import decode, encode

ASSET_GLBS = sorted(p.name for p in ASSETS.glob("*.glb"))


def same_corners(src: TriMesh, back: TriMesh) -> None:
    """``back`` (a GLB of ``src`` read back) has ``src``'s faces, in order of material (a
    primitive each) and in their order within, each corner with its position, material and
    corner values: texture coordinates and colours exactly, normals to float32's rounding (each
    reading unitizes them)."""
    material = np.asarray(src.face_attrs.get("material", np.zeros(src.n_faces, np.int32)))
    order = np.argsort(material, kind="stable")
    assert back.n_faces == src.n_faces
    V, Vb = np.asarray(src.V), np.asarray(back.V)
    np.testing.assert_array_equal(Vb[np.asarray(back.F)], V[np.asarray(src.F)][order])
    if "material" in src.face_attrs:
        np.testing.assert_array_equal(back.face_attrs["material"], material[order])
    uvs = sorted(k for k in src.corner_attrs if k.startswith("uv"))
    assert sorted(k for k in back.corner_attrs if k.startswith("uv")) == uvs
    for name, a in src.corner_attrs.items():
        got = corner_values(back, name)
        if name == "normal":
            np.testing.assert_allclose(got, a[order], rtol=0, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, a[order])


def corner_values(mesh: TriMesh, name: str) -> np.ndarray:
    """A corner attribute's values, taken from the vertex attribute where the reader kept no
    corner attribute (normals and colours without seams)."""
    if name in mesh.corner_attrs:
        return np.asarray(mesh.corner_attrs[name])
    F = np.asarray(mesh.F)
    if name == "normal":
        return np.asarray(mesh.vertex_attrs["vertex_normals"])[F]
    assert name == "color", name
    return np.asarray(mesh.vertex_attrs["vertex_colors"])[F].astype(np.float32) / np.float32(255)


def _same_materials(a: TriMesh, b: TriMesh) -> None:
    assert a.materials is not None and b.materials is not None
    assert b.materials.names == a.materials.names
    assert b.materials.gltf == a.materials.gltf
    assert b.materials.files == a.materials.files


# ------------------------------------------------------------------ the real assets
@pytest.mark.parametrize("name", ASSET_GLBS)
def test_assets_keep_uvs_normals_materials_and_images(name: str, tmp_path: Path) -> None:
    src = load_bytes((ASSETS / name).read_bytes(), name)
    tree, _ = split_glb((ASSETS / name).read_bytes())
    assert src.materials is not None and len(src.materials) == len(tree["materials"])
    if tree.get("images"):
        assert len(src.materials.files) == len(tree["images"])
        assert "uv" in src.corner_attrs
    out = serialize(src, "glb")
    report = validate(out, tmp_path)
    assert errors(report) == [] and report["issues"]["numErrors"] == 0
    back = load_bytes(out, "back.glb")
    same_corners(src, back)
    _same_materials(src, back)
    stored = decode(encode(src))  # what a job keeps between steps
    assert serialize(stored, "glb") == out
    # one primitive per material used, each naming its material
    written, _ = split_glb(out)
    used = sorted(set(np.asarray(src.face_attrs["material"]).tolist()))
    assert [p["material"] for p in written["meshes"][0]["primitives"]] == used


def test_a_welded_asset_is_split_again_at_its_seams(tmp_path: Path) -> None:
    """A weld (done here by hand: the pipeline's own carrying of corners is tested with it)
    merges the cube's 24 vertices into its 8 corners; the corners keep their texture
    coordinates and hard normals, so the written GLB splits them again, as the file had them."""
    src = load_bytes((ASSETS / "BoxTextured.glb").read_bytes(), "BoxTextured.glb")
    assert src.n_vertices == 24
    V = np.asarray(src.V)
    unique, inverse = np.unique(V, axis=0, return_inverse=True)
    welded = TriMesh(
        unique,
        inverse.reshape(-1)[np.asarray(src.F)].astype(np.int32),
        face_attrs=src.face_attrs,
        corner_attrs=src.corner_attrs,
        materials=src.materials,
    )
    welded.check()
    assert welded.n_vertices == 8
    out = serialize(welded, "glb")
    assert validate(out, tmp_path)["issues"]["numErrors"] == 0
    back = load_bytes(out, "back.glb")
    assert back.n_vertices == 24  # each corner of the cube: 3 faces, 3 normals, 3 UVs
    same_corners(src, back)
    _same_materials(src, back)


# ------------------------------------------------------------------ files made here
def _png(width: int = 2, height: int = 2) -> bytes:
    """A small RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\0" + bytes(range(3 * width)) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">2I5B", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


class _Doc(GltfBuilder):
    """A glTF document and its binary buffer, with textured grids as primitives."""

    def grid(self, n: int, x0: float, **attributes: bool) -> dict[str, Any]:
        """A primitive: an n x n grid of squares at x0.., with TEXCOORD_0 = (x, y),
        TEXCOORD_1 = (y, x) / 2 and COLOR_0 as asked (each a function of the position, so
        every corner's value can be checked)."""
        y, x = np.mgrid[0 : n + 1, 0 : n + 1]
        P = np.stack([x.ravel() + x0, y.ravel(), np.zeros(x.size)], 1).astype(np.float32)
        k = (n + 1) * np.arange(n)[:, None] + np.arange(n)[None, :]
        k = k.ravel()
        F = np.concatenate(
            [np.stack([k, k + 1, k + n + 2], 1), np.stack([k, k + n + 2, k + n + 1], 1)]
        )
        lo, hi = P.min(0).tolist(), P.max(0).tolist()
        attrs = {"POSITION": self.accessor(P, 5126, "VEC3", min=lo, max=hi)}
        attrs["NORMAL"] = self.accessor(
            np.tile([0, 0, 1], (len(P), 1)).astype(np.float32), 5126, "VEC3"
        )
        if attributes.get("uv", True):
            attrs["TEXCOORD_0"] = self.accessor(P[:, :2].copy(), 5126, "VEC2")
        if attributes.get("uv1"):
            attrs["TEXCOORD_1"] = self.accessor(P[:, [1, 0]] / 2, 5126, "VEC2")
        if attributes.get("color"):
            rgba = np.clip(np.stack([P[:, 0], P[:, 1], P[:, 0], P[:, 1]], 1) * 40, 0, 255)
            attrs["COLOR_0"] = self.accessor(rgba.astype(np.uint8), 5121, "VEC4", normalized=True)
        idx = self.accessor(F.astype(np.uint16).ravel(), 5123, "SCALAR")
        return {"attributes": attrs, "indices": idx, "mode": 4}


def _textured_doc(image: dict[str, Any]) -> _Doc:
    """Three primitives: two UV sets and colours with a material reading both sets (one
    through a texture transform), one UVs without a material, one without UVs."""
    d = _Doc()
    prims = [d.grid(2, 0.0, uv1=True, color=True), d.grid(1, 5.0), d.grid(1, 10.0, uv=False)]
    prims[0]["material"] = 0
    prims[2]["material"] = 1
    d.tree["meshes"][0]["primitives"] = prims
    transform = {"KHR_texture_transform": {"offset": [0.5, 0], "scale": [2, 2]}}
    d.tree["materials"] = [
        {
            "name": "two sets",
            "pbrMetallicRoughness": {
                "baseColorTexture": {"index": 0, "extensions": transform},
                "metallicFactor": 0.25,
            },
            "occlusionTexture": {"index": 0, "texCoord": 1},
        },
        {"name": "plain", "pbrMetallicRoughness": {"baseColorFactor": [1, 0, 0, 1]}},
    ]
    d.tree["samplers"] = [{"magFilter": 9728, "wrapS": 33071}]
    d.tree["textures"] = [{"sampler": 0, "source": 0}]
    d.tree["images"] = [image]
    d.tree["extensionsUsed"] = ["KHR_texture_transform"]
    return d


def _check_corners(mesh: TriMesh) -> None:
    """Each corner's texture coordinates and colour are the functions of its position the file
    was made with (zeros where the primitive had none)."""
    P = np.asarray(mesh.V)[np.asarray(mesh.F)]
    uv, uv1 = mesh.corner_attrs["uv"], mesh.corner_attrs["uv1"]
    far = P[..., 0] >= 10  # the primitive without texture coordinates
    np.testing.assert_array_equal(uv[~far], P[~far][:, :2])
    assert not uv[far].any()
    first = P[..., 0] <= 2
    np.testing.assert_array_equal(uv1[first], P[first][:, [1, 0]] / 2)


def test_two_uv_sets_colours_transform_and_default_material(tmp_path: Path) -> None:
    png = _png()
    d = _textured_doc({"bufferView": 0, "mimeType": "image/png", "name": "checker"})
    d.tree["images"][0]["bufferView"] = d.view(png)
    src = load_bytes(d.glb(), "made.glb")
    assert src.dropped == {}
    # normals all +z (no hard edge): per vertex only; colours on one primitive only: per corner
    assert sorted(src.corner_attrs) == ["color", "uv", "uv1"]
    assert "vertex_normals" in src.vertex_attrs and "vertex_colors" not in src.vertex_attrs
    _check_corners(src)
    assert src.materials is not None
    assert src.materials.names == ["two sets", "plain", "default"]  # glTF's default, added
    assert src.materials.files == {"checker.png": png}
    assert src.materials.gltf["images"] == [
        {"mimeType": "image/png", "name": "checker", "uri": "checker.png"}
    ]
    np.testing.assert_array_equal(
        np.unique(np.asarray(src.face_attrs["material"]), return_counts=True),
        [[0, 1, 2], [8, 2, 2]],
    )
    out = serialize(src, "glb")
    report = validate(out, tmp_path)
    assert report["issues"]["numErrors"] == 0, errors(report)
    tree, _ = split_glb(out)
    assert tree["extensionsUsed"] == ["KHR_texture_transform"]
    assert tree["materials"][0] == d.tree["materials"][0]
    prims = {p["material"]: p["attributes"] for p in tree["meshes"][0]["primitives"]}
    # the set a primitive did not have, read by no texture of its material, is not written
    assert "TEXCOORD_0" not in prims[1] and "TEXCOORD_1" not in prims[1]
    assert "TEXCOORD_1" in prims[0] and "TEXCOORD_1" not in prims[2]
    back = load_bytes(out, "back.glb")
    _check_corners(back)
    _same_materials(src, back)
    same_corners(src, back)
    # colours per corner: the primitive's own, white where a primitive had none
    P = np.asarray(src.V)[np.asarray(src.F)]
    color = src.corner_attrs["color"]
    first = P[..., 0] <= 2
    made = np.clip(np.stack([P[..., 0], P[..., 1]] * 2, -1) * 40, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(np.round(color[first] * 255), made[first][:, [0, 1, 0, 1]])
    assert (color[~first] == 1).all()


def test_an_external_image_in_a_zip_is_read_and_embedded(tmp_path: Path) -> None:
    png = _png(4, 4)
    d = _textured_doc({"uri": "tex/checker%20map.png"})
    buffer = "data:application/octet-stream;base64," + base64.b64encode(d.binary).decode()
    d.tree["buffers"][0]["uri"] = buffer
    text = json.dumps(d.tree).encode()
    mesh = load_bytes(_zip({"a/model.gltf": text, "a/tex/checker map.png": png}), "a.zip")
    assert mesh.materials is not None and mesh.materials.files == {"checkermap.png": png}
    out = serialize(mesh, "glb")
    assert validate(out, tmp_path)["issues"]["numErrors"] == 0
    tree, binary = split_glb(out)
    (image,) = tree["images"]
    assert image["mimeType"] == "image/png" and "uri" not in image
    view = tree["bufferViews"][image["bufferView"]]
    assert binary is not None
    assert binary[view["byteOffset"] : view["byteOffset"] + view["byteLength"]] == png
    # sent alone, the .gltf's image is not there: kept by name and said
    alone = load_bytes(text, "model.gltf")
    assert alone.dropped == {"images not sent with the file": 1}


def test_draco_texture_coordinates_are_read_per_corner() -> None:
    P = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float64)
    F = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)
    uv = P[:, :2] * 0.5 + 0.25
    data = DracoPy.encode(P, F, tex_coord=uv, quantization_bits=16, preserve_order=True)
    d = _Doc()
    view = d.view(data)
    d.tree["accessors"] = [
        {"componentType": 5126, "type": "VEC3", "count": 4, "min": [0, 0, 0], "max": [1, 1, 0]},
        {"componentType": 5126, "type": "VEC2", "count": 4},
        {"componentType": 5125, "type": "SCALAR", "count": 6},
    ]
    draco = {"bufferView": view, "attributes": {"POSITION": 1, "TEXCOORD_0": 0}}
    d.tree["meshes"][0]["primitives"] = [
        {
            "attributes": {"POSITION": 0, "TEXCOORD_0": 1},
            "indices": 2,
            "extensions": {"KHR_draco_mesh_compression": draco},
        }
    ]
    d.tree["extensionsUsed"] = d.tree["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    mesh = load_bytes(d.glb(), "draco.glb")
    np.testing.assert_allclose(
        mesh.corner_attrs["uv"],
        np.asarray(mesh.V)[np.asarray(mesh.F)][..., :2] * 0.5 + 0.25,
        atol=1e-4,
    )


def test_a_mirrored_node_keeps_each_corner_with_its_values() -> None:
    """A mirror reverses the triangles' order; the corners' values follow their vertex."""
    d = _textured_doc({"uri": "missing.png"})
    d.tree["nodes"] = [{"mesh": 0, "scale": [-1, 1, 1]}]
    mesh = load_bytes(d.glb(), "m.glb")
    P = np.asarray(mesh.V)[np.asarray(mesh.F)]
    near = P[..., 0] > -10
    np.testing.assert_array_equal(mesh.corner_attrs["uv"][near], P[near][:, :2] * [-1, 1])


def test_the_simple_path_gives_what_the_scene_reader_gives(rich: TriMesh) -> None:
    """A file of one primitive with normals and colours takes the fast path; its mesh has the
    same vertex and corner attributes as the general reader's: corner normals and colours only
    where corners at one position differ (a hard edge, a colour seam)."""
    colors = (np.asarray(rich.V) * 100 % 255).astype(np.uint8)
    smooth = rich.with_attrs(vertex={"vertex_colors": colors})
    F = np.asarray(rich.F)
    soup = TriMesh(  # every face its own vertices, with its own normal and colour: all seams
        np.asarray(rich.V)[F].reshape(-1, 3),
        np.arange(3 * rich.n_faces, dtype=np.int32).reshape(-1, 3),
        {
            "vertex_normals": np.repeat(np.asarray(rich.face_attrs["face_normals"]), 3, axis=0),
            "vertex_colors": np.repeat(colors[F[:, 0]], 3, axis=0),
        },
    )
    for mesh, corners in ((smooth, []), (soup, ["color", "normal"])):
        data = serialize(mesh, "glb")
        fast = load_bytes(data, "fast.glb")
        scene = read_scene(data)
        assert sorted(fast.corner_attrs) == sorted(scene.corner_attrs) == corners
        for name in corners:
            np.testing.assert_array_equal(fast.corner_attrs[name], scene.corner_attrs[name])
        for name in ("vertex_normals", "vertex_colors"):
            np.testing.assert_array_equal(fast.vertex_attrs[name], scene.vertex_attrs[name])


def test_large_primitives_get_32_bit_indices(tmp_path: Path) -> None:
    n = 260  # (n + 1)^2 = 68121 vertices: more than 16-bit indices reach
    y, x = np.mgrid[0 : n + 1, 0 : n + 1]
    V = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1).astype(np.float32)
    k = ((n + 1) * np.arange(n)[:, None] + np.arange(n)[None, :]).ravel()
    F = np.concatenate([np.stack([k, k + 1, k + n + 2], 1), np.stack([k, k + n + 2, k + n + 1], 1)])
    uv = V[F][..., :2] / n
    big = TriMesh(V, F.astype(np.int32), corner_attrs={"uv": uv.astype(np.float32)})
    small = TriMesh(V[:4], np.array([[0, 1, 2]], np.int32), corner_attrs={"uv": uv[:1]})
    for mesh, component in ((big, 5125), (small, 5123)):
        out = serialize(mesh, "glb")
        tree, _ = split_glb(out)
        (prim,) = tree["meshes"][0]["primitives"]
        assert tree["accessors"][prim["indices"]]["componentType"] == component
        assert "material" not in prim  # no materials: glTF's default material
        assert validate(out, tmp_path)["issues"]["numErrors"] == 0
    back = load_bytes(serialize(big, "glb"), "big.glb")
    assert back.n_vertices == big.n_vertices
    same_corners(big, back)


def test_glb_holds_corners_and_the_material() -> None:
    assert format_can_hold("glb", "uv", "corner") and format_can_hold("glb", "uv3", "corner")
    assert format_can_hold("glb", "normal", "corner") and format_can_hold("glb", "color", "corner")
    assert format_can_hold("glb", "tangent", "corner")  # beside NORMAL
    assert format_can_hold("glb", "material", "face")
    assert not format_can_hold("glb", "part", "face")


def test_recomputed_normals_of_a_smooth_file_are_the_ones_written(rich: TriMesh) -> None:
    """A smooth file's normals are vertex normals only (no corner normals beside them to go
    stale): after smoothing and new normals, the written file has the new ones."""
    read = load_bytes(serialize(rich, "glb"), "smooth.glb")
    assert read.corner_attrs == {}
    done = read.run([{"op": "laplacian_smooth", "iterations": 5}, "vertex_normals"]).mesh
    new = np.asarray(done.vertex_attrs["vertex_normals"])
    assert np.abs(new - np.asarray(read.vertex_attrs["vertex_normals"])).max() > 0.01
    back = load_bytes(serialize(done, "glb"), "back.glb")
    np.testing.assert_allclose(back.vertex_attrs["vertex_normals"], new, atol=1e-6)
