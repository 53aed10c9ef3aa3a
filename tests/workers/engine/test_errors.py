"""The error tree: codes, statuses, and the round trip across a process boundary."""

from __future__ import annotations

import pytest

from workers.engine.errors import (
    BackendUnavailable,
    ChildDied,
    EngineError,
    FormatError,
    GpuContextLost,
    InputError,
    JobTimeout,
    KernelError,
    MeshError,
    OpParamsError,
    OutOfMemory,
    SpecError,
    WorkerError,
    WorkerLost,
    WorkerShutdown,
    error_from_dict,
)


@pytest.mark.parametrize(
    ("cls", "code", "status"),
    [
        (EngineError, "engine.internal", 500),
        (InputError, "input.invalid", 422),
        (MeshError, "mesh.invalid", 422),
        (FormatError, "format.invalid", 422),
        (SpecError, "spec.invalid", 422),
        (OpParamsError, "op.params_invalid", 422),
        (BackendUnavailable, "backend.unavailable", 503),
        (KernelError, "kernel.failed", 500),
    ],
)
def test_defaults(cls: type[EngineError], code: str, status: int) -> None:
    e = cls("boom")
    assert (e.code, e.status, e.message, e.detail) == (code, status, "boom", {})


@pytest.mark.parametrize(
    "err",
    [
        MeshError("bad", code="mesh.non_finite", count=2),
        FormatError("bad", code="format.mismatch", extension="ply"),
        SpecError("bad", code="spec.unknown_op", op="x", known=["a"]),
        OpParamsError("bad", code="op.tolerance_too_large", tolerance=1.0),
        BackendUnavailable("gone", reason="no CUDA"),
        KernelError("crash", op="weld", kernel="k", device="gpu0"),
        EngineError("odd"),
        OutOfMemory(),
        GpuContextLost(exception="CUDARuntimeError: cudaErrorIllegalAddress"),
        JobTimeout(deadline_seconds=5.0),
        WorkerLost(),
        ChildDied(exitcode=-9),
        WorkerShutdown(),
    ],
)
def test_round_trip_through_a_dict(err: EngineError) -> None:
    back = error_from_dict(err.to_dict())
    assert type(back) is type(err)
    assert back.to_dict() == err.to_dict()
    assert isinstance(back, InputError) == isinstance(err, InputError)


def test_unknown_prefix_is_internal() -> None:
    back = error_from_dict({"code": "weird.thing", "message": "m"})
    assert type(back) is EngineError and back.code == "weird.thing"
    assert error_from_dict({}).code == "engine.internal"


@pytest.mark.parametrize(
    ("cls", "code", "message", "retryable"),
    [
        (EngineError, "engine.internal", "internal error", True),
        (SpecError, "spec.invalid", "invalid input", False),
        (OutOfMemory, "resources.out_of_memory", "out of memory", True),
        (GpuContextLost, "gpu.context_lost", "the GPU context is unusable", True),
        (JobTimeout, "job.timeout", "the job ran past its deadline", False),
        (WorkerLost, "worker.lost", "the worker running the job stopped renewing its lease", True),
        (ChildDied, "worker.child_died", "the compute process died", True),
        (WorkerShutdown, "worker.shutdown", "the worker was stopped", True),
    ],
)
def test_the_run_errors_carry_their_code_message_and_retry(
    cls: type[EngineError], code: str, message: str, retryable: bool
) -> None:
    """The errors a worker records when a run ends without the engine's answer: what the job's
    record shows (``to_dict``) is fixed by the class, and so is whether the job runs again."""
    e = cls(deadline_seconds=5.0) if cls is JobTimeout else cls()
    assert (e.code, e.message, e.retryable) == (code, message, retryable)
    assert e.to_dict()["code"] == code and e.to_dict()["message"] == message
    assert isinstance(e, WorkerError) == code.startswith("worker.")
