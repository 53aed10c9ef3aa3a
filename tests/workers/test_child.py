"""The supervisor's conversation with its compute child, in the messages of workers.messages, on
a real spawned child; and what the supervisor records when a run cannot start."""

from __future__ import annotations

import multiprocessing as mp
import re
from typing import Any

import pytest

from tests.conftest import ROOT, mesh_path
from workers.engine import errors
from workers.engine.backend import gpu_available
from workers.engine.io import load_bytes, stored
from workers.gpu_child import child_main, failed
from workers.messages import Done, Failed, Offers, Progress, RunJob, Stop
from workers.queue.blobs import LocalBlobStore, input_key
from workers.queue.jobs import JobQueue, JobState


def _answer(conn: Any) -> tuple[list[Progress], Any]:
    """The child's messages about one run: its progress, then its one answer."""
    progress = []
    while True:
        assert conn.poll(60), "the child did not answer"
        msg = conn.recv()
        if not isinstance(msg, Progress):
            return progress, msg
        progress.append(msg)


def test_the_child_runs_jobs_and_answers_in_typed_messages(tmp_path):
    store = LocalBlobStore(tmp_path)
    mesh = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    store.put_chunks(input_key("j1"), stored.encode_chunks(mesh))
    ctx = mp.get_context("spawn")
    conn, theirs = ctx.Pipe()
    child = ctx.Process(target=child_main, args=(theirs, str(tmp_path)), daemon=True)
    child.start()
    theirs.close()
    try:
        # first it says what it can run: the GPU where CuPy sees one, with its name
        assert conn.poll(60), "the child did not say what it offers"
        offers = conn.recv()
        assert isinstance(offers, Offers)
        if gpu_available():
            assert offers.backends == ["cpu", "gpu"] and offers.gpu["name"]
            assert offers.gpu["memory_bytes"] > 0
        else:
            assert offers == Offers(["cpu"], None)
        spec = {"pipeline": [{"op": "weld"}], "output": {"format": "obj"}}
        conn.send(RunJob("j1", 1, spec, input_name="up/rx-cube.obj", gpu_min_faces=10_000))
        progress, done = _answer(conn)
        assert isinstance(done, Done), done
        assert done.fields["result"]["filename"] == "rx-cube.obj"
        assert store.exists(done.fields["result"]["key"])
        assert progress and progress[0] == Progress(0.0, "load")
        assert [p.progress for p in progress] == sorted(p.progress for p in progress)

        # an input error is not retried and leaves the child as it was
        bad = {"pipeline": [{"op": "no_such_op"}]}
        conn.send(RunJob("j1", 2, bad, input_name="", gpu_min_faces=10_000))
        _, failed = _answer(conn)
        assert failed == Failed(failed.error, retryable=False, poisoned=False)
        assert failed.error["code"] == "spec.invalid"

        # any other failure (here the input is missing) is internal, and retried
        missing = {"pipeline": [{"op": "weld"}]}
        conn.send(RunJob("gone", 1, missing, input_name="", gpu_min_faces=10_000))
        _, failed = _answer(conn)
        assert isinstance(failed, Failed) and failed.retryable and not failed.poisoned
        assert failed.error["code"] == "engine.internal"
        assert failed.error["message"] == "internal error"
        assert "BlobNotFound" in failed.error["detail"]["exception"]

        conn.send(Stop())
        child.join(30)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join(10)


def _cuda_error(name: str, module: str, message: str, base: type = RuntimeError) -> Exception:
    """A stand-in for CuPy's error classes, told apart by module and name as the child does."""
    return type(name, (base,), {"__module__": module})(message)


def _sticky() -> Exception:
    return _cuda_error(
        "CUDARuntimeError", "cupy_backends.cuda.api.runtime", "cudaErrorIllegalAddress: illegal"
    )


def _kernel_error_from_sticky() -> Exception:
    try:
        raise _sticky()
    except RuntimeError as inner:
        try:
            raise errors.KernelError("kernel failed", op="weld") from inner
        except errors.KernelError as exc:
            return exc


@pytest.mark.parametrize(
    ("exc", "code", "retryable", "poisoned"),
    [
        (errors.MeshError("bad", code="mesh.non_finite"), "mesh.non_finite", False, False),
        (errors.BackendUnavailable("no GPU"), "backend.unavailable", True, False),
        (_kernel_error_from_sticky(), "kernel.failed", True, True),
        (MemoryError(), "resources.out_of_memory", True, False),
        (
            _cuda_error("OutOfMemoryError", "cupy.cuda.memory", "out of memory", MemoryError),
            "resources.out_of_memory",
            True,
            False,
        ),
        (_sticky(), "gpu.context_lost", True, True),
        (RuntimeError("boom"), "engine.internal", True, False),
    ],
)
def test_what_the_child_answers_a_run_that_raised(exc, code, retryable, poisoned):
    answer = failed(exc)
    assert (answer.error["code"], answer.retryable, answer.poisoned) == (code, retryable, poisoned)
    assert answer.error == errors.error_from_dict(answer.error).to_dict()
    if code in ("gpu.context_lost", "engine.internal"):
        assert answer.error["detail"]["exception"].startswith(type(exc).__name__ + ": ")


