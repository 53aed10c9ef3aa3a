"""Queue protocol promises added for reliability: progress never goes back, a release costs no
attempt, poison jobs are dead-lettered, a wiped Redis neither crashes a worker nor loses a job."""

from __future__ import annotations

import json
import time

import pytest

from workers.queue import keys
from workers.queue.blobs import LocalBlobStore, input_key, manifest_key, outcome_key
from workers.queue.jobs import JobQueue
from workers.queue.outcomes import save_outcome
from workers.recovery import recover_if_lost, recover_jobs

ERR = {"code": "engine.internal", "message": "boom", "detail": {}}


@pytest.fixture
def q(redis_client):
    return JobQueue(
        redis_client, lease_seconds=0.3, max_attempts=2, job_ttl_seconds=3600, tombstone_seconds=60
    )


def take(q: JobQueue, consumer: str):
    [(entry, job_id)] = q.read_next(consumer, block_ms=100)
    return q.claim(consumer, entry, job_id)


def test_progress_never_goes_back_across_a_retry(q):
    q.submit("j1", {"spec": {}})
    c1 = take(q, "w1")
    assert q.renew("w1", c1, 0.7, "weld")
    assert q.requeue("j1", c1.entry, ERR, owner="w1", attempt=1) == "queued"
    assert q.get("j1")["progress"] == 0.7
    c2 = take(q, "w1")
    assert q.get("j1")["progress"] == 0.7
    assert q.renew("w1", c2, 0.3, "weld")  # the second run is not that far yet
    assert q.get("j1")["progress"] == 0.7
    assert q.finish("w1", c2, "succeeded", {})
    assert q.get("j1")["progress"] == 1


def test_release_costs_no_attempt_but_still_fences(q):
    q.submit("j1", {"spec": {}})
    for n in range(1, 5):  # more releases than max_attempts (2)
        c = take(q, "w1")
        assert c.attempt == n
        assert q.requeue("j1", c.entry, ERR, owner="w1", attempt=n, release=True) == "queued"
    assert q.get("j1")["releases"] == 4
    c = take(q, "w2")
    assert not q.finish("w1", c, "succeeded", {})  # an old attempt cannot commit
    assert q.requeue("j1", c.entry, ERR, owner="w2", attempt=5) == "queued"  # real failure 1
    c = take(q, "w2")
    assert q.requeue("j1", c.entry, ERR, owner="w2", attempt=6) == "failed"  # real failure 2


def test_poison_job_is_dead_lettered_and_forgotten_with_its_job(q):
    q.submit("j1", {"spec": {}})
    for n in (1, 2):
        c = take(q, "w1")
        q.requeue("j1", c.entry, ERR, owner="w1", attempt=n)
    assert q.get("j1")["state"] == "failed"
    assert q.dead_letters() == ["j1"]
    assert q.counters()["dead_lettered"] == 1
    q.forget("j1")
    assert q.dead_letters() == []


def test_wiped_redis_neither_crashes_the_consumer_nor_the_reaper(q, redis_client):
    q.submit("j1", {"spec": {}})
    take(q, "w1")
    redis_client.flushdb()  # the group is gone, but this queue object believes it exists
    assert q.read_next("w1", block_ms=10) == []
    assert q.reap("w1") == []
    assert q.queue_depth() == {"entries": 0, "running": 0, "waiting": 0}
    q.submit("j2", {"spec": {}})
    assert take(q, "w1").job_id == "j2"


def test_an_entry_delivered_but_never_claimed_is_delivered_again(q):
    """The reader died between XREADGROUP and the claim, or Redis lost the claim (its last second
    of AOF writes) but kept the delivery: the job must not wait for ever."""
    q.submit("j1", {"spec": {}})
    [(entry, job_id)] = q.read_next("w1", block_ms=100)  # w1 dies here
    assert q.read_next("w2", block_ms=10) == []
    time.sleep(0.35)  # past the lease (0.3 s)
    assert q.reap("w2") == [("j1", "queued")]
    c = take(q, "w2")
    assert c.job_id == "j1" and c.entry != entry and c.attempt == 1
    assert q.queue_depth() == {"entries": 1, "running": 1, "waiting": 0}
    assert q.counters()["redelivered"] == 1
    assert q.claim("w1", entry, job_id) is None  # the old delivery can no longer start a run


def manifest(store: LocalBlobStore, job_id: str, created: float, **extra) -> None:
    store.put_bytes(input_key(job_id), b"npz")
    body = {"id": job_id, "spec": {"pipeline": []}, "input": {"name": "a.obj"}}
    store.put_bytes(
        manifest_key(job_id), json.dumps({**body, "created_at": created, **extra}).encode()
    )


