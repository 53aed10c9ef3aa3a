"""The stored form of an accepted upload: what the API writes, the worker reads back exactly."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tests.conftest import mesh_path
from workers.engine.errors import FormatError
from workers.engine.io import load_bytes, stored
from workers.engine.mesh import TriMesh


def _same(a: TriMesh, b: TriMesh) -> None:
    assert a.V.dtype == b.V.dtype and a.F.dtype == b.F.dtype
    np.testing.assert_array_equal(a.V, b.V)
    np.testing.assert_array_equal(a.F, b.F)
    for mine, theirs in ((a.vertex_attrs, b.vertex_attrs), (a.face_attrs, b.face_attrs)):
        assert list(mine) == list(theirs)
        for k in mine:
            assert mine[k].dtype == theirs[k].dtype and mine[k].shape == theirs[k].shape, k
            np.testing.assert_array_equal(mine[k], theirs[k])


def test_a_real_mesh_comes_back_identical_and_writable():
    mesh = load_bytes(mesh_path("spot.obj").read_bytes(), "spot.obj")
    back = stored.decode(bytearray(stored.encode(mesh)))
    _same(mesh, back)
    back.V[0, 0] += 1.0  # the worker's arrays may be changed in place
    assert back.V[0, 0] == mesh.V[0, 0] + 1.0


def test_attributes_of_every_kind_and_shape_keep_dtype_shape_and_order():
    rng = np.random.default_rng(7)
    V = rng.random((5, 3)).astype(np.float64)
    F = np.array([[0, 1, 2], [1, 3, 2], [2, 3, 4]], dtype=np.int32)
    va = {
        "vertex_normals": rng.random((5, 3)).astype(np.float32),
        "w": np.arange(5, dtype=np.int64),
        "flag": np.array([True, False, True, True, False]),
        "rgba": rng.integers(0, 255, (5, 4), dtype=np.uint8),
        "t": rng.random((5, 2, 2)),
    }
    fa = {"part": np.array([0, 0, 1], dtype=np.int32), "c": rng.random(3).astype(np.float16)}
    mesh = TriMesh(V, F, va, fa)
    chunks = list(stored.encode_chunks(mesh))
    data = b"".join(bytes(c) for c in chunks)
    assert data[:8] == stored.MAGIC
    _same(mesh, stored.decode(data))
    # every array starts on an aligned offset of the buffer (the views need no copy)
    back = stored.decode(data)
    for a in [back.V, back.F, *back.vertex_attrs.values(), *back.face_attrs.values()]:
        addr = a.__array_interface__["data"][0] - np.frombuffer(data, np.uint8).ctypes.data
        assert addr % stored.ALIGN == 0


def test_an_empty_mesh_and_a_volume_carrier_round_trip():
    empty = TriMesh(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32))
    _same(empty, stored.decode(stored.encode(empty)))
    vol = load_bytes(_npy(np.arange(27, dtype=np.float32).reshape(3, 3, 3)), "v.npy")
    _same(vol, stored.decode(stored.encode(vol)))


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_inputs_stored_as_npz_before_are_still_read():
    mesh = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    buf = io.BytesIO()
    np.savez(buf, V=mesh.V, F=mesh.F, **{"vertex.w": np.arange(mesh.n_vertices)})
    back = stored.decode(buf.getvalue())
    np.testing.assert_array_equal(back.V, mesh.V)
    np.testing.assert_array_equal(back.vertex_attrs["w"], np.arange(mesh.n_vertices))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d[:40],  # cut in its table
        lambda d: d[: len(d) - 5],  # cut in its last array
        lambda d: b"NOTSTORE" + d[8:],
        lambda d: d[:16] + b"{" * (len(d) - 16),
    ],
)
def test_a_damaged_blob_is_a_typed_error(mutate):
    mesh = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    with pytest.raises(FormatError) as e:
        stored.decode(mutate(stored.encode(mesh)))
    assert e.value.code == "format.stored_unreadable"


def test_object_arrays_are_refused_when_storing():
    mesh = TriMesh(np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32))
    mesh.vertex_attrs["bad"] = np.array([None, 1, "x"], dtype=object)
    with pytest.raises(TypeError):
        stored.encode(mesh)
