"""The FastAPI application: ``create_app()`` wires routers, error handlers, limits and metrics.

Importing this module never initialises CUDA: the engine is imported for its operation catalogue
and its CPU parsers only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from pydantic.json_schema import models_json_schema

from workers.apikeys import keyring_from
from workers.queue.blobs import open_store, store_config
from workers.queue.jobs import JobQueue
from workers.queue.quotas import Quotas
from workers.queue.waiting import Waiter

from . import errors
from .config import Settings, get_settings
from .limits import BodySizeLimit
from .metrics import Metrics, MetricsMiddleware
from .routes import batches, events, health, jobs, operations, preview, ui, workers
from .schemas import BatchFromS3, JobCreate

log = logging.getLogger(__name__)

VERSION = "0.1.0"
DESCRIPTION = """GPU mesh processing as a service.

Submit a triangle mesh and a pipeline of operations to `POST /v1/jobs`, follow the job at
`GET /v1/jobs/{id}`, download the result from `GET /v1/jobs/{id}/result`. The operations and
their parameters are listed at `GET /v1/operations`. Errors are `application/problem+json` with a
stable `code`.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = redis.Redis.from_url(
            settings.redis_url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=30
        )
        app.state.queue = JobQueue(
            client,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
            job_ttl_seconds=settings.job_ttl_seconds,
            tombstone_seconds=settings.tombstone_seconds,
        )
        app.state.quotas = Quotas(client)
        # long polls block on Redis for up to a minute each: an asyncio client, no socket timeout
        app.state.waiter = Waiter.from_url(settings.redis_url)
        app.state.store = open_store(store_config(settings))
        try:
            yield
        finally:
            client.close()
            await app.state.waiter.aclose()

    # /docs is served from node_modules by ui.install (FastAPI's own loads Swagger UI from a
    # CDN); ReDoc, also from a CDN, is left out
    app = FastAPI(
        title="Tessera",
        version=VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.keyring = keyring_from(settings)
    app.state.metrics = Metrics()
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(batches.router)
    app.include_router(operations.router)
    app.include_router(health.router)
    app.include_router(events.router)
    app.include_router(preview.router)
    app.include_router(workers.router)
    ui.install(app)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_upload_bytes,
        paths={"/v1/batches": settings.batch_max_upload_bytes},
    )
    if settings.cors_origins:  # only the configured origins; credentials never
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Idempotency-Key", "Content-Type"],
            expose_headers=["Location", "Retry-After"],
        )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            # the job spec travels as a JSON string inside the multipart form: document its model
            _, defs = models_json_schema(
                [(JobCreate, "validation"), (BatchFromS3, "validation")],
                ref_template="#/components/schemas/{model}",
            )
            schema.setdefault("components", {}).setdefault("schemas", {}).update(defs["$defs"])
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
