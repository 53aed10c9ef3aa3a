"""What a worker does with one claimed job: load, run the pipeline, serialize, store.

Pure engine plus blob store; no Redis and no process plumbing, so it is tested directly and runs
the same inside the GPU child.
"""

from __future__ import annotations

import functools
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from .engine.artifacts import MEDIA_TYPES as MATRIX_MEDIA_TYPES
from .engine.artifacts import serialize_matrix
from .engine.backend import GPU_MIN_FACES, choose, sync
from .engine.errors import EngineError, InputError, OutOfMemory
from .engine.io import (
    DEFAULT_MAX_EXPANDED,
    FILE_EXTENSIONS,
    MEDIA_TYPES,
    load_bytes,
    serialize_chunks,
    stored,
)
from .engine.io.writing import left_out
from .engine.mesh import TriMesh
from .engine.ops.stats import mesh_stats
from .engine.pipeline import StepReport, parse_pipeline, run_pipeline, starts_with_source
from .jobspec import JobSpec
from .packed import IO_THREADS, Parsed, packs_pipeline, parse_items, run_packs
from .queue.blobs import (
    BlobStore,
    artifact_key,
    item_key,
    members_key,
    read_buffer,
    read_input,
    result_key,
    unpack_members,
)

Progress = Callable[[float, str], None]

log = logging.getLogger(__name__)


def load_input(store: BlobStore, job_id: str) -> TriMesh:
    """The job's accepted input as the API stored it (:mod:`~.engine.io.stored`): one read into
    one writable buffer, the arrays viewing it; nothing is parsed again."""
    return stored.decode(read_input(store, job_id))


def execute(
    job_id: str,
    attempt: int,
    spec: JobSpec | dict[str, Any],
    store: BlobStore,
    progress: Progress | None = None,
    input_name: str = "",
    gpu_min_faces: int = GPU_MIN_FACES,
) -> dict[str, Any]:
    """Run a job's spec on its stored input; write the result blob. Returns the fields the job
    record gets on success: result, timings, stats before/after, per-step reports, backend and
    why it was chosen (``device``: ``auto`` runs meshes under ``gpu_min_faces`` faces on the
    CPU). ``spec`` as stored in the job's record is parsed here (:meth:`JobSpec.from_stored`)."""
    if not isinstance(spec, JobSpec):
        spec = JobSpec.from_stored(spec)

    def report(p: float, stage: str) -> None:
        if progress:
            progress(p, stage)

    timings: dict[str, float] = {}
    t = time.perf_counter()
    report(0.0, "load")
    mesh = load_input(store, job_id)
    timings["load"] = time.perf_counter() - t
    return process(
        mesh,
        spec,
        store,
        result_key(job_id, attempt, spec.output.format),
        timings,
        report,
        input_name=input_name,
        gpu_min_faces=gpu_min_faces,
        artifact_key=lambda name, fmt: artifact_key(job_id, attempt, name, fmt),
        log_as=(f"job {job_id}", attempt),
    )


