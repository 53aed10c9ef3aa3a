"""A batch chunk's items run packed (:mod:`.engine.packing`): read one after another, the
small meshes of one backend and attribute set packed together, each step run once per pack,
the members' statistics taken from the pack (``engine.part_stats``), each member's file written.

Each item's outcome is what :func:`~.runner.execute_chunk` records for it run alone, with the
same bytes written (``tests/workers/test_packed.py``). What a pack cannot run goes back to the
caller to run alone: items whose mesh is too large to gain from a pack or that a pack cannot
hold (``packing.packable``), members a step leaves with no faces (alone, they fail with their
own error), every member of a pack whose run raised, and the textured members whose corners a
step could only find again on the surface (``packing.PackingError.members``; the others pack
again).

A death of the compute process inside a pack charges no item (none is in flight: the
supervisor counts deaths per item) but uses one of the chunk's attempts; the chunk's next
attempt runs one by one (``execute_chunk(pack=False)``) and finds the item as before, so an item
that kills the process needs one attempt more than unpacked (with ``max_attempts`` 3, its second
death ends the chunk instead of failing it alone).

When a pack pays (measured, ``bench/batch.py`` and :mod:`.engine.packing`): on the CPU only for
meshes of a few hundred faces, where each step's fixed cost is most of its time (32 cubes of 12
faces: 4x); from about a thousand faces NumPy's own work dominates and a pack is no faster
(repair's sorts grow faster than linearly), so such items run alone. On the GPU a step's fixed
cost (launches, syncs) is paid once per pack instead of per mesh, up to ``GPU_PACK_FACES``.
Threads fetch the items' bytes and write the results only where they wait on a network (a
batch on S3); the items are parsed on the calling thread. The readers hold the GIL for much of
their work, and parsing on threads was slower than parsing one item after another, more so the
more cores the host has: a chunk of 250 meshes of 1k to 70k faces took 5.4 s with one thread and
19.0 s with eight on the 16-core H100 host (``python -m bench.chunk``, bench/RESULTS.md); 160
files took 1.6 s on one thread and 2.4 s on eight on the 2-core development machine. Reading in
parallel takes processes: several workers per GPU (``tessera up --workers N``: each worker's
compute process reads its own chunks, all of them share the GPU).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .engine.backend import choose
from .engine.mesh import TriMesh
from .engine.ops import Packing
from .engine.packing import PackingError, packable, run_packed, signature
from .engine.pipeline import Step, starts_with_source
from .jobspec import JobSpec
from .queue.blobs import BlobStore, item_key

log = logging.getLogger(__name__)

#: NumPy: meshes under this many faces are packed (above it a pack is no faster, see above)
CPU_PACK_FACES = 1_000
#: NumPy: faces in one pack at most
CPU_PACK_BUDGET = 200_000
#: CuPy: faces in one pack at most (its arrays and the steps' temporaries, about 1 KB a face,
#: stay far under a GPU's memory); a mesh over a quarter of it runs alone
GPU_PACK_FACES = 4_000_000
#: threads that fetch the items' bytes and write their results where those wait on a network
#: (S3); elsewhere one (see the module docstring)
IO_THREADS = 8


def packs_pipeline(steps: list[Step]) -> bool:
    """Whether a pack can run these steps: each one ``local``, ``keyed`` or ``measure``
    (skipped: a batch keeps only the mesh and its statistics). A ``single`` step would run
    member by member inside the pack, which saves nothing and would hide which item killed a
    process or was refused."""
    if not steps or starts_with_source(steps):
        return False
    return all(s.op.packing_for(s.params) is not Packing.single for s in steps)


def _packs_for(mesh: TriMesh, backend: str) -> bool:
    if not packable(mesh):
        return False
    if backend == "numpy":
        return mesh.n_faces < CPU_PACK_FACES
    return mesh.n_faces <= GPU_PACK_FACES // 4


@dataclass
class Parsed:
    """An item read and parsed (or the error that stopped it), with the seconds it took."""

    item: dict[str, Any]
    mesh: TriMesh | None
    error: Exception | None
    seconds: float


@dataclass
class PackedItems:
    """What :func:`run_packs` did: the outcomes of the items it ended (index -> outcome) and
    the parsed items it leaves to run alone."""

    outcomes: dict[int, dict[str, Any]] = field(default_factory=dict)
    alone: list[Parsed] = field(default_factory=list)


def parse_items(
    items: list[dict[str, Any]],
    fetch: Callable[[dict[str, Any]], bytes],
    parse: Callable[[dict[str, Any], bytes], TriMesh],
    threads: int,
) -> list[Parsed]:
    """Every item's bytes fetched (``fetch(item)``, on ``threads`` threads where more than one)
    and parsed (``parse(item, data)``, on the calling thread), in the items' order."""

    def got(item: dict[str, Any]) -> tuple[bytes | None, Exception | None, float]:
        t = time.perf_counter()
        try:
            return fetch(item), None, time.perf_counter() - t
        except Exception as exc:
            return None, exc, time.perf_counter() - t

    pool = ThreadPoolExecutor(threads) if threads > 1 and len(items) > 1 else None
    # one after another without a pool, each parsed as it comes
    fetched: Any = pool.map(got, items) if pool is not None else map(got, items)
    out = []
    try:
        for item, (data, error, seconds) in zip(items, fetched, strict=True):
            t = time.perf_counter()
            mesh = None
            if error is None:
                assert data is not None
                try:
                    mesh = parse(item, data)
                except Exception as exc:
                    error = exc
            out.append(Parsed(item, mesh, error, seconds + time.perf_counter() - t))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return out


