"""Errors as ``application/problem+json`` (RFC 9457) with a stable machine-readable ``code``.

Error tree (each branch maps to one status)::

    ProblemError                  any status, raised by routes (job.not_found 404, job.not_ready
                                  409, job.expired 410, idempotency.conflict 409, upload.* 413...)
    workers.engine EngineError    InputError 422 (mesh.*, format.*, spec.*, op.*), 503, 500
    RequestValidationError        422 request.invalid (missing or malformed form fields)
    redis ConnectionError/Timeout 503 redis.unavailable
    HTTPException                 its status, route.not_found / method.not_allowed / http.error
    anything else                 500 internal

Body: ``{"type", "title", "status", "detail", "code", "context"?, "errors"?}``.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from workers.engine.errors import EngineError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"

TITLES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    410: "Gone",
    413: "Content too large",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


class ProblemError(Exception):
    def __init__(self, status: int, code: str, detail: str, **context: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.context = context
        self.headers: dict[str, str] | None = None


def problem(
    status: int,
    code: str,
    detail: str,
    context: dict[str, Any] | None = None,
    errors: list[Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"urn:tessera:problem:{code}",
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if context:
        body["context"] = context
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _allowed_methods(request: Request) -> str:
    """The methods some route on this path answers: each asked of the router as a request with
    that method (FastAPI makes one route per method, and an included router answers for its
    routes without listing them)."""
    from starlette.routing import Match

    allowed = [
        m
        for m in _METHODS
        if any(
            route.matches({**request.scope, "method": m})[0] == Match.FULL
            for route in request.app.router.routes
        )
    ]
    return ", ".join(allowed)


def install(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def _problem(_: Request, exc: ProblemError) -> JSONResponse:
        return problem(exc.status, exc.code, exc.detail, exc.context or None, headers=exc.headers)

    @app.exception_handler(EngineError)
    async def _engine(_: Request, exc: EngineError) -> JSONResponse:
        if exc.status >= 500:
            log.error("engine error %s: %s %s", exc.code, exc.message, exc.detail)
        ctx = dict(exc.detail)
        errors = ctx.pop("errors", None)
        return problem(exc.status, exc.code, exc.message, ctx or None, errors)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "loc": [str(p) for p in e.get("loc", ())],
                "msg": e.get("msg", ""),
                "type": e.get("type", ""),
            }
            for e in exc.errors()
        ]
        return problem(
            422,
            "request.invalid",
            "the request is missing fields or has invalid ones",
            errors=errors,
        )

    @app.exception_handler(redis.ConnectionError)
    @app.exception_handler(redis.TimeoutError)
    async def _redis(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis unavailable: %s", exc)
        return problem(
            503,
            "redis.unavailable",
            "the job store is unavailable; retry shortly",
            headers={"Retry-After": "2"},
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "route.not_found", 405: "method.not_allowed"}.get(
            exc.status_code, "http.error"
        )
        headers = exc.headers
        if exc.status_code == 405:
            # the static files answer GET and HEAD; they are mounted, not routed per method
            allow = _allowed_methods(request) or "GET, HEAD"
            headers = {**(headers or {}), "Allow": allow}
        return problem(exc.status_code, code, str(exc.detail), headers=headers)

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return problem(500, "internal", "internal server error")
