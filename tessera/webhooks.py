"""Checking a Tessera webhook on the receiving side.

A delivery is ``POST <callback_url>`` with a JSON body and the header
``Tessera-Signature: t=<unix seconds>,v1=<hex>``, where the hex is HMAC-SHA256, keyed with the
API key's webhook secret (or the service's default secret), over ``f"{t}.{body}"``:

>>> event = verify(secret, request.headers["Tessera-Signature"], request.body)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from .errors import TesseraError


class InvalidSignature(TesseraError):
    def __init__(self, detail: str) -> None:
        super().__init__("webhook.invalid_signature", detail)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return mac.hexdigest()


def verify(
    secret: str,
    header: str | None,
    body: bytes,
    *,
    tolerance: float = 300.0,
    now: float | None = None,
) -> dict[str, Any]:
    """The event in ``body`` if ``header`` signs it with ``secret`` within ``tolerance`` seconds
    of now; raises :class:`InvalidSignature` otherwise (replayed, altered or unsigned)."""
    if not header:
        raise InvalidSignature("no Tessera-Signature header")
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        k, _, v = item.strip().partition("=")
        parts.setdefault(k, []).append(v)
    try:
        ts = int(parts["t"][0])
    except (KeyError, ValueError):
        raise InvalidSignature("no timestamp in the signature header") from None
    now = time.time() if now is None else now
    if abs(now - ts) > tolerance:
        raise InvalidSignature("the signature's timestamp is too far from now")
    expected = signature(secret, ts, body)
    if not any(hmac.compare_digest(expected, v) for v in parts.get("v1", [])):
        raise InvalidSignature("the signature does not match")
    event: dict[str, Any] = json.loads(body)
    return event