def run_packs(
    job_id: str,
    spec: JobSpec,
    steps: list[Step],
    store: BlobStore,
    parsed: list[Parsed],
    *,
    gpu_min_faces: int,
    threads: int = 1,
    failed: Callable[[Exception], Any] | None = None,
) -> PackedItems:
    """Pack the parsed items that can be (the others, and those whose parse failed, are left
    alone), run ``steps`` over each pack and write each member at :func:`item_key`."""
    res = PackedItems()
    groups: dict[tuple[Any, ...], list[tuple[Parsed, TriMesh, str]]] = {}
    for p in parsed:
        if p.mesh is None:
            res.alone.append(p)
            continue
        backend, _ = choose(spec.device, p.mesh.n_faces, gpu_min_faces)
        if not _packs_for(p.mesh, backend):
            res.alone.append(p)
            continue
        groups.setdefault((backend, *signature(p.mesh)[1:]), []).append((p, p.mesh, backend))
    for members in groups.values():
        budget = CPU_PACK_BUDGET if members[0][2] == "numpy" else GPU_PACK_FACES
        pack: list[tuple[Parsed, TriMesh, str]] = []
        faces = 0
        for m in members + [None]:  # type: ignore[list-item]
            if m is not None and (not pack or faces + m[1].n_faces <= budget):
                pack.append(m)
                faces += m[1].n_faces
                continue
            _run_pack(job_id, spec, steps, store, pack, res, threads, failed)
            if m is not None:
                pack, faces = [m], m[1].n_faces
    return res


def _run_pack(
    job_id: str,
    spec: JobSpec,
    steps: list[Step],
    store: BlobStore,
    pack: list[tuple[Parsed, TriMesh, str]],
    res: PackedItems,
    threads: int,
    failed: Callable[[Exception], Any] | None,
    retry: bool = True,
) -> None:
    backend = pack[0][2]
    t0 = time.perf_counter()
    try:
        meshes = [m for _, m, _ in pack]
        run = run_packed(meshes, steps, measure=False, host=True, backend=backend, stats=True)
    except Exception as exc:
        if failed is not None and failed(exc):
            raise
        named = exc.members if isinstance(exc, PackingError) else None
        if named and len(named) < len(pack) and retry:
            # the members a step rebuilt run alone; the others pack again, once
            log.info(
                "chunk %s: %d of a pack of %d run alone (%s)", job_id, len(named), len(pack), exc
            )
            res.alone.extend(pack[j][0] for j in named)
            rest = [m for j, m in enumerate(pack) if j not in set(named)]
            _run_pack(job_id, spec, steps, store, rest, res, threads, failed, retry=False)
            return
        log.warning(
            "chunk %s: a pack of %d failed (%s); its items run alone", job_id, len(pack), exc
        )
        if isinstance(exc, MemoryError):  # room for the items alone
            from .runner import release_memory

            release_memory()
        res.alone.extend(p for p, _, _ in pack)
        return
    total_faces = sum(m.n_faces for _, m, _ in pack)
    fmt = spec.output.format

    from .runner import Crc32, store_mesh

    def write(j: int) -> dict[str, Any] | None:
        """The member's outcome; None when writing it failed (alone, it fails with its own
        error)."""
        p, mesh, _ = pack[j]
        out = run.meshes[j]
        assert out is not None
        share = mesh.n_faces / total_faces  # of each packed step's time
        timings = {"parse": p.seconds, **{k: v * share for k, v in run.timings.items()}}
        stats = run.stats[j]
        t = time.perf_counter()
        key = item_key(job_id, int(p.item["index"]), fmt)
        try:
            crc = Crc32()
            n_bytes = store_mesh(out, spec, store, key, crc)
        except Exception:
            return None
        timings["serialize"] = time.perf_counter() - t
        return {
            "state": "succeeded",
            "key": key,
            "bytes": n_bytes,
            "crc32": crc.value,
            "input": {"vertices": mesh.n_vertices, "faces": mesh.n_faces},
            "stats": stats,
            "timings": {k: round(v, 6) for k, v in timings.items()},
            "backend": backend,
        }

    todo = [j for j in range(len(pack)) if run.meshes[j] is not None]
    res.alone.extend(pack[j][0] for j in run.alone)
    if threads <= 1 or len(todo) <= 1:
        outs = [write(j) for j in todo]
    else:
        with ThreadPoolExecutor(threads) as pool:
            outs = list(pool.map(write, todo))
    for j, o in zip(todo, outs, strict=True):
        if o is None:
            res.alone.append(pack[j][0])
        else:
            res.outcomes[int(pack[j][0].item["index"])] = o
    log.info(
        "chunk %s: a pack of %d items (%d faces) on %s in %.3fs",
        job_id,
        len(pack),
        total_faces,
        backend,
        time.perf_counter() - t0,
    )
