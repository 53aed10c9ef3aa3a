"""``python -m bench.delaunay``: ``delaunay_flip`` with the flips inside patches (one kernel, a
block per patch) against rounds over the whole mesh only, the same device, the same meshes.

The bunny subdivided to each size (``bench.meshes.bench_mesh``), its vertices then moved by up to
``--jitter`` of the mean edge length in a seeded random direction (a subdivided mesh is nearly as
Delaunay as its input; the jitter makes work). Per size and path: one warm-up run (kernel
compilation, the memory pool grown), then ``--repeat`` runs, the median, the device synchronised
at the end of each; flips, flips inside patches, rounds and the edges left non-Delaunay. Both
paths end with no flippable edge left (``unresolved`` 0) on these meshes.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np


def jittered(mesh: Any, jitter: float, seed: int = 0) -> Any:
    from workers.engine import TriMesh

    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    L = float(np.linalg.norm(V[F[:, 0]] - V[F[:, 1]], axis=1).mean())
    rng = np.random.default_rng(seed)
    d = rng.normal(size=V.shape)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    V = V + jitter * L * rng.random((len(V), 1)) * d
    return TriMesh(V.astype(np.float32), F.astype(np.int32))


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.delaunay", description=__doc__)
    ap.add_argument("--sizes", default="1e6,4e6,16e6", help="minimum face counts")
    ap.add_argument("--jitter", type=float, default=0.3, help="of the mean edge length")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="gpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    from bench.meshes import bench_mesh
    from tests.conftest import MESHES
    from workers.engine.ops.delaunay_flip import Params, delaunay

    backend = "cupy" if a.device == "gpu" else "numpy"

    def sync() -> None:
        if backend == "cupy":
            import cupy as cp

            cp.cuda.Device().synchronize()

    rows: list[dict[str, Any]] = []
    for size in [int(float(s)) for s in a.sizes.split(",") if s]:
        mesh = jittered(bench_mesh(MESHES / "stanford-bunny.obj", size), a.jitter).to(backend)
        for patched in (True, False):
            times = []
            for i in range(a.repeat + 1):
                sync()
                t = time.perf_counter()
                res = delaunay(mesh, Params(), patched=patched)
                sync()
                if i:
                    times.append(round(time.perf_counter() - t, 4))
            r = res.report
            row = {
                "faces": mesh.n_faces,
                "path": "patches, then rounds" if patched else "rounds only",
                "seconds": float(np.median(times)),
                "runs": times,
                "non_delaunay_before": r["non_delaunay_before"],
                "flips": r["flips"],
                "patch_flips": r["patch_flips"],
                "patch_rounds": r["patch_rounds"],
                "rounds": r["rounds"],
                "non_delaunay_after": r["non_delaunay_after"],
                "unresolved": r["unresolved"],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        "| faces | path | seconds (median) | non-Delaunay before | flips | in patches | "
        "patch rounds | rounds after | left |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['faces']:,} | {r['path']} | {r['seconds']:.3f} | {r['non_delaunay_before']:,} "
            f"| {r['flips']:,} | {r['patch_flips']:,} | {r['patch_rounds']} | {r['rounds']} "
            f"| {r['non_delaunay_after']:,} |"
        )


if __name__ == "__main__":
    main()
