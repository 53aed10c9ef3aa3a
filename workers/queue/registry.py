"""The worker registry: what each worker (supervisor) offers, kept alive by its heartbeat.

Every supervisor writes (:meth:`JobQueue.heartbeat`), every couple of seconds, a small JSON
record under its name (``keys.worker(name)``) and its last heartbeat in the sorted set
``keys.WORKERS``: host and pid, version, when it started, its backends (``cpu``, and ``gpu`` with
the device's name and memory once its compute child has looked), how many compute children it
drives, the job it runs now, whether it is stopping. A worker is **live** while its last heartbeat
is at most ``LIVE_SECONDS`` old. The record itself is kept ``REMEMBER_SECONDS`` (10 minutes) after
the last heartbeat, so that what a worker offered is still known while it restarts.

The rule for a job that asks for ``device: "gpu"`` (:func:`gpu_refusal`): it is refused at
submission only when the deployment is known to have no GPU: workers were seen within the last
``REMEMBER_SECONDS``, none of them offers a GPU, and none is live without having said what it
offers. No worker seen at all (workers not started yet, or all gone longer ago than that) is not a
refusal: the job waits in the queue. A live worker that has not said yet (its compute child is
starting) may have a GPU: not a refusal either; one that died before saying counts for nothing.
"""

from __future__ import annotations

import json
import time
from typing import Any

from . import keys
from .jobs import WORKER_RECORD_SECONDS as REMEMBER_SECONDS
from .jobs import JobQueue, text

#: a worker whose last heartbeat is at most this old is live (heartbeats every 2 s)
LIVE_SECONDS = 15.0


def workers(
    q: JobQueue, *, live_only: bool = True, now: float | None = None
) -> list[dict[str, Any]]:
    """The workers' records, most recently seen first, each with ``live`` (bool) and ``age``
    (seconds since its heartbeat). ``live_only``: only those seen within ``LIVE_SECONDS``;
    else every worker whose record is still kept."""
    now = time.time() if now is None else now
    since = now - (LIVE_SECONDS if live_only else REMEMBER_SECONDS)
    names = [text(n) for n in q.r.zrevrangebyscore(keys.WORKERS, "+inf", since)]
    if not names:
        return []
    out = []
    for raw in q.r.mget([keys.worker(n) for n in names]):
        if raw is None:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        seen = float(rec.get("seen") or 0.0)
        rec["age"] = round(max(now - seen, 0.0), 3)
        rec["live"] = now - seen <= LIVE_SECONDS and rec.get("state") != "stopped"
        if rec["live"] or not live_only:
            out.append(rec)
    return out


def offers_gpu(rec: dict[str, Any]) -> bool | None:
    """Whether a worker's record offers a GPU; None while it has not said (its compute child is
    still starting)."""
    backends = rec.get("backends")
    if backends is None:
        return None
    return "gpu" in backends


def _maybe_gpu(rec: dict[str, Any]) -> bool:
    """A worker that offers a GPU (live or remembered), or a live one that has not said yet."""
    says = offers_gpu(rec)
    return bool(says) or (says is None and rec["live"])


def gpu_refusal(q: JobQueue, now: float | None = None) -> dict[str, Any] | None:
    """Why a ``device: "gpu"`` job must be refused now, or None when it may be queued (see the
    module's docstring for the rule): the workers seen and what each offers."""
    seen = workers(q, live_only=False, now=now)
    if not seen:
        return None
    if any(_maybe_gpu(w) for w in seen):
        return None
    return {
        "workers": [
            {"name": w.get("name"), "backends": w.get("backends"), "live": w["live"]} for w in seen
        ]
    }


def gpu_elsewhere(q: JobQueue, me: str, now: float | None = None) -> bool:
    """Whether a worker other than ``me``, seen within ``REMEMBER_SECONDS``, offers a GPU (or is
    live and has not said yet): a ``device: "gpu"`` job this worker cannot run should go back for
    it."""
    return any(w.get("name") != me and _maybe_gpu(w) for w in workers(q, live_only=False, now=now))
