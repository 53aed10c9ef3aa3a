"""Queue protocol promises added for reliability: progress never goes back, a release costs no
attempt, poison jobs are dead-lettered, a wiped Redis neither crashes a worker nor loses a job."""

from __future__ import annotations

import json
import time

import pytest

from workers.queue import keys
from workers.queue.blobs import LocalBlobStore, input_key, manifest_key
from workers.queue.jobs import JobQueue
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
    redis_client.flushall()  # the group is gone, but this queue object believes it exists
    assert q.read_next("w1", block_ms=10) == []
    assert q.reap("w1") == []
    assert q.queue_depth() == {"entries": 0, "running": 0, "waiting": 0}
    q.submit("j2", {"spec": {}})
    assert take(q, "w1").job_id == "j2"


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
    q.r.flushall()
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
