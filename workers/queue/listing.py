"""Jobs as lists, for callers (``GET /v1/jobs``) and operators (``tessera admin``): a key's
jobs newest first, jobs that look stuck, dead letters.

The job list reads two sorted sets the submit script keeps (``keys.CREATED``: every job by
creation time; ``keys.jobs_of(key)``: each API key's own) and one short ``HMGET`` per job; a
job whose record has expired away is dropped from the lists as it is met.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis

from . import keys
from .jobs import TERMINAL, JobQueue, JobState, decode_record, text

#: what a listed job carries (the whole record has statistics and reports: too much for a list)
SUMMARY_FIELDS = (
    "id",
    "state",
    "created_at",
    "started_at",
    "finished_at",
    "expires_at",
    "progress",
    "stage",
    "attempt",
    "releases",
    "max_attempts",
    "owner",
    "error",
    "last_error",
    "input",
    "key_id",
    "attempt_started_at",
)
#: the most index entries one page reads when a state filter skips many
SCAN_LIMIT = 2000


def public_state(rec: dict[str, Any], now: float) -> str:
    """The state a caller sees: an ended job past its expiry is ``expired``."""
    state = rec.get("state") or JobState.queued.value
    if state in TERMINAL and now > (rec.get("expires_at") or float("inf")):
        return JobState.expired.value
    return str(state)


@dataclass(frozen=True)
class Page:
    jobs: list[dict[str, Any]]
    #: where the next page starts (None: this was the last)
    next_cursor: str | None


def _cursor(score: float, job_id: str) -> str:
    return f"{score!r}:{job_id}"


def _parse_cursor(cursor: str | None) -> tuple[float, str] | None:
    if not cursor:
        return None
    score, sep, job_id = cursor.partition(":")
    try:
        value = float(score)
    except ValueError:
        raise ValueError("cursor is not one this API gave") from None
    if not sep or not job_id.isalnum():
        raise ValueError("cursor is not one this API gave")
    return value, job_id


def list_jobs(
    q: JobQueue,
    *,
    key_id: str | None,
    states: set[str] | None = None,
    limit: int = 50,
    cursor: str | None = None,
    now: float | None = None,
) -> Page:
    """Jobs newest first: those of API key ``key_id``, or every job when ``key_id`` is None.
    ``states`` keeps only jobs in those (public) states; ``cursor`` is a page's ``next_cursor``.
    A page may hold fewer than ``limit`` jobs while there are more (a filter skipped up to
    ``SCAN_LIMIT`` entries): follow ``next_cursor`` until it is None. ValueError for a cursor
    this function did not make."""
    now = time.time() if now is None else now
    index = keys.CREATED if key_id is None else keys.jobs_of(key_id)
    after = _parse_cursor(cursor)
    top: float | str = "+inf" if after is None else after[0]
    out: list[dict[str, Any]] = []
    scanned = 0
    batch = max(limit, 50)
    offset = 0
    while True:
        rows = q.r.zrevrangebyscore(index, top, "-inf", start=offset, num=batch, withscores=True)
        if not rows:
            return Page(out, None)
        offset += len(rows)
        ids = [text(m) for m, _ in rows]
        pipe = q.r.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(keys.job(job_id), SUMMARY_FIELDS)
        values = pipe.execute()
        gone = []
        scores = [s for _, s in rows]
        for job_id, score, vals in zip(ids, scores, values, strict=True):
            if after is not None and score == after[0] and job_id >= after[1]:
                continue  # on the previous page (equal times come in reverse id order)
            scanned += 1
            if vals[0] is None:
                gone.append(job_id)
                continue
            raw = {f: v for f, v in zip(SUMMARY_FIELDS, vals, strict=True) if v is not None}
            rec = decode_record(raw)
            rec["state"] = public_state(rec, now)
            if states and rec["state"] not in states:
                if scanned >= SCAN_LIMIT:
                    return Page(out, _cursor(score, job_id))
                continue
            out.append(rec)
            if len(out) >= limit:
                more = q.r.zcount(index, "-inf", f"({score!r}") > 0 or _ties_after(
                    q, index, score, job_id
                )
                return Page(out, _cursor(score, job_id) if more else None)
        if gone:
            q.r.zrem(index, *gone)
            offset -= len(gone)


def backfill(q: JobQueue, batch: int = 500) -> int:
    """Put the jobs of a dataset written before the job lists existed into them (by their
    ``created_at``): once, when the list of every job is empty and the sweep's index is not.
    A batch's chunk jobs are never listed (the batch is): a dataset whose only jobs are chunks
    is not one from before the lists. Returns how many were added."""
    if q.r.exists(keys.CREATED) or not q.r.exists(keys.JOBS):
        return 0
    added = 0
    for start in range(0, int(q.r.zcard(keys.JOBS)), batch):
        ids = [text(m) for m in q.r.zrange(keys.JOBS, start, start + batch - 1)]
        pipe = q.r.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(keys.job(job_id), ["created_at", "key_id", "batch"])
        rows = pipe.execute()
        pipe = q.r.pipeline(transaction=False)
        for job_id, (created, key_id, of_batch) in zip(ids, rows, strict=True):
            if created is None or of_batch:
                continue
            pipe.zadd(keys.CREATED, {job_id: float(created)}, nx=True)
            if key_id:
                pipe.zadd(keys.jobs_of(text(key_id)), {job_id: float(created)}, nx=True)
            added += 1
        pipe.execute()
    return added


def _ties_after(q: JobQueue, index: str, score: float, job_id: str) -> bool:
    """Whether the index holds another job created at exactly ``score`` after ``job_id``."""
    same = q.r.zrangebyscore(index, score, score)
    return any(text(m) < job_id for m in same)


def dead_letters(q: JobQueue, limit: int = 100) -> list[dict[str, Any]]:
    """Jobs that failed for good after their last attempt, newest first, with when and why."""
    rows = q.r.zrevrange(keys.DEAD, 0, limit - 1, withscores=True)
    out = []
    for member, score in rows:
        job_id = text(member)
        raw = q.r.hmget(keys.job(job_id), SUMMARY_FIELDS)
        rec = decode_record({f: v for f, v in zip(SUMMARY_FIELDS, raw, strict=True) if v})
        rec.setdefault("id", job_id)
        rec["dead_at"] = score
        out.append(rec)
    return out


def stuck_jobs(
    q: JobQueue, *, running_longer_than: float = 3600.0, now: float | None = None
) -> list[dict[str, Any]]:
    """Running jobs that look stuck: their lease has expired (the entry's idle time is past the
    lease and no live supervisor has reaped it: every supervisor reaps, so this means none is
    running), or they have run longer than ``running_longer_than`` seconds. Each with
    ``reasons``, the consumer holding it and its idle seconds."""
    now = time.time() if now is None else now
    q.ensure_group()
    try:
        pending = q.r.xpending_range(keys.STREAM, keys.GROUP, min="-", max="+", count=1000)
    except redis.ResponseError:
        return []
    out = []
    for p in pending:
        entry = text(p["message_id"])
        idle = float(p["time_since_delivered"]) / 1000.0
        rows = q.r.xrange(keys.STREAM, entry, entry)
        job_id = text(rows[0][1].get(b"job", b"")) if rows else ""
        raw = (
            q.r.hmget(keys.job(job_id), SUMMARY_FIELDS) if job_id else [None] * len(SUMMARY_FIELDS)
        )
        rec = decode_record({f: v for f, v in zip(SUMMARY_FIELDS, raw, strict=True) if v})
        rec.setdefault("id", job_id)
        reasons = []
        if idle > q.lease_seconds:
            reasons.append(f"lease expired {idle - q.lease_seconds:.0f}s ago")
        started = rec.get("attempt_started_at")
        if started and now - started > running_longer_than:
            reasons.append(f"running for {now - started:.0f}s")
        if reasons:
            out.append({**rec, "entry": entry, "consumer": text(p["consumer"]), "idle": idle,
                        "reasons": reasons})  # fmt: skip
    return out
