"""API keys on the API: who is calling. Off (everyone is ``None``) unless keys are configured.

A missing, unknown or revoked key is a 401 (``auth.missing_key``, ``auth.invalid_key``,
``auth.revoked_key``). Jobs carry the id of the key that submitted them; another key is told
``job.not_found``, as if the job did not exist.

Per-key quotas, when a key sets them, answer 429 with ``Retry-After``: requests per minute
(``quota.requests``, a Redis counter per key and clock minute), jobs queued or running
(``quota.concurrent_jobs``, a Redis set per key pruned of ended jobs) and upload bytes per UTC day
(``quota.bytes``, a counter per key and day). The counters live in Redis so every API process
shares them.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, Request

from workers.apikeys import KeyRing

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


def check_submission(request: Request, key_id: str | None, upload_bytes: int) -> None:
    """Concurrent-job and daily-byte quotas of the submitting key, before the job is stored."""
    if key_id is None:
        return
    key = request.app.state.keyring.get(key_id)
    if key is None:
        return
    queue = request.app.state.queue
    r = queue.r
    if key.concurrent_jobs is not None:
        active = f"{QUOTA_PREFIX}{key_id}:active"
        for job_id in r.smembers(active):
            jid = job_id.decode() if isinstance(job_id, bytes) else job_id
            rec = queue.get(jid)
            if rec is None or rec.get("state") in ("succeeded", "failed", "cancelled", "expired"):
                r.srem(active, job_id)
        if r.scard(active) >= key.concurrent_jobs:
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
            raise _too_many(
                "quota.bytes",
                "this API key has uploaded as many bytes today as it may",
                int(86400 * (day + 1) - now) + 1,
                limit=key.bytes_per_day,
                used=used - upload_bytes,
            )


def job_started(request: Request, key_id: str | None, job_id: str) -> None:
    """Count an accepted job against its key's concurrent-job quota."""
    if key_id is None:
        return
    key = request.app.state.keyring.get(key_id)
    if key is not None and key.concurrent_jobs is not None:
        r = request.app.state.queue.r
        r.sadd(f"{QUOTA_PREFIX}{key_id}:active", job_id)
        r.expire(f"{QUOTA_PREFIX}{key_id}:active", 7 * 86400)


CallerDep = Annotated[str | None, Depends(caller)]
