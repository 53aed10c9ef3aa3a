"""``/v1/workers``: the live workers and what each offers (see :mod:`workers.queue.registry`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from workers.queue.registry import workers

from ..auth import CallerDep, caller, is_admin
from ..deps import QueueDep
from ..errors import PROBLEM
from ..schemas import WorkersPublic, worker_public

router = APIRouter(prefix="/v1/workers", tags=["workers"], dependencies=[Depends(caller)])

_PROBLEM_RESPONSE = {"content": {PROBLEM: {}}, "description": "Problem details"}


@router.get(
    "",
    response_model=WorkersPublic,
    responses={s: _PROBLEM_RESPONSE for s in (401, 429, 503)},
    summary="The live workers and what each offers",
    description="Every worker whose heartbeat is at most 15 s old: its version, backends (cpu, "
    "gpu with the device's name and memory), compute children, state, jobs done. Which jobs it "
    "runs, its host and pid are shown to admin keys (and to everyone when keys are off); other "
    "keys see the rest.",
)
async def list_workers(request: Request, queue: QueueDep, who: CallerDep) -> WorkersPublic:
    admin = is_admin(request, who)
    live = await run_in_threadpool(workers, queue)
    data = [worker_public(w, admin) for w in live]
    return WorkersPublic(
        data=data, count=len(data), gpu=any("gpu" in (w.backends or []) for w in data)
    )
