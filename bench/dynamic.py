"""``python -m bench.dynamic``: speed of the topology-changing operations at millions of faces.

For each size (the Stanford bunny welded and midpoint-subdivided, as ``python -m bench`` makes its
meshes): ``decimate`` to 10 % and ``isotropic_remesh`` (5 iterations, L = the input's mean edge
length, feature angle 45°) on the GPU, timed as a whole operation from host arrays to host arrays
(upload, topology, every round, download; the median of ``--repeat`` runs, each listed, after one
untimed run of that size: kernels compiled and the memory pool grown as a worker's is after its
first job of the size), against the CPU libraries on the same host: fast-simplification and pyfqmr
for decimation (``bench.decimate_quality``'s tools), gpytoolbox's ``remesh_botsch`` for remeshing
(``bench.remesh_quality``'s). A library is timed only up to ``--lib-max-faces``; our NumPy twin up
to ``--twin-max-faces``. Every output's face count and, for remeshing, its quality figures are
printed beside the time, so a fast wrong answer shows. Writes JSON under ``$OUT`` (or ``--out``)
and prints a Markdown table last.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.decimate_quality import tools as decimators
from bench.meshes import bench_mesh
from bench.remesh_quality import REMESHERS, mean_edge_length, measure

ROOT = Path(__file__).resolve().parent.parent
ITERATIONS, FEATURE_ANGLE, RATIO = 5, 45.0, 0.1


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def remeshers(device: str) -> dict[str, Any]:
    """name -> fn(V, F, L) for our remesher on ``device`` and each library remesher."""
    from bench import remesh_quality

    def ours(V: np.ndarray, F: np.ndarray, L: float) -> Any:
        remesh_quality.DEVICE["name"] = device
        return remesh_quality.tessera(V, F, L, ITERATIONS, FEATURE_ANGLE)

    out = {f"tessera ({device})": ours}
    for name, fn in REMESHERS.items():
        if name != "tessera":
            out[name] = lambda V, F, L, fn=fn: fn(V, F, L, ITERATIONS, FEATURE_ANGLE)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.dynamic", description=__doc__)
    ap.add_argument("--sizes", default="1e6,4e6,16e6", help="minimum face counts")
    ap.add_argument("--ops", default="decimate,isotropic_remesh")
    ap.add_argument("--repeat", type=int, default=3, help="GPU runs per size (median)")
    ap.add_argument("--lib-max-faces", default="5e6", help="largest input a CPU library gets")
    ap.add_argument("--twin-max-faces", default="0", help="largest input the NumPy twin gets")
    ap.add_argument("--device", default="gpu", choices=["cpu", "gpu"])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    from tests.conftest import MESHES

    lib_max, twin_max = int(float(a.lib_max_faces)), int(float(a.twin_max_faces))
    ops = [o for o in a.ops.split(",") if o]
    rows: list[dict[str, Any]] = []
    warm: set[tuple[str, int]] = set()
    # per op: name -> fn(V, F, arg), and whether arg is the ratio or the target edge length
    decimate_tools = {
        k.replace("tessera decimate", "tessera"): fn for k, fn in decimators(a.device).items()
    }
    decimate_tools["tessera (NumPy twin)"] = decimators("cpu")["tessera decimate (cpu)"]
    remesh_tools = remeshers(a.device)
    remesh_tools["tessera (NumPy twin)"] = remeshers("cpu")["tessera (cpu)"]
    for size in [int(float(s)) for s in a.sizes.split(",") if s]:
        mesh = bench_mesh(MESHES / "stanford-bunny.obj", size)
        V = np.asarray(mesh.V, dtype=np.float64)
        F = np.asarray(mesh.F, dtype=np.int64)
        L = mean_edge_length(V, F)
        for op in ops:
            tools, arg = (decimate_tools, RATIO) if op == "decimate" else (remesh_tools, L)
            for tool, fn in tools.items():
                ours = tool.startswith("tessera")
                is_twin = "twin" in tool
                if (is_twin and len(F) > twin_max) or (not ours and len(F) > lib_max):
                    continue
                try:
                    if ours and not is_twin:
                        if (op, len(F)) not in warm:
                            # kernel compilation, and the memory pool grown to this size (as a
                            # worker's pool is after its first job of that size)
                            timed(fn, V, F, arg)
                            warm.add((op, len(F)))
                        runs = [timed(fn, V, F, arg) for _ in range(a.repeat)]
                        each = [round(r[0], 4) for r in runs]
                        secs = float(np.median(each))
                        out = runs[-1][1]
                    else:
                        secs, out = timed(fn, V, F, arg)
                except ImportError as exc:
                    rows.append({"op": op, "faces": len(F), "tool": tool, "skipped": str(exc)})
                    continue
                Vo, Fo = (np.asarray(x) for x in out[:2])
                row = {"op": op, "faces": int(len(F)), "tool": tool, "seconds": secs}
                if ours and not is_twin:
                    row["runs"] = each
                row["out_faces"] = int(len(Fo))
                if op == "isotropic_remesh":
                    q = measure(Vo, Fo, L)
                    row.update({k: q[k] for k in ("edge_length_cv", "min_angle", "valence_6")})
                rows.append(row)
                print(json.dumps(row), flush=True)
    out_dir = Path(os.environ.get("OUT", a.out))
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"commit": os.environ.get("TESSERA_COMMIT", "unknown"), "device": a.device}
    # one file per set of operations: a decimation run and a remeshing run keep both their rows
    name = (
        "dynamic.json"
        if ops == ["decimate", "isotropic_remesh"]
        else f"dynamic-{'-'.join(ops)}.json"
    )
    (out_dir / name).write_text(json.dumps(report | {"rows": rows}, indent=1))
    print(markdown(rows))


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| op | faces | implementation | seconds | output faces | edge CV | min angle | "
        "valence 6 | ours faster by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ours = {
        (r["op"], r["faces"]): r["seconds"]
        for r in rows
        if r["tool"].startswith("tessera (g") and "seconds" in r
    }
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['op']} | {r['faces']} | {r['tool']} | skipped: {r['skipped']} |")
            continue
        mine = ours.get((r["op"], r["faces"]))
        speed = (
            f"{r['seconds'] / mine:.0f}×" if mine and not r["tool"].startswith("tessera (g") else ""
        )
        q = [f"{r[k]:.3f}" if k in r else "" for k in ("edge_length_cv", "min_angle", "valence_6")]
        lines.append(
            f"| {r['op']} | {r['faces']:,} | {r['tool']} | {r['seconds']:.3f} | "
            f"{r['out_faces']:,} | " + " | ".join(q) + f" | {speed} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
