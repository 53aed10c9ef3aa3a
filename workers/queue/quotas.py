"""Per-API-key quotas, counted in Redis so that every API process shares them.

- requests per minute: a counter per key and clock minute;
- jobs queued or running: a sorted set per key (job id -> when admitted), pruned of the jobs that
  ended, and of those never stored after a while (their submission failed after admission);
- upload bytes per UTC day: a counter per key and day.

The API decides what a refusal answers (``service/auth.py``); this module only counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from . import keys
from .batches import QUOTA_PREFIX, BatchQueue
from .jobs import TERMINAL, JobQueue, text

#: a job counted against its key but not found (its submission failed after being admitted, or
#: is still being stored) stops counting after this long
UNSEEN_SECONDS = 120.0
RUNNING_TTL = 7 * 24 * 3600
BYTES_TTL = 2 * 24 * 3600


@dataclass(frozen=True)
class Admission:
    """What :meth:`Quotas.admit` decided: ``refused`` is None (admitted), ``concurrent_jobs``
    or ``bytes_per_day``; ``used_bytes``: the bytes the key had uploaded today before this job
    (with a bytes refusal)."""

    refused: str | None = None
    used_bytes: int = 0


class Quotas:
    """The quota counters on a ``redis.Redis`` client."""

    def __init__(self, client: Any) -> None:
        self.r = client
        self._batches = BatchQueue(JobQueue(client))
        folder = resources.files(__package__) / "scripts"
        self._admit = self.r.register_script((folder / "quota_admit.lua").read_text())

    def count_request(self, key_id: str, now: float | None = None) -> int:
        """Count one request of ``key_id`` in the current minute; the count so far."""
        now = time.time() if now is None else now
        name = keys.quota_requests(key_id, int(now // 60))
        pipe = self.r.pipeline()
        pipe.incr(name)
        pipe.expire(name, 120)
        return int(pipe.execute()[0])

    def admit(
        self,
        key_id: str,
        job_id: str,
        *,
        concurrent_jobs: int | None,
        bytes_per_day: int | None,
        upload_bytes: int,
        now: float | None = None,
    ) -> Admission:
        """Count the job ``job_id`` (not stored yet) against its key's quotas (those not None),
        or refuse it; the checks and the counting are one atomic step."""
        now = time.time() if now is None else now
        running = keys.quota_running(key_id) if concurrent_jobs is not None else ""
        spent = keys.quota_bytes(key_id, int(now // 86400)) if bytes_per_day is not None else ""
        ended = self._ended(running, now) if running else []
        res = self._admit(
            keys=[running, spent],
            args=[
                job_id,
                repr(now),
                concurrent_jobs or 0,
                RUNNING_TTL,
                upload_bytes,
                bytes_per_day or 0,
                BYTES_TTL,
                *ended,
            ],
        )
        outcome = text(res[0])
        if outcome == "concurrent":
            return Admission("concurrent_jobs")
        if outcome == "bytes":
            return Admission("bytes_per_day", int(res[1]))
        return Admission()

    def release(self, key_id: str, job_id: str) -> None:
        """Stop counting ``job_id`` against the key's concurrent jobs: admitted, then never
        stored (a batch undone while its body came)."""
        self.r.zrem(keys.quota_running(key_id), job_id)

    def _ended(self, running: str, now: float) -> list[str]:
        """The jobs in a key's running set that no longer count: ended, or never seen (not
        stored) for longer than :data:`UNSEEN_SECONDS` (two round trips, whatever their number)."""
        members = self.r.zrange(running, 0, -1, withscores=True)
        if not members:
            return []
        pipe = self.r.pipeline(transaction=False)
        batches = {}
        for raw, _since in members:
            name = text(raw)
            if name.startswith(QUOTA_PREFIX):  # a batch counts as one job until it ends
                batches[name] = self._batches.ended(name[len(QUOTA_PREFIX) :])
            pipe.hget(keys.job(name), "state")
        states = pipe.execute()
        out = []
        for (raw, since), state in zip(members, states, strict=True):
            if text(raw) in batches:
                ended = batches[text(raw)]
                if ended or (ended is None and now - since > UNSEEN_SECONDS):
                    out.append(text(raw))
                continue
            gone = state is None and now - since > UNSEEN_SECONDS
            if gone or (state is not None and text(state) in TERMINAL):
                out.append(text(raw))
        return out
