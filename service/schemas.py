"""Request and response models. The job spec is :class:`workers.jobspec.JobSpec`, the model the
workers parse it back with, under its API name ``JobCreate``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workers.engine.ops import OpKind
from workers.jobspec import JobSpec
from workers.queue.jobs import TERMINAL, JobState


class JobCreate(JobSpec):
    """What to do with the uploaded mesh."""


class S3Prefix(BaseModel):
    """A place in S3, on the deployment's S3 blob store's service."""

    model_config = ConfigDict(extra="forbid")

    s3_prefix: str = Field(
        min_length=6,
        max_length=1024,
        description="`s3://bucket/some/prefix/`: the objects whose keys begin with it (the "
        "prefix is read as a folder: a `/` is added when missing).",
        examples=["s3://meshes/scans/2026/"],
    )


class BatchS3Places(BaseModel):
    """Where a batch's files are read from, and its results written to, in S3."""

    model_config = ConfigDict(extra="forbid")

    input: S3Prefix = Field(
        description="Every mesh file under this prefix (by extension: .obj, .ply, .off, .stl, "
        ".glb, .gltf, .npz; other objects are left out) is an item, at its path relative to "
        "the prefix. The workers read each from S3: nothing passes through the API."
    )
    output: S3Prefix | None = Field(
        None,
        description="Each item's result is also written under this prefix at the item's path "
        "(with the output format's extension), and `manifest.jsonl` once the batch has ended. "
        "Without it, the results are fetched as the result zip, as for any batch.",
    )


class BatchFromS3(BatchS3Places):
    """The JSON body of ``POST /v1/batches`` for a batch over an S3 prefix (on deployments
    whose blob store is S3; the prefixes a deployment allows are its setting
    ``batch_s3_prefixes``)."""

    spec: JobCreate = Field(description="The job spec, run on every item.")


class ResultPublic(BaseModel):
    url: str
    format: str
    bytes: int
    filename: str
    media_type: str
    dropped: dict[str, int] = Field(
        default_factory=dict,
        description="What the mesh carried that the result's format does not hold, with counts "
        "(texture coordinate sets, corner normals, materials, textures): empty when the file "
        "keeps it all (GLB keeps everything of these).",
    )


class ArtifactPublic(BaseModel):
    url: str
    format: str
    bytes: int
    filename: str
    media_type: str


class WebhookAttempt(BaseModel):
    at: float = Field(description="When the attempt started (unix seconds).")
    status: int | None = Field(None, description="The HTTP status answered, if any.")
    error: str | None = Field(None, description="Why no answer came (connection, timeout).")
    seconds: float | None = None


class WebhookPublic(BaseModel):
    delivered: bool = Field(description="A 2xx answer was received.")
    gave_up: bool = Field(False, description="Every allowed attempt failed.")
    next_attempt_at: float | None = Field(None, description="When the next attempt is due.")
    attempts: list[WebhookAttempt] = Field(default_factory=list)


class ErrorPublic(BaseModel):
    code: str
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)


class InputPublic(BaseModel):
    name: str
    bytes: int
    vertices: int
    faces: int
    parts: list[str] = Field(default_factory=list, description="File names, in upload order.")
    dropped: dict[str, int] = Field(
        default_factory=dict,
        description="What the file held that the mesh read from it does not carry, with counts "
        "(texture coordinates, materials, textures, animations, skins, per-corner normals, "
        "other files in an archive): empty when nothing was left out.",
    )


class JobPublic(BaseModel):
    id: str
    url: str
    state: JobState
    progress: float = Field(description="0 to 1; monotone within an attempt.")
    stage: str | None = Field(
        None,
        description="What runs now: the operation's name, with detail after a colon for the "
        "long ones (e.g. 'isotropic_remesh: iteration 2/5, collapse, round 3').",
    )
    attempts: int = Field(
        description="Runs counted against max_attempts so far (a run handed back by a worker "
        "that was stopped does not count)."
    )
    max_attempts: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime | None = None
    worker: str | None = None
    timings: dict[str, float] = Field(
        default_factory=dict,
        description="Seconds per stage: upload, parse, store_input (API); queued; load, "
        "transfer (to the GPU), stats_before, <i>:<op>, stats_after, serialize, store, run "
        "(worker).",
    )
    stats_before: dict[str, Any] | None = None
    stats_after: dict[str, Any] | None = None
    reports: list[dict[str, Any]] | None = None
    backend: str | None = None
    device: dict[str, str] | None = Field(
        None,
        description="Where the job ran and why: requested (the spec's device), backend (numpy "
        "or cupy) and reason (auto runs small meshes on the CPU, where GPU launches would cost "
        "more than the work).",
    )
    patching: list[dict[str, Any]] | None = Field(
        None,
        description="Each patching the GPU steps built (RXMesh patches, cached for the later "
        "steps): the step, patch count, faces per patch (min, mean, max), ribbon overhead, "
        "Lloyd iterations, seconds.",
    )
    error: ErrorPublic | None = None
    input: InputPublic | None = None
    result: ResultPublic | None = None
    artifacts: dict[str, ArtifactPublic] = Field(
        default_factory=dict, description="Files beside the mesh (sparse matrices), by name."
    )
    spec: dict[str, Any]
    webhook: WebhookPublic | None = Field(
        None, description="Deliveries of the webhook (with a callback_url, once the job ended)."
    )


