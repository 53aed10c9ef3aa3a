"""``/v1/jobs``: submit, inspect, download, cancel."""

from __future__ import annotations

import re
import stat
import time
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Header, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.background import BackgroundTask

from workers.engine.backend import Device
from workers.queue.blobs import BlobNotFound
from workers.queue.jobs import TERMINAL, JobState
from workers.queue.listing import list_jobs
from workers.queue.outcomes import save_outcome
from workers.queue.registry import gpu_refusal

from ..auth import CallerDep, admit, caller, is_admin
from ..deps import BaseUrlDep, QueueDep, SettingsDep, StoreDep
from ..errors import PROBLEM, ProblemError, problem
from ..schemas import JobCreate, JobList, JobPublic, job_public, job_summary
from ..submission import accept, parse_spec

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], dependencies=[Depends(caller)])

_PROBLEM_RESPONSE: dict[str, Any] = {"content": {PROBLEM: {}}, "description": "Problem details"}
_ERRORS = {s: _PROBLEM_RESPONSE for s in (401, 404, 409, 410, 413, 422, 429, 503)}
#: the longest long poll of ``GET /v1/jobs/{id}?wait=``
MAX_WAIT_SECONDS = 60.0


def _record(queue: Any, job_id: str, who: str | None) -> dict[str, Any]:
    if not job_id.isalnum() or len(job_id) > 64:
        raise ProblemError(404, "job.not_found", "no such job", id=job_id[:64])
    rec = queue.get(job_id)
    # a batch's chunks are jobs inside the service, not the caller's: they answer as batches
    if rec is None or rec.get("batch") or (who is not None and rec.get("key_id") != who):
        raise ProblemError(404, "job.not_found", "no such job", id=job_id)
    return rec  # type: ignore[no-any-return]


#: the body of ``POST /v1/jobs`` besides the multipart form: a JSON job spec alone (a pipeline
#: that makes its own mesh), or the mesh file's bytes with the spec in the ``Tessera-Spec`` header
_BODY_FORMS: dict[str, Any] = {
    "application/json": {"schema": {"$ref": "#/components/schemas/JobCreate"}},
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
}


async def checked_spec(spec: str, who: str | None, settings: Any, queue: Any) -> JobCreate:
    """The spec of a job or a batch, parsed, with the checks made before anything is stored: a
    ``callback_url`` needs a secret to sign with, and ``device: "gpu"`` a worker that offers a
    GPU (refused at once where this deployment's workers offer none)."""
    parsed = parse_spec(spec)
    if who is None and not settings.webhook_secret and parsed.callback_url:
        raise ProblemError(
            422,
            "spec.webhook_unsigned",
            "callback_url needs a signing secret: configure TESSERA_WEBHOOK_SECRET or API keys",
        )
    if parsed.device == Device.gpu:
        refused = await run_in_threadpool(gpu_refusal, queue)
        if refused is not None:
            raise ProblemError(
                422,
                "backend.unavailable",
                'device "gpu" was asked for, and no worker of this deployment offers a GPU '
                '(ask for "auto" or "cpu", or start a worker on a GPU host)',
                **refused,
            )
    return parsed


