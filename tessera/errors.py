"""Errors the client raises, mirroring the API's ``application/problem+json`` answers.

Every answer the API refuses carries a stable ``code`` (its problem ``type`` is
``urn:tessera:problem:<code>``); the client raises the class of its status family with that code,
status and detail. Error tree::

    TesseraError                 code, status, detail, context, errors, body
      ApiError                   the API answered with a problem
        InvalidInput             400, 422: request.*, spec.*, mesh.*, format.*, op.*
        Unauthorized             401: auth.*
        Forbidden                403
        NotFound                 404: job.not_found, artifact.not_found, operation.not_found
        Conflict                 409: job.not_ready, job.already_finished, idempotency.conflict,
                                      idempotency.in_progress
        Gone                     410: job.expired, job.result_missing
        PayloadTooLarge          413: upload.too_large
        RateLimited              429 (retried first, Retry-After honoured)
        ServerError              5xx
          ServiceUnavailable     503: redis.unavailable (retried first)
      JobError                   the job ended without a result (``job`` holds its record)
        JobFailed                state failed: the code is the job's error code
        JobCancelled             state cancelled
      ConnectionFailed           no answer after the retries (connection reset, timeout)
        ServiceUnreachable       client.unreachable: nothing answered at the URL on the first
                                 try (refused, unknown host, connect timeout): not retried
      WaitTimeout                ``wait`` gave up before the job ended (also a TimeoutError)
"""

from __future__ import annotations

from typing import Any

PROBLEM_PREFIX = "urn:tessera:problem:"


class TesseraError(Exception):
    """Base of every client error: ``code`` is the API's machine-readable code."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int | None = None,
        context: dict[str, Any] | None = None,
        errors: list[Any] | None = None,
        body: Any = None,
    ) -> None:
        self.where = where_wrong(errors)
        text = "; ".join(x for x in [detail, *self.where] if x)
        super().__init__(f"{code}: {text}" if text else code)
        self.code = code
        self.detail = detail
        self.status = status
        self.context = context or {}
        self.errors = errors
        self.body = body


def where_wrong(errors: list[Any] | None) -> list[str]:
    """The API's validation ``errors`` (``{"loc", "msg"}`` each) in words: ``pipeline[0]
    (vertex_normals) weighting: Input should be 'area', ...``, ``output.format: ...``."""
    out = []
    for e in errors or []:
        if not isinstance(e, dict):
            continue
        loc = [str(p) for p in e.get("loc") or []]
        if len(loc) >= 2 and loc[0] == "pipeline" and loc[1].isdigit():
            # a step's fields sit under its operation's name (the union's tag)
            head = f"pipeline[{loc[1]}]" + (f" ({loc[2]})" if len(loc) > 2 else "")
            where = " ".join([head, ".".join(loc[3:])]).strip()
        else:
            where = ".".join(f"[{p}]" if p.isdigit() else p for p in loc).replace(".[", "[")
        msg = str(e.get("msg") or e.get("message") or "")
        out.append(f"{where}: {msg}" if where else msg)
    return out


class ApiError(TesseraError):
    pass


class InvalidInput(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Gone(ApiError):
    pass


class PayloadTooLarge(ApiError):
    pass


class RateLimited(ApiError):
    pass


class ServerError(ApiError):
    pass


class ServiceUnavailable(ServerError):
    pass


class JobError(TesseraError):
    def __init__(self, code: str, detail: str, job: dict[str, Any]) -> None:
        err = job.get("error") or {}
        super().__init__(code, detail, context=err.get("detail") or {}, body=job)
        self.job = job
        self.job_id: str = job.get("id", "")


class JobFailed(JobError):
    pass


class JobCancelled(JobError):
    pass


class ConnectionFailed(TesseraError):
    pass


class ServiceUnreachable(ConnectionFailed):
    """Nothing answers at the client's URL and nothing ever has: a wrong or stopped service,
    raised at once (a service that answered before and then stops is retried instead)."""


class WaitTimeout(TesseraError, TimeoutError):
    pass


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    422: InvalidInput,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_class(status: int) -> type[ApiError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else ApiError


def from_problem(status: int, body: Any, text: str = "") -> ApiError:
    """The error for an answer with this status and (problem+json, or any) body."""
    if isinstance(body, dict):
        code = body.get("code")
        if not code and str(body.get("type", "")).startswith(PROBLEM_PREFIX):
            code = str(body["type"])[len(PROBLEM_PREFIX) :]
        detail = str(body.get("detail") or body.get("title") or "")
        context = body.get("context") if isinstance(body.get("context"), dict) else None
        errors = body.get("errors") if isinstance(body.get("errors"), list) else None
    else:
        code, detail, context, errors = None, text[:500], None, None
    return error_class(status)(
        code or f"http.{status}", detail, status=status, context=context, errors=errors, body=body
    )


def from_job(job: dict[str, Any]) -> JobError:
    """The error for a job that ended without a result."""
    if job.get("state") == "cancelled":
        return JobCancelled("job.cancelled", "the job was cancelled", job)
    err = job.get("error") or {}
    return JobFailed(err.get("code") or "job.failed", err.get("message") or "the job failed", job)
