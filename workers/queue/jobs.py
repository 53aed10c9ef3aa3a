"""The job protocol on Redis: records, the stream, leases and fencing.

A job is a hash ``tessera:job:{id}`` and one entry in the stream ``tessera:q:default`` (consumer
group ``workers``). Every state change that touches several keys is a Lua script in ``scripts/``
that checks owner, attempt and entry first, so a worker that lost its lease can never commit.

States: ``queued → running → succeeded | failed | cancelled`` (``running → queued`` on a retry).
A terminal state never changes again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from ..engine.errors import WorkerLost
from . import keys
from .states import TERMINAL, JobState

#: how long a worker's registration (what it offers) is kept after its last heartbeat
WORKER_RECORD_SECONDS = 600

JSON_FIELDS = (
    "spec",
    "patching",
    "timings",
    "stats_before",
    "stats_after",
    "reports",
    "error",
    "last_error",
    "input",
    "result",
    "patches",
    "artifacts",
    "webhook",
    "device",
    "s3",
)
FLOAT_FIELDS = (
    "created_at",
    "updated_at",
    "started_at",
    "attempt_started_at",
    "finished_at",
    "expires_at",
    "progress",
    "deadline_seconds",
)
INT_FIELDS = ("attempt", "max_attempts", "releases")


def encode_fields(fields: dict[str, Any]) -> str:
    """Fields for a Lua script as one JSON object of strings (JSON fields nested as text), so
    that no number passes through Lua's float formatting."""
    out = {}
    for k, v in fields.items():
        if k in JSON_FIELDS:
            out[k] = json.dumps(v)
        elif isinstance(v, float):
            out[k] = repr(v)
        else:
            out[k] = str(v)
    return json.dumps(out)


def decode_record(raw: dict[bytes, bytes] | dict[str, str]) -> dict[str, Any]:
    """A job hash as Python values (JSON fields parsed, numbers converted)."""
    rec: dict[str, Any] = {}
    for k, v in raw.items():
        key = k.decode() if isinstance(k, bytes) else k
        val = v.decode() if isinstance(v, bytes) else v
        if key in JSON_FIELDS:
            rec[key] = json.loads(val) if val else None
        elif key in FLOAT_FIELDS:
            rec[key] = float(val) if val != "" else None
        elif key in INT_FIELDS:
            rec[key] = int(val)
        else:
            rec[key] = val
    return rec


def _load_scripts(client: redis.Redis) -> dict[str, Any]:
    folder = resources.files(__package__) / "scripts"
    prelude = (folder / "_prelude.lua").read_text()
    out = {}
    for name in (
        "submit",
        "claim",
        "renew",
        "finish",
        "requeue",
        "cancel",
        "recover",
        "restore_final",
        "retry_here",
        "retry_dead",
    ):
        out[name] = client.register_script(prelude + "\n" + (folder / f"{name}.lua").read_text())
    return out


@dataclass(frozen=True)
class Claim:
    job_id: str
    entry: str
    attempt: int
    record: dict[str, Any]


@dataclass(frozen=True)
class Submitted:
    """What :meth:`JobQueue.submit_job` did: ``status`` ok or duplicate; ``duplicate`` the
    earlier request's ``"id|body hash"``; ``record`` the job as stored, when ok."""

    status: str
    duplicate: str | None
    record: dict[str, Any] | None


@dataclass(frozen=True)
class Cancelled:
    """What :meth:`JobQueue.cancel_job` did: ``outcome`` cancelled, final (it had ended) or gone;
    ``previous`` the state it was in; ``record`` the job as it is now (None when gone) and
    ``stored`` the same as stored (strings: a cancelled job's outcome to keep)."""

    outcome: str
    previous: str
    record: dict[str, Any] | None
    stored: dict[str, str] | None