@router.post(
    "",
    status_code=202,
    response_model=JobPublic,
    responses={
        200: {
            "model": JobPublic,
            "description": "A repeated request (same `Idempotency-Key`, same body): the job the "
            "first one created, as it is now.",
        },
        400: _PROBLEM_RESPONSE,  # a malformed multipart body
        **_ERRORS,
    },
    summary="Submit a mesh and a pipeline",
    description="Three forms of body, told apart by `Content-Type`:\n\n"
    "- `multipart/form-data` (browsers, several files): the mesh file in `mesh`, the job spec "
    "(JSON, see `JobCreate`) in `spec`;\n"
    "- any other type, e.g. `application/octet-stream` (large files: the body streams straight "
    "in, with no form to parse): the mesh file's bytes as the whole body, the job spec in the "
    "`Tessera-Spec` header and the file's name in `filename` (optional: the format is "
    "recognised from the bytes);\n"
    "- `application/json`: the job spec alone, for a pipeline whose first step makes the mesh "
    "(e.g. `marching_cubes`).\n\n"
    "Answers 202 with the job and its URL; the same `Idempotency-Key` with the same body "
    "answers 200 with the same job.",
    openapi_extra={
        "x-spec-schema": {"$ref": "#/components/schemas/JobCreate"},
        "requestBody": {"content": _BODY_FORMS},
    },
)
async def create_job(
    request: Request,
    queue: QueueDep,
    store: StoreDep,
    settings: SettingsDep,
    base: BaseUrlDep,
    who: CallerDep,
    spec: Annotated[str, Form(description="The job spec as JSON (schema: JobCreate).")] = "{}",
    mesh: Annotated[
        list[UploadFile] | None,
        File(
            description="The mesh file (OBJ, PLY, STL, OFF, GLB, glTF in a zip, NPZ; or one of "
            "them in .zip/.gz). Several `mesh` parts are joined side by side, each face keeping "
            "its file's index in the `part` attribute: start the pipeline with `merge`. Not "
            "needed when the pipeline starts with a source step (e.g. `marching_cubes`), which "
            "makes the mesh."
        ),
    ] = None,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
    spec_header: Annotated[
        str | None,
        Header(
            alias="Tessera-Spec",
            max_length=65536,
            description="The job spec as JSON, when the body is the mesh file itself.",
        ),
    ] = None,
    filename: Annotated[
        str | None,
        Query(
            max_length=1000,
            description="The mesh file's name, when the body is the file itself (its extension "
            "must agree with the bytes; it also names the result).",
        ),
    ] = None,
) -> JSONResponse:
    if idempotency_key and who is not None:  # one key's Idempotency-Keys never meet another's
        idempotency_key = f"{who}:{idempotency_key}"
    form = body_form(request.headers.get("content-type"))
    upload_started = getattr(request.state, "started", None) or time.time()
    if form == "multipart":
        files: list[tuple[str, bytes]] = [(m.filename or "", await m.read()) for m in mesh or []]
    elif form == "json":
        spec, files = (await request.body()).decode("utf-8", "replace"), []
    else:
        if spec_header is None:
            raise ProblemError(
                422,
                "spec.missing",
                "a mesh sent as the request body needs its job spec in the Tessera-Spec header",
            )
        spec = spec_header
        data = await request.body()  # the pieces as they stream in, joined once
        files = [(filename or "", data)] if data else []
    upload_s = time.time() - upload_started
    await checked_spec(spec, who, settings, queue)
    upload_bytes = sum(len(b) for _, b in files)
    accepted = await run_in_threadpool(
        accept,
        queue=queue,
        store=store,
        spec_text=spec,
        files=files,
        idempotency_key=idempotency_key,
        extra={"base_url": base, **({"key_id": who} if who is not None else {})},
        upload_seconds=upload_s,
        max_expanded=settings.max_expanded_bytes,
        deadline_limit=settings.default_deadline_seconds,
        admit=lambda job_id: admit(request, who, job_id, upload_bytes),
    )
    rec = accepted.record
    if rec is None:
        rec = await run_in_threadpool(queue.get, accepted.job_id)
    if rec is None:  # expired between the two calls: vanishingly rare
        raise ProblemError(404, "job.not_found", "no such job", id=accepted.job_id)
    job = job_public(rec, base, time.time())
    return JSONResponse(
        job.model_dump(mode="json"),
        status_code=200 if accepted.replayed else 202,
        headers={"Location": job.url},
    )


