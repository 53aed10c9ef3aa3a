"""Typed errors of the engine. Each carries a stable machine-readable ``code``.

Error tree (the service maps each branch to one HTTP status)::

    EngineError                     500  engine.internal
    ├── InputError                  422  the caller's input is wrong: never retried
    │   ├── MeshError                    mesh.*    the mesh cannot be used (NaN, bad indices)
    │   ├── FormatError                  format.*  the file cannot be read as a mesh
    │   ├── SpecError                    spec.*    pipeline or output spec invalid
    │   └── OpParamsError                op.*      an operation refuses this mesh or these params
    ├── BackendUnavailable          503  backend.unavailable (GPU asked for, none present)
    └── KernelError                 500  kernel.failed (carries op, kernel, device)

``InputError`` is the class a worker uses to decide that a failure must not be retried.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    """Base class. ``code`` is stable; ``message`` is short and fixed; ``detail`` is JSON-able."""

    code = "engine.internal"
    status = 500

    def __init__(self, message: str, *, code: str | None = None, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "detail": self.detail}


class InputError(EngineError):
    code = "input.invalid"
    status = 422


class MeshError(InputError):
    code = "mesh.invalid"


class FormatError(InputError):
    code = "format.invalid"


class SpecError(InputError):
    code = "spec.invalid"


class OpParamsError(InputError):
    code = "op.params_invalid"


class BackendUnavailable(EngineError):
    code = "backend.unavailable"
    status = 503


class KernelError(EngineError):
    code = "kernel.failed"
    status = 500


def error_from_dict(d: dict[str, Any]) -> EngineError:
    """Rebuild an error sent across a process boundary (the worker's child sends dicts)."""
    code = str(d.get("code", "engine.internal"))
    prefix = code.split(".", 1)[0]
    cls: type[EngineError] = {
        "mesh": MeshError,
        "format": FormatError,
        "spec": SpecError,
        "op": OpParamsError,
        "backend": BackendUnavailable,
        "kernel": KernelError,
    }.get(prefix, EngineError)
    return cls(str(d.get("message", code)), code=code, **dict(d.get("detail") or {}))
