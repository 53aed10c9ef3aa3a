"""The job spec: what a job does with its mesh, and the one place its defaults are stated.

The API validates a submission with it (as ``JobCreate``, its name in the OpenAPI document) and
stores it as a JSON object; the supervisor and the compute child parse that object back with
:meth:`JobSpec.from_stored`. Its pipeline is a discriminated union over ``op`` built from the
operation registry, which imports no CuPy: the supervisor may import this module.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .engine.artifacts import MATRIX_FORMATS
from .engine.errors import SpecError
from .engine.io import OUTPUT_FORMATS
from .engine.ops import OPS

_STEP_MODELS = tuple(OPS.step_models())
Step = Annotated[Union[_STEP_MODELS], Field(discriminator="op")]  # type: ignore[valid-type]  # noqa: UP007

OutputFormat = Literal[OUTPUT_FORMATS]  # type: ignore[valid-type]
MatrixFormat = Literal[MATRIX_FORMATS]  # type: ignore[valid-type]
Device = Literal["auto", "gpu", "cpu"]


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
    compression: Literal["none", "draco"] = Field(
        "none",
        description="draco: a GLB's triangles Draco-compressed (KHR_draco_mesh_compression; "
        "positions quantized to 14 bits, texture coordinates to 12, normals to 10; materials "
        "and textures as they are), often a tenth of the size; glb output only.",
    )
    matrix_format: MatrixFormat = Field(
        "npz",
        description="File format of matrix artifacts (e.g. from laplacian_matrix): SciPy "
        "sparse NPZ or Matrix Market.",
    )


class JobSpec(BaseModel):
    """What to do with the uploaded mesh."""

    model_config = ConfigDict(extra="forbid")

    pipeline: list[Step] = Field(  # type: ignore[valid-type]
        default_factory=list,
        max_length=100,
        description="Operations applied in order. Empty: the mesh is only converted.",
    )
    output: OutputSpec = Field(default_factory=OutputSpec)  # type: ignore[arg-type]
    device: Device = Field(
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

    @classmethod
    def from_stored(cls, stored: dict[str, Any] | None) -> JobSpec:
        """The spec of a job record or manifest (what :meth:`model_dump` wrote there); a spec
        that no longer validates (stored by another version) is a :class:`SpecError`, a failure
        of the job that no retry can mend."""
        try:
            return cls.model_validate(stored or {})
        except ValidationError as exc:
            raise spec_error(exc) from None

    def deadline(self, default: float) -> float:
        """Seconds the job may run: its own deadline, else the service's ``default``."""
        return float(self.deadline_seconds or default)


def spec_error(exc: ValidationError) -> SpecError:
    """A job spec's validation errors as the ``spec.invalid`` error, each with where and why."""
    errors = [
        {"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_context=False)
    ]
    return SpecError("the job spec is invalid", code="spec.invalid", errors=errors)
