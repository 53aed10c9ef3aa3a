"""Binary PLY of a mesh on the GPU: its rows are packed on the device, and the file must be the
one the host writes for the same mesh, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import mesh_path
from workers.engine.io import _records, load_bytes, serialize, serialize_chunks

pytestmark = pytest.mark.gpu


def _mesh_with_attributes():
    mesh = load_bytes(mesh_path("spot.obj").read_bytes(), "spot.obj")
    rng = np.random.default_rng(3)
    n, m = mesh.n_vertices, mesh.n_faces
    mesh.vertex_attrs.update(
        {
            "vertex_normals": rng.random((n, 3)).astype(np.float32),
            "k": rng.random(n),  # float64
            "flag": rng.random(n) > 0.5,
            "id": np.arange(n, dtype=np.int64),
            "uv2": rng.random((n, 2)).astype(np.float32),
        }
    )
    mesh.face_attrs.update({"area": rng.random(m).astype(np.float32), "part": np.ones(m, np.int32)})
    return mesh


@pytest.mark.parametrize("attributes", [None, ["vertex_normals", "k"], ["area"]])
def test_the_gpu_writes_the_bytes_the_host_writes(attributes):
    host = _mesh_with_attributes()
    dev = host.to("cupy")
    assert serialize(dev, "ply", attributes) == serialize(host, "ply", attributes)


def test_small_device_chunks_join_to_the_same_file(monkeypatch):
    host = _mesh_with_attributes()
    monkeypatch.setattr(_records, "DEVICE_CHUNK_BYTES", 1000)  # many chunks, a partial last one
    pieces = list(serialize_chunks(host.to("cupy"), "ply", None))
    assert len(pieces) > 10
    assert b"".join(bytes(p) for p in pieces) == serialize(host, "ply", None)


def test_quads_of_a_gpu_mesh_are_still_written_as_polygons():
    from workers.engine.pipeline import run_pipeline

    cube = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    steps = [{"op": "weld"}, {"op": "subdivide", "scheme": "catmull_clark"}]
    host = run_pipeline(cube, steps, device="cpu").mesh
    polygons = serialize(host.to("cupy"), "ply", None)
    assert polygons == serialize(host, "ply", None)
    assert b"element face 36\n" in polygons  # 36 quads (each triangle makes 3), not 72 triangles
    triangles = serialize(host.to("cupy"), "ply", None, polygons=False)
    assert triangles == serialize(host, "ply", None, polygons=False)


def test_non_finite_texcoords_of_a_gpu_mesh_are_refused_as_on_the_host():
    """The PLY written on the device checks its texcoord list as the host does (on the
    device): a NaN would be written as the text 'nan'."""
    from workers.engine import MeshError, TriMesh

    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    uv = np.zeros((1, 3, 2), np.float32)
    uv[0, 1, 0] = np.nan
    host = TriMesh(V, np.array([[0, 1, 2]], np.int32), corner_attrs={"uv": uv})
    for mesh in (host, host.to("cupy")):
        with pytest.raises(MeshError) as e:
            serialize(mesh, "ply")
        assert e.value.code == "mesh.non_finite"
