"""``python -m bench.patched``: the patched path against the global-memory kernels (GPU host).

For each size and element order (as subdivided, "sorted", and randomly shuffled): the time to
patch the mesh on the GPU (Lloyd, ribbons, local index spaces: ``patches.build_patches``), then
for every query and patched operation the patched kernel and its global-memory equivalent, with
the mesh, its topology and its patches on the device (CUDA events, median of repeats):

- queries: the patched kernel writing each element's answer (global ids) to a CSR, against
  copying the same answer out of the topology's precomputed global CSR (a lower bound for any
  global-memory query: it only reads the answer, computes nothing);
- vertex normals and Gaussian curvature: patched (VF in shared memory, one thread per vertex, no
  atomics) against the operations' global kernels (one thread per face, float atomics);
- uniform Laplacian step: patched (VV) against the same step over the global VV CSR;
- one-ring bilateral step: the same body (``BilateralBody``) on both paths;
- geodesic propagation from one source to convergence: patched with the active set against one
  thread per vertex over the global VF CSR every iteration.

Floor: bytes the kernel must move (inputs read once, outputs written once) ÷ copy bandwidth.
Writes ``bench/results/PATCHED.md`` (and into ``$OUT`` when set) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.__main__ import _cp, bandwidth, device_name, fmt_s, gpu_time
from bench.meshes import bench_mesh, shuffled
from workers.engine import patched_ops
from workers.engine.kernels.loader import load_kernel
from workers.engine.mesh import TriMesh
from workers.engine.ops import OPS
from workers.engine.ops.bilateral_denoise import vertex_normals64
from workers.engine.patches import build_patches
from workers.engine.propagation import propagate_global, propagate_patched
from workers.engine.queries import QUERIES, launch_patched, reference_query

ROOT = Path(__file__).resolve().parent.parent


def patching_time(mesh: TriMesh, size: int, method: str) -> tuple[float, Any]:
    cp = _cp()
    build_patches(mesh, size, method=method)  # warm-up: element-wise kernels compile once
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    patches = build_patches(mesh, size, method=method)
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t, patches


def patch_bytes(patches: Any) -> int:
    """Bytes of the patch structure a query kernel reads (local EV/FE, local→global maps)."""
    return int(
        2 * patches.local_ev.size
        + 2 * patches.local_fe.size
        + 4 * (patches.faces.size + patches.edges.size + patches.vertices.size)
    )


def query_rows(mesh: TriMesh, patches: Any, repeat: int, bw: float) -> list[dict[str, Any]]:
    cp = _cp()
    rows = []
    for q in QUERIES:
        off, ref = reference_query(mesh, q)
        off = cp.ascontiguousarray(off, dtype=cp.int64)
        ref32 = cp.ascontiguousarray(ref, dtype=cp.int32)
        out = cp.empty_like(ref32)
        errors = cp.zeros(1, dtype=cp.int32)
        kernel = load_kernel("queries", f"query_{q.lower()}")

        def patched(k: Any = kernel, o: Any = off, v: Any = out, e: Any = errors) -> None:
            launch_patched(k, patches, (o, v, e), op="bench")

        def global_copy(r: Any = ref32, v: Any = out) -> None:
            cp.copyto(v, r)

        nbytes = 4 * out.size + patch_bytes(patches)
        rows.append(
            {
                "what": f"query {q}",
                "patched_s": gpu_time(patched, repeat),
                "global_s": gpu_time(global_copy, repeat),
                "floor_s": nbytes / bw,
            }
        )
    return rows


def op_rows(mesh: TriMesh, patches: Any, repeat: int, bw: float) -> list[dict[str, Any]]:
    cp = _cp()
    n, m = mesh.n_vertices, mesh.n_faces
    rows = []
    vn, gk = OPS.get("vertex_normals"), OPS.get("gaussian_curvature")
    vn_p, gk_p = vn.parse_params({}), gk.parse_params({})
    fixed = mesh.topology.boundary_vertices
    X = mesh.V.astype(cp.float64)
    N = vertex_normals64(cp, X, mesh.F, n)
    src = np.array([0])
    pairs = [
        (
            "vertex_normals (area)",
            lambda: patched_ops.vertex_normals(mesh, patches),
            lambda: vn.cupy(mesh, vn_p),
            12 * n + 12 * m + 12 * n,
        ),
        (
            "gaussian_curvature",
            lambda: patched_ops.gaussian_curvature(mesh, patches),
            lambda: gk.cupy(mesh, gk_p),
            12 * n + 12 * m + 4 * n,
        ),
        (
            "laplacian step (uniform)",
            lambda: patched_ops.smooth_step(mesh, patches, 0.5, fixed),
            lambda: patched_ops.smooth_step_global(mesh, 0.5, fixed),
            12 * n + 12 * m + 12 * n,
        ),
        (
            "bilateral step (one ring)",
            lambda: patched_ops.bilateral_step(mesh, X, N, fixed, None, None, patches),
            lambda: patched_ops.bilateral_step(mesh, X, N, fixed, None, None, None),
            48 * n + 12 * m + 24 * n,
        ),
    ]
    for what, p_fn, g_fn, nbytes in pairs:
        rows.append(
            {
                "what": what,
                "patched_s": gpu_time(p_fn, repeat),
                "global_s": gpu_time(g_fn, repeat),
                "floor_s": nbytes / bw,
            }
        )
    info: dict[str, Any] = {}

    def geo_patched() -> None:
        _, info["patched_iterations"], info["patch_runs"] = propagate_patched(mesh, patches, src)

    def geo_global() -> None:
        _, info["global_iterations"] = propagate_global(mesh, src)

    rows.append(
        {
            "what": "geodesic propagation (to convergence)",
            "patched_s": gpu_time(geo_patched, 1),
            "global_s": gpu_time(geo_global, 1),
            "floor_s": None,
            **info,
            "patches": patches.n_patches,
        }
    )
    return rows


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"## Patched vs global: commit `{report['commit']}`, {report['device']}\n",
        f"Copy bandwidth {report['bandwidth_gbs']:.0f} GB/s. Mesh: {report['mesh']} welded and "
        "midpoint-subdivided (children of a face kept together: 'sorted'), or the same mesh "
        "with vertices and faces randomly permuted ('shuffled'). Patch size 512; the kernels run "
        f"on the {report['sizes'][0]['method'] if report['sizes'] else ''} patches.\n",
        "| order | faces | method | patches | ribbon overhead | partition | patching (all) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in report["sizes"]:
        for method, p in s["patching"].items():
            lines.append(
                f"| {s['order']} | {s['faces'] / 1e6:.1f}M | {method} | {p['patches']} | "
                f"{p['ribbon_overhead']:.2f} | {fmt_s(p['partition_s'])} | "
                f"{fmt_s(p['patching_s'])} |"
            )
    lines += [
        "",
        "| order | faces | kernel | patched | global | global/patched | patched/floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in report["sizes"]:
        for r in s["rows"]:
            floor = f"{r['patched_s'] / r['floor_s']:.1f}" if r.get("floor_s") else "–"
            extra = ""
            if "patch_runs" in r:
                extra = (
                    f" ({r['patched_iterations']} iterations, {r['patch_runs']} patch runs of "
                    f"{r['patches']} × {r['patched_iterations']})"
                )
            lines.append(
                f"| {s['order']} | {s['faces'] / 1e6:.1f}M | {r['what']}{extra} | "
                f"{fmt_s(r['patched_s'])} | {fmt_s(r['global_s'])} | "
                f"{r['global_s'] / r['patched_s']:.2f} | {floor} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.patched", description=__doc__)
    ap.add_argument("--mesh", default=os.environ.get("TESSERA_BENCH_MESH", ""))
    ap.add_argument("--sizes", default="1e6,4e6,16e6")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--patch-size", type=int, default=512)
    ap.add_argument(
        "--methods", default="lloyd,morton", help="patchings to time; kernels use the last"
    )
    ap.add_argument("--no-kernels", action="store_true", help="time the patching only")
    args = ap.parse_args()
    from tests.conftest import MESHES

    mesh_file = Path(args.mesh) if args.mesh else MESHES / "stanford-bunny.obj"
    cp = _cp()
    bw = bandwidth()
    report: dict[str, Any] = {
        "commit": os.environ.get("TESSERA_COMMIT", "unknown"),
        "device": device_name(),
        "bandwidth_gbs": bw / 1e9,
        "mesh": mesh_file.name,
        "sizes": [],
    }
    for size in [int(float(s)) for s in args.sizes.split(",") if s]:
        base = bench_mesh(mesh_file, size)
        for order in ("sorted", "shuffled"):
            mesh = (shuffled(base) if order == "shuffled" else base).to("cupy")
            mesh.topology.boundary_vertices  # noqa: B018  (built once, as inside a job)
            patching = {}
            for method in args.methods.split(","):
                t_patch, patches = patching_time(mesh, args.patch_size, method)
                summary = patches.summary()
                patching[method] = {
                    "patches": patches.n_patches,
                    "ribbon_overhead": summary["ribbon_overhead"],
                    "patching_s": t_patch,
                    "partition_s": summary["partition_seconds"],
                    "iterations": summary["iterations"],
                }
                print(json.dumps({"order": order, "method": method, **patching[method]}))
            # the kernels below run on the last method's patches (the runtime one, first in
            # --methods order is measured first)
            entry = {
                "order": order,
                "faces": mesh.n_faces,
                "patches": patches.n_patches,
                "ribbon_overhead": summary["ribbon_overhead"],
                "patching_s": t_patch,
                "method": method,
                "patching": patching,
                "rows": []
                if args.no_kernels
                else query_rows(mesh, patches, args.repeat, bw)
                + op_rows(mesh, patches, args.repeat, bw),
            }
            report["sizes"].append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "rows"}), flush=True)
            for r in entry["rows"]:
                print(json.dumps(r), flush=True)
            del mesh, patches
            cp.get_default_memory_pool().free_all_blocks()
    md = markdown(report)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "PATCHED.md").write_text(md)
    (out / "patched.json").write_text(json.dumps(report, indent=1))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "PATCHED.md").write_text(md)
        Path(os.environ["OUT"], "patched.json").write_text(json.dumps(report, indent=1))
    print(md)


if __name__ == "__main__":
    main()
