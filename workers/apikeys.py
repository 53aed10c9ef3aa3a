"""API keys: who may call the API, and the secret that signs each caller's webhooks.

Off unless configured. ``TESSERA_API_KEYS`` (JSON) and/or ``TESSERA_API_KEYS_FILE`` (a JSON file)
map a key id to its secret, or to ``{"secret": ..., "revoked": true, "webhook_secret": ...,
"requests_per_minute": N, "concurrent_jobs": N, "bytes_per_day": N, "admin": true}`` (quotas,
each optional; ``admin``: the key sees every key's jobs in the job list and the workers' current
jobs in ``GET /v1/workers``). A
caller presents the secret (``Authorization: Bearer <secret>`` or ``X-API-Key``); jobs record the
key id, never the secret. The file is read again when it changes, so a key is revoked (or added)
without a restart; a file that no longer parses keeps the keys read before it and is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MIN_SECRET = 16
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class ApiKey:
    id: str
    secret: str
    revoked: bool = False
    webhook_secret: str | None = None
    #: quotas (None: unlimited): requests per minute, jobs queued or running, upload bytes per day
    requests_per_minute: int | None = None
    concurrent_jobs: int | None = None
    bytes_per_day: int | None = None
    #: sees every key's jobs in the list, and which job each worker runs
    admin: bool = False

    @property
    def signing_secret(self) -> str:
        """The secret webhooks of this key's jobs are signed with."""
        return self.webhook_secret or self.secret


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def parse_keys(data: Any, where: str) -> dict[str, ApiKey]:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object of key id -> secret")
    keys = {}
    for key_id, value in data.items():
        entry = {"secret": value} if isinstance(value, str) else value
        if not isinstance(entry, dict) or not isinstance(entry.get("secret"), str):
            raise ValueError(f"{where}: key {key_id!r} needs a secret")
        if not _ID.match(key_id):
            raise ValueError(f"{where}: key id {key_id!r} must be 1-64 of [A-Za-z0-9_.-]")
        if len(entry["secret"]) < MIN_SECRET:
            raise ValueError(f"{where}: the secret of {key_id!r} is shorter than {MIN_SECRET}")
        quotas = {}
        for q in ("requests_per_minute", "concurrent_jobs", "bytes_per_day"):
            v = entry.get(q)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError(f"{where}: {q} of {key_id!r} must be a positive integer")
            quotas[q] = v
        keys[key_id] = ApiKey(
            key_id,
            entry["secret"],
            bool(entry.get("revoked", False)),
            entry.get("webhook_secret") or None,
            **quotas,
            admin=entry.get("admin") is True,
        )
    return keys


class KeyRing:
    """The configured keys; ``enabled`` is False when there are none (the API is then open)."""

    def __init__(self, inline: dict[str, Any] | None = None, file: Path | None = None) -> None:
        self._inline = parse_keys(inline or {}, "TESSERA_API_KEYS")
        self._file = file
        self._file_keys: dict[str, ApiKey] = {}
        self._mtime: float | None = None
        self._checked = 0.0
        self._lock = threading.Lock()
        if file is not None:
            self._file_keys = self._read_file()  # a bad file at start is an error
        self._index()

    @property
    def enabled(self) -> bool:
        return self._file is not None or bool(self._inline)

    def _read_file(self) -> dict[str, ApiKey]:
        assert self._file is not None
        self._mtime = self._file.stat().st_mtime_ns
        return parse_keys(json.loads(self._file.read_text()), str(self._file))

    def _index(self) -> None:
        self._by_id = {**self._file_keys, **self._inline}
        self._by_digest = {_digest(k.secret): k for k in self._by_id.values()}

    def _refresh(self) -> None:
        if self._file is None:
            return
        now = time.monotonic()
        with self._lock:
            if now - self._checked < 0.5:
                return
            self._checked = now
            try:
                if self._file.stat().st_mtime_ns == self._mtime:
                    return
                self._file_keys = self._read_file()
            except (OSError, ValueError) as exc:
                log.error("API keys file %s unreadable, keeping the keys read before: %s",
                          self._file, exc)  # fmt: skip
                return
            self._index()
            log.info("API keys reloaded from %s (%d keys)", self._file, len(self._by_id))

    def lookup(self, token: str) -> ApiKey | None:
        """The key whose secret is ``token`` (revoked ones too), or None."""
        self._refresh()
        key = self._by_digest.get(_digest(token))
        if key is not None and hmac.compare_digest(key.secret, token):
            return key
        return None

    def get(self, key_id: str) -> ApiKey | None:
        self._refresh()
        return self._by_id.get(key_id)


def keyring_from(settings: Any) -> KeyRing:
    return KeyRing(settings.api_keys, settings.api_keys_file)
