"""Batches on Redis: one spec over many meshes, run as chunks that are jobs of their own.

A batch is a hash ``tessera:batch:{id}`` (spec, the list of its chunks, counters of the items
that ended), its items (``...:items``, JSON: path, output path, bytes, chunk) and their outcomes
(``...:done``: item index -> outcome, written once). Each chunk is an ordinary job of the job
queue (``batch`` and ``chunk`` in its record), so leases, fencing, retries, reaping, deadlines,
cancellation and expiry are the job queue's. The items of a chunk are recorded as they end, by a
script that checks the chunk's owner and attempt first (:meth:`BatchQueue.record_items`): a
worker that lost its lease records nothing, and a re-run skips the items already recorded.

A batch's state and counts are derived from its chunks' states whenever it is read: nothing has
to be updated when a chunk ends, is cancelled or fails for good.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from . import keys
from .jobs import TERMINAL, JobQueue, JobState, text

#: a batch's states (those of a job; ``succeeded``: every item ended, some may have failed)
QUEUED, RUNNING, SUCCEEDED, CANCELLED = "queued", "running", "succeeded", "cancelled"
BATCH_TERMINAL = frozenset({SUCCEEDED, CANCELLED})
#: a quota's member for a batch (the job quotas count jobs by id; a batch counts as one)
QUOTA_PREFIX = "batch:"


@dataclass(frozen=True)
class Chunk:
    """A chunk's job and its items: those of ``[start, end)`` that did not fail at submission
    (``size`` of them)."""

    job: str
    start: int
    end: int
    size: int


@dataclass
class BatchView:
    """A batch as it is now: its record, state, counts and (on request) every item's outcome."""

    record: dict[str, Any]
    state: str
    counts: dict[str, int]
    progress: float
    expires_at: float | None
    finished: bool
    chunk_states: list[str]
    items: list[dict[str, Any]] | None = None


