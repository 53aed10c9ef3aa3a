"""The job protocol against a real Redis: claims, leases, fencing, retries, cancellation."""

from __future__ import annotations

import time

import pytest

from workers.queue import keys
from workers.queue.jobs import JobQueue, JobState
from workers.queue.waiting import Waiter


@pytest.fixture
def q(redis_client):
    return JobQueue(
        redis_client, lease_seconds=0.3, max_attempts=2, job_ttl_seconds=3600, tombstone_seconds=60
    )


def submit(q: JobQueue, job_id: str = "j1", **kw) -> None:
    status, _ = q.submit(job_id, {"spec": {"pipeline": []}, "input": {"name": "x.obj"}}, **kw)
    assert status == "ok"


def take(q: JobQueue, consumer: str):
    items = q.read_next(consumer, block_ms=100)
    assert items, "expected a delivered entry"
    entry, job_id = items[0]
    return q.claim(consumer, entry, job_id)


def test_submit_creates_queued_record_and_stream_entry(q):
    submit(q)
    rec = q.get("j1")
    assert rec["state"] == "queued"
    assert rec["attempt"] == 0
    assert rec["spec"] == {"pipeline": []}
    assert rec["expires_at"] > time.time() + 3000
    assert q.queue_depth() == {"entries": 1, "running": 0, "waiting": 1}


def test_claim_runs_attempt_one_and_finish_commits(q):
    submit(q)
    c = take(q, "w1")
    assert c.attempt == 1 and c.job_id == "j1"
    assert q.get("j1")["state"] == "running"
    assert q.renew("w1", c, 0.5, "weld")
    assert q.get("j1")["progress"] == 0.5
    assert q.finish("w1", c, "succeeded", {"result": {"key": "k"}})
    rec = q.get("j1")
    assert rec["state"] == "succeeded" and rec["result"] == {"key": "k"} and rec["progress"] == 1
    assert q.queue_depth()["entries"] == 0  # entries are deleted when their job ends
    assert q.r.ttl(keys.job("j1")) > 0


def test_progress_is_monotone(q):
    submit(q)
    c = take(q, "w1")
    assert q.renew("w1", c, 0.6, "a")
    assert q.renew("w1", c, 0.2, "b")
    assert q.get("j1")["progress"] == 0.6


def test_expired_lease_is_reaped_and_old_owner_cannot_commit(q):
    submit(q)
    old = take(q, "w1")
    time.sleep(0.4)  # the lease (0.3 s) runs out without renewal
    assert q.reap("w2") == [("j1", "queued")]
    rec = q.get("j1")
    assert rec["state"] == "queued" and rec["last_error"]["code"] == "worker.lost"
    new = take(q, "w2")
    assert new.attempt == 2
    # the first worker comes back: it can neither renew nor commit (fencing by attempt)
    assert not q.renew("w1", old)
    assert not q.finish("w1", old, "succeeded", {"result": {"key": "stale"}})
    assert q.finish("w2", new, "succeeded", {"result": {"key": "fresh"}})
    assert q.get("j1")["result"] == {"key": "fresh"}


def test_renewed_lease_is_not_reaped(q):
    submit(q)
    c = take(q, "w1")
    for _ in range(4):
        time.sleep(0.1)
        assert q.renew("w1", c)
    assert q.reap("w2") == []
    assert q.get("j1")["state"] == "running"


def test_reaping_after_last_attempt_fails_the_job(q):
    submit(q)
    take(q, "w1")
    time.sleep(0.4)
    q.reap("w2")
    take(q, "w2")
    time.sleep(0.4)
    assert q.reap("w3") == [("j1", "failed")]
    rec = q.get("j1")
    assert rec["state"] == "failed" and rec["error"]["code"] == "worker.lost"
    assert q.queue_depth()["entries"] == 0


def test_requeue_by_owner_then_failed_after_max_attempts(q):
    submit(q)
    c1 = take(q, "w1")
    err = {"code": "engine.internal", "message": "boom", "detail": {}}
    assert q.requeue("j1", c1.entry, err, owner="w1", attempt=1) == "queued"
    c2 = take(q, "w1")
    assert c2.attempt == 2
    assert q.requeue("j1", c2.entry, err, owner="w1", attempt=2) == "failed"
    assert q.get("j1")["error"]["code"] == "engine.internal"


