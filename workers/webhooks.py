"""Webhooks: when a job with a ``callback_url`` ends, POST a signed JSON event to that URL.

The terminal transitions (``finish``, ``requeue`` giving up, ``cancel``; Lua, with the state
change) put the job in the sorted set ``tessera:webhooks:due`` scored by when to try. Any number
of :class:`Dispatcher` loops (one thread per supervisor) take due jobs with a short lease (the
score moves past the delivery's timeout, so a dispatcher that dies mid-delivery leaves the job to
another), POST the event, and record every attempt in the job record's ``webhook`` field. A
failed delivery (no answer, or not 2xx) is tried again after ``backoff * 2**(n-1)`` seconds
(with jitter), up to ``webhook_max_attempts``. Delivery is at least once: a receiver dedupes on
the ``Tessera-Delivery`` header (the job id).

Signature: ``Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 over f"{t}.{body}">`` with
the webhook secret of the API key that submitted the job, or ``webhook_secret`` when keys are off.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import threading
import time
from importlib import resources
from typing import Any

import httpx
import redis

from .apikeys import KeyRing, keyring_from
from .queue import keys
from .queue.batches import QUOTA_PREFIX, BatchQueue
from .queue.jobs import JobQueue, decode_record
from .settings import Settings

log = logging.getLogger(__name__)

USER_AGENT = "tessera-webhooks/1"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def event(rec: dict[str, Any]) -> dict[str, Any]:
    """The body of a job's webhook: what ended, how, and where to look."""
    base = (rec.get("base_url") or "").rstrip("/")
    job_url = f"{base}/v1/jobs/{rec['id']}"
    links: dict[str, Any] = {"job": job_url}
    state = rec.get("state")
    if state == "succeeded":
        links["result"] = f"{job_url}/result"
        links["artifacts"] = {n: f"{job_url}/artifacts/{n}" for n in rec.get("artifacts") or {}}
    err = rec.get("error")
    return {
        "type": f"job.{state}",
        "id": rec["id"],
        "state": state,
        "error": {"code": err.get("code"), "message": err.get("message")} if err else None,
        "finished_at": rec.get("finished_at"),
        "links": links,
    }


def batch_event(view: Any) -> dict[str, Any]:
    """The body of a batch's webhook: how it ended, its counts, and where to look."""
    rec = view.record
    base = (rec.get("base_url") or "").rstrip("/")
    url = f"{base}/v1/batches/{rec['id']}"
    return {
        "type": f"batch.{view.state}",
        "id": rec["id"],
        "state": view.state,
        "counts": view.counts,
        "finished_at": float(rec.get("notified_at") or time.time()),
        "links": {"batch": url, "result": f"{url}/result"},
    }


def _load(client: redis.Redis, name: str) -> Any:
    folder = resources.files("workers.queue") / "scripts"
    return client.register_script((folder / f"{name}.lua").read_text())


