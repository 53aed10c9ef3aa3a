"""Supervisor pieces that need no process: expiry sweeping."""

from __future__ import annotations

import time

from workers.queue.blobs import LocalBlobStore, input_key
from workers.queue.jobs import JobQueue
from workers.supervisor import sweep_expired


def test_sweep_deletes_expired_blobs_and_keeps_a_tombstone(redis_client, tmp_path):
    q = JobQueue(redis_client, job_ttl_seconds=100, tombstone_seconds=50)
    store = LocalBlobStore(tmp_path)
    for job_id in ("old", "new"):
        store.put_bytes(input_key(job_id), b"x")
        q.submit(job_id, {"spec": {}})
    redis_client.zadd("tessera:jobs", {"old": time.time() - 200})  # created long ago
    assert sweep_expired(q, store) == ["old"]
    assert not store.exists(input_key("old")) and store.exists(input_key("new"))
    rec = q.get("old")
    assert rec["state"] == "cancelled"  # it never ran: it ends, it is not left queued forever
    assert rec["expires_at"] <= time.time()  # and reads as expired (its blobs are gone)
    assert 0 < redis_client.ttl("tessera:job:old") <= 150
    assert sweep_expired(q, store) == []  # idempotent
