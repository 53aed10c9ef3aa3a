"""Jobs as lists: a key's own jobs newest first, by page and state; stuck jobs; dead letters
and the operator's retry."""

from __future__ import annotations

import time

import pytest

from workers.queue import keys
from workers.queue.jobs import JobQueue, JobState
from workers.queue.listing import backfill, dead_letters, list_jobs, stuck_jobs


@pytest.fixture
def q(redis_client):
    return JobQueue(
        redis_client, lease_seconds=0.3, max_attempts=2, job_ttl_seconds=3600, tombstone_seconds=60
    )


def _submit(q, job_id, key=None):
    q.submit(job_id, {"spec": {}, **({"key_id": key} if key else {})})


def test_each_key_lists_its_own_jobs_newest_first_by_page(q):
    for i in range(7):
        _submit(q, f"a{i}", key="alpha")
        _submit(q, f"b{i}", key="bravo")
    _submit(q, "open")  # submitted without a key: only in the list of every job
    seen, cursor = [], None
    while True:
        page = list_jobs(q, key_id="alpha", limit=3, cursor=cursor)
        assert len(page.jobs) <= 3
        seen += [j["id"] for j in page.jobs]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"a{i}" for i in reversed(range(7))]
    everything = list_jobs(q, key_id=None, limit=100)
    assert len(everything.jobs) == 15 and everything.next_cursor is None
    assert everything.jobs[0]["id"] == "open"
    assert list_jobs(q, key_id="nobody").jobs == []
    with pytest.raises(ValueError):
        list_jobs(q, key_id="alpha", cursor="not-a-cursor")


def test_state_filter_and_expired_records_leave_the_list(q):
    for i in range(5):
        _submit(q, f"j{i}", key="k")
    q.cancel("j1")
    q.cancel("j3")
    page = list_jobs(q, key_id="k", states={"cancelled"})
    assert [j["id"] for j in page.jobs] == ["j3", "j1"]
    assert all(j["state"] == "cancelled" for j in page.jobs)
    assert [j["id"] for j in list_jobs(q, key_id="k", states={"queued"}).jobs] == [
        "j4",
        "j2",
        "j0",
    ]
    q.r.delete("tessera:job:j4")  # its record expired away
    assert [j["id"] for j in list_jobs(q, key_id="k").jobs] == ["j3", "j2", "j1", "j0"]
    assert q.r.zscore("tessera:jobs:key:k", "j4") is None  # and the list forgot it


def _claim(q, consumer="w1"):
    [(entry, job_id)] = q.read_next(consumer, block_ms=100)
    return q.claim(consumer, entry, job_id)


def test_stuck_jobs_are_those_whose_lease_expired_or_that_run_long(q):
    _submit(q, "held")
    c = _claim(q)
    assert c is not None
    assert stuck_jobs(q) == []  # its lease is fresh
    time.sleep(0.5)  # past the 0.3 s lease, and no supervisor reaps
    [s] = stuck_jobs(q)
    assert s["id"] == "held" and s["consumer"] == "w1" and s["state"] == "running"
    assert "lease expired" in s["reasons"][0]
    q.renew("w1", c)
    assert stuck_jobs(q) == []
    [s] = stuck_jobs(q, running_longer_than=0.1)
    assert s["reasons"][0].startswith("running for")


def test_dead_letters_and_the_operators_retry(q):
    _submit(q, "doomed")
    for _ in range(2):  # max_attempts=2: the second retryable failure fails it for good
        c = _claim(q)
        q.requeue(c.job_id, c.entry, {"code": "engine.internal", "message": "x"}, owner="w1",
                  attempt=c.attempt)  # fmt: skip
    assert q.get("doomed")["state"] == JobState.failed
    [d] = dead_letters(q)
    assert d["id"] == "doomed" and d["error"]["code"] == "engine.internal"
    assert q.retry_dead("doomed") == "queued"
    rec = q.get("doomed")
    assert rec["state"] == JobState.queued and "error" not in rec and "finished_at" not in rec
    assert rec["attempt"] - rec["releases"] == 0  # its attempts count from zero again
    assert q.r.ttl("tessera:job:doomed") == -1  # no longer an ended record's expiry
    assert dead_letters(q) == []
    assert q.retry_dead("doomed") == "not_failed"
    assert q.retry_dead("nope") == "gone"
    c = _claim(q)  # it runs again, with both attempts to spend
    assert c is not None and c.attempt == 3
    q.requeue(c.job_id, c.entry, {"code": "engine.internal", "message": "x"}, owner="w1",
              attempt=c.attempt)  # fmt: skip
    assert q.get("doomed")["state"] == JobState.queued


def test_jobs_from_before_the_lists_are_listed_once(q):
    for i in range(3):
        _submit(q, f"old{i}", key="k" if i else None)
    q.r.delete(keys.CREATED, keys.jobs_of("k"))  # as a dataset written before the lists
    assert list_jobs(q, key_id=None).jobs == []
    assert backfill(q, batch=2) == 3
    assert [j["id"] for j in list_jobs(q, key_id=None).jobs] == ["old2", "old1", "old0"]
    assert [j["id"] for j in list_jobs(q, key_id="k").jobs] == ["old2", "old1"]
    assert backfill(q) == 0  # once


def test_a_batchs_chunk_jobs_are_never_listed_by_the_backfill(q):
    """Chunks are submitted unlisted; a worker that starts when they are the only jobs must not
    take them for jobs from before the lists (they would show in ``GET /v1/jobs``)."""
    for i in range(3):
        q.submit_job(f"chunk{i}", {"input": {"name": f"chunk {i}"}, "batch": "b1", "chunk": i},
                     listed=False)  # fmt: skip
    assert backfill(q) == 0
    assert list_jobs(q, key_id=None).jobs == [] and not q.r.exists(keys.CREATED)
    _submit(q, "old", key="k")
    q.r.delete(keys.CREATED, keys.jobs_of("k"))  # chunks beside a job from before the lists
    assert backfill(q) == 1
    assert [j["id"] for j in list_jobs(q, key_id=None).jobs] == ["old"]