class Dispatcher:
    def __init__(self, client: redis.Redis, settings: Settings, keyring: KeyRing) -> None:
        self.r = client
        self.settings = settings
        self.keyring = keyring
        self.lease = settings.webhook_timeout_seconds + 10.0
        self._take = _load(client, "webhook_take")
        self._record = _load(client, "webhook_record")
        self.http = httpx.Client(
            timeout=settings.webhook_timeout_seconds,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        )

    def close(self) -> None:
        self.http.close()

    def secret_for(self, rec: dict[str, Any]) -> str | None:
        key_id = rec.get("key_id")
        if key_id:
            key = self.keyring.get(key_id)
            return key.signing_secret if key is not None and not key.revoked else None
        return self.settings.webhook_secret

    def take(self, limit: int = 10) -> list[str]:
        now = time.time()
        ids = self._take(keys=[keys.WEBHOOKS_DUE], args=[repr(now), repr(now + self.lease), limit])
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    def run_once(self) -> int:
        """Deliver what is due now; returns how many deliveries were tried."""
        ids = self.take()
        for job_id in ids:
            self.deliver(job_id)
        return len(ids)

    def deliver(self, job_id: str) -> None:
        """Deliver the webhook of a job, or of a batch (``batch:<id>`` in the due set)."""
        if job_id.startswith(QUOTA_PREFIX):
            batch_id = job_id[len(QUOTA_PREFIX) :]
            view = BatchQueue(JobQueue(self.r)).get(batch_id)
            if view is None:
                self.r.zrem(keys.WEBHOOKS_DUE, job_id)
                return
            self._deliver(job_id, keys.batch(batch_id), view.record, batch_event(view))
            return
        raw = self.r.hgetall(keys.job(job_id))
        if not raw:
            self.r.zrem(keys.WEBHOOKS_DUE, job_id)
            return
        rec = decode_record(raw)  # type: ignore[arg-type]  # bytes from this client
        self._deliver(job_id, keys.job(job_id), rec, event(rec))

    def _deliver(self, job_id: str, key: str, rec: dict[str, Any], ev: dict[str, Any]) -> None:
        """POST ``ev`` for the record ``rec`` (stored at ``key``; ``job_id`` its due entry)."""
        hook = rec.get("webhook") or {"attempts": [], "delivered": False}
        url = (rec.get("spec") or {}).get("callback_url")
        if hook.get("delivered") or hook.get("gave_up") or not url:
            self.r.zrem(keys.WEBHOOKS_DUE, job_id)
            return
        n = len(hook["attempts"]) + 1
        attempt: dict[str, Any] = {"at": time.time(), "status": None, "error": None}
        secret = self.secret_for(rec)
        if secret is None:
            attempt["error"] = "no signing secret (the job's API key is gone or revoked)"
            ok = False
            n = self.settings.webhook_max_attempts  # no point in trying again
        else:
            body = json.dumps(ev, separators=(",", ":")).encode()
            ts = int(time.time())
            headers = {
                "Content-Type": "application/json",
                "Tessera-Signature": sign(secret, ts, body),
                "Tessera-Event": ev["type"],
                "Tessera-Delivery": ev["id"],
                "Tessera-Attempt": str(n),
            }
            t0 = time.perf_counter()
            try:
                resp = self.http.post(url, content=body, headers=headers)
                attempt["status"] = resp.status_code
                ok = 200 <= resp.status_code < 300
            except httpx.HTTPError as exc:
                attempt["error"] = f"{type(exc).__name__}: {exc}"[:300]
                ok = False
            attempt["seconds"] = round(time.perf_counter() - t0, 4)
        hook["attempts"].append(attempt)
        hook["delivered"] = ok
        next_at = ""
        hook.pop("next_attempt_at", None)  # set again below only when another attempt is due
        if not ok and n >= self.settings.webhook_max_attempts:
            hook["gave_up"] = True
        elif not ok:
            wait = self.settings.webhook_backoff_seconds * 2 ** (n - 1)
            next_at = repr(time.time() + random.uniform(0.8, 1.0) * min(wait, 3600.0))
            hook["next_attempt_at"] = float(next_at)
        self._record(keys=[key, keys.WEBHOOKS_DUE], args=[job_id, json.dumps(hook), next_at])
        level = logging.INFO if ok else logging.WARNING
        outcome = attempt["status"] or attempt["error"]
        log.log(level, "webhook %s attempt %d → %s", job_id, n, outcome)


class WebhookThread:
    """A dispatcher loop on a daemon thread, with its own Redis connection; errors are logged and
    the loop goes on, so a bad endpoint or a Redis hiccup never reaches the supervisor."""

    def __init__(self, settings: Settings, name: str = "webhooks") -> None:
        self.settings = settings
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"{name}-webhooks", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        client = redis.Redis.from_url(
            self.settings.redis_url, socket_timeout=10, socket_connect_timeout=5
        )
        dispatcher = None
        try:
            while not self.stopping.is_set():
                try:
                    if dispatcher is None:
                        dispatcher = Dispatcher(client, self.settings, keyring_from(self.settings))
                    if dispatcher.run_once() == 0:
                        self.stopping.wait(0.25)
                except Exception:
                    log.exception("webhook loop error; going on")
                    self.stopping.wait(1.0)
        finally:
            if dispatcher is not None:
                dispatcher.close()
            client.close()