def counted_attempts(rec: dict[str, Any]) -> int:
    """Runs that count against ``max_attempts``: the attempt number (the fencing token, which
    every run raises) less the runs handed back at no cost (``releases``)."""
    return max(int(rec.get("attempt") or 0) - int(rec.get("releases") or 0), 0)


def _dt(x: float | None) -> datetime | None:
    return datetime.fromtimestamp(x, tz=timezone.utc) if x else None


def job_public(rec: dict[str, Any], base_url: str, now: float) -> JobPublic:
    state = JobState(rec.get("state") or JobState.queued)
    expired = bool(rec.get("expires_at") and now > rec["expires_at"])
    if expired and state in TERMINAL:
        state = JobState.expired
    timings = dict(rec.get("timings") or {})
    if rec.get("started_at") and rec.get("created_at"):
        timings["queued"] = max(rec["started_at"] - rec["created_at"], 0.0)
    url = f"{base_url}/v1/jobs/{rec['id']}"
    result = None
    if state is JobState.succeeded and rec.get("result"):
        r = rec["result"]
        result = ResultPublic(
            url=f"{url}/result",
            format=r["format"],
            bytes=r["bytes"],
            filename=r["filename"],
            media_type=r["media_type"],
            dropped=r.get("dropped") or {},
        )
    artifacts = {}
    if state is JobState.succeeded:
        for name, a in (rec.get("artifacts") or {}).items():
            artifacts[name] = ArtifactPublic(
                url=f"{url}/artifacts/{name}",
                format=a["format"],
                bytes=a["bytes"],
                filename=a["filename"],
                media_type=a["media_type"],
            )
    return JobPublic(
        id=rec["id"],
        url=url,
        state=state,
        progress=float(rec.get("progress") or 0.0),
        stage=rec.get("stage") or None,
        attempts=counted_attempts(rec),
        max_attempts=int(rec.get("max_attempts") or 1),
        created_at=_dt(rec.get("created_at")) or datetime.now(timezone.utc),
        started_at=_dt(rec.get("started_at")),
        finished_at=_dt(rec.get("finished_at")),
        expires_at=_dt(rec.get("expires_at")),
        worker=rec.get("owner") or None,
        timings=timings,
        stats_before=rec.get("stats_before"),
        stats_after=rec.get("stats_after"),
        reports=rec.get("reports"),
        backend=rec.get("backend") or None,
        device=rec.get("device") or None,
        patching=rec.get("patching") or None,
        error=ErrorPublic(**rec["error"]) if rec.get("error") else None,
        input=InputPublic(**rec["input"]) if rec.get("input") else None,
        result=result,
        artifacts=artifacts,
        spec=rec.get("spec") or {},
        webhook=WebhookPublic(**rec["webhook"]) if rec.get("webhook") else None,
    )


class OperationPublic(BaseModel):
    name: str
    summary: str = Field(description="One line: what the operation does.")
    description: str = Field(
        description="The full text: what it does, the method, accuracy and limits (plain text "
        "with ``code`` spans, paragraphs separated by blank lines)."
    )
    kind: OpKind
    backends: list[str]
    params: dict[str, Any] = Field(description="JSON Schema of the operation's parameters.")
    outputs: dict[str, dict[str, str]]
    report: str
    artifacts: dict[str, str] = Field(
        default_factory=dict,
        description="Files the operation makes beside the mesh (e.g. sparse matrices), by name, "
        "with what each holds; written in the output's matrix_format.",
    )


class OperationsPublic(BaseModel):
    data: list[OperationPublic]
    count: int


class BatchCounts(BaseModel):
    total: int = Field(description="Files in the batch.")
    queued: int
    running: int = Field(description="Items of chunks being run that have not ended yet.")
    succeeded: int
    failed: int
    cancelled: int


class BatchItemPublic(BaseModel):
    index: int = Field(description="The item's place in the upload (archive order).")
    path: str = Field(description="The file's relative path in the upload.")
    output: str = Field(description="Its result's path in the result archive.")
    bytes: int
    state: str = Field(description="queued, running, succeeded, failed or cancelled.")
    error: ErrorPublic | None = None
    input: dict[str, int] | None = Field(None, description="Vertices and faces read.")
    stats: dict[str, Any] | None = Field(None, description="Statistics of the result mesh.")
    timings: dict[str, float] | None = None
    backend: str | None = None


class BatchPublic(BaseModel):
    id: str
    url: str
    state: str = Field(
        description="queued, running, succeeded (every item ended: see counts for the items "
        "that failed), cancelled, or expired."
    )
    progress: float = Field(description="Items ended / items (0 to 1).")
    counts: BatchCounts
    created_at: datetime
    expires_at: datetime | None = None
    spec: dict[str, Any] = Field(default_factory=dict)
    result: str | None = Field(
        None,
        description="URL of the result archive (every output and manifest.jsonl), once "
        "the batch has ended.",
    )
    items: list[BatchItemPublic] | None = Field(
        None, description="Every item's state and outcome (with ?items=true)."
    )
    webhook: WebhookPublic | None = Field(
        None, description="Deliveries of the batch's webhook, once it has ended (callback_url)."
    )