def process(
    mesh: TriMesh,
    spec: JobSpec,
    store: BlobStore,
    key: str,
    timings: dict[str, float],
    report: Progress,
    *,
    input_name: str = "",
    gpu_min_faces: int = GPU_MIN_FACES,
    artifact_key: Callable[[str, str], str] | None = None,
    with_stats_before: bool = True,
    log_as: tuple[str, int] | None = None,
    checksum: bool = False,
) -> dict[str, Any]:
    """Run ``spec`` on a loaded mesh and write the result blob at ``key`` (artifacts at
    ``artifact_key(name, format)``; without it, a pipeline's artifacts are not stored): what a
    job and a batch's item do alike, so that both give the same bytes. ``with_stats_before``:
    also measure the input mesh (a job's record shows it; a batch's manifest keeps only the
    result's statistics and the input's counts, which saves a quarter of a small mesh's run).
    ``log_as``: how the log names the run (``("job ID", attempt)``); a batch's items are not
    logged one by one (thousands of lines a minute), their chunk is. ``checksum``: the result's
    CRC-32 too (``result["crc32"]``: a batch's item)."""
    # the statistics are computed where the mesh will live, so the mesh moves first (once), and
    # the topology they build stays cached on it for the steps that need it
    requested = spec.device
    steps = parse_pipeline(spec.pipeline)
    # a source step makes the mesh: its size is not known yet, so auto takes the GPU if there is one
    size = gpu_min_faces if starts_with_source(steps) else mesh.n_faces
    backend, why = choose(requested, size, gpu_min_faces)
    if mesh.backend != backend:
        t = time.perf_counter()
        mesh = mesh.to(backend)
        sync(mesh)
        timings["transfer"] = time.perf_counter() - t
    t = time.perf_counter()
    stats_before = mesh_stats(mesh) if with_stats_before else None
    if with_stats_before:
        timings["stats_before"] = time.perf_counter() - t

    def pipeline_progress(p: float, stage: str) -> None:
        report(0.05 + 0.85 * p, stage)

    if log_as:
        log.info(
            "%s run %d: %d steps on %s (%s); %d vertices, %d faces in",
            *log_as,
            len(steps),
            backend,
            why,
            mesh.n_vertices,
            mesh.n_faces,
        )

    def step_done(i: int, n: int, s: StepReport) -> None:
        if not log_as:
            return
        log.info(
            "%s step %d/%d %s: %.3fs on %s, faces %d -> %d",
            log_as[0],
            i + 1,
            n,
            s.op,
            s.seconds,
            s.backend,
            s.faces_in,
            s.faces_out,
        )

    result = run_pipeline(
        mesh,
        steps,
        device="gpu" if backend == "cupy" else "cpu",
        progress=pipeline_progress,
        on_step=step_done,
    )
    timings.update(result.timings)
    if result.patching:  # inside the step that built them
        timings["patching"] = sum(p["seconds"] for p in result.patching)
    out = result.mesh

    t = time.perf_counter()
    stats_after = mesh_stats(out)
    timings["stats_after"] = time.perf_counter() - t

    report(0.9, "serialize")
    output = spec.output
    fmt = output.format
    t = time.perf_counter()
    crc = Crc32() if checksum else None
    n_bytes = store_mesh(out, spec, store, key, crc)
    timings["serialize"] = time.perf_counter() - t

    report(0.95, "store")
    t = time.perf_counter()
    stem = (input_name.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "result")[:100]
    artifacts = {}
    mfmt = output.matrix_format
    for name, value in result.artifacts.items():
        if artifact_key is None:  # a batch's item: its mesh only
            break
        blob = serialize_matrix(value, mfmt)
        akey = artifact_key(name, mfmt)
        store.put_bytes(akey, blob)
        artifacts[name] = {
            "key": akey,
            "format": mfmt,
            "bytes": len(blob),
            "filename": f"{stem}.{name}.{mfmt}",
            "media_type": MATRIX_MEDIA_TYPES[mfmt],
        }
    timings["store"] = time.perf_counter() - t
    if log_as:
        log.info(
            "%s run %d: written %s (%d bytes, %d faces); serialize %.3fs, store %.3fs",
            *log_as,
            fmt,
            n_bytes,
            out.n_faces,
            timings["serialize"],
            timings["store"],
        )

    return {
        "result": {
            "key": key,
            "format": fmt,
            "bytes": n_bytes,
            "filename": f"{stem}.{FILE_EXTENSIONS[fmt]}",
            "media_type": MEDIA_TYPES[fmt],
            "dropped": left_out(out, fmt),
            **({"crc32": crc.value} if crc is not None else {}),
        },
        "timings": timings,
        "stats_before": stats_before,
        "stats_after": stats_after,
        "reports": [
            {
                "op": s.op,
                "params": s.params,
                "seconds": s.seconds,
                "backend": s.backend,
                "report": s.report,
            }
            for s in result.steps
        ],
        "backend": result.backend,
        "device": {"requested": requested, "backend": backend, "reason": why},
        "artifacts": artifacts,
        "patching": result.patching,
    }


class Crc32:
    """The CRC-32 of the pieces :meth:`over` passes on (a batch's item: the result archive
    sends each result with the sum its worker computed, not computing it again)."""

    def __init__(self) -> None:
        self.value = 0

    def over(self, pieces: Iterable[Any]) -> Iterator[Any]:
        for piece in pieces:
            self.value = zlib.crc32(piece, self.value)
            yield piece


