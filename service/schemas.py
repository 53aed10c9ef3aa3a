"""Request and response models. The job spec's pipeline is a discriminated union over ``op`` built
from the operation registry, so every operation's parameters are documented under one route."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workers.engine.artifacts import MATRIX_FORMATS
from workers.engine.io import OUTPUT_FORMATS
from workers.engine.ops import OPS

_STEP_MODELS = tuple(OPS.step_models())
Step = Annotated[Union[_STEP_MODELS], Field(discriminator="op")]  # type: ignore[valid-type]  # noqa: UP007

OutputFormat = Literal[OUTPUT_FORMATS]  # type: ignore[valid-type]
MatrixFormat = Literal[MATRIX_FORMATS]  # type: ignore[valid-type]


class OutputSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: OutputFormat = Field("ply", description="File format of the result.")
    attributes: list[Annotated[str, Field(max_length=64)]] | None = Field(
        None,
        max_length=64,
        description="Attributes to write into the result; all of them when omitted. Each must be "
        "produced by the pipeline (or present in the input) and fit the format.",
    )
    polygons: bool = Field(
        True,
        description="Write the quads of Catmull-Clark subdivision (face attribute quad_id) and "
        "the polygons of dual_mesh (polygon_id) as polygons in OBJ, PLY and OFF; the triangles "
        "that only triangulate a polygon are merged and a dual polygon's centre vertex is left "
        "out. false: write the triangles the engine holds, as STL, GLB and NPZ always do. A "
        "mesh where some group is not one simple polygon is written as triangles.",
    )
    matrix_format: MatrixFormat = Field(
        "npz",
        description="File format of matrix artifacts (e.g. from laplacian_matrix): SciPy "
        "sparse NPZ or Matrix Market.",
    )


class JobCreate(BaseModel):
    """What to do with the uploaded mesh."""

    model_config = ConfigDict(extra="forbid")

    pipeline: list[Step] = Field(  # type: ignore[valid-type]
        default_factory=list,
        max_length=100,
        description="Operations applied in order. Empty: the mesh is only converted.",
    )
    output: OutputSpec = Field(default_factory=OutputSpec)  # type: ignore[arg-type]
    device: Literal["auto", "gpu", "cpu"] = Field(
        "auto", description="Where to run: a GPU when one is available (auto), or insist on one."
    )
    deadline_seconds: int | None = Field(
        None, ge=1, le=24 * 3600, description="Run time allowed before the job fails as timed out."
    )
    callback_url: str | None = Field(
        None,
        max_length=2000,
        description="An http(s) URL that gets a signed POST (the webhook) when the job ends: "
        "body {type, id, state, error, finished_at, links}, header Tessera-Signature "
        "t=<unix seconds>,v1=<HMAC-SHA256 hex of '<t>.<body>'>. Retried with backoff until a "
        "2xx answer; every attempt is listed in the job's `webhook`.",
    )

    @field_validator("callback_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            parts = urlsplit(v)
            parts.port  # noqa: B018  (raises on a malformed port)
        except ValueError:
            raise ValueError("callback_url is not a valid URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("callback_url must be an http or https URL with a host")
        return v


class ResultPublic(BaseModel):
    url: str
    format: str
    bytes: int
    filename: str
    media_type: str


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


class JobPublic(BaseModel):
    id: str
    url: str
    state: Literal["queued", "running", "succeeded", "failed", "cancelled", "expired"]
    progress: float = Field(description="0 to 1; monotone within an attempt.")
    stage: str | None = Field(
        None,
        description="What runs now: the operation's name, with detail after a colon for the "
        "long ones (e.g. 'isotropic_remesh: iteration 2/5, collapse, round 3').",
    )
    attempts: int = Field(description="Runs started so far.")
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


def _dt(x: float | None) -> datetime | None:
    return datetime.fromtimestamp(x, tz=timezone.utc) if x else None


def job_public(rec: dict[str, Any], base_url: str, now: float) -> JobPublic:
    state = rec.get("state", "queued")
    expired = bool(rec.get("expires_at") and now > rec["expires_at"])
    if expired and state in ("succeeded", "failed", "cancelled"):
        state = "expired"
    timings = dict(rec.get("timings") or {})
    if rec.get("started_at") and rec.get("created_at"):
        timings["queued"] = max(rec["started_at"] - rec["created_at"], 0.0)
    url = f"{base_url}/v1/jobs/{rec['id']}"
    result = None
    if state == "succeeded" and rec.get("result"):
        r = rec["result"]
        result = ResultPublic(
            url=f"{url}/result",
            format=r["format"],
            bytes=r["bytes"],
            filename=r["filename"],
            media_type=r["media_type"],
        )
    artifacts = {}
    if state == "succeeded":
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
        attempts=int(rec.get("attempt") or 0),
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
    summary: str
    description: str
    kind: str
    backends: list[str]
    params: dict[str, Any] = Field(description="JSON Schema of the operation's parameters.")
    outputs: dict[str, dict[str, str]]
    report: str


class OperationsPublic(BaseModel):
    data: list[OperationPublic]
    count: int
