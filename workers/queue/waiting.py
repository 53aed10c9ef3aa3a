"""Waiting for a job to end without polling: the API's long poll (``GET /v1/jobs/{id}?wait=``).

Every script that changes a job appends to its event log (``keys.events``); a waiter reads the
log's last entry and the job's state in one round trip, then blocks on the log (``XREAD BLOCK``)
and looks at the state again whenever the log grows. Each waiter holds one connection of an
asyncio Redis client for at most its wait, so a waiting request ties up no thread.
"""

from __future__ import annotations

import time
from typing import Any

from . import keys
from .jobs import TERMINAL


def _s(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


async def wait_for_end(r: Any, job_id: str, timeout: float) -> str | None:
    """Return the job's state once it is terminal, or after ``timeout`` seconds the state it is
    in (None when the job does not exist). ``r`` is a ``redis.asyncio.Redis``."""
    deadline = time.monotonic() + timeout
    pipe = r.pipeline(transaction=False)
    pipe.xrevrange(keys.events(job_id), count=1)
    pipe.hget(keys.job(job_id), "state")
    last, state = await pipe.execute()
    cursor = _s(last[0][0]) if last else "0-0"
    while True:
        state = None if state is None else _s(state)
        if state is None or state in TERMINAL:
            return state
        left = deadline - time.monotonic()
        if left <= 0:
            return state
        block = max(int(left * 1000), 1)
        res = await r.xread({keys.events(job_id): cursor}, count=100, block=block)
        for _stream, entries in res or []:
            if entries:
                cursor = _s(entries[-1][0])
        state = await r.hget(keys.job(job_id), "state")
