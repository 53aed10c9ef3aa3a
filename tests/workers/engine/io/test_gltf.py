"""The general glTF reader (``io/gltf.py``): compressed primitives and views (Draco, meshopt),
quantized and sparse accessors, strips, mirrored nodes, what it leaves out. Files are made here
with the encoders (DracoPy, meshoptimizer) and checked against the plain mesh they encode."""

from __future__ import annotations

import base64

import DracoPy
import numpy as np
import pytest

from tests.workers.engine.io.common import GltfBuilder
from workers.engine import FormatError
from workers.engine.io import load_bytes
from workers.engine.io.gltf import read_scene

SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
TRIS = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)


def _square(b: GltfBuilder, mode: int = 4, indices: np.ndarray = TRIS) -> None:
    pos = b.accessor(SQUARE, 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    idx = b.accessor(indices.ravel().astype(np.uint32), 5125, "SCALAR")
    b.primitive(attributes={"POSITION": pos}, indices=idx, mode=mode)


def test_draco_primitives_are_decoded() -> None:
    rng = np.random.default_rng(0)
    V = rng.random((50, 3)).astype(np.float32)
    F = np.array([[i, i + 1, i + 2] for i in range(48)], np.uint32)
    b = GltfBuilder()
    data = DracoPy.encode(V, F, quantization_bits=16, preserve_order=True)
    view = b.view(data)
    pos = b.accessor(None, 5126, "VEC3", count=50)
    idx = b.accessor(None, 5125, "SCALAR", count=F.size)
    b.primitive(
        attributes={"POSITION": pos},
        indices=idx,
        extensions={
            "KHR_draco_mesh_compression": {"bufferView": view, "attributes": {"POSITION": 0}}
        },
    )
    b.tree["extensionsUsed"] = b.tree["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    m = load_bytes(b.glb(), "d.glb")
    assert (m.n_vertices, m.n_faces) == (50, 48)
    # 16-bit quantization of the unit cube: within half a step
    V2, F2 = np.asarray(m.V), np.asarray(m.F)
    tri = lambda W, G: np.sort(W[G].reshape(len(G), -1), axis=0)  # noqa: E731
    np.testing.assert_allclose(tri(V2, F2), tri(V, F.astype(np.int64)), atol=2.0 / 2**16)


def test_meshopt_views_are_decoded() -> None:
    import meshoptimizer  # no wheel for every Python: the offline GPU host leaves this test out

    b = GltfBuilder()
    raw_v = meshoptimizer.encode_vertex_buffer(SQUARE)
    raw_i = meshoptimizer.encode_index_buffer(TRIS.ravel())
    vv = b.view(
        b"\0" * 0,
        extensions={
            "EXT_meshopt_compression": {
                "buffer": 1,
                "byteOffset": 0,
                "byteLength": len(raw_v),
                "byteStride": 12,
                "count": 4,
                "mode": "ATTRIBUTES",
                "filter": "NONE",
            }
        },
    )
    b.tree["bufferViews"][vv]["byteLength"] = 48
    b.tree["bufferViews"][vv]["byteStride"] = 12
    iv = b.view(
        b"",
        extensions={
            "EXT_meshopt_compression": {
                "buffer": 1,
                "byteOffset": 0 + len(raw_v) + (-len(raw_v) % 4),
                "byteLength": len(raw_i),
                "byteStride": 4,
                "count": 6,
                "mode": "TRIANGLES",
            }
        },
    )
    b.tree["bufferViews"][iv]["byteLength"] = 24
    compressed = raw_v + b"\0" * (-len(raw_v) % 4) + raw_i
    b.tree["buffers"].append(
        {
            "byteLength": len(compressed),
            "uri": "data:application/octet-stream;base64," + base64.b64encode(compressed).decode(),
        }
    )
    b.tree["accessors"] = [
        {"bufferView": vv, "componentType": 5126, "count": 4, "type": "VEC3"},
        {"bufferView": iv, "componentType": 5125, "count": 6, "type": "SCALAR"},
    ]
    b.primitive(attributes={"POSITION": 0}, indices=1)
    b.tree["extensionsUsed"] = b.tree["extensionsRequired"] = ["EXT_meshopt_compression"]
    m = load_bytes(b.glb(), "m.glb")
    np.testing.assert_array_equal(np.asarray(m.V), SQUARE)
    np.testing.assert_array_equal(np.asarray(m.F), TRIS)


def test_quantized_positions_are_scaled_by_the_node() -> None:
    """KHR_mesh_quantization: positions as normalized int16, the node's scale brings them back."""
    b = GltfBuilder()
    q = np.round(SQUARE * 32767).astype(np.int16)
    padded = np.concatenate([q, np.zeros((4, 1), np.int16)], axis=1)  # rows of 8 bytes
    view = b.view(padded.tobytes(), byteStride=8)
    b.tree["accessors"].append(
        {"bufferView": view, "componentType": 5122, "count": 4, "type": "VEC3", "normalized": True}
    )
    idx = b.accessor(TRIS.ravel(), 5125, "SCALAR")
    b.primitive(attributes={"POSITION": 0}, indices=idx)
    b.tree["nodes"][0]["scale"] = [2, 2, 2]
    b.tree["extensionsUsed"] = b.tree["extensionsRequired"] = ["KHR_mesh_quantization"]
    m = load_bytes(b.glb(), "q.glb", dtype="float64")
    np.testing.assert_allclose(np.asarray(m.V), 2 * SQUARE, atol=1e-4)


def test_sparse_accessors_replace_their_rows() -> None:
    b = GltfBuilder()
    _square(b)
    moved = np.array([[0.5, 0.5, 1.0]], np.float32)
    iv, vv = b.view(np.array([2], np.uint32).tobytes()), b.view(moved.tobytes())
    b.tree["accessors"][0]["sparse"] = {
        "count": 1,
        "indices": {"bufferView": iv, "componentType": 5125},
        "values": {"bufferView": vv},
    }
    m = load_bytes(b.glb(), "s.glb")
    expected = SQUARE.copy()
    expected[2] = moved
    np.testing.assert_array_equal(np.asarray(m.V), expected)


def test_strips_alternate_their_order() -> None:
    b = GltfBuilder()
    _square(b, mode=5, indices=np.array([0, 1, 3, 2], np.uint32))
    m = load_bytes(b.glb(), "t.glb")
    np.testing.assert_array_equal(np.asarray(m.F), [[0, 1, 3], [3, 1, 2]])
    V, F = np.asarray(m.V, float), np.asarray(m.F)
    normals = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    assert bool((normals[:, 2] > 0).all())  # both face the same way


def test_a_mirrored_node_keeps_its_triangles_facing_out() -> None:
    b = GltfBuilder()
    _square(b)
    b.tree["nodes"][0]["scale"] = [-1, 1, 1]
    m = load_bytes(b.glb(), "m.glb")
    V, F = np.asarray(m.V, float), np.asarray(m.F)
    np.testing.assert_array_equal(V[:, 0], -SQUARE[:, 0])
    normals = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    assert bool((normals[:, 2] > 0).all())  # +z as before the mirror


def test_nodes_compose_their_transforms_and_instances_repeat() -> None:
    b = GltfBuilder()
    _square(b)
    b.tree["nodes"] = [
        {"translation": [10, 0, 0], "children": [1, 2]},
        {"mesh": 0},
        {"mesh": 0, "rotation": [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]},  # 90 deg about z
    ]
    s = read_scene(b.glb())
    assert s.V.shape == (8, 3) and s.F.shape == (4, 3)
    np.testing.assert_allclose(s.V[:4], SQUARE + [10, 0, 0])
    np.testing.assert_allclose(s.V[4:], SQUARE[:, [1, 0, 2]] * [-1, 1, 1] + [10, 0, 0], atol=1e-12)


def test_lines_and_animations_are_counted_as_dropped() -> None:
    b = GltfBuilder()
    _square(b)
    line = b.accessor(np.array([0, 1], np.uint32), 5125, "SCALAR")
    b.primitive(attributes={"POSITION": 0}, indices=line, mode=1)
    b.tree["animations"] = [{"channels": [], "samplers": []}]
    s = read_scene(b.glb())
    assert s.F.shape == (2, 3)
    assert s.dropped == {"lines and points": 1, "animations": 1}


def test_a_node_cycle_is_refused() -> None:
    b = GltfBuilder()
    _square(b)
    b.tree["nodes"] = [{"mesh": 0, "children": [1]}, {"children": [0]}]
    with pytest.raises(FormatError) as ei:
        load_bytes(b.glb(), "c.glb")
    assert ei.value.code == "format.parse_error"


def test_decompression_is_bounded_by_the_file_size() -> None:
    b = GltfBuilder()
    _square(b)
    b.tree["accessors"].append({"componentType": 5126, "type": "VEC3", "count": 10**8})
    b.primitive(attributes={"POSITION": 2}, mode=4)
    with pytest.raises(FormatError) as ei:
        load_bytes(b.glb(), "z.glb")
    assert ei.value.code == "format.count_exceeds_size"


def test_what_a_file_held_and_the_mesh_does_not_carry_is_counted() -> None:
    from tests.conftest import ASSETS, MESHES

    got = {
        name: load_bytes((ASSETS / name).read_bytes(), name).dropped
        for name in ("Duck.glb", "CesiumMilkTruck.glb", "fuze.zip")
    }
    # materials, textures and texture coordinates are carried: what is left is what is not
    assert got["Duck.glb"] == {"cameras": 1}
    assert got["CesiumMilkTruck.glb"] == {"animations": 1}
    assert got["fuze.zip"] == {}  # UVs, normals, material, library and texture all carried
    spot = load_bytes((MESHES / "spot.obj").read_bytes(), "spot.obj")
    assert spot.dropped == {} and "uv" in spot.corner_attrs
    plain = load_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "p.obj")
    assert plain.dropped == {}
