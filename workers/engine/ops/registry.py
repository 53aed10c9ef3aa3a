"""How an operation is declared once, and the registry everything else is derived from.

An :class:`Operation` names the op, its typed parameters (a pydantic model with bounds and a
description on every field), what it produces, and its implementations per backend. The API's job
schema, the ``/v1/operations`` catalogue, the OpenAPI document, the CLI help and the worker's
dispatch table are all built from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..errors import OpParamsError, SpecError
from ..mesh import TriMesh


class OpParams(BaseModel):
    """Base of every operation's parameter model: unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OpKind(str, Enum):
    reindex = "reindex"  # changes the vertex/face set without changing the surface
    static = "static"  # connectivity kept; attributes or positions computed
    report = "report"  # only measures
    remesh = "remesh"  # a new surface: new vertices and faces (subdivision, dual, coarsening)
    source = "source"  # makes the mesh from nothing but its parameters: must be the first step


class Element(str, Enum):
    vertex = "vertex"
    face = "face"


@dataclass(frozen=True)
class Output:
    """An attribute an operation attaches to the mesh."""

    element: Element
    shape: str  # e.g. "(n_vertices, 3)"
    dtype: str
    description: str


@dataclass
class OpResult:
    """What an implementation returns: the mesh after the op, a JSON-able report, and artifacts
    that are not per-element attributes (sparse matrices), written beside the mesh."""

    mesh: TriMesh
    report: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)


Impl = Callable[[TriMesh, Any], OpResult]
#: the attributes on the mesh after a step (name -> "vertex" | "face"), from its parameters and
#: the attributes before it
AttributeFlow = Callable[[Any, dict[str, str]], dict[str, str]]


@dataclass(frozen=True)
class Operation:
    name: str
    summary: str
    kind: OpKind
    params: type[OpParams]
    numpy: Impl
    cupy: Impl | None = None
    outputs: dict[str, Output] = field(default_factory=dict)
    reports: str = ""  # what the report holds, in words
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> description
    #: raises OpParamsError for parameters that contradict each other (checked when the step is
    #: parsed, so the API refuses such a job before queueing it)
    check: Callable[[Any], Any] | None = None
    #: how the step changes which attributes the mesh has (see :meth:`attributes_after`); by
    #: default it keeps them all and adds its ``outputs``
    attribute_flow: AttributeFlow | None = None

    @property
    def description(self) -> str:
        return (self.numpy.__doc__ or self.summary).strip()

    def parse_params(self, raw: dict[str, Any]) -> OpParams:
        try:
            params = self.params.model_validate(raw)
        except ValidationError as exc:
            raise OpParamsError(
                "invalid parameters",
                code="op.params_invalid",
                op=self.name,
                errors=_errors(exc),
            ) from None
        if self.check is not None:
            self.check(params)
        return params

    def attributes_after(self, params: OpParams, before: dict[str, str]) -> dict[str, str]:
        """The attributes (name -> element) on the mesh after this step with ``params``, given
        those before it: what the API checks a job's requested output against."""
        if self.attribute_flow is not None:
            return self.attribute_flow(params, dict(before))
        after = {} if self.kind is OpKind.source else dict(before)
        after.update({k: o.element.value for k, o in self.outputs.items()})
        return after

    def implementation(self, backend: str) -> Impl:
        if backend == "cupy" and self.cupy is not None:
            return self.cupy
        return self.numpy

    def catalogue_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "description": self.description,
            "kind": self.kind.value,
            "backends": ["cpu"] + (["gpu"] if self.cupy is not None else []),
            "params": self.params.model_json_schema(),
            "outputs": {
                k: {
                    "element": o.element.value,
                    "shape": o.shape,
                    "dtype": o.dtype,
                    "description": o.description,
                }
                for k, o in self.outputs.items()
            },
            "report": self.reports,
            "artifacts": self.artifacts,
        }


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_context=False)
    ]


class Registry:
    """The explicit, ordered set of operations."""

    def __init__(self, ops: Iterable[Operation]) -> None:
        self._ops: dict[str, Operation] = {}
        for op in ops:
            if op.name in self._ops:
                raise ValueError(f"operation {op.name!r} declared twice")
            self._ops[op.name] = op

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops.values())

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __len__(self) -> int:
        return len(self._ops)

    def names(self) -> list[str]:
        return list(self._ops)

    def get(self, name: str) -> Operation:
        try:
            return self._ops[name]
        except KeyError:
            raise SpecError(
                f'op "{name}" not found', code="spec.unknown_op", op=name, known=self.names()
            ) from None

    def catalogue(self) -> list[dict[str, Any]]:
        return [op.catalogue_entry() for op in self]

    def attribute_names(self) -> dict[str, Element]:
        out: dict[str, Element] = {}
        for op in self:
            for k, o in op.outputs.items():
                out[k] = o.element
        return out

    def step_models(self) -> list[type[BaseModel]]:
        """One pydantic model per op with ``op: Literal[name]`` plus its params: the members of
        the pipeline step's discriminated union."""
        models = []
        for op in self:
            m = create_model(
                _camel(op.name) + "Step",
                __base__=op.params,
                __doc__=op.summary,
                op=(Literal[op.name], Field(description="Operation name.")),  # type: ignore[valid-type]
            )
            models.append(m)
        return models


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))