def batch_public(view: Any, base_url: str, now: float) -> BatchPublic:
    """A :class:`~workers.queue.batches.BatchView` as the API shows it."""
    rec = view.record
    url = f"{base_url}/v1/batches/{rec['id']}"
    state = view.state
    if view.finished and view.expires_at and now > view.expires_at:
        state = "expired"
    items = None
    if view.items is not None:
        items = [
            BatchItemPublic(
                index=i["index"],
                path=i["path"],
                output=i["output"],
                bytes=i["bytes"],
                state=i["state"],
                error=ErrorPublic(**i["error"]) if i.get("error") else None,
                input=i.get("input"),
                stats=i.get("stats"),
                timings=i.get("timings"),
                backend=i.get("backend"),
            )
            for i in view.items
        ]
    return BatchPublic(
        id=rec["id"],
        url=url,
        state=state,
        progress=view.progress,
        counts=BatchCounts(**view.counts),
        created_at=_dt(rec.get("created_at")) or datetime.now(timezone.utc),
        expires_at=_dt(view.expires_at),
        spec=rec.get("spec") or {},
        result=f"{url}/result" if state in ("succeeded", "cancelled") else None,
        items=items,
        webhook=WebhookPublic(**rec["webhook"]) if rec.get("webhook") else None,
    )


class JobSummary(BaseModel):
    """A job in a list: its state and where it is, without statistics and reports (the job's
    own URL has everything)."""

    id: str
    url: str
    state: JobState
    progress: float
    stage: str | None = None
    attempts: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    worker: str | None = None
    error: ErrorPublic | None = None
    input: InputPublic | None = None


class JobList(BaseModel):
    data: list[JobSummary]
    count: int = Field(description="Jobs on this page.")
    next_cursor: str | None = Field(
        None,
        description="Pass as `cursor` for the next page; null on the last. A page may hold "
        "fewer than `limit` jobs while more follow (a state filter skipped many).",
    )


def job_summary(rec: dict[str, Any], base_url: str) -> JobSummary:
    """A listed record (:func:`workers.queue.listing.list_jobs`: its state already public)."""
    return JobSummary(
        id=rec["id"],
        url=f"{base_url}/v1/jobs/{rec['id']}",
        state=JobState(rec["state"]),
        progress=float(rec.get("progress") or 0.0),
        stage=rec.get("stage") or None,
        attempts=counted_attempts(rec),
        created_at=_dt(rec.get("created_at")) or datetime.now(timezone.utc),
        started_at=_dt(rec.get("started_at")),
        finished_at=_dt(rec.get("finished_at")),
        worker=rec.get("owner") or None,
        error=ErrorPublic(**rec["error"]) if rec.get("error") else None,
        input=InputPublic(**rec["input"]) if rec.get("input") else None,
    )


class GpuPublic(BaseModel):
    name: str
    memory_bytes: int


class WorkerPublic(BaseModel):
    """A live worker (a supervisor and its compute child), as it last registered."""

    name: str
    version: str | None = None
    state: str = Field(description="running, or stopping (finishing its job, taking no more).")
    backends: list[str] | None = Field(
        None,
        description="What it runs: cpu, and gpu when it has one; null while its compute child "
        "starts and has not said yet.",
    )
    gpu: GpuPublic | None = None
    children: int = Field(1, description="Compute processes it drives (jobs it runs at once).")
    started_at: datetime | None = None
    seen_at: datetime = Field(description="Its last heartbeat (every 2 s while it lives).")
    busy: bool
    jobs_done: int = 0
    jobs: list[str] | None = Field(
        None, description="The jobs it runs now (admin keys only, or when keys are off)."
    )
    host: str | None = Field(None, description="Admin keys only, or when keys are off.")
    pid: int | None = Field(None, description="Admin keys only, or when keys are off.")


class WorkersPublic(BaseModel):
    data: list[WorkerPublic]
    count: int
    gpu: bool = Field(description="Whether a live worker offers a GPU.")


def worker_public(rec: dict[str, Any], admin: bool) -> WorkerPublic:
    return WorkerPublic(
        name=str(rec.get("name")),
        version=rec.get("version"),
        state=str(rec.get("state") or "running"),
        backends=rec.get("backends"),
        gpu=GpuPublic(**rec["gpu"]) if rec.get("gpu") else None,
        children=int(rec.get("children") or 1),
        started_at=_dt(rec.get("started_at")),
        seen_at=_dt(rec.get("seen")) or datetime.now(timezone.utc),
        busy=bool(rec.get("busy")),
        jobs_done=int(rec.get("jobs_done") or 0),
        jobs=list(rec.get("jobs") or []) if admin else None,
        host=rec.get("host") if admin else None,
        pid=rec.get("pid") if admin else None,
    )
