"""The preview encoding (``service/preview.py``) and ``GET /v1/jobs/{id}/preview``."""

from __future__ import annotations

import numpy as np
import pytest

from service import preview
from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit, wait
from workers.engine.io import load_bytes, load_path
from workers.engine.mesh import TriMesh


def _grid(n: int) -> TriMesh:
    """An n×n square grid of 2·n² triangles on the unit square, with a vertex and a face scalar."""
    xs = np.linspace(0.0, 1.0, n + 1)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    V = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1).astype(np.float32)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel()
    c, d = idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    F = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]).astype(np.int32)
    height = V[:, 0].astype(np.float32).copy()
    height[0] = np.inf  # e.g. a vertex a geodesic distance cannot reach
    return TriMesh(V, F, {"height": height}, {"face_id": np.arange(len(F), dtype=np.int32)})


def test_encode_keeps_small_meshes_exactly():
    mesh = _grid(10)
    header, arrays = preview.decode(preview.encode(mesh))
    assert (header["vertices"], header["faces"], header["reduced"]) == (121, 200, False)
    assert header["source"] == {"vertices": 121, "faces": 200}
    np.testing.assert_array_equal(arrays["position"], mesh.V)
    np.testing.assert_array_equal(arrays["index"], mesh.F)
    assert "normal" not in arrays
    np.testing.assert_array_equal(arrays["vertex.height"], mesh.vertex_attrs["height"])
    np.testing.assert_array_equal(arrays["face.face_id"], np.arange(200))
    height = next(b for b in header["buffers"] if b["name"] == "height")
    assert (height["min"], height["max"], height["nonfinite"]) == (0.0, 1.0, 1)
    assert height["low"] == pytest.approx(0.0) and height["high"] == pytest.approx(1.0)
    for b in header["buffers"]:
        assert b["offset"] % 4 == 0


def test_encode_reduces_large_meshes_by_clustering():
    mesh = _grid(100)  # 20 000 faces
    header, arrays = preview.decode(preview.encode(mesh, max_faces=2000))
    assert header["reduced"] and header["source"] == {"vertices": 101**2, "faces": 20000}
    assert 1000 <= header["faces"] <= 2000
    V, F = arrays["position"], arrays["index"]
    assert len(V) == header["vertices"] and F.max() < len(V)
    assert np.all((F[:, 0] != F[:, 1]) & (F[:, 1] != F[:, 2]) & (F[:, 0] != F[:, 2]))
    assert len(np.unique(np.sort(F, axis=1), axis=0)) == len(F)
    # still the unit square, and attributes are averages of the originals
    np.testing.assert_allclose(V.min(axis=0), [0, 0, 0], atol=0.02)
    np.testing.assert_allclose(V.max(axis=0), [1, 1, 0], atol=0.02)
    h = arrays["vertex.height"]
    finite = np.isfinite(h)
    assert finite.sum() == len(h) - 1  # the cluster holding the infinite vertex
    np.testing.assert_allclose(h[finite], V[finite, 0], atol=1e-5)
    assert len(arrays["face.face_id"]) == len(F)


def test_encode_carries_unit_normals_through_reduction():
    mesh = load_path(mesh_path("spot.obj")).run(["vertex_normals"], device="cpu").mesh
    header, arrays = preview.decode(preview.encode(mesh, max_faces=1000))
    assert header["reduced"] and header["faces"] <= 1000
    np.testing.assert_allclose(np.linalg.norm(arrays["normal"], axis=1), 1.0, atol=1e-5)
    roles = {b["name"]: b["role"] for b in header["buffers"]}
    assert roles["vertex_normals"] == "normal"  # shading, not a colour choice


def test_decode_refuses_other_bytes():
    with pytest.raises(ValueError, match="not a Tessera preview"):
        preview.decode(b"ply\n...")


@pytest.mark.slow
def test_preview_route_serves_input_at_once_and_result_when_done(client, workers):
    r = submit(
        client,
        "spot.obj",
        spec("vertex_normals", "gaussian_curvature", "face_areas"),
    )
    job = r.json()
    url = job["url"]
    # the input exists as soon as the job does, before any worker runs
    r = client.get(url + "/preview", params={"mesh": "input"})
    assert r.status_code == 200 and r.headers["content-type"] == preview.MEDIA_TYPE
    header, arrays = preview.decode(r.content)
    spot = load_path(mesh_path("spot.obj"))
    np.testing.assert_array_equal(arrays["position"], spot.V)
    np.testing.assert_array_equal(arrays["index"], spot.F)
    assert_problem(client.get(url + "/preview"), 409, "job.not_ready")

    workers.start("w1")
    assert wait(client, url)["state"] == "succeeded"
    header, arrays = preview.decode(client.get(url + "/preview").content)
    result = load_bytes(client.get(url + "/result").content, "r.ply")
    np.testing.assert_array_equal(arrays["position"], result.V)
    np.testing.assert_array_equal(arrays["index"], result.F)
    np.testing.assert_array_equal(arrays["normal"], result.vertex_attrs["vertex_normals"])
    np.testing.assert_array_equal(
        arrays["vertex.gaussian_curvature"], result.vertex_attrs["gaussian_curvature"]
    )
    np.testing.assert_array_equal(arrays["face.face_areas"], result.face_attrs["face_areas"])
    # cached: the second answer is the same bytes; a smaller cap is another preview
    assert client.get(url + "/preview").content == client.get(url + "/preview").content
    small, _ = preview.decode(client.get(url + "/preview", params={"max_faces": 1000}).content)
    assert small["reduced"] and small["faces"] <= 1000


def test_preview_route_checks_its_parameters(client):
    job = submit(client).json()
    r = client.get(job["url"] + "/preview", params={"mesh": "output"})
    assert_problem(r, 422, "request.invalid")
    r = client.get(job["url"] + "/preview", params={"mesh": "input", "max_faces": 10})
    assert_problem(r, 422, "request.invalid")
    assert_problem(client.get("/v1/jobs/0123abcd/preview?mesh=input"), 404, "job.not_found")
