"""API keys on the API: who is calling. Off (everyone is ``None``) unless keys are configured.

A missing, unknown or revoked key is a 401 (``auth.missing_key``, ``auth.invalid_key``,
``auth.revoked_key``). Jobs carry the id of the key that submitted them; another key is told
``job.not_found``, as if the job did not exist.

Per-key quotas, when a key sets them, answer 429 with ``Retry-After``: requests per minute
(``quota.requests``, a Redis counter per key and clock minute), jobs queued or running
(``quota.concurrent_jobs``, a Redis sorted set per key pruned of ended jobs) and upload bytes per
UTC day (``quota.bytes``, a counter per key and day). The counters live in Redis so every API
process shares them. The job quotas are taken once a submission is valid and is not a replay of
an earlier one (:func:`admit`): a replay or a refused upload costs nothing.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, Request

from workers.apikeys import KeyRing
from workers.queue.jobs import TERMINAL

from .errors import ProblemError

QUOTA_PREFIX = "tessera:quota:"


def _token(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("x-api-key") or None


def _unauthorized(code: str, detail: str) -> ProblemError:
    exc = ProblemError(401, code, detail)
    exc.headers = {"WWW-Authenticate": 'Bearer realm="tessera"'}
    return exc


def caller(request: Request) -> str | None:
    """The id of the calling key, or None when keys are off."""
    ring: KeyRing = request.app.state.keyring
    if not ring.enabled:
        return None
    token = _token(request)
    if token is None:
        raise _unauthorized("auth.missing_key", "an API key is required")
    key = ring.lookup(token)
    if key is None:
        raise _unauthorized("auth.invalid_key", "the API key is not valid")
    if key.revoked:
        raise _unauthorized("auth.revoked_key", "the API key has been revoked")
    if key.requests_per_minute is not None:
        _count_request(request, key.id, key.requests_per_minute)
    return key.id


def _too_many(code: str, detail: str, retry_after: int, **context: object) -> ProblemError:
    exc = ProblemError(429, code, detail, **context)
    exc.headers = {"Retry-After": str(max(1, retry_after))}
    return exc


def _count_request(request: Request, key_id: str, limit: int) -> None:
    now = time.time()
    minute = int(now // 60)
    name = f"{QUOTA_PREFIX}{key_id}:rpm:{minute}"
    r = request.app.state.queue.r
    pipe = r.pipeline()
    pipe.incr(name)
    pipe.expire(name, 120)
    count = pipe.execute()[0]
    if count > limit:
        raise _too_many(
            "quota.requests",
            "too many requests for this API key",
            int(60 * (minute + 1) - now) + 1,
            limit=limit,
        )


#: a job counted against its key but not found (its submission failed after being admitted, or
#: is still being stored) stops counting after this long
_UNSEEN_SECONDS = 120.0
#: take a place among a key's running jobs if one is free: ZCARD and ZADD in one step, so that
#: simultaneous submissions cannot all pass the check
_ADMIT = """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[1], 604800)
return 1
"""


def admit(request: Request, key_id: str | None, job_id: str, upload_bytes: int) -> None:
    """Count the job ``job_id`` (not stored yet) against its key's quotas, or refuse it: at most
    ``concurrent_jobs`` queued or running (a sorted set per key, pruned of ended jobs, the check
    and the count one atomic step), at most ``bytes_per_day`` uploaded per UTC day. Called once
    the submission has been validated (a refused upload costs nothing) and is not a replay."""
    if key_id is None:
        return
    key = request.app.state.keyring.get(key_id)
    if key is None:
        return
    queue = request.app.state.queue
    r = queue.r
    if key.concurrent_jobs is not None:
        running = f"{QUOTA_PREFIX}{key_id}:running"
        now = time.time()
        for raw, since in r.zrange(running, 0, -1, withscores=True):
            jid = raw.decode() if isinstance(raw, bytes) else raw
            rec = queue.get(jid)
            ended = rec is not None and rec.get("state") in TERMINAL
            if ended or (rec is None and now - since > _UNSEEN_SECONDS):
                r.zrem(running, raw)
        if not r.eval(_ADMIT, 1, running, key.concurrent_jobs, now, job_id):
            raise _too_many(
                "quota.concurrent_jobs",
                "this API key has as many jobs queued or running as it may",
                5,
                limit=key.concurrent_jobs,
            )
    if key.bytes_per_day is not None:
        now = time.time()
        day = int(now // 86400)
        name = f"{QUOTA_PREFIX}{key_id}:bytes:{day}"
        used = r.incrby(name, upload_bytes)
        r.expire(name, 2 * 86400)
        if used > key.bytes_per_day:
            r.decrby(name, upload_bytes)
            if key.concurrent_jobs is not None:
                r.zrem(f"{QUOTA_PREFIX}{key_id}:running", job_id)
            raise _too_many(
                "quota.bytes",
                "this API key has uploaded as many bytes today as it may",
                int(86400 * (day + 1) - now) + 1,
                limit=key.bytes_per_day,
                used=used - upload_bytes,
            )


CallerDep = Annotated[str | None, Depends(caller)]
