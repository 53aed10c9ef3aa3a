"""The three bodies of ``POST /v1/jobs`` (multipart, the file itself, the spec alone) and the long
poll of ``GET /v1/jobs/{id}?wait=``, through HTTP with real workers and Redis."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit, wait
from workers.engine.io import load_bytes

pytestmark = pytest.mark.slow

NORMALS = spec("weld", {"op": "vertex_normals", "weighting": "angle"}, "gaussian_curvature")


def raw(client, name, spec_text=NORMALS, headers=None, **params):
    data = mesh_path(name).read_bytes() if isinstance(name, str) else name
    return client.post(
        "/v1/jobs",
        content=data,
        params=params,
        headers={"Content-Type": "application/octet-stream", "Tessera-Spec": spec_text}
        | (headers or {}),
    )


def test_the_file_as_the_body_gives_the_same_result_as_multipart(client, workers):
    workers.start("w1")
    a = raw(client, "spot.obj", filename="spot.obj")
    assert a.status_code == 202, a.text
    assert a.json()["input"]["name"] == "spot.obj"
    assert a.json()["input"]["bytes"] == len(mesh_path("spot.obj").read_bytes())
    b = submit(client, "spot.obj", NORMALS)
    ja, jb = wait(client, a.json()["url"]), wait(client, b.json()["url"])
    assert ja["state"] == jb["state"] == "succeeded", (ja, jb)
    assert ja["stats_before"] == jb["stats_before"] and ja["stats_after"] == jb["stats_after"]
    ra, rb = client.get(ja["result"]["url"]), client.get(jb["result"]["url"])
    assert ra.content == rb.content
    assert ra.headers["content-disposition"] == 'attachment; filename="spot.ply"'
    mesh = load_bytes(ra.content, "spot.ply")
    assert np.isfinite(mesh.vertex_attrs["gaussian_curvature"]).all()


def test_without_a_filename_the_format_comes_from_the_bytes(client, workers):
    workers.start("w1")
    r = raw(client, "rx-torus.obj")
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    assert job["input"]["faces"] == job["stats_before"]["faces"] > 0
    assert job["result"]["filename"] == "result.ply"


def test_a_file_body_needs_its_spec_in_the_header(client):
    r = client.post("/v1/jobs", content=b"ply\n", headers={"Content-Type": "model/stl"})
    body = assert_problem(r, 422, "spec.missing")
    assert "Tessera-Spec" in body["detail"]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "upload.no_mesh"),
        (b"\x00\x01 not a mesh at all", "format.unsupported"),
        (b"ply\nformat binary_little_endian 1.0\nelement vertex 1000000\n", None),
    ],
)
def test_a_bad_file_body_is_refused_before_anything_is_stored(client, data, code):
    r = raw(client, data, filename="x.ply" if data.startswith(b"ply") else None)
    assert r.status_code == 422, r.text
    if code:
        assert r.json()["code"] == code


def test_a_bad_spec_header_is_refused(client):
    r = raw(client, "rx-cube.obj", spec_text='{"pipeline": [{"op": "no_such_op"}]}')
    assert_problem(r, 422, "spec.invalid")
    r = raw(client, "rx-cube.obj", spec_text="{not json")
    assert_problem(r, 422, "spec.invalid")


def test_the_extension_must_agree_with_the_bytes(client):
    r = raw(client, "rx-cube.obj", filename="cube.stl")
    assert_problem(r, 422, "format.mismatch")


def test_the_same_file_body_and_key_is_one_job_another_body_a_conflict(client):
    key = {"Idempotency-Key": "raw-1"}
    a = raw(client, "rx-cube.obj", headers=key, filename="c.obj")
    b = raw(client, "rx-cube.obj", headers=key, filename="c.obj")
    assert (a.status_code, b.status_code) == (202, 200), (a.text, b.text)
    assert a.json()["id"] == b.json()["id"]
    c = raw(client, "rx-sphere3.obj", headers=key, filename="c.obj")
    assert_problem(c, 409, "idempotency.conflict")
    d = raw(client, "rx-cube.obj", headers=key, filename="d.obj")  # the name is part of it
    assert_problem(d, 409, "idempotency.conflict")


def test_the_body_limit_holds_for_a_file_body(client, settings):
    big = b"x" * (settings.max_upload_bytes + 1)
    r = raw(client, big, filename="big.obj")
    assert_problem(r, 413, "upload.too_large")


def test_a_json_body_is_the_spec_of_a_pipeline_that_makes_its_mesh(client, workers):
    workers.start("w1")
    body = {
        "pipeline": [{"op": "marching_cubes", "field": {"resolution": 16}}],
        "output": {"format": "npz"},
    }
    r = client.post("/v1/jobs", json=body)
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    assert job["stats_after"]["faces"] > 0 and job["input"]["faces"] == 0
    r = client.post("/v1/jobs", json={"pipeline": [{"op": "weld"}]})
    assert_problem(r, 422, "upload.no_mesh")


def test_long_poll_answers_when_the_job_ends(client, workers):
    workers.start("w1")
    job = submit(client, "spot.obj", NORMALS).json()
    t = time.monotonic()
    done = client.get(job["url"], params={"wait": 30}).json()
    assert done["state"] == "succeeded", done
    assert time.monotonic() - t < 25
    # an ended job answers at once
    t = time.monotonic()
    assert client.get(job["url"], params={"wait": 30}).json()["state"] == "succeeded"
    assert time.monotonic() - t < 2


def test_long_poll_gives_up_after_its_wait(client):
    job = submit(client, "rx-cube.obj").json()  # no worker: it stays queued
    t = time.monotonic()
    r = client.get(job["url"], params={"wait": 0.5})
    assert r.status_code == 200 and r.json()["state"] == "queued"
    assert 0.4 <= time.monotonic() - t < 5


def test_a_long_poll_outlasts_the_redis_clients_read_timeout(client):
    """redis-py's asyncio client gives up reading after 5 s unless told otherwise: a quiet job's
    long poll must still run its whole wait."""
    job = submit(client, "rx-cube.obj").json()  # no worker: it stays queued, its log quiet
    t = time.monotonic()
    r = client.get(job["url"], params={"wait": 6})
    assert r.status_code == 200 and r.json()["state"] == "queued"
    assert 5.9 <= time.monotonic() - t < 10


@pytest.mark.parametrize("wait_s", ["-1", "61", "soon"])
def test_long_poll_bounds(client, wait_s):
    job = submit(client, "rx-cube.obj").json()
    assert_problem(client.get(job["url"], params={"wait": wait_s}), 422, "request.invalid")


def test_long_poll_of_an_unknown_job_is_404(client):
    assert_problem(client.get("/v1/jobs/nosuchjob", params={"wait": 1}), 404, "job.not_found")


def test_the_record_says_where_the_job_ran_and_why(client, workers):
    workers.start("w1")
    job = wait(client, submit(client, "rx-cube.obj", spec("stats")).json()["url"])
    assert job["state"] == "succeeded", job
    assert job["device"]["requested"] == "auto"
    assert job["device"]["backend"] == job["backend"] == "numpy"
    assert job["device"]["reason"]
    assert json.dumps(job["device"])  # plain JSON


def test_a_small_job_passes_a_long_one_on_another_compute_child(client, workers):
    """Several workers (each with its own compute child) per machine: a small job does not wait
    behind a long one."""
    workers.start("w1")
    workers.start("w2")
    long = submit(client, "rx-cube.obj", spec({"op": "sleep", "seconds": 30})).json()
    deadline = time.monotonic() + 20
    while client.get(long["url"]).json()["state"] != "running":
        assert time.monotonic() < deadline, "the long job never started"
        time.sleep(0.05)
    small = submit(client, "spot.obj", NORMALS).json()
    done = client.get(small["url"], params={"wait": 20}).json()
    assert done["state"] == "succeeded", done
    assert client.get(long["url"]).json()["state"] == "running"
    client.delete(long["url"])


def test_a_warming_worker_warms_its_backends_then_runs_jobs(client, settings, tmp_path):
    from tests.conftest import Workers
    from workers.engine.backend import gpu_available

    w = Workers(settings.model_copy(update={"warm_up": True}), tmp_path)
    try:
        w.start("warm")
        job = submit(client, "spot.obj", NORMALS).json()
        done = client.get(job["url"], params={"wait": 60}).json()
        assert done["state"] == "succeeded", done
        log = w.log("warm")
        assert "warmed numpy in" in log
        assert ("warmed cupy in" in log) == gpu_available()
        assert "warming" not in log  # no failure
    finally:
        w.stop_all()


def test_the_job_says_what_the_file_held_and_the_mesh_leaves_out(client):
    # its UVs are carried; the material library it names did not come with it
    data = b"mtllib spot.mtl\n" + mesh_path("spot.obj").read_bytes()
    r = raw(client, data, filename="spot.obj")
    assert r.status_code == 202, r.text
    assert r.json()["input"]["dropped"] == {"material libraries": 1}
    got = client.get(r.json()["url"]).json()
    assert got["input"]["dropped"] == {"material libraries": 1}
    plain = raw(client, "rx-cube.obj", filename="cube.obj")
    assert plain.json()["input"]["dropped"] == {}


def test_a_spooled_body_is_received_while_its_pieces_are_written(monkeypatch):
    """``read_body`` writes a spooled body on a thread while it goes on receiving (awaiting
    each write would stop the reading), keeps one write in flight, gives back the bytes in
    order, and closes the file of a body cut off only after its write has ended."""
    import asyncio
    import tempfile
    import threading
    import time

    from service import spool

    monkeypatch.setattr(spool, "IN_MEMORY_BYTES", 10)
    monkeypatch.setattr(spool, "WRITE_BYTES", 100)
    received: list[int] = []
    seen_while_writing: list[int] = []
    in_flight = threading.Semaphore(1)
    closed_before_write_ended: list[bool] = []

    real = tempfile.TemporaryFile

    class SlowFile:
        def __init__(self, *a, **kw):
            self.f = real()
            self.writing = False

        def writelines(self, parts):
            assert in_flight.acquire(blocking=False), "two writes in flight"
            self.writing = True
            time.sleep(0.05)
            seen_while_writing.append(len(received))
            self.f.writelines(parts)
            self.writing = False
            in_flight.release()

        def write(self, data):
            self.writelines([data])

        def close(self):
            closed_before_write_ended.append(self.writing)
            self.f.close()

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(spool.tempfile, "TemporaryFile", SlowFile)
    pieces = [bytes([i]) * 60 for i in range(20)]

    class Request:
        def __init__(self, cut: bool) -> None:
            self.cut = cut

        async def stream(self):
            for i, p in enumerate(pieces):
                received.append(i)
                await asyncio.sleep(0.005)
                yield p
            if self.cut:
                raise OSError("the client went away")

    body = asyncio.run(spool.read_body(Request(cut=False)))
    assert bytes(body.data) == b"".join(pieces) and body.spooled
    body.close()
    # the first write (pieces 0 and 1) took 50 ms; meanwhile the reading went on to the next
    # write's pieces (awaiting it: nothing read past piece 1)
    assert seen_while_writing[0] >= 4, seen_while_writing
    received.clear()
    with pytest.raises(OSError):
        asyncio.run(spool.read_body(Request(cut=True)))
    assert closed_before_write_ended[-1] is False
