"""GPU-host faults: out of GPU memory, and sticky CUDA errors that poison the context.

The end-to-end cases need a GPU (marked ``gpu``: skipped in CI, run by ``./dev.sh gpu``); the
classification of CUDA errors is tested everywhere with stand-in exception classes."""

from __future__ import annotations

import pytest

from tests.service.helpers import spec, submit, wait
from workers.gpu_child import poisoned


def _cuda_error(name: str, module: str, message: str) -> Exception:
    cls = type(name, (RuntimeError,), {"__module__": module})
    return cls(message)


@pytest.mark.parametrize(
    ("exc", "sticky"),
    [
        (_cuda_error("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
                     "cudaErrorIllegalAddress: an illegal memory access was encountered"), True),
        (_cuda_error("CUDADriverError", "cupy.cuda.driver",
                     "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"), True),
        (_cuda_error("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
                     "cudaErrorAssert: device-side assert triggered"), True),
        (_cuda_error("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
                     "cudaErrorInvalidValue: invalid argument"), False),  # not sticky
        (_cuda_error("OutOfMemoryError", "cupy.cuda.memory",
                     "Out of memory allocating 1,024 bytes"), False),  # recoverable
        (RuntimeError("illegal memory access"), False),  # not a CUDA error class
    ],
)  # fmt: skip
def test_sticky_cuda_errors_are_told_apart(exc, sticky):
    assert poisoned(exc) is sticky


def test_a_sticky_error_raised_through_an_engine_error_is_found():
    from workers.engine.errors import KernelError

    try:
        try:
            raise _cuda_error("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
                              "cudaErrorIllegalAddress: an illegal memory access")  # fmt: skip
        except RuntimeError as inner:
            raise KernelError("kernel failed") from inner
    except KernelError as exc:
        assert poisoned(exc)


@pytest.mark.gpu
@pytest.mark.slow
def test_out_of_gpu_memory_is_a_clear_failure_and_the_worker_goes_on(client, workers, settings):
    # CuPy's pool refuses anything beyond 1 MiB in this worker: every GPU job runs out of memory
    import os

    os.environ["CUPY_GPU_MEMORY_LIMIT"] = str(1 << 20)
    try:
        workers.start("w1")
    finally:
        del os.environ["CUPY_GPU_MEMORY_LIMIT"]
    body = spec("weld", "vertex_normals", device="gpu")
    job = wait(client, submit(client, "stanford-bunny.obj", body).json()["url"], timeout=120)
    assert job["state"] == "failed", job
    assert job["error"]["code"] == "resources.out_of_memory"
    # the same worker and child go on: a job small enough for the limit succeeds on the GPU
    small = spec("weld", "vertex_normals", device="gpu")
    ok = wait(client, submit(client, "rx-cube.obj", small).json()["url"], timeout=120)
    assert ok["state"] == "succeeded", ok
    assert ok["attempts"] == 1, ok
    assert "replacing it" not in workers.log("w1")  # out of memory is not a reason to respawn


@pytest.mark.gpu
@pytest.mark.slow
def test_a_sticky_cuda_error_replaces_only_the_child(client, workers):
    # a kernel storing through an invalid pointer poisons the child's CUDA context: the job
    # fails, the supervisor replaces its child, and the next GPU job runs on the same worker
    workers.start("w1")
    bad = spec({"op": "sleep", "fail": "illegal_address"}, device="gpu")
    job = wait(client, submit(client, spec_text=bad).json()["url"], timeout=120)
    assert job["state"] == "failed", job
    assert job["error"]["code"] == "gpu.context_lost", job
    good = wait(
        client,
        submit(client, "spot.obj", spec("weld", "vertex_normals", device="gpu")).json()["url"],
        timeout=120,
    )
    assert good["state"] == "succeeded", good
    assert workers.procs["w1"].poll() is None  # the supervisor itself lived on
    assert "replacing it" in workers.log("w1")  # the poisoned child was replaced
