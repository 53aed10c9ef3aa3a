"""Faults inside real worker processes: the compute child killed, a worker frozen past its
lease, deadlines, shutdown, poison jobs. Each promise is checked on the job records and on the
blob store (exactly one visible result, no orphans)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.service.helpers import spec, submit, wait
from workers.queue import keys

pytestmark = pytest.mark.slow


def child_pids(pid: int) -> list[int]:
    """The compute children of a supervisor (Linux /proc; multiprocessing's resource tracker,
    also a child, left out)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for c in (task / "children").read_text().split():
            cmd = Path(f"/proc/{c}/cmdline").read_bytes()
            if b"spawn_main" in cmd:
                out.append(int(c))
    return out


def wait_for(pred, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def job_files(settings, job_id: str) -> list[str]:
    folder = settings.blob_root / "jobs" / job_id
    return sorted(p.name for p in folder.iterdir())


def test_an_idle_workers_dead_child_is_replaced_before_the_next_job(client, workers):
    w = workers.start("w1")
    [child] = wait_for(lambda: child_pids(w.pid), 15, "the compute child")
    wait_for(lambda: "started child" in workers.log("w1"), 10, "the start logged")
    os.kill(child, signal.SIGKILL)
    [new] = wait_for(lambda: [p for p in child_pids(w.pid) if p != child], 15, "a new child")
    assert new != child and w.poll() is None
    job = wait(client, submit(client).json()["url"], timeout=30)
    assert job["state"] == "succeeded" and job["attempts"] == 1
    assert child_pids(w.pid) == [new]  # the job ran on the child started while idle


def test_child_killed_mid_job_is_picked_up_again_by_its_supervisor(client, workers, settings):
    w = workers.start("w1")
    job = submit(client, spec_text=spec({"op": "sleep", "seconds": 2.0}, "stats")).json()
    # the child has the job once it reports a stage of its own (a child killed before that is
    # replaced before the run is sent, at no attempt's cost)
    wait_for(
        lambda: client.get(job["url"]).json()["stage"] not in (None, "starting"), 15, "a stage"
    )
    [child] = wait_for(lambda: child_pids(w.pid), 10, "the compute child")
    os.kill(child, signal.SIGKILL)
    killed = time.time()
    rec = wait_for(
        lambda: (j := client.get(job["url"]).json())["attempts"] == 2 and j, 15, "attempt 2"
    )
    assert time.time() - killed < 10  # picked up again within seconds, no lease to wait out
    assert rec["worker"] == "w1" and w.poll() is None
    done = wait(client, job["url"], timeout=30)
    assert done["state"] == "succeeded" and done["attempts"] == 2
    # one visible result, nothing else left behind by the killed attempt (the outcome is saved
    # just after the end is committed)
    files = wait_for(
        lambda: "outcome.json" in (f := job_files(settings, job["id"])) and f, 10, "outcome"
    )
    assert files == ["input.arrays", "manifest.json", "outcome.json", "result-a2.ply"]
    assert client.get(done["result"]["url"]).status_code == 200


def test_frozen_worker_that_lost_its_lease_cannot_commit(client, workers, settings):
    w1 = workers.start("w1")
    job = submit(client, spec_text=spec({"op": "sleep", "seconds": 3.0})).json()
    assert wait(client, job["url"], ("running",))["worker"] == "w1"
    os.killpg(w1.pid, signal.SIGSTOP)  # supervisor and child frozen mid-job
    try:
        workers.start("w2")
        # lease 2 s: w2 reaps the job, runs it (attempt 2) and commits
        done = wait(client, job["url"], ("succeeded", "failed"), timeout=40)
    finally:
        os.killpg(w1.pid, signal.SIGCONT)
    assert done["state"] == "succeeded" and done["worker"] == "w2" and done["attempts"] == 2
    # w1 wakes up, finishes its sleep and tries to renew or commit attempt 1: refused
    wait_for(lambda: "lost" in workers.log("w1") or "can no longer" in workers.log("w1"), 20, "w1")
    time.sleep(0.5)
    rec = client.get(job["url"]).json()
    assert (rec["state"], rec["worker"], rec["attempts"]) == ("succeeded", "w2", 2)
    assert rec["result"]["url"].endswith("/result")
    files = job_files(settings, job["id"])
    assert [f for f in files if f.startswith(("result-", ".tmp"))] == ["result-a2.ply"], files


def test_deadline_kills_a_run_that_does_not_return_and_is_not_retried(client, workers):
    workers.start("w1")
    # the sleep happens inside one C call in the child, which also ignores SIGINT and SIGTERM:
    # only SIGKILL ends it
    body = spec({"op": "sleep", "seconds": 60}, deadline_seconds=1)
    job = wait(client, submit(client, spec_text=body).json()["url"], timeout=30)
    assert job["state"] == "failed" and job["attempts"] == 1
    assert job["error"]["code"] == "job.timeout"
    nxt = wait(client, submit(client).json()["url"], timeout=30)
    assert nxt["state"] == "succeeded"


def test_poison_job_is_dead_lettered_and_other_jobs_are_unaffected(client, workers, redis_client):
    workers.start("w1")
    workers.start("w2")
    poison = submit(client, spec_text=spec({"op": "sleep", "fail": "crash"})).json()
    good = [
        submit(client, spec_text=spec({"op": "sleep", "seconds": 0.2})).json() for _ in range(6)
    ]
    bad = wait(client, poison["url"], timeout=60)
    assert bad["state"] == "failed" and bad["attempts"] == 3
    assert bad["error"]["code"] == "worker.child_died"
    assert redis_client.zrange(keys.DEAD, 0, -1) == [poison["id"].encode()]
    for g in good:
        j = wait(client, g["url"], timeout=60)
        assert j["state"] == "succeeded" and j["attempts"] == 1, j


def test_sigterm_lets_a_short_job_finish(client, workers):
    w = workers.start("w1")
    # a fresh worker's compute process first warms its backends (on a GPU host it compiles
    # kernels for seconds, longer than the tests' 3 s grace) before it starts the job it
    # claimed: one job run to the end first, so that this test is about the shutdown alone
    first = submit(client, spec_text=spec({"op": "sleep", "seconds": 0.0}, device="cpu")).json()
    assert wait(client, first["url"], timeout=60)["state"] == "succeeded"
    job = submit(client, spec_text=spec({"op": "sleep", "seconds": 1.0}, device="cpu")).json()
    wait(client, job["url"], ("running",))
    os.killpg(w.pid, signal.SIGTERM)  # the whole group, as systemd or a terminal would
    assert w.wait(20) == 0
    done = client.get(job["url"]).json()
    assert done["state"] == "succeeded" and done["attempts"] == 1


def test_sigterm_hands_a_long_job_back_without_costing_an_attempt(client, workers, redis_client):
    w1 = workers.start("w1")
    job = submit(client, spec_text=spec({"op": "sleep", "seconds": 30})).json()
    wait(client, job["url"], ("running",))
    os.killpg(w1.pid, signal.SIGTERM)
    assert w1.wait(20) == 0  # grace is 3 s in the tests
    assert client.get(job["url"]).json()["state"] == "queued"
    rec = redis_client.hgetall(keys.job(job["id"]))
    assert b"worker.shutdown" in rec[b"last_error"] and rec[b"releases"] == b"1"
    # handed back three times (the max attempts): still not failed
    for i in range(2, 4):
        w = workers.start(f"w{i}")
        wait(client, job["url"], ("running",), timeout=20)
        os.killpg(w.pid, signal.SIGTERM)
        assert w.wait(20) == 0
    assert client.get(job["url"]).json()["state"] == "queued"