def test_requeue_by_non_owner_is_refused(q):
    submit(q)
    c = take(q, "w1")
    err = {"code": "x", "message": "x", "detail": {}}
    assert q.requeue("j1", c.entry, err, owner="w2", attempt=1) == "stale"
    assert q.get("j1")["state"] == "running"


def test_cancel_queued_job_is_never_delivered(q):
    submit(q)
    assert q.cancel("j1") == ("cancelled", "queued")
    assert q.read_next("w1", block_ms=50) == []
    assert q.get("j1")["state"] == "cancelled"


def test_cancel_running_job_fences_its_worker(q):
    submit(q)
    c = take(q, "w1")
    assert q.cancel("j1") == ("cancelled", "running")
    assert not q.renew("w1", c)
    assert not q.finish("w1", c, "succeeded", {})
    assert q.get("j1")["state"] == "cancelled"


def test_terminal_states_are_final(q):
    submit(q)
    c = take(q, "w1")
    assert q.finish("w1", c, "failed", {"error": {"code": "mesh.x", "message": "m"}})
    assert q.cancel("j1") == ("final", "failed")
    assert q.get("j1")["state"] == "failed"
    assert not q.finish("w1", c, "succeeded", {})


def test_idempotency_key_returns_the_first_job(q):
    submit(q, "j1", idempotency_key="k", body_hash="h")
    status, prev = q.submit("j2", {"spec": {}}, idempotency_key="k", body_hash="h")
    assert status == "duplicate" and prev == "j1|h"
    assert q.get("j2") is None
    assert q.queue_depth()["entries"] == 1


def test_heartbeat_counts_live_workers(q):
    assert q.live_workers() == 0
    q.heartbeat("w1", {"pid": 1})
    assert q.live_workers() == 1


@pytest.mark.parametrize("end", ["finish", "cancel", "requeue", "retry_here"])
def test_a_job_expires_its_ttl_after_it_ends_not_after_it_was_submitted(q, end):
    """A job submitted long ago that ends now keeps its result for the whole TTL: its record's
    expiry and its place in the sweep's index both count from its end, whichever way it ends
    (committed, cancelled, failed for good by a requeue or by a retry in place)."""
    submit(q)
    long_ago = time.time() - 10_000  # past the 3600 s TTL
    q.r.zadd(keys.JOBS, {"j1": long_ago})
    q.r.hset(keys.job("j1"), mapping={"created_at": long_ago, "expires_at": long_ago + 3600})
    err = {"code": "x", "message": "boom"}
    c = take(q, "w1")
    if end == "finish":
        assert q.finish("w1", c, "succeeded", {"result": {"key": "k"}})
    elif end == "cancel":
        assert q.cancel("j1")[0] == "cancelled"
    elif end == "requeue":
        assert q.requeue("j1", c.entry, err, owner="w1", attempt=1) == "queued"
        c = take(q, "w1")
        assert q.requeue("j1", c.entry, err, owner="w1", attempt=2) == "failed"
    else:
        status, c = q.retry_here("w1", c, err)
        assert status == "ok"
        assert q.retry_here("w1", c, err)[0] == "failed"
    now = time.time()
    rec = q.get("j1")
    assert rec["state"] in ("succeeded", "cancelled", "failed")
    assert now + 3500 < rec["expires_at"] <= now + 3600
    assert now - 5 < q.r.zscore(keys.JOBS, "j1") <= now
    assert q.expired_jobs(now) == []
    assert q.expired_jobs(now + 3601) == ["j1"]


def test_the_scripts_that_change_a_job_return_its_record(q):
    """Submit, claim, finish and cancel answer with the record as it is after them, so that their
    callers need not read it back: the same record a read gives."""
    done = q.submit_job("j1", {"spec": {"pipeline": []}, "input": {"name": "x.obj"}})
    assert done.status == "ok" and done.record == q.get("j1")
    c = take(q, "w1")
    assert c.record == q.get("j1") and c.record["state"] == JobState.running
    ended = q.finish("w1", c, JobState.succeeded, {"result": {"key": "k"}})
    assert ended == q.snapshot("j1") and ended["state"] == "succeeded"
    assert q.finish("w1", c, JobState.failed, {}) is None  # fenced: nothing to keep

    submit(q, "j2")
    cancelled = q.cancel_job("j2")
    assert (cancelled.outcome, cancelled.previous) == ("cancelled", "queued")
    assert cancelled.record == q.get("j2") and cancelled.stored == q.snapshot("j2")
    again = q.cancel_job("j2")
    assert (again.outcome, again.previous) == ("final", "cancelled") and again.record is not None
    gone = q.cancel_job("nope")
    assert (gone.outcome, gone.record, gone.stored) == ("gone", None, None)


