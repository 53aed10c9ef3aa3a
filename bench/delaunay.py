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
    ap.add_argument(
        "--profile",
        default="",
        help="GPU: instead, the stages of one run per set of patch passes, e.g. '512;512,384;'",
    )
    a = ap.parse_args()
    from bench.meshes import bench_mesh
    from tests.conftest import MESHES
    from workers.engine.ops.delaunay_flip import Params, delaunay

    backend = "cupy" if a.device == "gpu" else "numpy"

    def sync() -> None:
        if backend == "cupy":
            import cupy as cp

            cp.cuda.Device().synchronize()

    if a.profile:
        for size in [int(float(s)) for s in a.sizes.split(",") if s]:
            mesh = jittered(bench_mesh(MESHES / "stanford-bunny.obj", size), a.jitter)
            mesh = mesh.to(backend)
            for spec in a.profile.split(";"):
                passes = tuple(int(x) for x in spec.split(",") if x)
                for _ in range(2):  # the first compiles and grows the pool
                    stages = profile(mesh, passes)
                total = sum(
                    v
                    for k, v in stages.items()
                    if k not in ("rounds",) and not k.startswith("flips")
                )
                print(
                    json.dumps({"faces": mesh.n_faces, "passes": passes, "total": total} | stages),
                    flush=True,
                )
        return
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


def profile(mesh: Any, sizes: tuple[int, ...]) -> dict[str, float]:
    """The op's stages, the device synchronised around each: patch passes of the given patch
    sizes (Morton patches, the sides, the kernel), then the rounds over the whole mesh."""
    import math

    import cupy as cp

    from workers.engine.dynamic._edges import edge_table, float_priority
    from workers.engine.dynamic.flip import (
        BOUNDARY,
        apply_flips,
        flip_quads,
        opposite_angle_sums,
        select_flips,
    )
    from workers.engine.dynamic.patched_flip import flip_in_patches, patch_sides
    from workers.engine.patches import morton_patches

    out: dict[str, float] = {}

    def stage(name: str, fn: Any, *args: Any) -> Any:
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        r = fn(*args)
        cp.cuda.Device().synchronize()
        out[name] = out.get(name, 0.0) + time.perf_counter() - t
        return r

    xp = cp
    V = mesh.V.astype(xp.float64)
    F = mesh.F.astype(xp.int64)
    n, m = mesh.n_vertices, mesh.n_faces
    limit = math.pi + 1e-9
    E = stage("edge table", edge_table, xp, F)
    for size in sizes:
        label, _, _, counts = stage(f"morton {size}", morton_patches, xp, mesh, size)
        P = stage(f"sides {size}", patch_sides, xp, F, E, label, int(counts.shape[0]), n, None)
        F, k, _ = stage(f"kernel {size}", flip_in_patches, xp, V, F, P, limit, 45.0)
        out[f"flips {size}"] = k
        E = stage("edge table", edge_table, xp, F)
    rounds = 0
    while True:
        Q = stage("quads", flip_quads, xp, V, F, E, 45.0, None)
        old, new = stage("sums", opposite_angle_sums, xp, V, Q)
        ok = (Q.reason != BOUNDARY) & (old > limit) & (Q.reason == 0) & (new < old)
        if int(ok.sum()) == 0 or rounds >= 100:
            break
        pr = float_priority(xp, old - math.pi, larger_first=True)
        acc = stage("select", select_flips, xp, Q, ok, pr, m, n)
        F = stage("apply", apply_flips, xp, F, Q, acc)
        E = stage("edge table", edge_table, xp, F)
        rounds += 1
    out["rounds"] = rounds
    return {k: round(v, 4) for k, v in out.items()}


if __name__ == "__main__":
    main()
