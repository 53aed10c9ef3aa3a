"""Per-key quota counters against a real Redis (the API's answers to them: tests/service)."""

from __future__ import annotations

import time

from workers.queue import keys
from workers.queue.jobs import JobQueue, JobState
from workers.queue.quotas import UNSEEN_SECONDS, Quotas


def test_requests_are_counted_per_clock_minute(redis_client):
    quotas = Quotas(redis_client)
    t = 60 * 1000.0
    assert [quotas.count_request("k", t + i) for i in range(3)] == [1, 2, 3]
    assert quotas.count_request("k", t + 60) == 1  # the next minute
    assert quotas.count_request("other", t) == 1
    assert 0 < redis_client.ttl(keys.quota_requests("k", 1000)) <= 120


def test_a_key_runs_as_many_jobs_as_it_may_until_they_end(redis_client):
    quotas, q = Quotas(redis_client), JobQueue(redis_client)

    def admit(job_id, now=None):
        return quotas.admit(
            "k",
            job_id,
            concurrent_jobs=2,
            bytes_per_day=None,
            upload_bytes=10,
            now=now,
        ).refused

    for job_id in ("a", "b"):
        assert admit(job_id) is None
        q.submit(job_id, {"spec": {}})
    assert admit("c") == "concurrent_jobs"
    q.cancel("a")  # ended: it stops counting
    assert admit("c") is None
    # "c" was admitted but never stored (its submission failed): it counts for a while only
    assert admit("d") == "concurrent_jobs"
    assert admit("d", now=time.time() + UNSEEN_SECONDS + 1) is None
    members = {m.decode() for m in redis_client.zrange(keys.quota_running("k"), 0, -1)}
    assert members == {"b", "d"}
    assert q.get("b")["state"] == JobState.queued


def test_bytes_over_the_day_refuse_the_job_and_give_its_place_back(redis_client):
    quotas = Quotas(redis_client)
    now = 86400 * 20000 + 100.0

    def admit(job_id, n):
        got = quotas.admit(
            "k", job_id, concurrent_jobs=5, bytes_per_day=1000, upload_bytes=n, now=now
        )
        return got.refused, got.used_bytes

    assert admit("a", 600) == (None, 0)
    assert admit("b", 600) == ("bytes_per_day", 600)
    assert admit("c", 400) == (None, 0)  # the refused upload counted nothing
    assert int(redis_client.get(keys.quota_bytes("k", 20000))) == 1000
    members = {m.decode() for m in redis_client.zrange(keys.quota_running("k"), 0, -1)}
    assert members == {"a", "c"}