class BatchQueue:
    """Batches over a :class:`~.jobs.JobQueue` (its Redis client and TTLs)."""

    def __init__(self, jobs: JobQueue) -> None:
        self.q = jobs
        self.r = jobs.r
        folder = resources.files(__package__) / "scripts"
        prelude = (folder / "_prelude.lua").read_text()
        self._record = self.r.register_script(
            prelude + "\n" + (folder / "batch_items.lua").read_text()
        )

    @property
    def ttl(self) -> int:
        """How long a batch's keys live: a batch that never ends is cancelled with its chunks
        after the job TTL, then answers as expired for the tombstone time."""
        return 2 * self.q.job_ttl + self.q.tombstone

    # ------------------------------------------------------------------ API side
    def idempotent_batch(self, key: str) -> str | None:
        value = self.r.get(keys.idempotency(f"batch:{key}"))
        return None if value is None else text(value)

    def create(
        self,
        batch_id: str,
        fields: dict[str, Any],
        items: list[dict[str, Any]],
        failed: dict[int, dict[str, Any]],
        *,
        idempotency_key: str | None = None,
        body_hash: str = "",
        receiving: bool = False,
    ) -> str | None:
        """Store a batch (not its chunks yet: :meth:`add_chunk`); ``failed``: items that
        ended at submission (a member too large, a path used twice). Returns None, or the
        earlier ``"id|hash"`` when the idempotency key was used before. ``receiving``: its body
        is still coming (its first chunks run meanwhile): it has not ended, whatever its chunks
        say, until :meth:`received`."""
        if idempotency_key:
            ok = self.r.set(
                keys.idempotency(f"batch:{idempotency_key}"),
                f"{batch_id}|{body_hash}",
                nx=True,
                ex=self.q.job_ttl,
            )
            if not ok:
                return self.idempotent_batch(idempotency_key) or ""
        now = time.time()
        pipe = self.r.pipeline(transaction=True)
        record = {
            "id": batch_id,
            "created_at": repr(now),
            "total": str(len(items)),
            "succeeded": "0",
            "failed": str(len(failed)),
            "rejected": str(len(failed)),
            "chunks": "[]",
            **{k: json.dumps(v) if not isinstance(v, str) else v for k, v in fields.items()},
            **({"receiving": "1"} if receiving else {}),
        }
        pipe.hset(keys.batch(batch_id), mapping=record)
        pipe.set(keys.batch_items(batch_id), json.dumps(items))
        if failed:
            pipe.hset(
                keys.batch_done(batch_id),
                mapping={str(i): json.dumps(o) for i, o in failed.items()},
            )
        for k in (keys.batch(batch_id), keys.batch_items(batch_id), keys.batch_done(batch_id)):
            pipe.expire(k, self.ttl)
        pipe.zadd(keys.BATCHES, {batch_id: now})
        pipe.execute()
        return None

    def add_chunks(self, batch_id: str, chunks: list[Chunk]) -> None:
        """Name the batch's chunks (their jobs are submitted by the caller, after this: a
        chunk job whose batch does not list it yet would be read as not part of it)."""
        self.r.hset(
            keys.batch(batch_id),
            "chunks",
            json.dumps([[c.job, c.start, c.end, c.size] for c in chunks]),
        )

    def extend(
        self,
        batch_id: str,
        items_json: str,
        total: int,
        chunks: list[Chunk],
        failed: dict[int, dict[str, Any]],
    ) -> None:
        """A batch's items so far (their JSON list, whole, as :meth:`create` stores it, and
        their count), its chunks so far (as :meth:`add_chunks` stores them) and its items that
        failed at submission since the last call. Its new chunks' jobs are submitted after
        this."""
        pipe = self.r.pipeline(transaction=True)
        pipe.set(keys.batch_items(batch_id), items_json, keepttl=True)
        pipe.hset(
            keys.batch(batch_id),
            mapping={
                "total": str(total),
                "chunks": json.dumps([[c.job, c.start, c.end, c.size] for c in chunks]),
            },
        )
        if failed:
            pipe.hset(
                keys.batch_done(batch_id),
                mapping={str(i): json.dumps(o) for i, o in failed.items()},
            )
            pipe.expire(keys.batch_done(batch_id), self.ttl)
            pipe.hincrby(keys.batch(batch_id), "failed", len(failed))
            pipe.hincrby(keys.batch(batch_id), "rejected", len(failed))
        pipe.execute()

    def received(
        self, batch_id: str, fields: dict[str, Any], idempotency_key: str | None, body_hash: str
    ) -> None:
        """The receiving batch's body has come whole: its last fields (the input's size), its
        Idempotency-Key bound to the body's hash, and it may end."""
        pipe = self.r.pipeline(transaction=True)
        if fields:
            pipe.hset(
                keys.batch(batch_id),
                mapping={k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()},
            )
        pipe.hdel(keys.batch(batch_id), "receiving")
        if idempotency_key:
            pipe.set(
                keys.idempotency(f"batch:{idempotency_key}"),
                f"{batch_id}|{body_hash}",
                xx=True,
                keepttl=True,
            )
        pipe.execute()

    def drop(self, batch_id: str, idempotency_key: str | None) -> list[str]:
        """Undo a batch whose body failed while it came (its first chunks were queued): its
        chunks cancelled, its keys and its Idempotency-Key deleted. Returns its chunks' jobs
        (their files are the caller's to delete)."""
        raw = self.r.hget(keys.batch(batch_id), "chunks")
        jobs = [job for job, *_ in json.loads(text(raw))] if raw else []
        for job in jobs:
            self.q.cancel_job(job)
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(keys.batch(batch_id), keys.batch_items(batch_id), keys.batch_done(batch_id))
        pipe.zrem(keys.BATCHES, batch_id)
        pipe.execute()
        if idempotency_key:
            key = keys.idempotency(f"batch:{idempotency_key}")
            value = self.r.get(key)
            if value is not None and text(value).startswith(f"{batch_id}|"):
                self.r.delete(key)
        return jobs

    def get(self, batch_id: str, *, items: bool = False) -> BatchView | None:
        """The batch as it is now, derived from its chunks' records; None when there is none.

        The record (its counters) and its chunks' states are read in one transaction: read
        apart, a chunk that recorded its last items and ended between the two reads made a
        batch that had ended with counters from before those items (an item counted as
        cancelled). Its chunk list is read first; chunks added since (a batch still
        receiving, which has not ended) count as queued."""
        listed = self.r.hget(keys.batch(batch_id), "chunks")
        if listed is None:
            return None
        known = [c[0] for c in json.loads(text(listed))]
        pipe = self.r.pipeline(transaction=True)
        pipe.hgetall(keys.batch(batch_id))
        for job in known:
            pipe.hmget(keys.job(job), "state", "error", "expires_at")
        if items:
            pipe.get(keys.batch_items(batch_id))
            pipe.hgetall(keys.batch_done(batch_id))
        raw, *res = pipe.execute()
        if not raw:
            return None
        rec = _decode(raw)
        chunks = [Chunk(*c) for c in rec.get("chunks") or []]
        read = dict(zip(known, res[: len(known)], strict=True))
        res = [read.get(c.job, (None, None, None)) for c in chunks] + res[len(known) :]
        states: list[str] = []
        errors: list[dict[str, Any] | None] = []
        expiries: list[float] = []
        now = time.time()
        young = now - float(rec.get("created_at") or now) < self.q.job_ttl
        gone = False
        for st, err, exp in res[: len(chunks)]:
            if st is None:
                # not stored yet (the batch is being submitted), or expired and dropped
                gone = gone or not young
                states.append(JobState.queued.value if young else JobState.cancelled.value)
                errors.append(None)
                continue
            states.append(text(st))
            errors.append(json.loads(text(err)) if err else None)
            if exp:
                expiries.append(float(text(exp)))
        total = int(rec.get("total") or 0)
        counts = {
            "total": total,
            "queued": 0,
            "running": 0,
            "succeeded": int(rec.get("succeeded") or 0),
            "failed": int(rec.get("failed") or 0),
            "cancelled": 0,
        }
        for k, (c, st) in enumerate(zip(chunks, states, strict=True)):
            left = max(c.size - int(rec.get(f"done:{k}") or 0), 0)
            if st == JobState.queued:
                counts["queued"] += left
            elif st == JobState.running:
                counts["running"] += left
            elif st == JobState.failed:
                counts["failed"] += left
            else:  # cancelled, or succeeded with items unrecorded (never: a chunk records all)
                counts["cancelled"] += left
        finished = bool(chunks) and all(s in {t.value for t in TERMINAL} for s in states)
        if not chunks:  # every item failed at submission
            finished = True
        if rec.get("receiving"):  # its body is still coming: more chunks will follow
            finished = False
        cancelled = bool(rec.get("cancelled_at"))
        if finished:
            state = CANCELLED if cancelled else SUCCEEDED
        elif (
            counts["running"]
            or counts["succeeded"]
            or counts["failed"] > int(rec.get("rejected") or 0)
        ):
            state = RUNNING
        else:
            state = QUEUED
        # a batch whose every item failed at submission ran nothing: it lives as a job would
        ended_at = float(rec.get("created_at") or now) + self.q.job_ttl if not chunks else None
        ended = counts["succeeded"] + counts["failed"] + counts["cancelled"]
        view = BatchView(
            record=rec,
            state=state,
            counts=counts,
            progress=round(ended / total, 4) if total else 1.0,
            expires_at=now if gone else min(expiries) if finished and expiries else ended_at,
            finished=finished,
            chunk_states=states,
        )
        if items:
            meta = json.loads(text(res[len(chunks)]) or "[]") if res[len(chunks)] else []
            done = {int(text(k)): json.loads(text(v)) for k, v in res[len(chunks) + 1].items()}
            out = []
            for i, m in enumerate(meta):
                o = done.get(i)
                if o is None:  # not ended: its chunk's state says where it is
                    k = m.get("chunk", -1)
                    st = states[k] if 0 <= k < len(states) else JobState.cancelled.value
                    if st == JobState.failed:  # the chunk failed for good: its error
                        o = {"state": st, "error": errors[k]}
                    elif st in (JobState.queued, JobState.running):
                        o = {"state": st}
                    else:
                        o = {"state": JobState.cancelled.value}
                out.append({"index": i, **m, **o})
            view.items = out
        return view

    def cancel(self, batch_id: str) -> list[tuple[str, Any]]:
        """Mark the batch cancelled and cancel each of its chunks that has not ended (a chunk
        running is stopped by its worker at its next renewal; the items it recorded stay).
        Returns each chunk's :meth:`~.jobs.JobQueue.cancel_job` outcome."""
        raw = self.r.hget(keys.batch(batch_id), "chunks")
        self.r.hsetnx(keys.batch(batch_id), "cancelled_at", repr(time.time()))
        out = []
        for job, *_range in json.loads(text(raw)) if raw else []:
            out.append((job, self.q.cancel_job(job)))
        return out

    # ------------------------------------------------------------------ worker side
    def chunk_work(
        self, batch_id: str, start: int, end: int
    ) -> tuple[list[dict[str, Any]], set[int]]:
        """A chunk's items (index, path, output path) and the indices among them already
        recorded."""
        pipe = self.r.pipeline(transaction=False)
        pipe.get(keys.batch_items(batch_id))
        pipe.hmget(keys.batch_done(batch_id), [str(i) for i in range(start, end)] or ["-1"])
        raw, done = pipe.execute()
        meta = json.loads(text(raw)) if raw else []
        items = [
            {"index": i, "path": meta[i]["path"], "output": meta[i]["output"]}
            for i in range(start, min(end, len(meta)))
        ]
        recorded = {start + k for k, v in enumerate(done) if v is not None}
        return items, recorded

    def record_items(
        self,
        consumer: str,
        job_id: str,
        entry: str,
        attempt: int,
        batch_id: str,
        chunk: int,
        outcomes: list[tuple[int, dict[str, Any]]],
    ) -> int:
        """Record items' outcomes for attempt ``attempt`` of chunk job ``job_id``, if that
        attempt still owns it. Returns how many were new, or -1 when it lost the chunk."""
        args: list[Any] = [consumer, entry, attempt, chunk]
        for index, outcome in outcomes:
            ok = "ok" if outcome.get("state") == JobState.succeeded else "failed"
            args += [index, json.dumps(outcome), ok]
        res = self._record(
            keys=[keys.job(job_id), keys.batch(batch_id), keys.batch_done(batch_id)], args=args
        )
        return int(res)

    def notify_if_ended(self, batch_id: str) -> bool:
        """When the batch has ended and its spec names a ``callback_url``, make its webhook due
        (once: a batch ends once, and every caller that sees it ended may call this). Called
        where a chunk ends (a worker's commit, a chunk that failed for good, a cancel)."""
        view = self.get(batch_id)
        if view is None or not view.finished:
            return False
        if not (view.record.get("spec") or {}).get("callback_url"):
            return False
        member = QUOTA_PREFIX + batch_id
        if not self.r.hsetnx(keys.batch(batch_id), "notified_at", repr(time.time())):
            return False
        self.r.zadd(keys.WEBHOOKS_DUE, {member: time.time()}, nx=True)
        return True

    def ended(self, batch_id: str) -> bool | None:
        """Whether every chunk of the batch has ended (None: no such batch)."""
        view = self.get(batch_id)
        return None if view is None else view.finished