@router.get(
    "",
    response_model=JobList,
    responses={s: _PROBLEM_RESPONSE for s in (401, 422, 429, 503)},
    summary="Jobs, newest first",
    description="The caller's jobs (an API key sees the jobs it submitted; an admin key, or "
    "anyone when keys are off, sees every job), newest first, a page at a time: pass the "
    "page's `next_cursor` as `cursor` for the next one. `state` (repeatable) keeps only jobs "
    "in those states.",
)
def list_my_jobs(
    request: Request,
    queue: QueueDep,
    base: BaseUrlDep,
    who: CallerDep,
    state: Annotated[
        list[JobState] | None, Query(description="Only jobs in these states (repeatable).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="Jobs per page.")] = 50,
    cursor: Annotated[
        str | None,
        Query(
            max_length=200,
            pattern=r"^-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?:[A-Za-z0-9]+$",
            description="A page's `next_cursor`.",
        ),
    ] = None,
) -> JobList:
    key_id = None if is_admin(request, who) else who
    try:
        page = list_jobs(
            queue,
            key_id=key_id,
            states={s.value for s in state} if state else None,
            limit=limit,
            cursor=cursor,
        )
    except ValueError as exc:
        raise ProblemError(422, "request.invalid", str(exc), field="cursor") from None
    data = [job_summary(rec, base) for rec in page.jobs]
    return JobList(data=data, count=len(data), next_cursor=page.next_cursor)


def body_form(content_type: str | None) -> str:
    """Which of the three bodies ``POST /v1/jobs`` got: ``multipart`` (or an urlencoded form,
    which FastAPI reads the same way), ``json`` (the spec alone) or ``file`` (anything else)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in ("multipart/form-data", "application/x-www-form-urlencoded"):
        return "multipart"
    if media == "application/json":
        return "json"
    return "file"


@router.get("/{job_id}", response_model=JobPublic, responses=_ERRORS, summary="A job's state")
async def get_job(
    job_id: str,
    request: Request,
    queue: QueueDep,
    base: BaseUrlDep,
    who: CallerDep,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description="Long poll: answer as soon as the job has ended, or after this many "
            "seconds with the job as it is then (0: at once).",
        ),
    ] = 0.0,
) -> JobPublic:
    rec = await run_in_threadpool(_record, queue, job_id, who)
    if wait > 0 and rec.get("state") not in TERMINAL:
        rec = await request.app.state.waiter.wait_for_end(job_id, wait)
        if rec is None:  # expired away while we waited
            raise ProblemError(404, "job.not_found", "no such job", id=job_id)
    return job_public(rec, base, time.time())


@router.get(
    "/{job_id}/result",
    responses={
        200: {
            "content": {"application/octet-stream": {}},
            "description": "The processed mesh file.",
        },
        **_ERRORS,
    },
    response_class=FileResponse,
    summary="Download the processed mesh",
)
def get_result(
    job_id: str, queue: QueueDep, store: StoreDep, settings: SettingsDep, who: CallerDep
) -> Response:
    rec = _finished(queue, job_id, who)
    return _file(store, rec["result"], job_id, settings.s3_presign_seconds)


@router.get(
    "/{job_id}/artifacts/{name}",
    responses={
        200: {
            "content": {"application/octet-stream": {}},
            "description": "A file the pipeline produced beside the mesh (a sparse matrix).",
        },
        **_ERRORS,
    },
    response_class=FileResponse,
    summary="Download an artifact (e.g. the Laplacian matrix)",
)
def get_artifact(
    job_id: str, name: str, queue: QueueDep, store: StoreDep, settings: SettingsDep, who: CallerDep
) -> Response:
    rec = _finished(queue, job_id, who)
    art = (rec.get("artifacts") or {}).get(name)
    if art is None:
        raise ProblemError(
            404,
            "artifact.not_found",
            "the job has no such artifact",
            id=job_id,
            name=name[:64],
            available=sorted(rec.get("artifacts") or {}),
        )
    return _file(store, art, job_id, settings.s3_presign_seconds)


def _finished(queue: Any, job_id: str, who: str | None) -> dict[str, Any]:
    rec = _record(queue, job_id, who)
    if _expired(rec):
        raise ProblemError(410, "job.expired", "the job's result has expired", id=job_id)
    if rec.get("state") != JobState.succeeded or not rec.get("result"):
        raise ProblemError(
            409, "job.not_ready", "the job has no result", id=job_id, state=rec.get("state")
        )
    return rec


def _expired(rec: dict[str, Any]) -> bool:
    """An ended job past its expiry (a job that has not ended has nothing to expire yet: its
    result's time counts from its end)."""
    return rec.get("state") in TERMINAL and time.time() > (rec.get("expires_at") or float("inf"))


def content_disposition(filename: str) -> str:
    """As Starlette's FileResponse writes it: plain when ASCII-safe, RFC 5987 otherwise."""
    quoted = quote(filename)
    if quoted == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename*=utf-8''{quoted}"


#: a byte-range set as RFC 9110 (section 14.1.2) writes it: "first-last", "first-" or "-suffix"
#: (the unit in any case, as RFC 9110 allows)
_RANGE_SET = re.compile(r"bytes=\s*(?:\d+-\d*|-\d+)(?:\s*,\s*(?:\d+-\d*|-\d+))*\s*", re.IGNORECASE)


class _RangedFile(FileResponse):
    """A file whose request's ``Range`` header is ignored (the whole file, 200) when it is not a
    valid byte-range set, as RFC 9110 asks of a server that does not understand it; Starlette
    would answer a plain-text 400. Valid ranges get 206 (or 416 when none can be satisfied).
    The file goes out in pieces of 4 MiB: Starlette's 64 KiB pieces capped a download at about a
    third of what the same server sends in large ones."""

    chunk_size = 4 << 20

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers, value = [], None
        for k, v in scope.get("headers") or []:
            if k.lower() == b"range":
                value = v
            else:
                headers.append((k, v))
        ranges = None if value is None else _byte_ranges(value.decode("latin-1"))
        if ranges is not None:
            size = self.stat_result.st_size  # given by _file
            if not any(_satisfiable(r, size) for r in ranges):  # none can be: 416
                response = problem(
                    416,
                    "range.not_satisfiable",
                    "no requested byte range starts inside the file",
                    {"size": size},
                    headers={"Content-Range": f"bytes */{size}"},
                )
                await response(scope, receive, send)
                return
            # the unit in lower case, as Starlette expects it
            headers.append((b"range", b"bytes=" + value.split(b"=", 1)[1]))
        await super().__call__({**scope, "headers": headers}, receive, send)


def _satisfiable(r: tuple[int | None, int | None], size: int) -> bool:
    first, last = r
    return (first is None and last is not None and last > 0 and size > 0) or (
        first is not None and first < size
    )


def _byte_ranges(value: str) -> list[tuple[int | None, int | None]] | None:
    """``(first byte, last byte or None)`` of each range of a valid byte-range set (a suffix range
    ``-n`` as ``(None, n)``), else None."""
    text = value.strip()
    if _RANGE_SET.fullmatch(text) is None:
        return None
    out: list[tuple[int | None, int | None]] = []
    for spec in text[len("bytes=") :].split(","):
        first, last = (p.strip() for p in spec.split("-"))
        if not first:
            out.append((None, int(last)))
            continue
        if last and int(last) < int(first):
            return None
        out.append((int(first), int(last) if last else None))
    return out


def _file(store: Any, blob: dict[str, Any], job_id: str, presign_seconds: int = 0) -> Response:
    """The blob as a file (local store), a redirect to a presigned URL, or a stream (S3)."""
    path = store.local_path(blob["key"])
    if path is not None:
        try:
            st = path.stat()  # once: the response uses it for its headers and ranges
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise ProblemError(
                410, "job.result_missing", "the result is no longer stored", id=job_id
            )
        return _RangedFile(
            path, media_type=blob["media_type"], filename=blob["filename"], stat_result=st
        )
    try:
        size = store.size(blob["key"])
    except BlobNotFound:
        raise ProblemError(
            410, "job.result_missing", "the result is no longer stored", id=job_id
        ) from None
    if presign_seconds > 0:
        url = store.presigned_url(
            blob["key"],
            expires=presign_seconds,
            filename=blob["filename"],
            media_type=blob["media_type"],
        )
        return RedirectResponse(url, status_code=307)
    body = store.open(blob["key"])
    return StreamingResponse(
        iter(lambda: body.read(1 << 20), b""),
        media_type=blob["media_type"],
        headers={
            "Content-Length": str(size),
            "Content-Disposition": content_disposition(blob["filename"]),
        },
        background=BackgroundTask(body.close),
    )


@router.delete(
    "/{job_id}",
    response_model=JobPublic,
    responses=_ERRORS,
    summary="Cancel a queued or running job",
)
def cancel_job(
    job_id: str, queue: QueueDep, store: StoreDep, base: BaseUrlDep, who: CallerDep
) -> JobPublic:
    if _expired(_record(queue, job_id, who)):
        raise ProblemError(410, "job.expired", "the job has expired", id=job_id)
    done = queue.cancel_job(job_id)
    outcome, previous = done.outcome, done.previous
    if outcome == JobState.cancelled:  # kept, so that it stays cancelled if Redis loses it
        save_outcome(queue, store, job_id, done.stored)
    if done.record is None:  # gone
        raise ProblemError(404, "job.not_found", "no such job", id=job_id)
    if outcome == "final" and previous != JobState.cancelled:
        raise ProblemError(
            409, "job.already_finished", "the job has already finished", id=job_id, state=previous
        )
    return job_public(done.record, base, time.time())
