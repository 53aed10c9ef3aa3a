"""API keys on the API: who is calling. Off (everyone is ``None``) unless keys are configured.

A missing, unknown or revoked key is a 401 (``auth.missing_key``, ``auth.invalid_key``,
``auth.revoked_key``). Jobs carry the id of the key that submitted them; another key is told
``job.not_found``, as if the job did not exist.

Per-key quotas, when a key sets them, answer 429 with ``Retry-After``: requests per minute
(``quota.requests``, a Redis counter per key and clock minute), jobs queued or running
(``quota.concurrent_jobs``, a Redis sorted set per key pruned of ended jobs) and upload bytes per
UTC day (``quota.bytes``, a counter per key and day). The counters live in Redis so every API
process shares them; :mod:`workers.queue.quotas` keeps them. The job quotas are taken once a
submission is valid and is not a replay of an earlier one (:func:`admit`): a replay or a refused
upload costs nothing.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, Request

from workers.apikeys import KeyRing
from workers.queue.quotas import Quotas

from .errors import ProblemError


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
    quotas: Quotas = request.app.state.quotas
    if quotas.count_request(key_id, now) > limit:
        raise _too_many(
            "quota.requests",
            "too many requests for this API key",
            int(60 * (now // 60 + 1) - now) + 1,
            limit=limit,
        )


def admit(request: Request, key_id: str | None, job_id: str, upload_bytes: int) -> None:
    """Count the job ``job_id`` (not stored yet) against its key's quotas, or refuse it: at most
    ``concurrent_jobs`` queued or running, at most ``bytes_per_day`` uploaded per UTC day (see
    :mod:`workers.queue.quotas`). Called once the submission has been validated (a refused
    upload costs nothing) and is not a replay."""
    if key_id is None:
        return
    key = request.app.state.keyring.get(key_id)
    if key is None or (key.concurrent_jobs is None and key.bytes_per_day is None):
        return
    quotas: Quotas = request.app.state.quotas
    now = time.time()
    got = quotas.admit(
        key_id,
        job_id,
        concurrent_jobs=key.concurrent_jobs,
        bytes_per_day=key.bytes_per_day,
        upload_bytes=upload_bytes,
        now=now,
    )
    if got.refused == "concurrent_jobs":
        raise _too_many(
            "quota.concurrent_jobs",
            "this API key has as many jobs queued or running as it may",
            5,
            limit=key.concurrent_jobs,
        )
    if got.refused == "bytes_per_day":
        raise _too_many(
            "quota.bytes",
            "this API key has uploaded as many bytes today as it may",
            int(86400 * (now // 86400 + 1) - now) + 1,
            limit=key.bytes_per_day,
            used=got.used_bytes,
        )


def release(request: Request, key_id: str | None, job_id: str) -> None:
    """Give back what :func:`admit` counted for ``job_id``, which was undone before it ended
    (a batch whose body failed after its first chunks were queued)."""
    if key_id is not None:
        request.app.state.quotas.release(key_id, job_id)


def counts_bytes(request: Request, key_id: str | None) -> bool:
    """Whether the caller's key has a daily quota of bytes (a batch is then admitted once its
    whole size is known: none of its chunks is queued while its body comes)."""
    if key_id is None:
        return False
    key = request.app.state.keyring.get(key_id)
    return key is not None and key.bytes_per_day is not None


def is_admin(request: Request, key_id: str | None) -> bool:
    """Whether the caller sees everything (every key's jobs, the jobs workers run): a key
    configured with ``"admin": true``, or anyone when keys are off (the API is open then)."""
    if key_id is None:
        return True
    key = request.app.state.keyring.get(key_id)
    return bool(key is not None and key.admin)


CallerDep = Annotated[str | None, Depends(caller)]