def test_a_stored_spec_the_worker_cannot_read_fails_the_job_at_once(settings, redis_client):
    """Stored by another version: the supervisor fails it as spec.invalid, not retried, before
    any child is asked to run it."""
    from workers.supervisor import Supervisor

    sup = Supervisor(settings, "w1")
    q = JobQueue(redis_client)
    q.submit("old", {"spec": {"pipeline": [{"op": "retired_op"}]}, "input": {"name": "a.obj"}})
    ((entry, job_id),) = q.read_next("w1")
    c = q.claim("w1", entry, job_id)
    assert c is not None
    sup.run_claim(c)
    assert sup.child is None  # never started
    rec = q.get("old")
    assert rec["state"] == JobState.failed and rec["attempt"] == 1
    assert rec["error"]["code"] == "spec.invalid"


def test_the_readme_lists_every_code_a_run_may_end_with():
    readme = (ROOT / "README.md").read_text()
    classes = [
        getattr(errors, n)
        for n in dir(errors)
        if isinstance(getattr(errors, n), type) and issubclass(getattr(errors, n), Exception)
    ]
    run_errors = [
        c
        for c in classes
        if issubclass(c, errors.EngineError) and not issubclass(c, errors.InputError)
    ]
    codes = {c.code for c in run_errors} - {errors.WorkerError.code}  # the branch, never raised
    missing = [code for code in sorted(codes) if not re.search(rf"`{re.escape(code)}`", readme)]
    assert len(codes) == 9 and missing == []


@pytest.mark.parametrize("misses", [1, 2])
def test_a_job_out_of_memory_once_runs_again_and_twice_fails_with_its_code(
    tmp_path, monkeypatch, misses
):
    """Workers sharing a GPU run out of its memory at times (another's pool holds freed
    blocks): a job whose run raises MemoryError gives back this process's memory and runs once
    more; out of memory twice, it fails with resources.out_of_memory (retryable). After every
    job the child trims its pool of freed blocks (``runner.trim_pools``)."""
    import signal

    from workers import runner

    runs: list[int] = []
    released: list[bool] = []
    trimmed: list[bool] = []

    def execute(job_id, attempt, spec, store, progress, **kw):
        runs.append(attempt)
        if len(runs) <= misses:
            raise MemoryError("out of memory allocating 1,073,741,824 bytes")
        return {"result": {"key": "k"}}

    monkeypatch.setattr(runner, "execute", execute)
    monkeypatch.setattr(runner, "release_memory", lambda: released.append(True))
    monkeypatch.setattr(runner, "trim_pools", lambda: trimmed.append(True))
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the test's process keeps its own
    ours, theirs = mp.Pipe()
    spec = {"pipeline": [{"op": "weld"}], "output": {"format": "obj"}}
    ours.send(RunJob("j1", 3, spec, input_name="up/a.obj", gpu_min_faces=10_000))
    ours.send(Stop())
    child_main(theirs, str(tmp_path))  # runs the job, then stops
    answers = []
    while ours.poll(0.1):
        answers.append(ours.recv())
    assert isinstance(answers[0], Offers)
    assert runs == [3, 3] and released == [True] and trimmed == [True]
    if misses == 1:
        assert answers[-1] == Done({"result": {"key": "k"}})
    else:
        assert isinstance(answers[-1], Failed) and answers[-1].retryable
        assert answers[-1].error["code"] == "resources.out_of_memory"


@pytest.mark.gpu
def test_the_pool_is_trimmed_after_a_large_job_and_kept_after_a_small_one():
    """``trim_pools`` gives CuPy's freed device blocks back past ``POOL_KEEP_BYTES`` and keeps
    them below it."""
    import cupy as cp

    from workers import runner

    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    a = cp.empty(64 << 20, dtype=cp.uint8)
    del a
    runner.trim_pools()
    assert pool.free_bytes() >= 64 << 20  # kept: under the limit
    b = cp.empty(runner.POOL_KEEP_BYTES + (64 << 20), dtype=cp.uint8)
    del b
    runner.trim_pools()
    assert pool.free_bytes() == 0


def test_trimming_the_pools_where_cupy_sees_no_device_does_nothing(monkeypatch):
    """A CPU-only worker on a GPU host (``CUDA_VISIBLE_DEVICES=""``) has CuPy imported (the probe
    of what it offers), and asking CuPy's pool for its bytes raises there: the trim after a job
    and the release after running out of memory must not end the child."""
    import sys
    import types

    from workers import runner

    def no_device():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.SimpleNamespace(
        get_default_memory_pool=no_device, get_default_pinned_memory_pool=no_device
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    runner.trim_pools()
    runner.release_memory()
