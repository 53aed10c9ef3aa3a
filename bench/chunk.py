"""``python -m bench.chunk``: one batch chunk run in this process, as a worker's compute process
runs it (:func:`workers.runner.execute_chunk`), timed for several ``io_threads`` settings.

The chunk holds ``--items`` copies of the shared meshes of 1k to 70k faces (in turn, as
``bench.batch`` builds its folder) and runs ``bench.batch``'s pipeline (weld + repair +
vertex_normals + stats, PLY out) into a private blob store. A first small chunk warms the
backend. Prints one line per run: seconds, items per second, and the workers' seconds per stage
summed over the items.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from bench.batch import PIPELINE, SOURCES
from bench.service import MESHES


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.chunk", description=__doc__)
    ap.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto")
    ap.add_argument("--items", type=int, default=250)
    ap.add_argument("--threads", default="1,8", help="io_threads settings, in turn")
    args = ap.parse_args()

    from workers.queue.blobs import LocalBlobStore, members_key, pack_members
    from workers.runner import execute_chunk

    names = sorted(k for k, f in SOURCES.items() if 1_000 <= f <= 70_000)
    store = LocalBlobStore(tempfile.mkdtemp(prefix="tessera-chunk-bench-"))
    items = [{"index": i, "path": f"{i:06d}-{names[i % len(names)]}"} for i in range(args.items)]
    members = [(i, (MESHES / names[i % len(names)]).read_bytes()) for i in range(args.items)]
    store.put_chunks(members_key("bench"), pack_members(members))
    spec: dict[str, Any] = {
        "pipeline": [{"op": p} if isinstance(p, str) else {"op": p[0], **p[1]} for p in PIPELINE],
        "output": {"format": "ply"},
        "device": args.device,
    }
    execute_chunk("bench", spec, store, items[:16], lambda i, o: None)  # warm-up
    for threads in (int(x) for x in args.threads.split(",")):
        out: dict[int, dict[str, Any]] = {}
        t = time.perf_counter()
        execute_chunk("bench", spec, store, items, out.__setitem__, io_threads=threads)
        dt = time.perf_counter() - t
        ok = sum(o["state"] == "succeeded" for o in out.values())
        stages: dict[str, float] = {}
        for o in out.values():
            for k, v in (o.get("timings") or {}).items():
                stages[k] = stages.get(k, 0.0) + v
        top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(stages.items(), key=lambda kv: -kv[1]))
        print(
            f"{args.device}, {args.items} items, io_threads {threads}: {dt:.2f} s, "
            f"{args.items / dt:.1f} items/s, {ok} succeeded; stages (s): {top}",
            flush=True,
        )


if __name__ == "__main__":
    main()