def store_mesh(
    out: TriMesh, spec: JobSpec, store: BlobStore, key: str, crc: Crc32 | None = None
) -> int:
    """Write ``out`` as ``spec`` asks at ``key``, piece by piece as it is serialized (a job, a
    batch's item run alone and a packed one alike); the bytes written. ``crc``: summed on the
    way."""
    o = spec.output
    chunks = serialize_chunks(
        out, o.format, o.attributes, polygons=o.polygons, compression=o.compression
    )
    return store.put_chunks(key, chunks if crc is None else crc.over(chunks))


ItemDone = Callable[[int, dict[str, Any]], None]


def execute_chunk(
    job_id: str,
    spec: JobSpec | dict[str, Any],
    store: BlobStore,
    items: list[dict[str, Any]],
    on_item: ItemDone,
    progress: Progress | None = None,
    *,
    on_start: Callable[[int], None] | None = None,
    gpu_min_faces: int = GPU_MIN_FACES,
    max_expanded: int = DEFAULT_MAX_EXPANDED,
    failed: Callable[[Exception], Any] | None = None,
    s3: dict[str, Any] | None = None,
    max_member: int = 256 << 20,
    pack: bool = True,
    io_threads: int | None = None,
) -> dict[str, Any]:
    """Run a batch chunk: its members' files are read in one piece (:func:`members_key`), and
    each item of ``items`` (``{"index", "path"}``: those not recorded yet) is parsed, run and
    written at :func:`item_key` exactly as a job would be (:func:`process`), then reported by
    ``on_item(index, outcome)``. An item that fails (a broken file, an operation refusing its
    mesh) fails alone, with its error; ``failed(exc)`` says whether an error must end the whole
    chunk instead (it returns a truthy value then: a GPU context that is no longer usable).
    Returns the fields of the chunk job's record.

    ``s3``: the batch reads its files from an S3 prefix (``{"input": {"bucket", "prefix"},
    "output": ...}``): each item's object is read there (at most ``max_member`` bytes), and
    with an ``output`` prefix each result is also copied there at the item's ``output`` path;
    ``store`` is then the S3 blob store (:mod:`.queue.s3batch`).

    ``pack``: where the pipeline allows it, the items are read first (their bytes fetched on
    ``io_threads`` threads, by default several for S3 and one otherwise; parsed on this thread)
    and the small ones run packed (:mod:`.packed`: the same bytes, fewer fixed costs); the others
    run one by one as above. A chunk that runs again after its process died runs unpacked
    (the gpu child passes ``pack=False`` then), so that an item that kills it is found and
    fails alone."""
    if not isinstance(spec, JobSpec):
        spec = JobSpec.from_stored(spec)
    t0 = time.perf_counter()
    source = (s3 or {}).get("input")
    sink = (s3 or {}).get("output")
    members = {} if source else unpack_members(read_buffer(store, members_key(job_id)))
    load_s = time.perf_counter() - t0
    fmt = spec.output.format
    done = ok = 0

    def fetch(item: dict[str, Any]) -> bytes:
        index = int(item["index"])
        data = _s3_member(store, source, item["path"], max_member) if source else members.get(index)
        if data is None:
            raise EngineError("the item's file is missing from its chunk", index=index)
        return bytes(data)

    def parse(item: dict[str, Any], data: bytes) -> TriMesh:
        return load_bytes(data, item["path"], max_expanded=max_expanded)

    def read(item: dict[str, Any]) -> TriMesh:
        return parse(item, fetch(item))

    if io_threads is None:  # threads only where they wait on a network (see .packed)
        io_threads = IO_THREADS if s3 else 1

    def copy_out(fields: dict[str, Any], item: dict[str, Any]) -> None:
        t_copy = time.perf_counter()
        s3_store: Any = store  # an S3BlobStore: the API takes S3 batches on one only
        s3_store.copy_to(fields["key"], sink["bucket"], sink["prefix"] + item["output"])
        fields["timings"]["copy_out"] = round(time.perf_counter() - t_copy, 6)

    try:
        steps = parse_pipeline(spec.pipeline)
    except EngineError:  # each item fails with it below, as it did before packing
        steps, pack = [], False
    todo: list[Parsed | dict[str, Any]] = list(items)
    if pack and packs_pipeline(steps):
        if progress:
            progress(0.0, f"reading {len(items)} items")
        packed = run_packs(
            job_id,
            spec,
            steps,
            store,
            parse_items(items, fetch, parse, io_threads),
            gpu_min_faces=gpu_min_faces,
            threads=io_threads,
            failed=failed,
        )
        for item in items:
            outcome = packed.outcomes.get(int(item["index"]))
            if outcome is None:
                continue
            try:
                if sink:
                    copy_out(outcome, item)
                ok += 1
            except Exception as exc:
                outcome = _failure(exc, 0.0, failed)
            on_item(int(item["index"]), outcome)
            done += 1
        todo = list(packed.alone)
    for n, entry in enumerate(todo):
        item = entry.item if isinstance(entry, Parsed) else entry
        index = int(item["index"])
        if progress:
            progress((done + n) / max(len(items), 1), f"item {done + n + 1}/{len(items)}")
        if on_start is not None:
            on_start(index)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        try:
            if isinstance(entry, Parsed):  # read already, maybe with its error
                if entry.error is not None:
                    raise entry.error
                assert entry.mesh is not None
                mesh = entry.mesh
                timings["parse"] = entry.seconds
            else:
                mesh = read(item)
                timings["parse"] = time.perf_counter() - t
            run = functools.partial(
                process,
                mesh,
                spec,
                store,
                item_key(job_id, index, fmt),
                timings,
                lambda p, stage: None,
                input_name=item["path"],
                gpu_min_faces=gpu_min_faces,
                with_stats_before=False,
                checksum=True,
            )
            try:
                fields = run()
            except MemoryError:
                # out of GPU (or host) memory: on a GPU shared by several workers, often the
                # others' pools of freed blocks. Give this process's back and try once more
                # before the item fails with resources.out_of_memory
                log.warning("chunk %s: item %d ran out of memory; once more", job_id, index)
                release_memory()
                fields = run()
            outcome: dict[str, Any] = {
                "state": "succeeded",
                "key": fields["result"]["key"],
                "bytes": fields["result"]["bytes"],
                "crc32": fields["result"]["crc32"],
                "input": {"vertices": mesh.n_vertices, "faces": mesh.n_faces},
                "stats": fields["stats_after"],
                "timings": {k: round(v, 6) for k, v in fields["timings"].items()},
                "backend": fields["backend"],
            }
            if sink:
                copy_out(outcome, item)
            ok += 1
        except Exception as exc:
            outcome = _failure(exc, time.perf_counter() - t, failed)
        on_item(index, outcome)
        done += 1
    log.info(
        "chunk %s: %d items run, %d succeeded, in %.2fs",
        job_id,
        done,
        ok,
        time.perf_counter() - t0,
    )
    return {
        "result": None,
        "timings": {"load": load_s, "items": time.perf_counter() - t0 - load_s},
        "reports": [{"op": "batch", "report": {"items": done, "succeeded": ok}}],
    }


