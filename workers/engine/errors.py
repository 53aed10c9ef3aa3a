"""Typed errors of the engine and of a job's run. Each carries a stable machine-readable
``code``, a short fixed ``message`` and whether a job that fails with it is run again
(``retryable``).

Error tree (the service maps each branch to one HTTP status; the worker records the run's errors
in the job)::

    EngineError                     500  engine.internal          retried
    ├── InputError                  422  the caller's input is wrong: never retried
    │   ├── MeshError                    mesh.*    the mesh cannot be used (NaN, bad indices)
    │   ├── FormatError                  format.*  the file cannot be read as a mesh
    │   ├── SpecError                    spec.*    pipeline or output spec invalid
    │   └── OpParamsError                op.*      an operation refuses this mesh or these params
    ├── BackendUnavailable          503  backend.unavailable (GPU asked for, none present)
    ├── KernelError                 500  kernel.failed (carries op, kernel, device)
    ├── OutOfMemory                 500  resources.out_of_memory  retried
    ├── GpuContextLost              500  gpu.context_lost         retried on a new compute child
    ├── JobTimeout                  500  job.timeout              never retried
    └── WorkerError                 500  worker.*: the run stopped, not the engine
        ├── WorkerLost                   worker.lost         its lease expired: retried
        ├── ChildDied                    worker.child_died   retried at once on a new child
        └── WorkerShutdown               worker.shutdown     handed back at no attempt's cost

``retryable`` is what a worker uses to decide whether a failure is retried (an ``InputError``
never is). The last branches are raised by no engine code: the worker builds them for the job's
record when a run ends without an answer from the engine.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    """Base class. ``code`` is stable; ``message`` is short and fixed (the class's own when not
    given); ``detail`` is JSON-able."""

    code = "engine.internal"
    status = 500
    message = "internal error"
    retryable = True

    def __init__(
        self, message: str | None = None, *, code: str | None = None, **detail: Any
    ) -> None:
        message = type(self).message if message is None else message
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
    message = "invalid input"
    retryable = False


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


class OutOfMemory(EngineError):
    """The run ran out of host or device memory; another attempt (maybe elsewhere) may not."""

    code = "resources.out_of_memory"
    message = "out of memory"


class GpuContextLost(EngineError):
    """A sticky CUDA error left the compute child's context unusable: the child is replaced."""

    code = "gpu.context_lost"
    message = "the GPU context is unusable"


class JobTimeout(EngineError):
    """The job ran past its deadline (``detail``: ``deadline_seconds``); it would again."""

    code = "job.timeout"
    message = "the job ran past its deadline"
    retryable = False


class WorkerError(EngineError):
    """The run stopped for a reason of the worker's, not of the job's."""

    code = "worker.error"
    message = "the worker stopped the run"


class WorkerLost(WorkerError):
    """The worker running the job stopped renewing its lease; a reaper re-queues the job."""

    code = "worker.lost"
    message = "the worker running the job stopped renewing its lease"


class ChildDied(WorkerError):
    """The compute child died (``detail``: ``exitcode``); the job runs again at once on the same
    supervisor with a new child."""

    code = "worker.child_died"
    message = "the compute process died"


class WorkerShutdown(WorkerError):
    """The worker was told to stop and the job did not finish within its grace: it is handed
    back and costs no attempt."""

    code = "worker.shutdown"
    message = "the worker was stopped"


#: the errors with a code of their own, by code
_BY_CODE: dict[str, type[EngineError]] = {
    cls.code: cls
    for cls in (OutOfMemory, GpuContextLost, JobTimeout, WorkerLost, ChildDied, WorkerShutdown)
}


def error_from_dict(d: dict[str, Any]) -> EngineError:
    """Rebuild an error sent across a process boundary (the worker's child sends dicts)."""
    code = str(d.get("code", "engine.internal"))
    prefix = code.split(".", 1)[0]
    cls: type[EngineError] = _BY_CODE.get(code) or {
        "mesh": MeshError,
        "format": FormatError,
        "spec": SpecError,
        "op": OpParamsError,
        "backend": BackendUnavailable,
        "kernel": KernelError,
        "worker": WorkerError,
    }.get(prefix, EngineError)
    return cls(str(d.get("message", code)), code=code, **dict(d.get("detail") or {}))