def test_an_idempotency_key_names_the_job_that_used_it_first(q):
    assert q.idempotent_job("k") is None
    submit(q, "j1", idempotency_key="k", body_hash="h")
    assert q.idempotent_job("k") == "j1|h"
    dup = q.submit_job("j2", {"spec": {}}, idempotency_key="k", body_hash="h2")
    assert (dup.status, dup.duplicate, dup.record) == ("duplicate", "j1|h", None)


def test_the_event_log_cursor_moves_with_each_change(q, redis_url):
    import asyncio

    async def go():
        w = Waiter.from_url(redis_url)
        try:
            assert await w.cursor("j1") == "0-0"
            submit(q)
            first = await w.cursor("j1")
            assert first != "0-0"
            assert await w.wait_events("j1", first, 0.05) == first  # nothing new: runs out
            c = take(q, "w1")
            assert await w.wait_events("j1", first, 5.0) == await w.cursor("j1") != first
            assert c is not None
        finally:
            await w.aclose()

    asyncio.run(go())


def _wait(redis_url, job_id, timeout, meanwhile=None):
    """A long poll on an asyncio client, with ``meanwhile`` run in a thread once it blocks."""
    import asyncio
    import threading

    async def go():
        waiter = Waiter.from_url(redis_url)
        try:
            task = asyncio.ensure_future(waiter.wait_for_end(job_id, timeout))
            if meanwhile is not None:
                await asyncio.sleep(0.2)  # blocked on the log by now
                t = threading.Thread(target=meanwhile)
                t.start()
                await asyncio.to_thread(t.join)
            return await task
        finally:
            await waiter.aclose()

    return asyncio.run(go())


def test_a_long_poll_waits_through_a_retry_and_answers_with_the_end(q, redis_url):
    submit(q)
    c = take(q, "w1")

    def retry_then_end():
        assert q.requeue("j1", c.entry, {"code": "x", "message": "m"}, owner="w1", attempt=1)
        time.sleep(0.2)  # the queued entry alone must not end the wait
        c2 = take(q, "w2")
        q.finish("w2", c2, JobState.failed, {"error": {"code": "mesh.x", "message": "m"}})

    rec = _wait(redis_url, "j1", 10.0, retry_then_end)
    assert rec["state"] == "failed" and rec["attempt"] == 2


def test_a_long_poll_answers_as_it_is_after_its_wait_or_none_when_gone(q, redis_url):
    submit(q)
    t = time.monotonic()
    rec = _wait(redis_url, "j1", 0.3)
    assert rec["state"] == "queued" and time.monotonic() - t >= 0.3
    assert _wait(redis_url, "nope", 5.0) is None
    assert _wait(redis_url, "j1", 1.0, lambda: q.r.delete(keys.job("j1"))) is None


def test_a_commit_sent_again_after_its_answer_was_lost_stays_committed(q):
    """The supervisor retries a commit through a Redis outage: when the first one went through,
    the second must not read as fenced off (the worker would delete the committed result)."""
    submit(q)
    c = take(q, "w1")
    first = q.finish("w1", c, JobState.succeeded, {"result": {"key": "k1"}})
    assert first is not None
    again = q.finish("w1", c, JobState.succeeded, {"result": {"key": "other"}})
    assert again == first and q.get("j1")["result"] == {"key": "k1"}  # nothing changed
    assert int(q.r.hget(keys.COUNTERS, "succeeded")) == 1
    # another owner or another attempt is still fenced off
    assert q.finish("w2", c, JobState.succeeded, {}) is None
    stale = type(c)(c.job_id, c.entry, c.attempt + 1, c.record)
    assert q.finish("w1", stale, JobState.succeeded, {}) is None
