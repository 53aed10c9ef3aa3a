"""``tessera admin``: workers, jobs, stuck jobs, dead letters and retry, from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from workers.queue.jobs import JobQueue


def admin(
    *args: str, redis_url: str | None, data_dir: str = "/nonexistent", lease: float = 20.0
) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TESSERA_REDIS_URL", "REDIS_URL")}
    env["TESSERA_LEASE_SECONDS"] = str(lease)
    if redis_url:
        env["TESSERA_REDIS_URL"] = redis_url
    r = subprocess.run(
        [sys.executable, "-m", "service.cli", "admin", *args, "--data-dir", data_dir],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.returncode, r.stdout + r.stderr


@pytest.fixture
def q(redis_client):
    return JobQueue(redis_client, lease_seconds=0.3, max_attempts=2)


def _claim(q, consumer="w1"):
    [(entry, job_id)] = q.read_next(consumer, block_ms=100)
    return q.claim(consumer, entry, job_id)


def test_dead_letters_listed_and_retried(q, redis_url):
    q.submit("doomed", {"spec": {}, "key_id": "alpha"})
    for _ in range(2):
        c = _claim(q)
        err = {"code": "engine.internal", "message": "it broke"}
        q.requeue(c.job_id, c.entry, err, owner="w1", attempt=c.attempt)
    rc, out = admin("dead", redis_url=redis_url)
    assert rc == 0 and "doomed" in out and "engine.internal" in out and "2/2" in out, out
    rc, out = admin("jobs", "--state", "failed", "--json", redis_url=redis_url)
    assert rc == 0 and [j["id"] for j in json.loads(out)["data"]] == ["doomed"]
    rc, out = admin("retry", "doomed", redis_url=redis_url)
    assert rc == 0 and "doomed: queued again" in out, out
    assert q.get("doomed")["state"] == "queued"
    rc, out = admin("dead", redis_url=redis_url)
    assert rc == 0 and "no dead letters" in out
    rc, out = admin("retry", "doomed", "ghost", redis_url=redis_url)
    assert rc == 1 and "doomed: not failed" in out and "ghost: no such job" in out, out
    rc, out = admin("jobs", "--key", "alpha", redis_url=redis_url)
    assert rc == 0 and "doomed" in out and "queued" in out and "0/2" in out, out


def test_workers_and_stuck_jobs(q, redis_url):
    q.heartbeat("gpu-box-w0", {"backends": ["cpu", "gpu"], "gpu": {"name": "NVIDIA H100"},
                               "jobs": ["held"], "version": "0.1.0", "host": "gpu-box",
                               "pid": 42})  # fmt: skip
    q.heartbeat("old-w1", {"backends": ["cpu"]}, now=time.time() - 120)
    rc, out = admin("workers", redis_url=redis_url)
    assert rc == 0 and "gpu-box-w0" in out and "cpu,gpu (NVIDIA H100)" in out, out
    assert "held" in out and "old-w1" not in out
    rc, out = admin("workers", "--all", redis_url=redis_url)
    assert "old-w1" in out and "lost" in out, out
    q.submit("held", {"spec": {}})
    assert _claim(q, "gpu-box-w0") is not None
    rc, out = admin("stuck", redis_url=redis_url, lease=4.0)
    assert rc == 0 and "no stuck jobs" in out
    time.sleep(4.5)  # past the lease: nobody reaps (no supervisor runs)
    rc, out = admin("stuck", "--json", redis_url=redis_url, lease=4.0)
    [s] = json.loads(out)
    assert (
        s["id"] == "held" and s["consumer"] == "gpu-box-w0" and "lease expired" in s["reasons"][0]
    )


def test_redis_from_tessera_ups_data_dir_and_a_clear_line_when_unreachable(q, redis_url, tmp_path):
    (tmp_path / "redis").mkdir()
    (tmp_path / "redis" / "url").write_text(redis_url + "\n")
    q.heartbeat("w0", {"backends": ["cpu"]})
    rc, out = admin("workers", redis_url=None, data_dir=str(tmp_path))
    assert rc == 0 and "w0" in out, out
    rc, out = admin("workers", redis_url=None, data_dir=str(tmp_path / "none"))
    assert rc != 0 and "no Redis" in out and "Traceback" not in out
    rc, out = admin("dead", redis_url="redis://127.0.0.1:1/0")
    assert rc == 2 and "Redis unavailable" in out and "Traceback" not in out, out