def test_recover_recreates_only_missing_unexpired_accepted_jobs(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    now = time.time()
    manifest(store, "lost", now - 10, idempotency_key="k", body_hash="h")
    manifest(store, "kept", now - 10)
    manifest(store, "old", now - 7200)  # past its TTL (3600 s)
    store.put_bytes(manifest_key("half"), json.dumps({"id": "half", "created_at": now}).encode())
    store.put_bytes("jobs/junk/manifest.json", b"not json")
    q.submit("kept", {"spec": {"pipeline": []}})
    q.r.hset(keys.job("kept"), "state", "succeeded")
    assert recover_jobs(q, store, now) == ["lost"]
    rec = q.get("lost")
    assert rec["state"] == "queued" and rec["spec"] == {"pipeline": []}
    assert rec["created_at"] == pytest.approx(now - 10)
    assert q.get("kept")["state"] == "succeeded"
    assert q.get("old") is None and q.get("half") is None
    assert q.r.get(keys.idempotency("k")) == b"lost|h"
    assert q.queue_depth()["entries"] == 2  # "kept" from its submission, "lost" re-queued
    assert recover_jobs(q, store, now) == []  # idempotent


def test_recovery_runs_when_the_epoch_marker_is_missing(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    manifest(store, "a", time.time())
    assert recover_if_lost(q, store) == ["a"]
    assert recover_if_lost(q, store) is None  # marker set: nothing lost since
    q.r.flushdb()
    assert recover_if_lost(q, store) == ["a"]


def test_submit_after_recovery_keeps_one_record_and_one_entry(q):
    q.restore({"id": "j1", "spec": {}, "input": {}, "created_at": time.time()})
    assert q.submit("j1", {"spec": {}}) == ("ok", None)
    assert q.queue_depth()["entries"] == 1


def test_periodic_recovery_leaves_young_manifests_to_their_submission(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    now = time.time()
    manifest(store, "young", now - 5)
    manifest(store, "lost", now - 60)
    assert recover_jobs(q, store, now, min_age=30) == ["lost"]


def test_retry_here_keeps_the_entry_and_owner_and_fences_the_dead_attempt(q):
    q.submit("j1", {"spec": {}})
    c1 = take(q, "w1")
    ok, c2 = q.retry_here("w1", c1, ERR)
    assert ok == "ok" and c2.attempt == 2 and c2.entry == c1.entry
    assert q.get("j1")["state"] == "running" and q.get("j1")["owner"] == "w1"
    assert not q.finish("w1", c1, "succeeded", {})  # the dead child's attempt cannot commit
    assert q.retry_here("w2", c2, ERR) == ("stale", None)  # only the owner
    assert q.retry_here("w1", c2, ERR) == ("failed", None)  # max_attempts is 2
    assert q.dead_letters() == ["j1"] and q.queue_depth()["entries"] == 0


def test_recovered_job_keeps_its_owner_key_and_base_url(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    manifest(store, "j1", time.time() - 60, key_id="team-a", base_url="http://api.example")
    assert recover_jobs(q, store) == ["j1"]
    rec = q.get("j1")
    assert rec["key_id"] == "team-a" and rec["base_url"] == "http://api.example"


def test_ended_jobs_keep_their_end_when_redis_loses_them(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    now = time.time()

    def submitted(job_id: str) -> None:
        manifest(store, job_id, now - 10, idempotency_key=f"k-{job_id}", body_hash="h")
        q.submit(job_id, {"spec": {"pipeline": [], "callback_url": "http://hook"}})

    submitted("done")
    assert q.finish("w1", take(q, "w1"), "succeeded", {"result": {"key": "jobs/done/r.ply"}})
    submitted("stopped")
    assert q.cancel("stopped") == ("cancelled", "queued")
    submitted("broken")
    for n in (1, 2):  # max_attempts is 2: dead-lettered
        c = take(q, "w1")
        q.requeue(c.job_id, c.entry, ERR, owner="w1", attempt=n)
    assert q.get("broken")["state"] == "failed"
    submitted("unsaved")  # ended, but Redis was lost before its outcome was saved
    assert q.finish("w1", take(q, "w1"), "succeeded", {"result": {"key": "x"}})
    submitted("waiting")
    assert not save_outcome(q, store, "waiting")  # not ended: nothing saved
    before = {j: q.get(j) for j in ("done", "stopped", "broken")}
    assert all(save_outcome(q, store, j) for j in before)
    q.r.flushdb()

    assert sorted(recover_jobs(q, store, now)) == sorted([*before, "waiting", "unsaved"])
    for job_id, rec in before.items():
        again = q.get(job_id)
        assert again == {k: v for k, v in rec.items() if k != "entry"}, job_id
        assert 0 < q.r.ttl(keys.job(job_id)) <= 3600 + 60
        assert q.r.get(keys.idempotency(f"k-{job_id}")) == f"{job_id}|h".encode()
    assert q.get("done")["result"] == {"key": "jobs/done/r.ply"}
    assert q.get("broken")["error"]["code"] == ERR["code"]
    assert q.get("waiting")["state"] == q.get("unsaved")["state"] == "queued"
    assert q.queue_depth()["entries"] == 2  # only the two that had not ended run
    assert sorted(q.r.zrange(keys.WEBHOOKS_DUE, 0, -1)) == [b"broken", b"done", b"stopped"]
    assert q.counters()["recovered_final"] == 3 and q.counters()["recovered"] == 2
    assert recover_jobs(q, store, now) == []  # idempotent
    assert q.cancel("stopped") == ("final", "cancelled")  # terminal still


def test_an_unreadable_outcome_falls_back_to_running_the_job_again(q, tmp_path):
    store = LocalBlobStore(tmp_path)
    manifest(store, "j1", time.time() - 10)
    store.put_bytes(outcome_key("j1"), b"{not json")
    manifest(store, "j2", time.time() - 10)
    store.put_bytes(outcome_key("j2"), json.dumps({"id": "j2", "state": "running"}).encode())
    assert sorted(recover_jobs(q, store)) == ["j1", "j2"]
    assert q.get("j1")["state"] == q.get("j2")["state"] == "queued"