def release_memory() -> None:
    """Give back what this process holds and no longer uses: Python's garbage and, where CuPy
    is loaded, its pools of freed device and pinned blocks (another worker on the same GPU may
    need them)."""
    import gc
    import sys

    gc.collect()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:  # CuPy without a device (a CPU-only worker on a GPU host): no pools
            pass


#: device memory a worker keeps cached between jobs (CuPy's pool of freed blocks); past it the
#: blocks go back to the driver, for the other workers on the same GPU
POOL_KEEP_BYTES = 2 << 30


def trim_pools() -> None:
    """After a job: when CuPy's pool holds more than :data:`POOL_KEEP_BYTES` of freed device
    blocks, give them back (:func:`release_memory`). A large job caches many GB there (a
    17.8M-face geodesic leaves 28 GiB in the pool), which an idle worker would otherwise keep
    from the others on its GPU; small jobs keep their blocks and their speed. Never raises:
    CuPy imported where no device is visible (``CUDA_VISIBLE_DEVICES=""``) fails on asking its
    pool, and the job is done by then."""
    import sys

    cupy = sys.modules.get("cupy")
    if cupy is None:
        return
    try:
        held = cupy.get_default_memory_pool().free_bytes()
    except Exception:  # CuPy without a device (a CPU-only worker on a GPU host): no pools
        return
    if held > POOL_KEEP_BYTES:
        release_memory()


