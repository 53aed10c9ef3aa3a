"""``python -m bench.stats_cpu``: a job's host overhead on the CPU backend, step by step.

A job as the worker runs it: read the uploaded bytes (``load_bytes``), ``mesh_stats`` of the input
(``stats_before``), the pipeline ``weld, vertex_normals(weighting=angle), gaussian_curvature`` on
NumPy, ``mesh_stats`` of the result (``stats_after``) and a PLY serialize of the result with its
two attributes. The overhead is ``(stats_before + stats_after) / total``; the issue asks for at
most a quarter.

Inputs: the bunny midpoint-subdivided to at least ``--faces`` faces (made in memory and turned
into binary PLY bytes, as ``bench.meshes.bench_mesh`` makes them), PLY or OBJ files named with
``--files`` and, by default, ``rx-bumpy-cube.obj`` and ``stanford-bunny.obj`` of the shared meshes.
Each input runs ``--repeat`` times from its bytes (a fresh mesh, no cached topology); the table
gives the median of each column. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bench.meshes import bench_mesh
from workers.engine.io import load_bytes, serialize_chunks
from workers.engine.ops.stats import mesh_stats
from workers.engine.pipeline import run_pipeline

PIPELINE: list[Any] = ["weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"]
COLUMNS = [
    "load",
    "stats_before",
    "weld",
    "vertex_normals",
    "gaussian_curvature",
    "stats_after",
    "serialize",
    "total",
]


def meshes_dir() -> Path:
    return Path(os.environ.get("TESSERA_MESHES", Path(__file__).parents[1] / "../shared/meshes"))


def ply_bytes(mesh: Any) -> bytes:
    return b"".join(serialize_chunks(mesh, "ply", None))


def one_job(data: bytes, name: str) -> dict[str, float]:
    """Seconds of each part of one job on ``data`` (a file named ``name``)."""
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    mesh = load_bytes(data, name)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mesh_stats(mesh)
    t["stats_before"] = time.perf_counter() - t0
    res = run_pipeline(mesh, PIPELINE, device="cpu")
    for key, dt in res.timings.items():
        t[key.split(":", 1)[-1]] = dt
    t0 = time.perf_counter()
    mesh_stats(res.mesh)
    t["stats_after"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    attrs = ["vertex_normals", "gaussian_curvature"]
    sum(len(c) for c in serialize_chunks(res.mesh, "ply", attrs))
    t["serialize"] = time.perf_counter() - t0
    t["total"] = sum(t[c] for c in COLUMNS[:-1])
    return t


def fmt(x: float) -> str:
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--faces", default="1e6,4e6", help="bunny sizes, comma-separated ('' none)")
    ap.add_argument("--files", nargs="*", default=None, help="PLY/OBJ files (default: 2 shared)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    inputs: list[tuple[str, str, bytes]] = []  # (label, file name, bytes)
    files = args.files
    if files is None:
        files = [str(meshes_dir() / n) for n in ("rx-bumpy-cube.obj", "stanford-bunny.obj")]
    for f in files:
        inputs.append((Path(f).name, Path(f).name, Path(f).read_bytes()))
    bunny = meshes_dir() / "stanford-bunny.obj"
    for s in [s for s in args.faces.split(",") if s]:
        m = bench_mesh(bunny, int(float(s)))
        inputs.append((f"bunny {m.n_faces / 1e6:.1f}M faces", "x.ply", ply_bytes(m)))

    print("| input | " + " | ".join(COLUMNS) + " | overhead |")
    print("|---" * (len(COLUMNS) + 2) + "|")
    for label, name, data in inputs:
        runs = [one_job(data, name) for _ in range(args.repeat)]
        med = {c: statistics.median(r[c] for r in runs) for c in COLUMNS}
        over = statistics.median((r["stats_before"] + r["stats_after"]) / r["total"] for r in runs)
        cells = " | ".join(fmt(med[c]) for c in COLUMNS)
        print(f"| {label} | {cells} | {over:.0%} |", flush=True)


if __name__ == "__main__":
    main()
