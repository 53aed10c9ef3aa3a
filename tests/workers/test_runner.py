"""What a worker does with one job, without Redis: the stored input, the device choice, the
warm-up a compute child runs at start."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import mesh_path
from workers.engine.io import load_bytes, stored
from workers.engine.ops.stats import mesh_stats
from workers.queue.blobs import LocalBlobStore, input_key, legacy_input_key
from workers.runner import _warm_up_mesh, execute, load_input, warm_up

SPEC = {
    "pipeline": [{"op": "weld"}, {"op": "vertex_normals"}, {"op": "gaussian_curvature"}],
    "output": {"format": "ply"},
}


def _store_input(store, job_id, name="spot.obj"):
    mesh = load_bytes(mesh_path(name).read_bytes(), name)
    store.put_chunks(input_key(job_id), stored.encode_chunks(mesh))
    return mesh


def test_the_stored_input_comes_back_as_accepted(tmp_path):
    store = LocalBlobStore(tmp_path)
    mesh = _store_input(store, "j1")
    back = load_input(store, "j1")
    np.testing.assert_array_equal(back.V, mesh.V)
    np.testing.assert_array_equal(back.F, mesh.F)
    assert back.V.flags.writeable


def test_an_input_stored_as_npz_by_an_earlier_version_still_runs(tmp_path):
    import io

    store = LocalBlobStore(tmp_path)
    mesh = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    buf = io.BytesIO()
    np.savez(buf, V=mesh.V, F=mesh.F)
    store.put_bytes(legacy_input_key("old"), buf.getvalue())
    fields = execute("old", 1, SPEC, store)
    assert fields["stats_before"]["faces"] == 12 and fields["result"]["bytes"] > 0


def test_a_job_reports_where_it_ran_and_its_stages(tmp_path):
    store = LocalBlobStore(tmp_path)
    _store_input(store, "j2")
    fields = execute("j2", 1, {**SPEC, "device": "cpu"}, store)
    assert fields["device"] == {
        "requested": "cpu",
        "backend": "numpy",
        "reason": "device cpu was asked for",
    }
    assert {"load", "stats_before", "0:weld", "stats_after", "serialize"} <= set(fields["timings"])
    assert "transfer" not in fields["timings"]  # it stayed on the host


def test_auto_runs_a_small_mesh_on_the_cpu_even_with_a_gpu(tmp_path, monkeypatch):
    from workers.engine import backend

    monkeypatch.setattr(backend, "gpu_available", lambda: True)
    store = LocalBlobStore(tmp_path)
    _store_input(store, "j3", "rx-cube.obj")
    fields = execute("j3", 1, SPEC, store, gpu_min_faces=100)
    assert fields["backend"] == "numpy" and fields["device"]["backend"] == "numpy"
    assert "12 faces" in fields["device"]["reason"]


def test_the_warm_up_mesh_takes_every_branch_of_the_statistics():
    s = mesh_stats(_warm_up_mesh())
    assert s["components"] == 2 and s["genus"] == 1 and s["boundary_loops"] == 1
    assert s["closed"] is False and s["manifold"] and s["consistently_oriented"]


def test_warm_up_runs_on_the_cpu():
    assert warm_up("numpy") > 0


def test_warm_up_runs_a_pack_as_a_batch_chunk_does(monkeypatch):
    """The kernels of a batch's packs (packed weld, repair, statistics per member) are compiled
    by the warm-up too: the first pack of a batch took 9.1 s cold, 0.3 s warm on an H100."""
    from workers.engine import packing

    seen = []
    real = packing.run_packed

    def spy(meshes, steps, **kw):
        seen.append(([m.n_faces for m in meshes], [s.op.name for s in steps], kw))
        return real(meshes, steps, **kw)

    monkeypatch.setattr(packing, "run_packed", spy)
    warm_up("numpy")
    n = _warm_up_mesh().n_faces
    assert seen == [([n, n], ["weld", "repair", "vertex_normals"], seen[0][2])]
    assert seen[0][2]["stats"] is True


@pytest.mark.gpu
def test_warm_up_runs_on_the_gpu():
    assert warm_up("cupy") > 0


def test_a_textured_obj_zip_comes_back_as_an_obj_zip_with_its_library_and_texture(tmp_path):
    """The stored input keeps the corners and the materials; a job whose steps keep the faces
    writes them back as an OBJ zip named .zip."""
    import io
    import zipfile

    from tests.conftest import ASSETS

    store = LocalBlobStore(tmp_path)
    data = (ASSETS / "fuze.zip").read_bytes()
    mesh = load_bytes(data, "fuze.zip")
    store.put_chunks(input_key("tex"), stored.encode_chunks(mesh))
    spec = {"pipeline": [{"op": "laplacian_smooth"}], "output": {"format": "objzip"}}
    fields = execute("tex", 1, spec, store, input_name="fuze.zip")
    result = fields["result"]
    assert result["filename"] == "fuze.zip" and result["media_type"] == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(store.get_bytes(result["key"])))
    original = zipfile.ZipFile(io.BytesIO(data))
    assert z.read("fuze_uv.jpg") == original.read("fuze_uv.jpg")
    assert z.read("mesh.mtl") == original.read("fuze.obj.mtl")
    back = load_bytes(store.get_bytes(result["key"]), "r.zip")
    np.testing.assert_array_equal(back.corner_attrs["uv"], mesh.corner_attrs["uv"])
    assert back.dropped == {}


def test_a_textured_glb_job_keeps_its_materials_and_says_what_a_format_drops(tmp_path):
    """Duck.glb welded and decimated: as a Draco GLB it keeps its material, texture and UVs
    (result.dropped empty); as STL the record says what the file could not hold."""
    from tests.conftest import ASSETS
    from workers.engine.io.gltf import split_glb

    store = LocalBlobStore(tmp_path)
    mesh = load_bytes((ASSETS / "Duck.glb").read_bytes(), "Duck.glb")
    store.put_chunks(input_key("duck"), stored.encode_chunks(mesh))
    pipeline = [{"op": "weld"}, {"op": "decimate", "target_ratio": 0.5}]
    spec = {"pipeline": pipeline, "output": {"format": "glb", "compression": "draco"}}
    fields = execute("duck", 1, spec, store, input_name="Duck.glb")
    result = fields["result"]
    assert result["dropped"] == {} and result["filename"] == "Duck.glb"
    data = store.get_bytes(result["key"])
    tree, _ = split_glb(data)
    assert "KHR_draco_mesh_compression" in tree["extensionsRequired"]
    back = load_bytes(data, "r.glb")
    assert back.n_faces == mesh.n_faces // 2
    assert list(back.materials.files.values()) == list(mesh.materials.files.values())
    assert back.corner_attrs["uv"].shape == (back.n_faces, 3, 2)
    decimate = fields["reports"][1]["report"]
    assert decimate["texture"]["folded_faces"] < 0.04 * back.n_faces
    spec = {"pipeline": pipeline, "output": {"format": "stl"}}
    result = execute("duck", 1, spec, store, input_name="Duck.glb")["result"]
    assert result["dropped"] == {
        "texture coordinate sets": 1,
        "corner normals": 1,
        "materials": 1,
        "textures": 1,
    }
