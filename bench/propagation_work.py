"""``python -m bench.propagation_work`` (CPU): how much work each propagation schedule does, on
the bunny midpoint-subdivided to ``--faces``, from one source: iterations, and updates per vertex
(the vertices an iteration updates, summed over the iterations, over the vertex count), for the
plain Jacobi iteration (``band=None``) and the frontier's bands of ``--bands`` median side
lengths, with the largest and mean relative difference from the Jacobi fixed point. The loop is
the twin's single-source loop (``propagation._propagate_one``), which counts them."""

import argparse
import time
from pathlib import Path

import numpy as np

from bench.meshes import bench_mesh
from tests.conftest import MESHES
from workers.engine import propagation as P


def run(mesh, src: int, delta: float) -> tuple[np.ndarray, int, int]:
    """The twin's loop (``_propagate_one``), the targets of every iteration counted."""
    updates: list[int] = []
    d, it = P._propagate_one(mesh, P.initial(np, mesh.n_vertices, [src]), delta, updates)
    return d, it, sum(updates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faces", type=float, default=2.5e5)
    ap.add_argument("--bands", default="1,2,4,8")
    args = ap.parse_args()
    mesh = bench_mesh(Path(MESHES) / "stanford-bunny.obj", int(args.faces))
    n = mesh.n_vertices
    src = 11611
    print(f"{mesh.n_faces} faces, {n} vertices, source {src}\n")
    print("| schedule | iterations | updates per vertex | max / mean rel. diff. to Jacobi | s |")
    print("|---|---|---|---|---|")
    t = time.perf_counter()
    ref, it, up = run(mesh, src, np.inf)
    print(f"| Jacobi (band=None) | {it} | {up / n:.1f} | 0 | {time.perf_counter() - t:.1f} |")
    ok = np.isfinite(ref) & (ref > 0)
    for band in (float(x) for x in args.bands.split(",")):
        t = time.perf_counter()
        d, it, up = run(mesh, src, P.band_width(mesh, band))
        rel = np.abs(d - ref)[ok] / ref[ok]
        print(
            f"| band {band:g} | {it} | {up / n:.1f} | {rel.max():.1e} / {rel.mean():.1e} | "
            f"{time.perf_counter() - t:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
