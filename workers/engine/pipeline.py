"""Running a pipeline of operations on a mesh, with timings and progress."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from . import backend as _backend
from . import corners as _corners
from . import progress as _progress
from .backend import sync
from .errors import MeshError, SpecError
from .mesh import TriMesh
from .ops import OPS, Operation, OpKind, OpParams
from .patches import patches_built

log = logging.getLogger(__name__)

Progress = _progress.Progress


@dataclass(frozen=True)
class Step:
    op: Operation
    params: OpParams

    def label(self) -> str:
        args = ",".join(f"{k}={v}" for k, v in self.params.model_dump().items())
        return f"{self.op.name}({args})"


def parse_step(raw: Any) -> Step:
    """A step from ``"name"``, ``("name", {params})``, ``{"op": "name", **params}`` or a pydantic
    step model (a parsed :class:`Step` is taken as it is)."""
    if isinstance(raw, Step):
        return raw
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if isinstance(raw, str):
        name, params = raw, {}
    elif (
        isinstance(raw, tuple)
        and len(raw) == 2
        and isinstance(raw[0], str)
        and isinstance(raw[1], Mapping | None)
    ):
        name, params = raw[0], dict(raw[1] or {})
    elif isinstance(raw, dict):
        params = dict(raw)
        name = params.pop("op", None)
        if not isinstance(name, str):
            raise SpecError('pipeline step needs an "op" name', code="spec.missing_op")
    else:
        raise SpecError(
            "pipeline step must be a name, (name, params) or a mapping",
            code="spec.bad_step",
            step=repr(raw)[:100],
        )
    op = OPS.get(name)
    return Step(op, op.parse_params(params))


def parse_pipeline(steps: Iterable[Any]) -> list[Step]:
    """The steps, checked: a source operation (one that makes the mesh, e.g. marching_cubes)
    may only be the first step. A lone name is a pipeline of that one step."""
    if isinstance(steps, str):
        steps = [steps]
    elif not isinstance(steps, Iterable) or isinstance(steps, Mapping):
        raise SpecError(
            "a pipeline is a list of steps", code="spec.bad_step", step=repr(steps)[:100]
        )
    out = [parse_step(s) for s in steps]
    for i, st in enumerate(out):
        if i > 0 and st.op.kind is OpKind.source:
            raise SpecError(
                f'op "{st.op.name}" makes a mesh from its parameters: it must be the first step',
                code="spec.source_not_first",
                op=st.op.name,
                step=i,
            )
    return out


def starts_with_source(steps: list[Step]) -> bool:
    """Whether the (parsed) pipeline's first step makes the mesh (then no input mesh is
    needed)."""
    return bool(steps) and steps[0].op.kind is OpKind.source


@dataclass
class StepReport:
    op: str
    params: dict[str, Any]
    seconds: float
    backend: str
    report: dict[str, Any]
    #: faces before and after the step
    faces_in: int = 0
    faces_out: int = 0


@dataclass
class PipelineResult:
    mesh: TriMesh
    steps: list[StepReport] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    backend: str = "numpy"
    #: artifacts of all steps by name (a later step's artifact replaces an earlier one's)
    artifacts: dict[str, Any] = field(default_factory=dict)
    #: statistics of each patching the steps built (patches.Patches.summary, with the step)
    patching: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reports(self) -> dict[str, dict[str, Any]]:
        """Report of each step keyed by op name (``name#2`` for a repeated op)."""
        out: dict[str, dict[str, Any]] = {}
        for s in self.steps:
            key = s.op
            i = 2
            while key in out:
                key = f"{s.op}#{i}"
                i += 1
            out[key] = s.report
        return out


def run_pipeline(
    mesh: TriMesh | None,
    pipeline: Iterable[Any],
    *,
    device: str = "auto",
    progress: Progress | None = None,
    on_step: Callable[[int, int, StepReport], None] | None = None,
) -> PipelineResult:
    """Run the steps in order on the backend ``device`` resolves to. The mesh moves to the GPU once
    (timed as ``transfer``) and stays there; each step is timed as ``<index>:<op>``.

    When the first step is a source operation (``OpKind.source``, e.g. ``marching_cubes``) the
    input ``mesh`` may be None or faceless (an uploaded volume): the source step gets it (None
    becomes an empty mesh on the chosen backend) and makes the mesh the later steps work on.

    ``progress(fraction, stage)`` hears ``i / n`` with the op's name as step ``i`` of ``n``
    starts, what the step reports of itself in between (``workers.engine.progress``: mapped
    into ``[i / n, (i + 1) / n]``, stage ``"op: detail"``, at most every ``INTERVAL`` seconds)
    and ``(1.0, "done")`` at the end; the fractions never go backwards. ``on_step(i, n, report)``
    hears each step as it ends (the worker's compute child logs it)."""
    steps = parse_pipeline(pipeline)
    be = _backend.resolve(device)
    if steps and steps[0].op.kind is OpKind.source and mesh is None:
        xp = _backend.xp_for(be)
        mesh = TriMesh(xp.zeros((0, 3), dtype=xp.float32), xp.zeros((0, 3), dtype=xp.int32))
    elif mesh is None:
        raise MeshError("no input mesh", code="mesh.empty")
    result = PipelineResult(mesh=mesh, backend=be)
    if mesh.backend != be:
        t0 = time.perf_counter()
        mesh = mesh.to(be)
        sync(mesh)
        result.timings["transfer"] = time.perf_counter() - t0
    n = max(len(steps), 1)
    if steps and mesh.n_faces == 0 and steps[0].op.kind is not OpKind.source:
        raise MeshError("mesh has no faces", code="mesh.no_faces", n_vertices=mesh.n_vertices)
    for i, step in enumerate(steps):
        if progress:
            progress(i / n, step.op.name)
        impl_backend = be if (be == "numpy" or step.op.cupy is not None) else "numpy"
        if impl_backend != mesh.backend:
            mesh = mesh.to(impl_backend)
        faces_in = mesh.n_faces
        t0 = time.perf_counter()
        with _progress.step(progress, i / n, (i + 1) / n, step.op.name):
            if _corners.carries(mesh) and step.op.kind is not OpKind.source:
                out = _corners.run_carrying(step.op, impl_backend, mesh, step.params)
            else:
                out = step.op.implementation(impl_backend)(mesh, step.params)
        sync(out.mesh)
        dt = time.perf_counter() - t0
        log.debug("%.3fs %s", dt, step.label())
        mesh = out.mesh
        if mesh.n_faces == 0:  # nothing later could use it, and an empty file helps nobody
            raise MeshError(
                "the pipeline left the mesh with no faces",
                code="mesh.no_faces_left",
                op=step.op.name,
                step=i,
            )
        result.artifacts.update(out.artifacts)
        result.timings[f"{i}:{step.op.name}"] = dt
        built = patches_built(mesh)
        if built is not None and all(p["_id"] != id(built) for p in result.patching):
            result.patching.append({"_id": id(built), "step": i, **built.summary()})
        done = StepReport(
            step.op.name,
            step.params.model_dump(),
            dt,
            impl_backend,
            out.report,
            faces_in,
            mesh.n_faces,
        )
        result.steps.append(done)
        if on_step is not None:
            on_step(i, len(steps), done)
    if progress:
        progress(1.0, "done")
    result.mesh = mesh
    for p in result.patching:
        del p["_id"]
    return result
