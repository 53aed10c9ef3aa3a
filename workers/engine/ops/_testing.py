"""``sleep``: an operation for testing the queue (slow, failing or crashing jobs).

Registered only when the environment variable ``TESSERA_TEST_OPS=1`` is set in every process (API
and workers), so it never appears in a production catalogue.
"""

from __future__ import annotations

import os
import time
from typing import Literal

import numpy as np
from pydantic import Field

from ..errors import MeshError
from ..mesh import TriMesh
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    seconds: float = Field(0.0, ge=0.0, le=600.0, description="How long to sleep.")
    fail: Literal["none", "input", "error", "crash", "illegal_address"] = Field(
        "none",
        description="After sleeping: succeed, raise an input error, raise an internal error, "
        "kill the process, or (GPU only) write through an invalid device pointer: a sticky CUDA "
        "error that leaves the process's context unusable.",
    )
    only_faces: int | None = Field(
        None, ge=0, description="Fail only on a mesh with this many faces (else succeed)."
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    time.sleep(p.seconds)
    if p.only_faces is not None and mesh.n_faces != p.only_faces:
        return OpResult(mesh, {"slept": p.seconds})
    if p.fail == "input":
        raise MeshError("test input error", code="mesh.test_rejected")
    if p.fail == "error":
        raise RuntimeError("test internal error")
    if p.fail == "crash":
        os._exit(70)
    if p.fail == "illegal_address":
        raise MeshError("an illegal address needs the GPU", code="mesh.test_needs_gpu")
    return OpResult(mesh, {"slept": p.seconds})


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """As on the CPU; ``illegal_address`` launches a kernel that stores through address 8."""
    if p.fail != "illegal_address":
        return _numpy(mesh, p)
    import cupy as cp

    time.sleep(p.seconds)
    poke = cp.RawKernel(r'extern "C" __global__ void poke(int* p) { p[threadIdx.x] = 1; }', "poke")
    poke((1,), (1,), (np.uint64(8),))
    cp.cuda.Device().synchronize()  # raises cudaErrorIllegalAddress
    return OpResult(mesh, {"slept": p.seconds})


OP = Operation(
    name="sleep",
    summary="Testing aid: sleep, then optionally fail.",
    description="""
    Sleep ``seconds``, then behave as ``fail`` says: succeed, raise an input error, raise an
    internal error, kill the worker process, or (GPU only) leave the CUDA context unusable.
    Registered only when ``TESSERA_TEST_OPS=1`` is set in every process, for testing the queue.
    """,
    kind=OpKind.report,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
)


def enabled() -> bool:
    return os.environ.get("TESSERA_TEST_OPS") == "1"
