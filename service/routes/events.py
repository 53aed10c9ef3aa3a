"""``/v1/jobs/{id}/events``: the job record as server-sent events, until the job ends.

The job hash holds the truth; the job's event log (a capped Redis stream the queue scripts append
to on every change) only wakes the sender up. Each wake-up re-reads the record and sends it when it
differs from the last one sent, so a missed or merged log entry costs nothing, and a quiet job
still gets its record re-read every ``WAKE_SECONDS``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from workers.queue.jobs import TERMINAL, JobState

from ..auth import CallerDep, caller
from ..deps import BaseUrlDep, QueueDep
from ..schemas import job_public
from .jobs import _ERRORS, _record

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], dependencies=[Depends(caller)])

WAKE_SECONDS = 1.0  # longest wait on the event log (below the Redis client's socket timeout)
KEEPALIVE_SECONDS = 15.0  # a comment line this often keeps proxies from closing a quiet stream
MAX_SECONDS = 3600.0  # one stream's life; EventSource reconnects by itself
ENDED = TERMINAL | {JobState.expired}


def _frame(event: str, data: str, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


@router.get(
    "/{job_id}/events",
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Server-sent events: `event: job` with the job (as `GET /v1/jobs/{id}` "
            "returns it) as `data`, first at once, then whenever it changes; the stream ends "
            "after the job reaches succeeded, failed, cancelled or expired.",
        },
        **_ERRORS,
    },
    response_class=StreamingResponse,
    summary="Follow a job by server-sent events",
)
async def job_events(
    job_id: str, request: Request, queue: QueueDep, base: BaseUrlDep, who: CallerDep
) -> StreamingResponse:
    waiter = request.app.state.waiter  # waits on the asyncio client: no thread held
    after = await waiter.cursor(job_id)
    first = await run_in_threadpool(_record, queue, job_id, who)  # 404 before the stream starts

    async def stream() -> AsyncIterator[bytes]:
        rec: dict[str, Any] | None = first
        cursor = after
        sent = ""
        n = 0
        started = last_write = time.monotonic()
        yield b"retry: 2000\n\n"
        while True:
            if rec is None:  # the record expired away while we watched
                yield _frame("gone", json.dumps({"id": job_id}))
                return
            job = job_public(rec, base, time.time())
            text = job.model_dump_json()
            if text != sent:
                n += 1
                sent = text
                last_write = time.monotonic()
                yield _frame("job", text, n)
            if job.state in ENDED or time.monotonic() - started > MAX_SECONDS:
                return
            if await request.is_disconnected():
                return
            if time.monotonic() - last_write > KEEPALIVE_SECONDS:
                last_write = time.monotonic()
                yield b": keep-alive\n\n"
            cursor = await waiter.wait_events(job_id, cursor, WAKE_SECONDS)
            rec = await waiter.record(job_id)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
