"""``python -m bench.propagation_schedules`` (GPU host): geodesic propagation from one source on
the bunny midpoint-subdivided to ``--sizes`` faces, in file order and shuffled, by each GPU
schedule: the frontier with its band (the op's path), the frontier without a band (the plain
Jacobi iteration, vertex by vertex), and the patched Jacobi kernel with its active set (the
op's path before). Each figure is the function alone with the mesh, its topology and patches on
the device, the second of two runs (one where the first took over 5 s). The set-up the frontier
repeats on every call (the vertex-face CSR, the virtual corners, the band) is timed apart, and
``--bands`` times other band widths. Each row gives the largest relative difference of its
distances from the op's; the two Jacobi schedules must agree bit for bit."""

import argparse
import time

import cupy as cp
import numpy as np

from bench.meshes import bench_mesh
from tests.conftest import MESHES
from workers.engine import propagation as P
from workers.engine.paths import cached_patches


def run(fn):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    out = fn()
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t
    if first > 5.0:
        return first, out
    t = time.perf_counter()
    out = fn()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e6,4e6,16e6")
    ap.add_argument(
        "--jacobi-max-faces",
        type=float,
        default=5e6,
        help="largest shuffled mesh for the two Jacobi schedules (in file order: all)",
    )
    ap.add_argument("--bands", default="", help="other band widths to time (comma-separated)")
    args = ap.parse_args()
    bands = [float(b) for b in args.bands.split(",") if b]
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("\n| order | faces | schedule | iterations | seconds | max rel. diff. to the frontier |")
    print("|---|---|---|---|---|---|")
    for size in (float(x) for x in args.sizes.split(",")):
        for shuffle in (False, True):
            schedules(size, shuffle, args.jacobi_max_faces, bands)


def schedules(size: float, shuffle: bool, jacobi_max_faces: float, bands: list[float]) -> None:
    mesh = bench_mesh(MESHES / "stanford-bunny.obj", int(size), shuffle=shuffle, backend="cupy")
    src = np.array([0 if shuffle else 11611])
    row = f"| {'shuffled' if shuffle else 'file'} | {mesh.n_faces} |"
    mesh.topology.vf()
    sec, _ = run(lambda: (P.device_corners(mesh), P.band_width(mesh, P.BAND)))
    print(f"{row} frontier set-up (virtual corners, dependents, band) | - | {sec:.3f} | - |")
    sec, (ref, it) = run(lambda: P.propagate_frontier(mesh, src))
    print(f"{row} frontier, band {P.BAND:g} (the op's path) | {it} | {sec:.3f} | 0 |", flush=True)
    fin = cp.isfinite(ref) & (ref > 0)

    def diff(d):
        return float((cp.abs(d - ref)[fin] / ref[fin]).max())

    for b in bands:
        sec, (d, it) = run(lambda b=b: P.propagate_frontier(mesh, src, band=b))
        print(f"{row} frontier, band {b:g} | {it} | {sec:.3f} | {diff(d):.2e} |", flush=True)
    if mesh.n_faces > jacobi_max_faces and shuffle:
        return
    sec, (jac, it) = run(lambda: P.propagate_frontier(mesh, src, band=None))
    print(f"{row} frontier, no band (Jacobi) | {it} | {sec:.3f} | {diff(jac):.2e} |", flush=True)
    patches = cached_patches(mesh, 512)
    sec, (d, it, ran) = run(lambda: P.propagate_patched(mesh, patches, src))
    assert bool(cp.array_equal(d, jac)), "patched Jacobi differs from the frontier's"
    what = f"patched Jacobi, active set ({ran} patch runs)"
    print(f"{row} {what} | {it} | {sec:.3f} | {diff(d):.2e} |", flush=True)


if __name__ == "__main__":
    main()
