"""``/v1/jobs``: submit, inspect, download, cancel."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Header, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse

from ..deps import BaseUrlDep, QueueDep, SettingsDep, StoreDep
from ..errors import PROBLEM, ProblemError
from ..schemas import JobPublic, job_public
from ..submission import accept

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_PROBLEM_RESPONSE: dict[str, Any] = {"content": {PROBLEM: {}}, "description": "Problem details"}
_ERRORS = {s: _PROBLEM_RESPONSE for s in (404, 409, 410, 413, 422, 503)}


def _record(queue: Any, job_id: str) -> dict[str, Any]:
    if not job_id.isalnum() or len(job_id) > 64:
        raise ProblemError(404, "job.not_found", "no such job", id=job_id[:64])
    rec = queue.get(job_id)
    if rec is None:
        raise ProblemError(404, "job.not_found", "no such job", id=job_id)
    return rec  # type: ignore[no-any-return]


@router.post(
    "",
    status_code=202,
    response_model=JobPublic,
    responses=_ERRORS,
    summary="Submit a mesh and a pipeline",
    description="Multipart form: the mesh file in `mesh`, the job spec (JSON, see `JobCreate`) in "
    "`spec`. Answers 202 with the job and its URL; the same `Idempotency-Key` with the same body "
    "answers with the same job.",
    openapi_extra={"x-spec-schema": {"$ref": "#/components/schemas/JobCreate"}},
)
async def create_job(
    request: Request,
    queue: QueueDep,
    store: StoreDep,
    settings: SettingsDep,
    base: BaseUrlDep,
    mesh: Annotated[
        UploadFile,
        File(
            description="The mesh file (OBJ, PLY, STL, OFF, GLB, glTF "
            "in a zip, NPZ; or one of them in .zip/.gz)."
        ),
    ],
    spec: Annotated[str, Form(description="The job spec as JSON (schema: JobCreate).")] = "{}",
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
) -> JSONResponse:
    upload_s = time.time() - request.state.started if hasattr(request.state, "started") else 0.0
    data = await mesh.read()
    accepted = await run_in_threadpool(
        accept,
        queue=queue,
        store=store,
        spec_text=spec,
        data=data,
        filename=mesh.filename or "",
        idempotency_key=idempotency_key,
        upload_seconds=upload_s,
        max_expanded=settings.max_expanded_bytes,
        deadline_limit=settings.default_deadline_seconds,
    )
    rec = await run_in_threadpool(queue.get, accepted.job_id)
    if rec is None:  # expired between the two calls: vanishingly rare
        raise ProblemError(404, "job.not_found", "no such job", id=accepted.job_id)
    job = job_public(rec, base, time.time())
    return JSONResponse(
        job.model_dump(mode="json"),
        status_code=200 if accepted.replayed else 202,
        headers={"Location": job.url},
    )


@router.get("/{job_id}", response_model=JobPublic, responses=_ERRORS, summary="A job's state")
def get_job(job_id: str, queue: QueueDep, base: BaseUrlDep) -> JobPublic:
    return job_public(_record(queue, job_id), base, time.time())


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
def get_result(job_id: str, queue: QueueDep, store: StoreDep) -> FileResponse:
    rec = _record(queue, job_id)
    if rec.get("expires_at") and time.time() > rec["expires_at"]:
        raise ProblemError(410, "job.expired", "the job's result has expired", id=job_id)
    if rec.get("state") != "succeeded" or not rec.get("result"):
        raise ProblemError(
            409, "job.not_ready", "the job has no result", id=job_id, state=rec.get("state")
        )
    r = rec["result"]
    path = store.local_path(r["key"])
    if path is None or not path.is_file():
        raise ProblemError(410, "job.result_missing", "the result is no longer stored", id=job_id)
    return FileResponse(path, media_type=r["media_type"], filename=r["filename"])


@router.delete(
    "/{job_id}",
    response_model=JobPublic,
    responses=_ERRORS,
    summary="Cancel a queued or running job",
)
def cancel_job(job_id: str, queue: QueueDep, base: BaseUrlDep) -> JobPublic:
    _record(queue, job_id)
    outcome, previous = queue.cancel(job_id)
    if outcome == "gone":
        raise ProblemError(404, "job.not_found", "no such job", id=job_id)
    if outcome == "final" and previous != "cancelled":
        raise ProblemError(
            409, "job.already_finished", "the job has already finished", id=job_id, state=previous
        )
    return job_public(_record(queue, job_id), base, time.time())
