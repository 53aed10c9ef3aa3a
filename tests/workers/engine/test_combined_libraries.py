"""Parts with different material libraries (a multi-file upload of several assets) are
concatenated into one mesh with one library holding every part's materials, textures, samplers
and images, each part's face ``material`` moved past the parts' before it; ``merge`` keeps it,
and the GLB written passes the Khronos validator with each face showing its own part's texture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import ASSETS
from tests.workers.engine.io.common import errors, validate
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.io.gltf import split_glb
from workers.engine.materials import Materials, combine, library_problem


def _load(name: str) -> TriMesh:
    return load_bytes((ASSETS / name).read_bytes(), name)


def _base_image(lib: Materials, material: int) -> bytes | None:
    """The bytes of a material's base colour image (None when it has no texture)."""
    gltf = lib.gltf
    mats = gltf.get("materials", [])
    ref = (mats[material].get("pbrMetallicRoughness") or {}).get("baseColorTexture")
    if ref is None:
        return None
    image = gltf["images"][gltf["textures"][ref["index"]]["source"]]
    return lib.files[image["uri"]]


def _same_look(part: TriMesh, lib: Materials, material: np.ndarray) -> None:
    """Each face of ``part`` names, in ``lib``, a material of the same name, factors and base
    colour image bytes as its own."""
    src = np.asarray(part.face_attrs["material"])
    for old in np.unique(src):
        new = np.unique(material[src == old])
        assert new.size == 1, new
        a = part.materials.gltf["materials"][old] if part.materials.gltf.get("materials") else {}
        b = lib.gltf["materials"][int(new[0])]
        assert lib.names[int(new[0])] == part.materials.names[old]
        pa, pb = a.get("pbrMetallicRoughness", {}), b.get("pbrMetallicRoughness", {})
        assert pa.get("baseColorFactor") == pb.get("baseColorFactor")
        assert _base_image(part.materials, old) == _base_image(lib, int(new[0]))


@pytest.mark.parametrize(
    "names", [("Duck.glb", "BoxTextured.glb"), ("CesiumMilkTruck.glb", "fuze.zip", "Duck.glb")]
)
def test_merged_assets_keep_every_library(names: tuple[str, ...], tmp_path: Path) -> None:
    parts = [_load(n) for n in names]
    both = TriMesh.concatenate(parts)
    lib = both.materials
    assert lib is not None and library_problem(lib.gltf, len(lib.names)) is None
    assert len(lib) == sum(len(p.materials) for p in parts)
    assert not any("materials" in k for k in both.dropped)
    material = np.asarray(both.face_attrs["material"])
    at = 0
    for p in parts:
        _same_look(p, lib, material[at : at + p.n_faces])
        at += p.n_faces
    out = both.run(["merge"], device="cpu").mesh
    np.testing.assert_array_equal(out.face_attrs["material"], material)
    data = serialize(out, "glb")
    assert errors(validate(data, tmp_path)) == []
    back = load_bytes(data, "back.glb")
    assert back.materials.names == lib.names
    assert sorted(back.materials.files.values()) == sorted(lib.files.values())


def test_images_of_the_same_bytes_are_one_file() -> None:
    duck = _load("Duck.glb")
    assert duck.materials is not None
    other = Materials(
        names=["other"],
        gltf={
            "materials": [
                {"name": "other", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}
            ],  # fmt: skip
            "textures": [{"source": 0}],
            "images": [{"uri": "copy.png"}],
        },
        files={"copy.png": next(iter(duck.materials.files.values()))},
    )
    lib, offsets = combine([duck.materials, other])
    assert len(lib.files) == 1 and offsets == [0, len(duck.materials)]
    assert {i["uri"] for i in lib.gltf["images"]} == set(lib.files)  # both name the one file
    assert _base_image(lib, offsets[1]) == _base_image(duck.materials, 0)


def test_a_file_name_both_libraries_use_for_different_images_is_kept_apart() -> None:
    def lib(name: str, data: bytes) -> Materials:
        ref: dict[str, Any] = {"baseColorTexture": {"index": 0}}
        return Materials(
            names=[name],
            gltf={
                "materials": [{"name": name, "pbrMetallicRoughness": ref}],
                "textures": [{"source": 0, "sampler": 0}],
                "samplers": [{"magFilter": 9729}],
                "images": [{"uri": "t.png"}],
            },
            files={"t.png": data},
        )

    a, b = lib("a", b"\x89PNG one"), lib("b", b"\x89PNG two")
    out, offsets = combine([a, b])
    assert _base_image(out, 0) == b"\x89PNG one" and _base_image(out, 1) == b"\x89PNG two"
    assert len(out.gltf["samplers"]) == 1  # the same sampler, once
    assert library_problem(out.gltf, len(out.names)) is None


def test_a_part_without_a_library_gets_the_default_material() -> None:
    duck = _load("Duck.glb")
    plain = TriMesh(np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32))
    both = TriMesh.concatenate([plain, duck])
    assert both.materials is not None and both.materials.names[-1] == "default"
    material = np.asarray(both.face_attrs["material"])
    assert material[0] == len(both.materials) - 1
    assert (material[1:] == 0).all()


def test_a_textured_part_beside_one_without_texture_coordinates_writes_a_valid_glb(
    tmp_path: Path,
) -> None:
    """The parts' corner attributes differ, so the concatenation has none, but the duck's
    material still reads ``TEXCOORD_0``: its primitive gets the set (zeros), the default
    material's none (the validator refused MESH_PRIMITIVE_TOO_FEW_TEXCOORDS)."""
    duck = _load("Duck.glb")
    plain = TriMesh(np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32))
    both = TriMesh.concatenate([plain, duck])
    assert not both.corner_attrs
    data = serialize(both, "glb")
    assert errors(validate(data, tmp_path)) == []
    back = load_bytes(data, "back.glb")
    tree = split_glb(data)[0]
    sets = {p["material"]: "TEXCOORD_0" in p["attributes"] for p in tree["meshes"][0]["primitives"]}
    assert sets == {0: True, len(both.materials) - 1: False}
    assert back.n_faces == both.n_faces
