"""Waiting for a job to end without polling: the API's long poll (``GET /v1/jobs/{id}?wait=``).

Every script that changes a job appends to its event log (``keys.events``) an entry that names
the state the change left it in. A waiter reads the log's last entry and the job's state at one
instant (one transaction), then blocks on the log (``XREAD BLOCK``): an entry naming a running or
queued state (progress, a retry) only moves its cursor; one naming a terminal state (or none) is
checked against the record, which the waiter reads once more to answer with. A waiter holds one
connection of an asyncio Redis client for at most its wait, so a waiting request ties up no
thread.
"""

from __future__ import annotations

import time
from typing import Any

from . import keys
from .jobs import TERMINAL, decode_record, text


class Waiter:
    """Long polls on a ``redis.asyncio.Redis`` client (one with no socket timeout: a wait
    blocks for up to a minute; see :meth:`from_url`)."""

    def __init__(self, client: Any) -> None:
        self.r = client

    @classmethod
    def from_url(cls, url: str) -> Waiter:
        """A waiter on its own asyncio client. Its socket timeout is off: redis-py's asyncio
        client reads with a 5 s timeout by default, which a wait longer than that would hit."""
        import redis.asyncio

        return cls(
            redis.asyncio.Redis.from_url(
                url, socket_timeout=None, socket_connect_timeout=2, health_check_interval=30
            )
        )

    async def aclose(self) -> None:
        await self.r.aclose()

    async def record(self, job_id: str) -> dict[str, Any] | None:
        raw = await self.r.hgetall(keys.job(job_id))
        return decode_record(raw) if raw else None

    async def cursor(self, job_id: str) -> str:
        """Where the job's event log ends now; ``0-0`` when it has none."""
        last = await self.r.xrevrange(keys.events(job_id), count=1)
        return text(last[0][0]) if last else "0-0"

    async def wait_events(self, job_id: str, after: str, timeout: float) -> str:
        """Return once the job's event log grows past ``after``, or after ``timeout`` seconds:
        the cursor past what came (the server-sent events' wake-up)."""
        res = await self.r.xread(
            {keys.events(job_id): after}, count=100, block=max(int(timeout * 1000), 1)
        )
        for _stream, entries in res or []:
            if entries:
                after = text(entries[-1][0])
        return after

    async def wait_for_end(self, job_id: str, timeout: float) -> dict[str, Any] | None:
        """The job's record once it has ended, or after ``timeout`` seconds as it is then; None
        when the job does not exist (or no longer)."""
        deadline = time.monotonic() + timeout
        log = keys.events(job_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.xrevrange(log, count=1)
        pipe.hget(keys.job(job_id), "state")
        last, state = await pipe.execute()
        if state is None or text(state) in TERMINAL:
            return await self.record(job_id)
        cursor = text(last[0][0]) if last else "0-0"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            res = await self.r.xread({log: cursor}, count=100, block=max(int(left * 1000), 1))
            if not res:
                break  # the wait is over
            look = False
            for _stream, entries in res:
                for entry, fields in entries:
                    cursor = text(entry)
                    st = (fields or {}).get(b"state", (fields or {}).get("state"))
                    look = look or st is None or text(st) in TERMINAL
            if look:
                rec = await self.record(job_id)
                if rec is None or rec.get("state") in TERMINAL:
                    return rec
        return await self.record(job_id)
