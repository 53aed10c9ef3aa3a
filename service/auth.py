"""API keys on the API: who is calling. Off (everyone is ``None``) unless keys are configured.

A missing, unknown or revoked key is a 401 (``auth.missing_key``, ``auth.invalid_key``,
``auth.revoked_key``). Jobs carry the id of the key that submitted them; another key is told
``job.not_found``, as if the job did not exist.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from workers.apikeys import KeyRing

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
    return key.id


CallerDep = Annotated[str | None, Depends(caller)]
