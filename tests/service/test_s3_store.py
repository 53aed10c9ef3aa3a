"""The service on an S3 blob store (a real SeaweedFS): inputs, results and artifacts live in the
bucket, the API streams results or redirects to presigned URLs, and nothing touches the disk."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

import tessera
from tests.conftest import mesh_path
from tests.live import LiveApi, LiveService, live_settings
from workers.engine.artifacts import load_matrix
from workers.engine.io import load_bytes
from workers.queue.blobs import open_store, store_config

pytestmark = pytest.mark.slow


@pytest.fixture
def s3_service(s3_server, settings, tmp_path) -> Iterator[LiveService]:
    s = live_settings(settings.redis_url, tmp_path / "data", **s3_server.options())
    svc = LiveService(s, tmp_path, n_workers=1)
    try:
        svc.wait_ready()
        yield svc
    finally:
        svc.stop()


def test_jobs_run_on_the_s3_store(s3_service, tmp_path):
    s = s3_service.settings
    with tessera.Client(s3_service.url) as tc:
        job = tc.submit(mesh_path("rx-sphere3.obj"), ["vertex_normals", "laplacian_matrix"])
        done = tc.wait(job, timeout=60)
        streamed = tc.result(job)  # through the API
        L = load_matrix(tc.artifact(job, "laplacian"), "npz")
    mesh = load_bytes(streamed, "r.ply")
    assert mesh.n_faces == 768 and "vertex_normals" in mesh.vertex_attrs
    assert L.shape == (386, 386) and abs(L @ np.ones(386)).max() < 1e-9
    store = open_store(store_config(s))
    deadline = time.time() + 10  # the outcome is saved just after the end is committed
    while "outcome.json" not in (
        names := [k.rsplit("/", 1)[-1] for k in store.list_prefix(f"jobs/{job['id']}")]
    ):
        assert time.time() < deadline, names
        time.sleep(0.05)
    assert sorted(names) == [
        "artifact-laplacian-a1.npz",
        "artifact-mass-a1.npz",
        "input.arrays",
        "manifest.json",
        "outcome.json",
        "result-a1.ply",
    ]
    assert json.loads(store.get_bytes(f"jobs/{job['id']}/outcome.json"))["state"] == "succeeded"
    assert store.get_bytes(f"jobs/{job['id']}/result-a1.ply") == streamed
    assert done["result"]["bytes"] == len(streamed)
    assert not (tmp_path / "data" / "blobs" / "jobs").exists()

    # an API configured to presign answers 307 to the bucket; the client follows it
    presigning = LiveApi(s.model_copy(update={"s3_presign_seconds": 60})).start()
    try:
        r = httpx.get(f"{presigning.url}/v1/jobs/{job['id']}/result")
        assert r.status_code == 307 and "X-Amz-Signature=" in r.headers["location"]
        direct = httpx.get(r.headers["location"])
        assert direct.content == streamed
        assert direct.headers["content-disposition"] == 'attachment; filename="rx-sphere3.ply"'
        with tessera.Client(presigning.url) as tc:
            assert tc.result(job) == streamed
    finally:
        presigning.stop()

    store.delete_prefix(f"jobs/{job['id']}")  # the result is gone: 410, not a broken stream
    with tessera.Client(s3_service.url) as tc, pytest.raises(tessera.Gone) as e:
        tc.result(job)
    assert e.value.code == "job.result_missing"
