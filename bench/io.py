"""``python -m bench.io``: how fast mesh files are read and written, in GB/s of file bytes.

The input is a real mesh (the Stanford bunny, welded) midpoint-subdivided to ``--faces``, with
vertex normals and one scalar per vertex (what a job usually writes). For each binary format:
``serialize`` (the whole file as one ``bytes``, what the library's ``serialize`` returns), the
streamed write a job and ``save_path`` do (pieces written to a file as they are made, the file
flushed to the page cache, not to the disk), and ``load_bytes`` of the file's bytes. Best of
``--repeat`` runs, beside the machine's copy rate for a 256 MiB buffer.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.meshes import bench_mesh
from workers.engine.io import load_bytes, serialize, serialize_chunks

FORMATS = ("ply", "stl", "glb", "obj")


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def streamed(mesh: Any, fmt: str, path: Path) -> None:
    with open(path, "wb") as fh:
        fh.writelines(serialize_chunks(mesh, fmt))


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.io", description=__doc__)
    ap.add_argument("--faces", type=float, default=4e6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--mesh", default="stanford-bunny.obj")
    args = ap.parse_args()
    meshes = Path(os.environ.get("TESSERA_MESHES", Path(__file__).parents[2] / "shared/meshes"))
    mesh = bench_mesh(meshes / args.mesh, int(args.faces))
    rng = np.random.default_rng(0)
    n = mesh.n_vertices
    normals = rng.standard_normal((n, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    mesh = mesh.with_attrs(
        vertex={"vertex_normals": normals, "curvature": rng.random(n, dtype=np.float32)}
    )
    big = np.ones(1 << 28, dtype=np.uint8)
    copy_gbs = 2 * big.nbytes / best(big.copy, args.repeat) / 1e9
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs; {mesh.n_faces:,} faces, {n:,} vertices; "
        f"copy {copy_gbs:.1f} GB/s (read + write)\n"
    )
    print("| format | MB | serialize | GB/s | streamed to a file | GB/s | read | GB/s |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            data = serialize(mesh, fmt)
            size = len(data)
            t_ser = best(lambda fmt=fmt: serialize(mesh, fmt), args.repeat)
            path = Path(tmp) / f"m.{fmt}"
            t_str = best(lambda fmt=fmt, path=path: streamed(mesh, fmt, path), args.repeat)
            assert path.read_bytes() == data
            t_read = best(lambda fmt=fmt, data=data: load_bytes(data, f"m.{fmt}"), args.repeat)
            print(
                f"| {fmt} | {size / 1e6:.0f} | {t_ser * 1e3:.0f} ms | {size / t_ser / 1e9:.2f} | "
                f"{t_str * 1e3:.0f} ms | {size / t_str / 1e9:.2f} | {t_read * 1e3:.0f} ms | "
                f"{size / t_read / 1e9:.2f} |"
            )


if __name__ == "__main__":
    main()
