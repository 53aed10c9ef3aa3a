"""NPZ output keeps what a textured mesh carries: each corner attribute as ``corner.<name>``
``(m, 3, k)``, the faces' ``material`` and the material library (``materials``: its JSON;
``file.<i>``: its images), and the NPZ reader gives them back."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tests.conftest import ASSETS
from tests.workers.engine.io.common import _code, _npz
from workers.engine.io import load_bytes, serialize
from workers.engine.io.writing import left_out


@pytest.mark.parametrize("name", ["CesiumMilkTruck.glb", "fuze.zip"])
def test_npz_keeps_corners_materials_and_images(name: str) -> None:
    src = load_bytes((ASSETS / name).read_bytes(), name)
    assert src.corner_attrs and src.materials is not None
    data = serialize(src, "npz")
    with np.load(io.BytesIO(data)) as z:
        assert {f"corner.{k}" for k in src.corner_attrs} <= set(z.files)
        assert "face.material" in z.files and "materials" in z.files
    back = load_bytes(data, "back.npz")
    np.testing.assert_array_equal(back.V, src.V)
    np.testing.assert_array_equal(back.F, src.F)
    assert back.corner_attrs.keys() == src.corner_attrs.keys()
    for k, v in src.corner_attrs.items():
        np.testing.assert_array_equal(back.corner_attrs[k], v)
    np.testing.assert_array_equal(back.face_attrs["material"], src.face_attrs["material"])
    assert back.materials is not None
    assert back.materials.names == src.materials.names
    assert back.materials.gltf == src.materials.gltf
    assert back.materials.files == src.materials.files
    assert back.materials.mtl == src.materials.mtl
    assert left_out(src, "npz") == {}


def test_npz_of_a_plain_mesh_has_no_library() -> None:
    src = load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "t.obj")
    with np.load(io.BytesIO(serialize(src, "npz"))) as z:
        assert set(z.files) == {"V", "F"}


V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
F = np.array([[0, 1, 2]], np.int32)


@pytest.mark.parametrize(
    ("arrays", "code"),
    [
        ({"corner.uv": np.zeros((2, 3, 2), np.float32)}, "mesh.bad_attribute"),  # 2 faces' worth
        ({"corner.uv": np.zeros((1, 3), np.float32)}, "mesh.bad_attribute"),  # not (m, 3, k)
        # widths no writer can hold (every writer had left them out without a word)
        ({"corner.normal": np.ones((1, 3, 2), np.float32)}, "mesh.bad_attribute"),
        ({"corner.uv1": np.ones((1, 3, 1), np.float32)}, "mesh.bad_attribute"),
        ({"corner.tangent": np.ones((1, 3, 3), np.float32)}, "mesh.bad_attribute"),
        ({"corner.color": np.ones((1, 3, 7), np.float32)}, "mesh.bad_attribute"),
        ({"materials": np.frombuffer(b"{not json", np.uint8)}, "format.parse_error"),
        ({"materials": np.frombuffer(b"[1, 2]", np.uint8)}, "format.parse_error"),  # no object
        (  # a texture naming an image the library lacks
            {
                "materials": np.frombuffer(
                    b'{"names":["a"],"gltf":{"textures":[{"source":3}]}}', np.uint8
                )
            },  # fmt: skip
            "format.parse_error",
        ),
        # JSON nested deeper than Python's recursion limit (raised RecursionError)
        (
            {"materials": np.frombuffer(b"[" * 100_000 + b"]" * 100_000, np.uint8)},
            "format.parse_error",
        ),
        (  # an MTL text that is a number (writing an objzip raised AttributeError)
            {"materials": np.frombuffer(b'{"names":["a"],"mtl":5}', np.uint8)},
            "format.parse_error",
        ),
        (  # a face naming material 5 of a library of one
            {
                "materials": np.frombuffer(b'{"names":["a"]}', np.uint8),
                "face.material": np.array([5], np.int32),
            },  # fmt: skip
            "mesh.bad_attribute",
        ),
    ],
)
def test_npz_with_a_broken_library_or_corners_is_refused(arrays: dict, code: str) -> None:
    assert _code(_npz(V=V, F=F, **arrays), "x.npz") == code
