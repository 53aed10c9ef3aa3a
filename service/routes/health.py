"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import time
from typing import Any

import redis
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import QueueDep

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The API process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Redis reachable and at least one worker alive",
    responses={503: {"description": "Not ready"}},
)
def readyz(queue: QueueDep) -> JSONResponse:
    checks: dict[str, Any] = {}
    try:
        queue.ping()
        checks["redis"] = "ok"
        n = queue.live_workers()
        checks["workers"] = n
        checks["queue"] = queue.queue_depth()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        checks["redis"] = f"unavailable: {exc.__class__.__name__}"
        n = 0
    ready = checks.get("redis") == "ok" and n > 0
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request, queue: QueueDep) -> Response:
    m = request.app.state.metrics
    try:
        depth = queue.queue_depth()
        m.queue_waiting.set(depth["waiting"])
        m.queue_running.set(depth["running"])
        m.workers_live.set(queue.live_workers())
        for state, n in queue.counters().items():
            m.jobs.labels(event=state).set(n)
        m.redis_up.set(1)
    except (redis.ConnectionError, redis.TimeoutError):
        m.redis_up.set(0)
    m.scraped.set(time.time())
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
