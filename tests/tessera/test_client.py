"""The Python client end to end: a live API (uvicorn on a port) and real workers on Redis."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import tessera
from tessera import errors
from tessera._common import RetryPolicy, retry_after
from tests.conftest import RedisServer, _free_port, mesh_path
from tests.live import LiveApi, LiveService, live_settings
from workers.engine.errors import SpecError
from workers.engine.io import load_bytes

pytestmark = pytest.mark.slow

FAST = RetryPolicy(retries=3, base=0.01, max_delay=0.05)


@pytest.fixture
def tc(service: LiveService) -> Iterator[tessera.Client]:
    with tessera.Client(service.url, retry=FAST) as c:
        yield c


def test_exported_members():
    assert set(tessera.__all__) >= {"Client", "AsyncClient", "TesseraError", "JobFailed", "Mesh"}
    assert tessera.Mesh.load(mesh_path("rx-cube.obj")).n_faces == 12


def test_the_library_facade_loads_runs_and_saves(tmp_path):
    mesh = tessera.load(mesh_path("rx-cube.obj"))
    assert isinstance(mesh, tessera.Mesh)
    result = tessera.run(mesh, ["weld", "vertex_normals", "stats"], device="cpu")
    assert result.reports["stats"]["vertices"] == 8
    assert "vertex_normals" in result.mesh.vertex_attrs
    tessera.save(result.mesh, tmp_path / "cube.ply", attributes=["vertex_normals"])
    back = tessera.load(tmp_path / "cube.ply")
    assert back.n_faces == 12
    assert np.allclose(
        back.vertex_attrs["vertex_normals"], result.mesh.vertex_attrs["vertex_normals"]
    )
    with pytest.raises(FileNotFoundError, match="missing.obj"):
        tessera.load(tmp_path / "missing.obj")
    with pytest.raises(SpecError) as info:
        tessera.run(mesh, ["weld"], device="tpu")
    assert info.value.code == "spec.invalid" and "tpu" in str(info.value)


def test_submit_wait_download_with_progress(tc, tmp_path):
    seen = []
    job = tc.submit(
        mesh_path("rx-sphere3.obj"),
        ["weld", ("vertex_normals", {"weighting": "angle"}), {"op": "gaussian_curvature"}],
        output={"format": "ply", "attributes": ["vertex_normals", "gaussian_curvature"]},
    )
    assert job["state"] in ("queued", "running")  # an idle worker may claim it at once
    assert job["spec"]["pipeline"][1]["weighting"] == "angle"
    done = tc.wait(job, progress=seen.append, timeout=60)
    assert done["state"] == "succeeded" and done["progress"] == 1.0
    assert seen[-1]["state"] == "succeeded" and len(seen) >= 2
    states = [j["state"] for j in seen]
    assert states == sorted(states, key=["queued", "running", "succeeded"].index)
    out = tc.download(job["id"], tmp_path / "sphere.ply")
    assert out.read_bytes() == tc.result(job)
    mesh = load_bytes(out.read_bytes(), "sphere.ply")
    assert (mesh.n_vertices, mesh.n_faces) == (386, 768)
    n = mesh.vertex_attrs["vertex_normals"]
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left


def test_submit_bytes_and_several_parts(tc):
    cube = mesh_path("rx-cube.obj").read_bytes()
    with pytest.raises(ValueError, match="filename"):
        tc.submit(cube, ["stats"])
    job = tc.submit([cube, cube], [("merge", {"keep_parts": True})], filename=["a.obj", "b.obj"])
    assert job["input"]["parts"] == ["a.obj", "b.obj"]
    done = tc.wait(job, timeout=60)
    assert done["reports"][0]["report"]["parts"] == 2


def test_async_client_runs_jobs_side_by_side(service, tmp_path):
    async def main() -> list[dict]:
        async with tessera.AsyncClient(service.url, retry=FAST) as ac:
            names = ["rx-cube.obj", "rx-sphere3.obj", "rx-torus.obj"]
            jobs = await asyncio.gather(*(ac.submit(mesh_path(n), ["stats"]) for n in names))
            done = await asyncio.gather(*(ac.wait(j, timeout=60) for j in jobs))
            await ac.download(done[0], tmp_path / "cube.ply")
            assert "sleep" in [op["name"] for op in await ac.operations()]
            return done

    done = asyncio.run(main())
    assert [d["state"] for d in done] == ["succeeded"] * 3
    assert [d["input"]["name"] for d in done] == ["rx-cube.obj", "rx-sphere3.obj", "rx-torus.obj"]
    assert load_bytes((tmp_path / "cube.ply").read_bytes(), "c.ply").n_faces == 12


def test_problems_raise_their_family_with_the_code(tc):
    cube = mesh_path("rx-cube.obj")
    with pytest.raises(errors.InvalidInput) as e:
        tc.submit(cube, [{"op": "weld", "tolerance": -1}])
    assert (e.value.code, e.value.status) == ("spec.invalid", 422) and e.value.errors
    with pytest.raises(errors.InvalidInput) as e:
        tc.submit(b"solid x\nendsolid x\n", ["stats"], filename="x.stl")
    assert e.value.code.startswith(("mesh.", "format."))
    with pytest.raises(errors.NotFound) as e:
        tc.get("0123abcd")
    assert e.value.code == "job.not_found" and e.value.status == 404
    with pytest.raises(errors.NotFound):
        tc.operation("nope")
    job = tc.submit(cube, [{"op": "sleep", "seconds": 30}])
    with pytest.raises(errors.Conflict) as e:
        tc.result(job)
    assert e.value.code == "job.not_ready"
    tc.cancel(job)
    with pytest.raises(errors.JobCancelled) as e:
        tc.wait(job, timeout=10)
    assert e.value.job["state"] == "cancelled" and e.value.job_id == job["id"]
    assert isinstance(e.value, errors.TesseraError)


def test_failed_job_raises_job_failed_with_its_code(tc):
    job = tc.submit(mesh_path("rx-cube.obj"), [{"op": "sleep", "fail": "input"}])
    with pytest.raises(errors.JobFailed) as e:
        tc.wait(job, timeout=60)
    assert e.value.code == "mesh.test_rejected" and e.value.job["attempts"] == 1
    with pytest.raises(errors.Conflict) as e2:
        tc.cancel(job)
    assert e2.value.code == "job.already_finished"


def test_wait_timeout_and_cancel(tc):
    job = tc.submit(mesh_path("rx-cube.obj"), [{"op": "sleep", "seconds": 30}])
    t0 = time.monotonic()
    with pytest.raises(errors.WaitTimeout) as e:
        tc.wait(job, timeout=0.3)
    assert time.monotonic() - t0 < 2 and isinstance(e.value, TimeoutError)
    assert tc.cancel(job)["state"] == "cancelled"


def test_idempotency_key(tc):
    cube = mesh_path("rx-cube.obj")
    a = tc.submit(cube, ["stats"], idempotency_key="client-test-1")
    b = tc.submit(cube, ["stats"], idempotency_key="client-test-1")
    assert a["id"] == b["id"]
    with pytest.raises(errors.Conflict) as e:
        tc.submit(cube, ["weld"], idempotency_key="client-test-1")
    assert e.value.code == "idempotency.conflict"
    assert tc.submit(cube, ["stats"])["id"] != a["id"]  # a fresh key per call


def test_artifacts(tc, tmp_path):
    from workers.engine.artifacts import load_matrix

    job = tc.submit(mesh_path("rx-sphere3.obj"), ["laplacian_matrix"])
    done = tc.wait(job, timeout=60)
    assert set(done["artifacts"]) == {"laplacian", "mass"}
    L = load_matrix(tc.artifact(job, "laplacian"), "npz")
    assert L.shape == (386, 386) and abs(L @ np.ones(386)).max() < 1e-9
    path = tc.download_artifact(job, "mass", tmp_path / "mass.npz")
    assert load_matrix(path.read_bytes(), "npz").shape == (386, 386)
    with pytest.raises(errors.NotFound) as e:
        tc.artifact(job, "nope")
    assert e.value.code == "artifact.not_found"


def test_operations_catalogue(tc):
    ops = {op["name"]: op for op in tc.operations()}
    assert "weld" in ops and "tolerance" in ops["weld"]["params"]["properties"]
    assert tc.operation("weld")["name"] == "weld"


# ----------------------------------------------------------------------------- retries
class Scripted(http.server.BaseHTTPRequestHandler):
    """A real HTTP server answering from a script of (status, headers) and counting requests."""

    script: list[tuple[int, dict[str, str]]] = []
    times: list[float] = []

    def do_GET(self) -> None:
        Scripted.times.append(time.monotonic())
        status, headers = Scripted.script.pop(0) if Scripted.script else (200, {})
        body = json.dumps(
            {"data": [], "count": 0}
            if status == 200
            else {"type": "urn:tessera:problem:x.busy", "code": "x.busy", "status": status}
        ).encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    Scripted.times = []
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def operations(kind: str, url: str, retry: RetryPolicy) -> list[dict]:
    """``operations()`` through the sync or the async client: both carry the retry loop."""
    if kind == "sync":
        with tessera.Client(url, retry=retry) as c:
            return c.operations()

    async def main() -> list[dict]:
        async with tessera.AsyncClient(url, retry=retry) as ac:
            return await ac.operations()

    return asyncio.run(main())


CLIENTS = pytest.mark.parametrize("kind", ["sync", "async"])


@CLIENTS
def test_retries_honour_retry_after_then_back_off(scripted, kind):
    Scripted.script = [(429, {"Retry-After": "1"}), (503, {}), (200, {})]
    assert operations(kind, scripted, RetryPolicy(retries=3, base=0.05)) == []
    t = Scripted.times
    assert len(t) == 3
    assert 0.95 <= t[1] - t[0] < 1.5  # Retry-After: 1
    assert 0.02 <= t[2] - t[1] < 0.5  # backoff 0.05 with jitter in [0.025, 0.05]


@CLIENTS
def test_gives_up_with_the_last_problem(scripted, kind):
    Scripted.script = [(503, {})] * 3
    with pytest.raises(errors.ServiceUnavailable) as e:
        operations(kind, scripted, RetryPolicy(retries=2, base=0.01))
    assert e.value.code == "x.busy" and len(Scripted.times) == 3
    Scripted.script = [(429, {"Retry-After": "0"})] * 2
    with pytest.raises(errors.RateLimited):
        operations(kind, scripted, RetryPolicy(retries=1, base=0.01))
    # a wait longer than the policy allows (a daily quota's hours) is not waited: raised at once
    Scripted.script = [(429, {"Retry-After": "36000"}), (200, {})]
    t0 = time.monotonic()
    with pytest.raises(errors.RateLimited):
        operations(kind, scripted, RetryPolicy(retries=3, base=0.01, max_retry_after=120))
    assert time.monotonic() - t0 < 2


@CLIENTS
def test_a_url_where_nothing_listens_fails_at_once_naming_it(kind):
    """A wrong or stopped URL is not retried (the default policy's retries would take about
    10 s): one try, and the error names the URL and where it is set."""
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    with pytest.raises(errors.ServiceUnreachable) as e:
        operations(kind, url, RetryPolicy())
    assert time.monotonic() - t0 < 1.0
    assert e.value.code == "client.unreachable" and e.value.context == {"url": url}
    text = str(e.value)
    assert url in text and "--url" in text and "TESSERA_URL" in text
    assert "connection refused" in text
    assert isinstance(e.value, errors.ConnectionFailed)  # still a connection failure


@CLIENTS
def test_a_service_that_answered_then_stops_is_retried(scripted, kind):
    """Once the service has answered, a refused connection is a restart or a blip: retried with
    backoff, then raised as a connection failure that names the URL."""
    url = f"http://127.0.0.1:{_free_port()}"
    policy = RetryPolicy(retries=3, base=0.05, max_delay=0.1)

    async def async_run() -> None:
        async with tessera.AsyncClient(scripted, retry=policy) as ac:
            await ac.operations()  # the first call reaches a server...
            ac.url = url  # ...then the address stops answering
            await ac.operations()

    t0 = time.monotonic()
    with pytest.raises(errors.ConnectionFailed) as e:
        if kind == "sync":
            with tessera.Client(scripted, retry=policy) as c:
                c.operations()
                c.url = url
                c.operations()
        else:
            asyncio.run(async_run())
    assert not isinstance(e.value, errors.ServiceUnreachable)
    assert e.value.code == "client.connection" and url in str(e.value)
    assert time.monotonic() - t0 >= 0.05 * (1 + 2 + 2) / 2  # three backoffs were waited out
    assert len(Scripted.times) == 1


def test_an_invalid_spec_error_says_which_field_and_why(client):
    """The API's ``spec.invalid`` carries ``errors`` (where and why): the client's error text
    names each field, not just "the job spec is invalid"."""
    tc = tessera.Client("http://testserver", http=client)
    mesh = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
    with pytest.raises(errors.InvalidInput) as e:
        tc.submit(mesh, [("vertex_normals", {"weighting": "bogus"})], filename="t.obj",
                  output={"format": "xyz"})  # fmt: skip
    text = str(e.value)
    assert e.value.code == "spec.invalid"
    assert "pipeline[0] (vertex_normals) weighting: Input should be 'area'" in text
    assert "output.format: Input should be 'ply'" in text
    assert e.value.where == [w for w in text.split("; ")[1:]]


def test_retry_policy():
    p = RetryPolicy(retries=4, base=1.0, max_delay=4.0)
    for attempt, top in ((0, 1.0), (1, 2.0), (2, 4.0), (3, 4.0)):
        assert all(top / 2 <= p.backoff(attempt) <= top for _ in range(50))
    assert p.delay(4, None) is None
    assert retry_after("7") == 7.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("soon") is None


def test_submission_survives_redis_restart(tmp_path):
    """The API answers 503 redis.unavailable (Retry-After: 2) while Redis is down; the client
    waits and submits again, and the one job it gets is queued once Redis is back."""
    server = RedisServer(tmp_path)
    server.start()
    api = LiveApi(live_settings(server.url, tmp_path / "data")).start()
    try:
        server.stop()
        threading.Timer(0.5, server.start).start()
        with tessera.Client(api.url, retry=RetryPolicy(retries=4, base=0.2)) as c:
            t0 = time.monotonic()
            job = c.submit(mesh_path("rx-cube.obj"), ["stats"])
            assert time.monotonic() - t0 >= 1.5  # at least one Retry-After: 2 was waited out
            assert c.get(job)["state"] == "queued"
    finally:
        api.stop()
        server.stop()


def test_one_file_goes_as_the_body_several_as_a_form(tmp_path):
    from tessera._common import MAX_SPEC_HEADER, submission, uploads

    path = tmp_path / "cube.obj"
    path.write_bytes(mesh_path("rx-cube.obj").read_bytes())
    spec = {"pipeline": [{"op": "weld"}]}
    one = submission(uploads(path, None), spec)
    assert one["headers"]["Tessera-Spec"] == '{"pipeline":[{"op":"weld"}]}'
    assert one["headers"]["Content-Length"] == str(path.stat().st_size)
    assert one["params"] == {"filename": "cube.obj"}
    assert b"".join(bytes(p) for p in one["content"]) == path.read_bytes()
    data = bytes(range(256)) * 9000  # 2.3 MB of bytes: sent in pieces of at most 1 MiB
    pieces = list(submission(uploads(data, "x.stl"), spec)["content"])
    assert len(pieces) == 3 and b"".join(bytes(p) for p in pieces) == data
    several = submission(uploads([path, path], None), spec)
    assert "files" in several and len(several["files"]) == 2
    long_spec = {"pipeline": [{"op": "weld"}] * (MAX_SPEC_HEADER // 10)}
    assert "files" in submission(uploads(path, None), long_spec)


def test_wait_long_polls_instead_of_polling(tc):
    """Without a progress callback a wait is one long request (until the job ends or the
    timeout), not a loop of polls."""
    asked = []
    real_get = tc.get

    def counting_get(job, wait=0.0):
        asked.append(wait)
        return real_get(job, wait=wait)

    tc.get = counting_get
    job = tc.submit(mesh_path("rx-cube.obj"), [{"op": "sleep", "seconds": 30}])
    t0 = time.monotonic()
    with pytest.raises(errors.WaitTimeout):
        tc.wait(job, timeout=1.5)
    assert 1.3 < time.monotonic() - t0 < 5
    assert len(asked) <= 2 and asked[0] == pytest.approx(1.5, abs=0.1)
    tc.cancel(job)
