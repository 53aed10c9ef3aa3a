"""How an operation is declared once, and the registry everything else is derived from.

An :class:`Operation` names the op, says what it does (a one-line ``summary`` and the full
``description``), its typed parameters (a pydantic model with bounds and a description on every
field), what it produces, its implementations per backend, and how its two implementations are
compared (``test_variants``, ``tolerances``). The API's job schema, the ``/v1/operations``
catalogue, the OpenAPI document, the CLI help, the README's operations table, the worker's
dispatch table and the GPU equivalence test are all built from the registry.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..errors import OpParamsError, SpecError
from ..mesh import TriMesh


class OpParams(BaseModel):
    """Base of every operation's parameter model: unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Defined(str, Enum):
    """Base of the enumerations whose members carry their definition: ``Member = "value",
    "what it means"`` gives a member equal to ``"value"`` with ``meaning`` set."""

    meaning: str

    def __new__(cls, value: str, meaning: str) -> Defined:
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


class OpKind(Defined):
    """What a step does to the mesh. Each member carries its definition (``meaning``); the
    class's docstring, and so the catalogue's JSON Schema, lists them (set below the class)."""

    reindex = "reindex", "changes the vertex/face set without changing the surface"
    static = "static", "connectivity kept; attributes or positions computed"
    report = "report", "only measures (a report, or artifacts beside the mesh)"
    remesh = (
        "remesh",
        "a new surface built in one deterministic pass over the whole mesh (subdivision, dual, "
        "clustering, a plane cut): both backends give the same vertices and faces",
    )
    dynamic = (
        "dynamic",
        "connectivity changed by local operations (edge flips, collapses, splits) applied in "
        "parallel rounds of disjoint cavities chosen by priority: where float rounding orders "
        "two priorities differently the backends pick other, equally valid cavities, so their "
        "results agree in invariants and quality, not vertex for vertex",
    )
    source = (
        "source",
        "makes the mesh from its parameters (and an uploaded volume): must be the first step",
    )


OpKind.__doc__ = "What a step does to the mesh. " + "; ".join(
    f"{k.value}: {k.meaning}" for k in OpKind
)


class Packing(Defined):
    """How a batch's packed run (:mod:`workers.engine.packing`) may run a step over many meshes
    concatenated into one, none of them sharing a vertex with another. Each member carries its
    definition (``meaning``)."""

    local = (
        "local",
        "reads only what is joined to an element (its faces, edges, components): run once over "
        "the pack, each mesh gets what it alone would",
    )
    keyed = (
        "keyed",
        "would join meshes by position (weld): run once over the pack by ``Operation.packed``, "
        "which keys it by each vertex's part",
    )
    measure = (
        "measure",
        "only measures, and measures any mesh (never refuses one): run mesh by mesh for its "
        "report, or skipped by a packed run that keeps no reports (a batch's items)",
    )
    single = (
        "single",
        "reads the whole mesh (a bounding box, a global scale, an order over all elements) or "
        "only measures it: run mesh by mesh",
    )


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


@dataclass(frozen=True)
class Tolerance:
    """How close the GPU implementation's attribute must be to the NumPy twin's:
    ``|gpu - numpy| <= atol + rtol * |numpy|`` element-wise (float32 kernels against float64)."""

    atol: float
    rtol: float = 0.0


#: the tolerance of an attribute no operation states one for (carried from the input)
DEFAULT_TOLERANCE = Tolerance(atol=1e-6)


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
    #: one line: the form's hint, ``tessera ops``, the README table, the first line of the step
    #: schema's description
    summary: str
    #: the full user-facing text: what it does, the method, accuracy and limits, what the report
    #: holds; indentation is stripped (``inspect.cleandoc``), so a triple-quoted block reads well
    description: str
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
    #: parameter sets the GPU equivalence test runs on every shared and adversarial mesh (each
    #: must validate against ``params``; the first is usually ``{}``, the defaults)
    test_variants: tuple[Mapping[str, Any], ...] = ()
    #: per output attribute, how close the GPU result must be to the twin's (every key of
    #: ``outputs`` needs one; attributes an op does not declare use ``DEFAULT_TOLERANCE``)
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    #: how a batch's packed run treats the step (:class:`Packing`), or a function of the
    #: parameters that says it (a weld with a tolerance is ``single``, an exact one ``keyed``)
    packing: Packing | Callable[[Any], Packing] = Packing.single
    #: a ``keyed`` op's implementation on a pack: ``packed(mesh, params, part)``, ``part`` the
    #: (n_vertices,) int32 part of each vertex; on either backend
    packed: Callable[[TriMesh, Any, Any], OpResult] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "description", inspect.cleandoc(self.description))

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

    def declaration_problems(self) -> list[str]:
        """What this declaration lacks, in words (empty when complete): a description that says
        more than the summary (at least two sentences and twice its length), at least one test
        variant, every variant valid (``parse_params``, the cross-parameter check included), a
        tolerance for every output and none for anything else. A CPU test runs it for every op.
        """
        problems = []
        text = self.description
        if text == self.summary or len(text) < 2 * len(self.summary) or _sentences(text) < 2:
            problems.append(
                "description must say more than the summary: at least two sentences and "
                "twice the summary's length"
            )
        if not self.test_variants:
            problems.append("no test_variants: declare the parameter sets the GPU test runs")
        for i, raw in enumerate(self.test_variants):
            try:
                self.parse_params(dict(raw))
            except OpParamsError as exc:
                problems.append(f"test_variants[{i}] {dict(raw)}: {exc.code} {exc.detail}")
        if self.packing is Packing.keyed and self.packed is None:
            problems.append("packing keyed needs a packed implementation")
        for k in self.outputs:
            if k not in self.tolerances:
                problems.append(f"output {k} has no tolerance")
        for k, t in self.tolerances.items():
            if k not in self.outputs:
                problems.append(f"tolerance for {k}, which is not an output")
            elif not (0.0 <= t.atol < math.inf and 0.0 <= t.rtol < math.inf):
                problems.append(f"tolerance for {k} is not finite and >= 0")
        return problems

    def packing_for(self, params: OpParams) -> Packing:
        """How a packed run treats this step with ``params`` (see :class:`Packing`)."""
        mode = self.packing if isinstance(self.packing, Packing) else self.packing(params)
        if mode is Packing.keyed and self.packed is None:
            return Packing.single
        return mode

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


def _sentences(text: str) -> int:
    return len(re.findall(r"[.!?](?:\s|$)", text))


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

    def tolerance(self, op: Operation, attribute: str) -> Tolerance:
        """How close an attribute on ``op``'s result must be between the backends: ``op``'s own
        tolerance for it, else the loosest of the operations that produce an attribute of that
        name (it was carried from an earlier step or the input), else ``DEFAULT_TOLERANCE``."""
        if attribute in op.tolerances:
            return op.tolerances[attribute]
        stated = [o.tolerances[attribute] for o in self if attribute in o.tolerances]
        if not stated:
            return DEFAULT_TOLERANCE
        return Tolerance(max(t.atol for t in stated), max(t.rtol for t in stated))

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
                __doc__=f"{op.summary}\n\n{op.description}",
                op=(Literal[op.name], Field(description="Operation name.")),  # type: ignore[valid-type]
            )
            models.append(m)
        return models


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))
