"""Redis killed, restarted and wiped under real workers: no accepted job is lost, the API answers
503 (never 500) while Redis is down, workers reconnect, and jobs Redis lost come back from the
blob store's manifests."""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from datetime import datetime

import pytest
import redis

from tests.conftest import RedisServer, Workers
from tests.service.helpers import assert_problem, spec, submit, wait

pytestmark = pytest.mark.slow


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    """A Redis of this test's own (AOF on), so the test may kill it."""
    d = tmp_path / "redis"
    d.mkdir()
    server = RedisServer(d)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def stack(own_redis, settings, tmp_path):
    from fastapi.testclient import TestClient

    from service.main import create_app

    s = settings.model_copy(update={"redis_url": own_redis.url})
    w = Workers(s, tmp_path)
    with TestClient(create_app(s)) as c:
        yield c, w, s
    w.stop_all()


def kill9(server: RedisServer) -> None:
    assert server.proc is not None
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


def test_redis_killed_and_restarted_under_load_loses_no_job(own_redis, stack):
    client, workers, _ = stack
    workers.start("w1")
    workers.start("w2")
    jobs = [
        submit(client, spec_text=spec({"op": "sleep", "seconds": 0.3})).json() for _ in range(12)
    ]
    time.sleep(1.5)  # AOF is fsynced every second: what was accepted before is on disk
    wait(client, jobs[0]["url"], ("running", "succeeded"))
    kill9(own_redis)
    # while Redis is down: 503 with its code, never 500
    assert_problem(client.get(jobs[0]["url"]), 503, "redis.unavailable")
    assert_problem(submit(client), 503, "redis.unavailable")
    assert client.get("/readyz").status_code == 503
    time.sleep(2.0)
    own_redis.start()
    later = submit(client).json()  # the API reconnects by itself
    for j in [*jobs, later]:
        done = wait(client, j["url"], timeout=60)
        assert done["state"] == "succeeded", done
    # the workers reconnected: both still alive and heartbeating
    assert all(p.poll() is None for p in workers.procs.values())
    assert client.get("/readyz").json()["checks"]["workers"] == 2


def test_jobs_lost_with_all_redis_data_are_recreated_from_manifests(own_redis, stack):
    client, workers, settings = stack
    body = spec({"op": "sleep", "seconds": 0.1}, "stats")
    queued = [
        submit(client, spec_text=body, headers={"Idempotency-Key": f"k{i}"}).json()
        for i in range(5)
    ]
    kill9(own_redis)
    shutil.rmtree(own_redis.dir)  # the AOF is gone too: Redis comes back empty
    own_redis.dir.mkdir()
    own_redis.start()
    assert_problem(client.get(queued[0]["url"]), 404, "job.not_found")
    workers.start("w1")  # it finds the dataset new and re-creates the jobs from the blob store
    deadline = time.time() + 30
    # recovery re-creates them one by one, in the blob store's order: wait for all five
    while any(client.get(j["url"]).status_code == 404 for j in queued):
        assert time.time() < deadline, "jobs not re-created"
        time.sleep(0.1)
    for j in queued:
        done = wait(client, j["url"], timeout=60)
        assert done["state"] == "succeeded", done
        assert done["input"]["name"] == "rx-cube.obj"
    # the idempotency keys came back with their jobs
    again = submit(client, spec_text=body, headers={"Idempotency-Key": "k0"})
    assert again.status_code == 200 and again.json()["id"] == queued[0]["id"]
    r = redis.Redis.from_url(own_redis.url)
    assert int(r.hget("tessera:counters", "recovered")) == 5


def test_jobs_that_had_ended_keep_their_end_when_redis_loses_everything(own_redis, stack):
    client, workers, _ = stack
    workers.start("w1")
    done = wait(client, submit(client).json()["url"], timeout=60)
    assert done["state"] == "succeeded", done
    long = spec({"op": "sleep", "seconds": 30})
    running = submit(client, spec_text=long).json()
    wait(client, running["url"], ("running",))
    stopped = [client.delete(running["url"]).json()]
    queued = submit(client, spec_text=long).json()  # cancelled before any worker took it
    stopped.append(client.delete(queued["url"]).json())
    assert [j["state"] for j in stopped] == ["cancelled", "cancelled"]
    waiting = submit(client).json()
    workers.stop_all()
    kill9(own_redis)
    shutil.rmtree(own_redis.dir)  # the AOF is gone too: Redis comes back empty
    own_redis.dir.mkdir()
    own_redis.start()
    workers.start("w2")  # it finds the dataset new and re-creates the jobs from the blob store
    deadline = time.time() + 30
    while any(client.get(j["url"]).status_code == 404 for j in (waiting, done, *stopped)):
        assert time.time() < deadline, "jobs not re-created"
        time.sleep(0.1)
    assert wait(client, waiting["url"], timeout=60)["state"] == "succeeded"  # it ran at last
    for before in (done, *stopped):
        after = client.get(before["url"]).json()
        for field in ("state", "attempts", "created_at", "finished_at", "error"):
            assert after[field] == before[field], (field, before, after)
    assert client.get(done["url"]).json()["timings"] == done["timings"]
    result = client.get(done["result"]["url"])  # its result is still there
    assert result.status_code == 200 and len(result.content) == done["result"]["bytes"]
    assert all(j["id"] not in workers.log("w2") for j in stopped)  # neither ran again
    r = redis.Redis.from_url(own_redis.url)
    assert int(r.hget("tessera:counters", "recovered_final")) == 3
    assert int(r.hget("tessera:counters", "recovered")) == 1


def test_recovery_command_recreates_missing_jobs(own_redis, stack):
    import subprocess
    import sys

    from tests.conftest import ROOT, settings_env

    client, _, settings = stack
    job = submit(client).json()
    redis.Redis.from_url(own_redis.url).flushall()
    env = settings_env(settings)
    out = subprocess.run(
        [sys.executable, "-m", "workers", "--recover"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.splitlines() == ["re-created 1 jobs", job["id"]]
    rec = client.get(job["url"]).json()
    assert rec["state"] == "queued"

    def ts(text: str) -> float:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

    assert ts(rec["created_at"]) == pytest.approx(ts(job["created_at"]), abs=1.0)  # kept