def _failure(
    exc: Exception, seconds: float, failed: Callable[[Exception], Any] | None
) -> dict[str, Any]:
    """A failed item's outcome; raises ``exc`` again when ``failed(exc)`` says it must end the
    whole chunk."""
    if failed is not None and failed(exc):
        raise exc
    err = (
        exc
        if isinstance(exc, EngineError)
        else EngineError(exception=f"{exc.__class__.__name__}: {exc}"[:500])
    )
    if isinstance(exc, MemoryError):
        err = OutOfMemory()
    return {"state": "failed", "error": err.to_dict(), "timings": {"total": round(seconds, 6)}}


def _s3_member(store: Any, source: dict[str, Any], path: str, max_member: int) -> bytes:
    """A batch item's file, read from the batch's S3 input prefix."""
    from .queue.blobs import BlobNotFound

    key = source["prefix"] + path
    try:
        data: bytes = store.get_object(source["bucket"], key, max_member)
    except BlobNotFound:
        raise InputError(
            "the item's object is no longer under the batch's S3 prefix",
            code="batch.s3_object_missing",
            key=key,
        ) from None
    except ValueError:
        raise InputError(
            "the file is larger than a batch's member may be",
            code="batch.member_too_large",
            limit=max_member,
        ) from None
    return data


def _warm_up_mesh() -> TriMesh:
    """A torus (closed, genus 1) beside an open grid (a boundary loop): about 2,600 faces that
    take every branch of the statistics."""
    n = 32
    u, v = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    a, b = 2 * np.pi * u.ravel() / n, 2 * np.pi * v.ravel() / n
    torus = np.stack([(2 + np.cos(b)) * np.cos(a), (2 + np.cos(b)) * np.sin(a), np.sin(b)], 1)
    i, j = u.ravel(), v.ravel()
    q = [i * n + j, ((i + 1) % n) * n + j, ((i + 1) % n) * n + (j + 1) % n, i * n + (j + 1) % n]
    tf = np.concatenate([np.stack([q[0], q[1], q[2]], 1), np.stack([q[0], q[2], q[3]], 1)])
    m = 10
    gu, gv = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    grid = np.stack([gu.ravel() + 5.0, gv.ravel() * 1.0, np.zeros(m * m)], 1)
    k = (gu[:-1, :-1] * m + gv[:-1, :-1]).ravel()
    gf = np.concatenate([np.stack([k, k + m, k + m + 1], 1), np.stack([k, k + m + 1, k + 1], 1)])
    V = np.concatenate([torus, grid]).astype(np.float32)
    F = np.concatenate([tf, gf + n * n]).astype(np.int32)
    return TriMesh(V, F)


#: what a batch of a dataset typically runs (``bench/batch.py``): the warm-up runs it packed
WARM_UP_PACKED = ["weld", "repair", ("vertex_normals", {"weighting": "angle"})]


def warm_up(backend: str) -> float:
    """Run what every job runs (a transfer, the statistics, weld, normals, curvature, a PLY
    written to nowhere) once on ``backend``, and what a batch's pack runs (two meshes packed
    through weld, repair and normals, each member's statistics taken from the pack), so that
    the first real job or batch chunk on this process does not pay for loading and compiling
    kernels (on a GPU, up to half a second per process even with the kernel cache on disk; many
    seconds where it is empty: the first pack of a batch took 9.1 s cold, 0.3 s warm, H100).
    Seconds taken."""
    from .engine.packing import run_packed

    t = time.perf_counter()
    mesh = _warm_up_mesh().to(backend)
    mesh_stats(mesh)
    out = run_pipeline(
        mesh,
        ["weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"],
        device="gpu" if backend == "cupy" else "cpu",
    ).mesh
    mesh_stats(out)
    for _ in serialize_chunks(out, "ply", None):
        pass
    packed = run_packed(
        [mesh, mesh], parse_pipeline(WARM_UP_PACKED), measure=False, host=True, stats=True
    )
    sync(out)
    if packed.alone or len(packed.stats) != 2:  # the warm-up mesh is clean: never
        raise RuntimeError("the packed warm-up left a member to run alone")
    return time.perf_counter() - t