class EndedItems:
    """A batch's items as they end, each once: :meth:`new` gives those recorded since its last
    call. It reads a chunk's outcomes only when the chunk's count of recorded items has moved,
    so following a batch of 10,000 items reads each outcome about once, not the whole batch
    on every look."""

    def __init__(self, batches: BatchQueue, batch_id: str) -> None:
        self.batches = batches
        self.batch_id = batch_id
        self.meta: list[dict[str, Any]] | None = None
        self.counted: dict[int, int] = {}  # per chunk: its recorded items when last read
        self.given: set[int] = set()

    def new(self) -> tuple[BatchView | None, list[dict[str, Any]]]:
        """The batch as it is now (None: it is gone), and the items recorded since the last
        call, in index order, as :meth:`BatchQueue.get` gives them."""
        view = self.batches.get(self.batch_id)
        if view is None:
            return None, []
        want: list[int] = []
        for k, c in enumerate(Chunk(*c) for c in view.record.get("chunks") or []):
            n = int(view.record.get(f"done:{k}") or 0)
            if n > self.counted.get(k, 0):
                self.counted[k] = n
                want.extend(i for i in range(c.start, c.end) if i not in self.given)
        if not want:
            return view, []
        r = self.batches.r
        if self.meta is None or max(want) >= len(self.meta):
            # the items' paths: written at submission, and grown while a body still comes
            raw = r.get(keys.batch_items(self.batch_id))
            self.meta = json.loads(text(raw)) if raw else []
        out = []
        for i, v in zip(want, r.hmget(keys.batch_done(self.batch_id), want), strict=True):
            if v is not None and i < len(self.meta):
                self.given.add(i)
                out.append({"index": i, **self.meta[i], **json.loads(text(v))})
        return view, out


def manifest_line(item: dict[str, Any]) -> dict[str, Any]:
    """One line of ``manifest.jsonl``: an item's path, state, error, statistics and timings."""
    err = item.get("error")
    return {
        "path": item["path"],
        "output": item["output"] if item["state"] == "succeeded" else None,
        "state": item["state"],
        "error": {"code": err["code"], "message": err["message"], "detail": err.get("detail")}
        if err
        else None,
        "bytes": item["bytes"],
        "input": item.get("input"),
        "stats": item.get("stats"),
        "timings": item.get("timings"),
    }


def _decode(raw: dict[Any, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for k, v in raw.items():
        key, val = text(k), text(v)
        if key in ("chunks", "spec", "input", "webhook", "s3"):
            rec[key] = json.loads(val) if val else None
        elif key in ("created_at", "expires_at", "cancelled_at"):
            rec[key] = float(val) if val else None
        else:
            rec[key] = val
    return rec
