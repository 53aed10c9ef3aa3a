"""The long-lived child process that owns the compute context (the CUDA context on a GPU host).

The supervisor starts it with the ``spawn`` method (never fork after CUDA is up) and talks to it
over a pipe in the messages of :mod:`workers.messages`: it receives a ``RunJob`` and answers
``Progress`` messages, then one ``Done`` or ``Failed`` (``poisoned`` when a sticky CUDA error
left the context unusable, and the supervisor must replace this process); ``Stop`` ends it. It
lives across jobs so that compiled kernels and the memory pool are reused; the supervisor kills
and respawns it when a job times out, is cancelled, its context is poisoned, or it dies.
"""

from __future__ import annotations

import logging
import os
import signal
import traceback
from multiprocessing.connection import Connection
from typing import Any

from .engine.errors import EngineError, GpuContextLost, InputError, OutOfMemory
from .messages import Done, Failed, ItemDone, ItemStart, Offers, Progress, RunJob, Stop

log = logging.getLogger(__name__)

#: CUDA errors after which the context is unusable ("sticky"): illegal address, launch failure,
#: hardware trap, ECC... Every later call in this process fails, so the process must go.
_STICKY = (
    "illegal",
    "launch_failure",
    "launch failure",
    "hardware",
    "ecc",
    "misaligned",
    "invalid_pc",
    "assert",
    "unspecified",
)


def poisoned(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) is a CUDA error that leaves the context unusable. Told by
    class and message, without importing CuPy."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 5:
        kind = type(e)
        if kind.__module__.startswith(("cupy", "cupy_backends")) and "CUDA" in kind.__name__:
            text = str(e).lower()
            if any(s in text for s in _STICKY):
                return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


def failed(exc: Exception) -> Failed:
    """The answer to a run that raised ``exc``: an error of the engine as it is (an input error
    is never retried, and never poisons the context); running out of host or GPU memory (CuPy's
    ``OutOfMemoryError`` is a ``MemoryError``) as ``resources.out_of_memory``; anything else as
    ``gpu.context_lost`` when a sticky CUDA error caused it (the child must be replaced), else
    ``engine.internal``. All but input errors are retried."""
    if isinstance(exc, InputError):
        return Failed(exc.to_dict(), exc.retryable)
    if isinstance(exc, EngineError):
        return Failed(exc.to_dict(), exc.retryable, poisoned(exc))
    if isinstance(exc, MemoryError):
        oom = OutOfMemory()
        return Failed(oom.to_dict(), oom.retryable)
    sticky = poisoned(exc)
    what = f"{exc.__class__.__name__}: {exc}"[:500]
    err = GpuContextLost(exception=what) if sticky else EngineError(exception=what)
    return Failed(err.to_dict(), err.retryable, sticky)


def _warm() -> None:
    """Warm the backends a job may run on (see :func:`workers.runner.warm_up`); a failure here
    is only logged: the job that meets the same fault reports it properly."""
    from .engine.backend import gpu_available
    from .runner import warm_up

    for backend in ("numpy", "cupy") if gpu_available() else ("numpy",):
        try:
            log.info("warmed %s in %.2fs", backend, warm_up(backend))
        except Exception as exc:
            log.warning("warming %s failed: %s: %s", backend, exc.__class__.__name__, exc)


def offers() -> Offers:
    """What this process can run: the CPU always, the GPU where CuPy sees a device (its name and
    memory, for the worker registry)."""
    from .engine.backend import _probe_cupy

    mod, _why = _probe_cupy()
    if mod is None:
        return Offers(["cpu"])
    try:
        props = mod.cuda.runtime.getDeviceProperties(mod.cuda.Device().id)
        name = props["name"]
        gpu = {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_bytes": int(props["totalGlobalMem"]),
        }
    except Exception as exc:  # a device that cannot describe itself still runs jobs
        gpu = {"name": f"unknown ({exc.__class__.__name__})", "memory_bytes": 0}
    return Offers(["cpu", "gpu"], gpu)


def child_main(
    conn: Connection,
    blob_root: str | dict[str, Any],
    log_level: int = logging.INFO,
    warm: bool = False,
) -> None:
    """Entry point of the child process; ``blob_root`` is what ``open_store`` takes; ``warm``:
    run a small job on each backend before taking jobs."""
    logging.basicConfig(level=log_level, format=f"%(asctime)s child[{os.getpid()}] %(message)s")
    # the supervisor decides when we stop (a Ctrl-C or a SIGTERM to the whole process group must
    # not kill a job the supervisor is still letting finish); it uses SIGKILL. The supervisor
    # already starts us with both ignored, so that no signal is lost before this point.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from .queue.blobs import open_store
    from .runner import execute, execute_chunk, release_memory, trim_pools

    store = open_store(blob_root)
    conn.send(offers())
    if warm:
        _warm()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if isinstance(msg, Stop):
            return
        if not isinstance(msg, RunJob):
            continue
        job = msg

        def progress(p: float, stage: str) -> None:
            conn.send(Progress(p, stage))

        try:
            if job.batch is not None:
                fields = execute_chunk(
                    job.id,
                    job.spec,
                    store,
                    job.batch["items"],
                    lambda index, outcome: conn.send(ItemDone(index, outcome)),
                    progress,
                    on_start=lambda index: conn.send(ItemStart(index)),
                    gpu_min_faces=job.gpu_min_faces,
                    max_expanded=int(job.batch["max_expanded"]),
                    failed=poisoned,
                    s3=job.batch.get("s3"),
                    max_member=int(job.batch.get("max_member") or 256 << 20),
                    # after a death, one by one: the item that killed the child is found
                    pack=job.attempt <= 1,
                )
                conn.send(Done(fields))
                continue

            def run(job: RunJob = job) -> dict[str, Any]:
                return execute(
                    job.id,
                    job.attempt,
                    job.spec,
                    store,
                    progress,
                    input_name=job.input_name,
                    gpu_min_faces=job.gpu_min_faces,
                )

            try:
                fields = run()
            except MemoryError:
                # out of GPU (or host) memory: give back what this process cached and try
                # once more before the job fails with resources.out_of_memory (and is retried)
                log.warning("job %s ran out of memory; once more", job.id)
                release_memory()
                fields = run()
            conn.send(Done(fields))
        except Exception as exc:
            if not isinstance(exc, (EngineError, MemoryError)):
                log.error("job %s failed: %s", job.id, traceback.format_exc())
            conn.send(failed(exc))
        finally:
            trim_pools()
