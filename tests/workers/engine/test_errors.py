"""The error tree: codes, statuses, and the round trip across a process boundary."""

from __future__ import annotations

import pytest

from workers.engine.errors import (
    BackendUnavailable,
    EngineError,
    FormatError,
    InputError,
    KernelError,
    MeshError,
    OpParamsError,
    SpecError,
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