class JobQueue:
    """Synchronous access to jobs, used by the API (in its thread pool) and by the workers."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        lease_seconds: float = 20.0,
        max_attempts: int = 3,
        job_ttl_seconds: int = 7 * 24 * 3600,
        tombstone_seconds: int = 30 * 24 * 3600,
    ):
        self.r = client
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.job_ttl = job_ttl_seconds
        self.tombstone = tombstone_seconds
        self._s = _load_scripts(client)
        self._group_ready = False

    # ------------------------------------------------------------------ setup
    def _no_group(self, exc: redis.ResponseError) -> bool:
        """Whether Redis lost the stream or its group (restarted empty): create it again."""
        if "NOGROUP" not in str(exc):
            return False
        self._group_ready = False
        self.ensure_group()
        return True

    def ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            self.r.xgroup_create(keys.STREAM, keys.GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    # ------------------------------------------------------------------ API side
    def submit(
        self,
        job_id: str,
        fields: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        body_hash: str = "",
    ) -> tuple[str, str | None]:
        """Create and queue a job. Returns ``("ok", None)``, or ``("duplicate", "id|hash")`` when
        the idempotency key was used before (:meth:`submit_job` also gives the record)."""
        s = self.submit_job(job_id, fields, idempotency_key=idempotency_key, body_hash=body_hash)
        return s.status, s.duplicate

    def submit_job(
        self,
        job_id: str,
        fields: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        body_hash: str = "",
        listed: bool = True,
    ) -> Submitted:
        """Create and queue a job, unless its idempotency key was used before; the record as
        stored comes back in the same round trip. ``listed``: in the job lists (``GET
        /v1/jobs``); a batch's chunks, jobs inside the service, are not."""
        self.ensure_group()
        now = time.time()
        fields = {**fields, "expires_at": now + self.job_ttl, "max_attempts": self.max_attempts}
        res = self._s["submit"](
            keys=[
                keys.job(job_id),
                keys.STREAM,
                keys.events(job_id),
                keys.JOBS,
                keys.idempotency(idempotency_key) if idempotency_key else "",
                keys.COUNTERS,
                keys.CREATED if listed else "",
                _key_index(fields.get("key_id")) if listed else "",
            ],
            args=[job_id, encode_fields(fields), repr(now), f"{job_id}|{body_hash}", self.job_ttl],
        )
        status = text(res[0])
        if status == "duplicate":
            return Submitted(status, text(res[1]), None)
        return Submitted(status, None, decode_record(_hash(res[2])))

    def get(self, job_id: str) -> dict[str, Any] | None:
        raw = self.r.hgetall(keys.job(job_id))
        return decode_record(raw) if raw else None

    def exists(self, job_id: str) -> bool:
        return bool(self.r.exists(keys.job(job_id)))

    def ping(self) -> bool:
        return bool(self.r.ping())

    def idempotent_job(self, idempotency_key: str) -> str | None:
        """What an Idempotency-Key names (``"id|body hash"`` of the request that used it first),
        or None for a key never used (or expired)."""
        value = self.r.get(keys.idempotency(idempotency_key))
        return None if value is None else text(value)

    def cancel(self, job_id: str) -> tuple[str, str]:
        """Returns ``(outcome, previous_state)``; outcome is cancelled, final or gone."""
        c = self.cancel_job(job_id)
        return c.outcome, c.previous

    def cancel_job(self, job_id: str) -> Cancelled:
        """Cancel a queued or running job; the record comes back in the same round trip."""
        res = self._s["cancel"](
            keys=[
                keys.job(job_id),
                keys.STREAM,
                keys.events(job_id),
                keys.COUNTERS,
                keys.WEBHOOKS_DUE,
                keys.JOBS,
            ],
            args=[keys.GROUP, repr(time.time()), self.job_ttl + self.tombstone, self.job_ttl],
        )
        stored = _hash(res[2]) if len(res) > 2 else None
        record = decode_record(stored) if stored else None
        return Cancelled(text(res[0]), text(res[1]), record, stored)

    def queue_depth(self) -> dict[str, int]:
        self.ensure_group()
        length = int(self.r.xlen(keys.STREAM))
        try:
            pending = self.r.xpending(keys.STREAM, keys.GROUP)
        except redis.ResponseError as exc:
            if not self._no_group(exc):
                raise
            pending = None
        n_pending = int(pending["pending"]) if pending else 0
        return {"entries": length, "running": n_pending, "waiting": max(length - n_pending, 0)}

    def live_workers(self, within: float = 15.0) -> int:
        return int(self.r.zcount(keys.WORKERS, time.time() - within, "+inf"))

    def counters(self) -> dict[str, int]:
        return {text(k): int(v) for k, v in self.r.hgetall(keys.COUNTERS).items()}

    def expired_jobs(self, now: float, limit: int = 100) -> list[str]:
        """Ids of jobs past their TTL whose blobs have not been swept yet: ended more than the TTL
        ago, or created more than the TTL ago and never ended (the index holds each job's end
        time once it has one, its creation time before)."""
        ids = self.r.zrangebyscore(keys.JOBS, "-inf", now - self.job_ttl, start=0, num=limit)
        return [text(i) for i in ids]

    def forget(self, job_id: str) -> None:
        """After its blobs are gone: the job leaves the index; its record stays as a tombstone
        (it answers 410: expired now, also when the sweep has just cancelled it) until its own
        expiry."""
        self.r.zrem(keys.JOBS, job_id)
        self.r.zrem(keys.DEAD, job_id)
        self.r.zrem(keys.CREATED, job_id)
        key = keys.job(job_id)
        key_id = self.r.hget(key, "key_id")
        if key_id:
            self.r.zrem(keys.jobs_of(text(key_id)), job_id)
        if self.r.exists(key):
            self.r.hset(key, "expires_at", repr(min(time.time(), self._expiry(key))))
        if self.r.ttl(key) == -1:  # never finished (or made just now): bound its life too
            self.r.expire(key, self.tombstone)

    def _expiry(self, key: str) -> float:
        value = self.r.hget(key, "expires_at")
        return float(value) if value else float("inf")

    # ------------------------------------------------------------------ worker side
    def heartbeat(self, worker: str, info: dict[str, Any], now: float | None = None) -> None:
        """Register worker ``worker`` as seen now, with what it offers and does (``info``; see
        :mod:`~workers.queue.registry`, which reads it). The record outlives the heartbeat by
        ``WORKER_RECORD_SECONDS``, so that what a restarting worker offered is still known."""
        now = time.time() if now is None else now
        pipe = self.r.pipeline(transaction=False)
        pipe.zadd(keys.WORKERS, {worker: now})
        pipe.zremrangebyscore(keys.WORKERS, "-inf", now - 3600)
        record = json.dumps({**info, "name": worker, "seen": now})
        pipe.set(keys.worker(worker), record, ex=WORKER_RECORD_SECONDS)
        pipe.execute()

    def read_next(self, consumer: str, block_ms: int = 1000) -> list[tuple[str, str]]:
        """New entries for this consumer: ``[(entry_id, job_id)]`` (at most one)."""
        self.ensure_group()
        try:
            res = self.r.xreadgroup(
                keys.GROUP, consumer, {keys.STREAM: ">"}, count=1, block=block_ms
            )
        except redis.ResponseError as exc:
            if not self._no_group(exc):
                raise
            return []
        out = []
        for _stream, entries in res or []:
            for entry_id, fields in entries:
                job = fields.get(b"job") or fields.get("job")
                out.append((text(entry_id), text(job) if job else ""))
        return out

    def claim(self, consumer: str, entry: str, job_id: str) -> Claim | None:
        if not job_id:
            self.r.xack(keys.STREAM, keys.GROUP, entry)
            self.r.xdel(keys.STREAM, entry)
            return None
        res = self._s["claim"](
            keys=[keys.job(job_id), keys.STREAM, keys.events(job_id)],
            args=[keys.GROUP, consumer, entry, repr(time.time())],
        )
        if text(res[0]) != "ok":
            return None
        return Claim(job_id, entry, int(text(res[1])), decode_record(_hash(res[2])))

    def renew(
        self, consumer: str, c: Claim, progress: float | None = None, stage: str = ""
    ) -> bool:
        res = self._s["renew"](
            keys=[keys.job(c.job_id), keys.STREAM, keys.events(c.job_id)],
            args=[
                keys.GROUP,
                consumer,
                c.entry,
                c.attempt,
                repr(time.time()),
                "" if progress is None else repr(round(float(progress), 4)),
                stage,
            ],
        )
        return bool(res)

    def finish(
        self, consumer: str, c: Claim, state: JobState, fields: dict[str, Any]
    ) -> dict[str, str] | None:
        """Commit the end of attempt ``c`` (succeeded or failed) with ``fields``, if it still
        may. Returns the ended record as stored (the outcome to keep, see
        :mod:`~workers.queue.outcomes`), or None when the attempt can no longer commit."""
        res = self._s["finish"](
            keys=[
                keys.job(c.job_id),
                keys.STREAM,
                keys.events(c.job_id),
                keys.COUNTERS,
                keys.WEBHOOKS_DUE,
                keys.JOBS,
            ],
            args=[
                keys.GROUP,
                consumer,
                c.entry,
                c.attempt,
                state,
                encode_fields(fields),
                repr(time.time()),
                self.job_ttl + self.tombstone,
                self.job_ttl,
            ],
        )
        return _hash(res) if res else None

    def requeue(
        self,
        job_id: str,
        entry: str,
        error: dict[str, Any],
        *,
        owner: str = "",
        attempt: int | None = None,
        release: bool = False,
    ) -> str:
        """Retry a job (or fail it after its last attempt, into the dead-letter set). Returns
        queued, failed, stale, gone. ``release``: the owner hands the job back (shutting down);
        that costs the job no attempt."""
        res = self._s["requeue"](
            keys=[
                keys.job(job_id),
                keys.STREAM,
                keys.events(job_id),
                keys.COUNTERS,
                keys.WEBHOOKS_DUE,
                keys.DEAD,
                keys.JOBS,
            ],
            args=[
                keys.GROUP,
                entry,
                repr(time.time()),
                self.max_attempts,
                json.dumps(error),
                owner,
                "" if attempt is None else attempt,
                job_id,
                self.job_ttl + self.tombstone,
                "1" if release else "",
                self.job_ttl,
            ],
        )
        return text(res[0])

    def retry_here(
        self, consumer: str, c: Claim, error: dict[str, Any]
    ) -> tuple[str, Claim | None]:
        """Run the job again at once under the same owner with the next attempt (its compute
        process died). Returns ``("ok", new claim)``, ``("failed", None)`` after its last attempt
        or ``("stale", None)`` when the lease was lost."""
        res = self._s["retry_here"](
            keys=[
                keys.job(c.job_id),
                keys.STREAM,
                keys.events(c.job_id),
                keys.COUNTERS,
                keys.WEBHOOKS_DUE,
                keys.DEAD,
                keys.JOBS,
            ],
            args=[
                keys.GROUP,
                consumer,
                c.entry,
                c.attempt,
                repr(time.time()),
                self.max_attempts,
                json.dumps(error),
                self.job_ttl + self.tombstone,
                c.job_id,
                self.job_ttl,
            ],
        )
        status = text(res[0])
        if status != "ok":
            return status, None
        return status, Claim(c.job_id, c.entry, int(text(res[1])), c.record)

    def retry_dead(self, job_id: str) -> str:
        """An operator's retry of a job that failed for good (see ``scripts/retry_dead.lua``):
        queued, gone, not_failed or expired."""
        self.ensure_group()
        res = self._s["retry_dead"](
            keys=[
                keys.job(job_id),
                keys.STREAM,
                keys.events(job_id),
                keys.COUNTERS,
                keys.DEAD,
                keys.JOBS,
            ],
            args=[job_id, repr(time.time()), self.job_ttl],
        )
        return text(res[0])

    def dead_letters(self, limit: int = 100) -> list[str]:
        """Jobs that failed for good after their last attempt, newest first."""
        return [text(i) for i in self.r.zrevrange(keys.DEAD, 0, limit - 1)]

    # ------------------------------------------------------------------ recovery
    def data_lost(self) -> bool:
        """Whether Redis holds no epoch marker: it is new, or it lost its data since
        :meth:`mark_epoch` (see :mod:`workers.recovery`)."""
        return not self.r.exists(keys.EPOCH)

    def mark_epoch(self) -> None:
        self.r.set(keys.EPOCH, repr(time.time()), nx=True)

    def restore(self, manifest: dict[str, Any], now: float | None = None) -> bool:
        """Re-create a job from its blob-store manifest unless its record exists; queue it."""
        self.ensure_group()
        now = time.time() if now is None else now
        job_id = str(manifest["id"])
        created = float(manifest.get("created_at") or now)
        idem = manifest.get("idempotency_key")
        fields = {
            "spec": manifest.get("spec") or {},
            "input": manifest.get("input") or {},
            "timings": {},
            "expires_at": created + self.job_ttl,
            "max_attempts": self.max_attempts,
        }
        # what the API added to the manifest (the submitting key, the base URL for links)
        for k in ("key_id", "base_url"):
            if manifest.get(k) is not None:
                fields[k] = manifest[k]
        res = self._s["recover"](
            keys=[
                keys.job(job_id),
                keys.STREAM,
                keys.events(job_id),
                keys.JOBS,
                keys.idempotency(idem) if idem else "",
                keys.COUNTERS,
                keys.CREATED,
                _key_index(manifest.get("key_id")),
            ],
            args=[
                job_id,
                encode_fields(fields),
                repr(created),
                f"{job_id}|{manifest.get('body_hash', '')}",
                max(int(created + self.job_ttl - now), 1),
                repr(now),
            ],
        )
        return bool(res)

    def snapshot(self, job_id: str) -> dict[str, str] | None:
        """The record of an ended job as stored (strings), for :meth:`restore_final`; None while
        it has not ended or when it is gone."""
        raw = self.r.hgetall(keys.job(job_id))
        rec = {text(k): text(v) for k, v in raw.items()}
        return rec if rec.get("state") in TERMINAL else None

    def restore_final(
        self, record: dict[str, str], manifest: dict[str, Any], now: float | None = None
    ) -> bool:
        """Re-create the record of a job that had ended, as :meth:`snapshot` saw it, unless a
        record exists. It is not queued: a terminal state stays final. Its webhook becomes due
        again (delivery is at least once, and whether it had been delivered was lost too)."""
        now = time.time() if now is None else now
        job_id = str(manifest["id"])
        created = float(manifest.get("created_at") or now)
        finished = float(record.get("finished_at") or now)
        idem = manifest.get("idempotency_key")
        fields = {k: v for k, v in record.items() if k not in ("entry", "webhook")}
        res = self._s["restore_final"](
            keys=[
                keys.job(job_id),
                keys.events(job_id),
                keys.JOBS,
                keys.idempotency(idem) if idem else "",
                keys.COUNTERS,
                keys.WEBHOOKS_DUE,
                keys.CREATED,
                _key_index(manifest.get("key_id")),
            ],
            args=[
                job_id,
                json.dumps(fields),
                repr(finished),
                f"{job_id}|{manifest.get('body_hash', '')}",
                max(int(created + self.job_ttl - now), 1),
                max(int(finished + self.job_ttl + self.tombstone - now), 1),
                repr(now),
                repr(created),
            ],
        )
        return bool(res)

    def reap(self, consumer: str, count: int = 50) -> list[tuple[str, str]]:
        """Take entries whose lease expired (idle longer than the lease) and re-queue their jobs.
        Returns ``[(job_id, outcome)]``."""
        self.ensure_group()
        out: list[tuple[str, str]] = []
        start = "0-0"
        while True:
            try:
                res = self.r.xautoclaim(
                    keys.STREAM,
                    keys.GROUP,
                    consumer,
                    int(self.lease_seconds * 1000),
                    start_id=start,
                    count=count,
                )
            except redis.ResponseError as exc:
                if not self._no_group(exc):
                    raise
                return out
            nxt, claimed = res[0], res[1]
            for entry_id, fields in claimed:
                job = (fields or {}).get(b"job") or (fields or {}).get("job")
                job_id = text(job) if job else ""
                err = WorkerLost().to_dict()
                if job_id:
                    out.append((job_id, self.requeue(job_id, text(entry_id), err)))
                else:
                    self.r.xack(keys.STREAM, keys.GROUP, entry_id)
                    self.r.xdel(keys.STREAM, entry_id)
            if text(nxt) in ("0-0", "0"):
                return out
            start = text(nxt)


def _key_index(key_id: Any) -> str:
    """The job list of the API key ``key_id`` ('' for a job submitted without a key)."""
    return keys.jobs_of(str(key_id)) if key_id else ""


def text(x: Any) -> str:
    """A Redis reply as text (redis-py answers bytes unless told to decode)."""
    return x.decode() if isinstance(x, bytes) else str(x)


def _hash(flat: list[Any]) -> dict[str, str]:
    """A hash as a script returns it (``HGETALL``: field, value, field, value...)."""
    return {text(flat[i]): text(flat[i + 1]) for i in range(0, len(flat), 2)}
