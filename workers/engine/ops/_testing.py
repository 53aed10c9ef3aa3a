"""``sleep``: an operation for testing the queue (slow, failing or crashing jobs).

Registered only when the environment variable ``TESSERA_TEST_OPS=1`` is set in every process (API
and workers), so it never appears in a production catalogue.
"""

from __future__ import annotations

import os
import time
from typing import Literal

from pydantic import Field

from ..errors import MeshError
from ..mesh import TriMesh
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    seconds: float = Field(0.0, ge=0.0, le=600.0, description="How long to sleep.")
    fail: Literal["none", "input", "error", "crash"] = Field(
        "none",
        description="After sleeping: succeed, raise an input error, raise an internal error, or "
        "kill the process.",
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    """Sleep, then behave as ``fail`` says."""
    time.sleep(p.seconds)
    if p.fail == "input":
        raise MeshError("test input error", code="mesh.test_rejected")
    if p.fail == "error":
        raise RuntimeError("test internal error")
    if p.fail == "crash":
        os._exit(70)
    return OpResult(mesh, {"slept": p.seconds})


OP = Operation(
    name="sleep",
    summary="Testing aid: sleep, then optionally fail.",
    kind=OpKind.report,
    params=Params,
    numpy=_numpy,
)


def enabled() -> bool:
    return os.environ.get("TESSERA_TEST_OPS") == "1"
