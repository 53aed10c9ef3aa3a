"""``python -m bench``: every GPU operation at several sizes against its baselines.

For each operation and size: the GPU time (CUDA events, median of repeats, topology already built
and cached as it is inside a job), the memory floor (bytes the operation must move ÷ the measured
device-to-device copy bandwidth), the NumPy twin on this host's CPU, and each CPU library that does
the same thing. Then whole jobs (parse PLY → pipeline → write PLY) on GPU and CPU, and Wald's
quad-soup weld. Writes JSON and a Markdown table; prints the table last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.cases import Case, cases
from bench.meshes import bench_mesh
from workers.engine.io import load_bytes, serialize
from workers.engine.mesh import TriMesh
from workers.engine.ops import OPS
from workers.engine.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parent.parent


def _cp() -> Any:
    import cupy

    return cupy


def gpu_time(fn: Any, repeat: int) -> float:
    """Median seconds of ``fn()`` between CUDA events, after two warm-up calls."""
    cp = _cp()
    fn()
    fn()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def cpu_time(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bandwidth() -> float:
    """Device-to-device copy rate in bytes/s, counting bytes read plus bytes written."""
    cp = _cp()
    a = cp.ones(1 << 28, dtype=cp.float32)  # 1 GiB
    b = cp.empty_like(a)
    t = gpu_time(lambda: cp.copyto(b, a), 10)
    return 2 * a.nbytes / t


def device_name() -> str:
    cp = _cp()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])


def run_case(
    case: Case,
    mesh_cpu: TriMesh,
    mesh_gpu: TriMesh,
    bw: float,
    repeat: int,
    with_cpu: bool,
    cpu_max_faces: int,
) -> dict[str, Any] | None:
    op = OPS.get(case.op)
    params = op.parse_params(case.params)
    assert op.cupy is not None
    if mesh_cpu.n_faces > case.gpu_max_faces:
        return None
    t_gpu = gpu_time(lambda: op.cupy(mesh_gpu, params), repeat)
    n, m = mesh_cpu.n_vertices, mesh_cpu.n_faces
    row: dict[str, Any] = {
        "op": case.op
        + ("" if not case.params else f"({','.join(map(str, case.params.values()))})"),
        "faces": m,
        "vertices": n,
        "gpu_s": t_gpu,
        "floor_s": case.floor_bytes(n, m) / bw,
    }
    if with_cpu and m <= min(case.cpu_max_faces, cpu_max_faces):
        row["numpy_s"] = cpu_time(lambda: op.numpy(mesh_cpu, params), 1)
        V = mesh_cpu.V.astype(np.float64)
        F = mesh_cpu.F.astype(np.int64)
        for name, fn in case.libs.items():
            try:
                row[f"lib:{name}"] = cpu_time(lambda fn=fn: fn(V, F), 1)
            except Exception as exc:  # a library refusing an input is a result, not a crash
                row[f"lib:{name}"] = f"failed: {exc.__class__.__name__}"
    return row


def whole_job(mesh: TriMesh, device: str) -> dict[str, float]:
    """Parse a binary PLY, run weld + normals + curvature, write a binary PLY: seconds per stage."""
    data = serialize(mesh, "ply")
    t0 = time.perf_counter()
    m = load_bytes(data, "in.ply")
    t1 = time.perf_counter()
    res = run_pipeline(m, ["weld", "vertex_normals", "gaussian_curvature"], device=device)
    t2 = time.perf_counter()
    out = serialize(res.mesh, "ply")
    t3 = time.perf_counter()
    return {
        "parse_s": t1 - t0,
        "pipeline_s": t2 - t1,
        "write_s": t3 - t2,
        "total_s": t3 - t0,
        "ply_bytes": len(data) + len(out),
    }


def wald_soup(n: int) -> TriMesh:
    """Wald's test input on the GPU: an n×n grid of quads (two triangles each) whose corner
    vertices are replicated per quad, plus one unused vertex at each quad's centre."""
    cp = _cp()
    i, j = cp.meshgrid(
        cp.arange(n, dtype=cp.float32), cp.arange(n, dtype=cp.float32), indexing="ij"
    )
    i, j = i.ravel(), j.ravel()
    z = cp.zeros_like(i)
    corners = [cp.stack([i + a, j + b, z], 1) for a, b in ((0, 0), (1, 0), (1, 1), (0, 1))]
    centre = cp.stack([i + 0.5, j + 0.5, z], 1)
    V = cp.stack(corners + [centre], 1).reshape(-1, 3)  # 5 vertices per quad
    base = 5 * cp.arange(n * n, dtype=cp.int32)[:, None]
    F = cp.concatenate(
        [base + cp.asarray([0, 1, 2], dtype=cp.int32), base + cp.asarray([0, 2, 3], dtype=cp.int32)]
    )
    return TriMesh(V, F)


#: the KEY-WELD paper's CUDA timings (ms) on its spherical-distance data set: Table 3 (weld with
#: attribute merging, integral edge ids; geometry generation not included) and Table 8 (the same
#: with coarsening), by resolution
KEY_WELD_TABLE3_MS = {64: 7, 128: 23, 256: 254, 512: 349}
KEY_WELD_TABLE8_MS = {64: 7, 128: 24, 256: 86, 512: 351}


def marching_cubes_row(resolution: int, repeat: int, with_cpu: bool) -> dict[str, Any]:
    """``marching_cubes`` on the spherical-distance field at ``resolution^3``: the whole op
    (field, extraction, KEY-WELD, normals) on the GPU without and with coarsening (k = 1),
    against the paper's weld-only figures, the NumPy twin and scikit-image where installed."""
    op = OPS.get("marching_cubes")
    row: dict[str, Any] = {"resolution": resolution}
    cp = _cp()
    for label, k in (("", 0.0), ("_k1", 1.0)):
        p = op.parse_params({"field": {"resolution": resolution}, "isovalue": 0.98, "k": k})
        empty = TriMesh(cp.zeros((0, 3), dtype=cp.float32), cp.zeros((0, 3), dtype=cp.int32))
        try:
            row[f"gpu{label}_s"] = gpu_time(lambda p=p, e=empty: op.cupy(e, p), repeat)
            res = op.cupy(empty, p).mesh
            row[f"faces{label}"] = res.n_faces
            row[f"vertices{label}"] = res.n_vertices
        except Exception as exc:  # out of memory is a result to report
            row[f"gpu{label}_s"] = f"failed: {exc.__class__.__name__}"
        if with_cpu and resolution <= 256:
            p_np = p
            e_np = TriMesh(np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.int32))
            row[f"numpy{label}_s"] = cpu_time(lambda p=p_np, e=e_np: op.numpy(e, p), 1)
    if with_cpu and resolution <= 512:
        try:
            from skimage import measure

            from workers.engine.marching_cubes import sphere_distance

            S, _, h = sphere_distance(np, resolution, (0.0, 0.0, 0.0))
            row["lib:scikit-image"] = cpu_time(
                lambda: measure.marching_cubes(S, 0.98, spacing=h), 1
            )
        except ImportError:
            pass
    row["paper_table3_ms"] = KEY_WELD_TABLE3_MS.get(resolution)
    row["paper_table8_ms"] = KEY_WELD_TABLE8_MS.get(resolution)
    return row


def fmt_s(x: Any) -> str:
    if not isinstance(x, float):
        return str(x) if x is not None else "–"
    return f"{x * 1e3:.2f} ms" if x < 10 else f"{x:.1f} s"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Benchmarks\n\ncommit `{report['commit']}`, {report['device']}, host CPU: "
        f"{report['cpu']} ({report['cpu_count']} cores), copy bandwidth "
        f"{report['bandwidth_gbs']:.0f} GB/s (read + write).\n",
        "GPU: median of CUDA-event timings of the operation with the mesh already on the "
        "device and its topology built. Floor: bytes the operation must read and write ÷ "
        "copy bandwidth. NumPy and libraries: one run on the host CPU.\n",
        "| op | faces | GPU | floor | GPU/floor | NumPy twin | best CPU library | "
        "speed-up vs library |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["ops"]:
        libs = {k[4:]: v for k, v in r.items() if k.startswith("lib:") and isinstance(v, float)}
        best = min(libs.items(), key=lambda kv: kv[1]) if libs else None
        lib_txt = f"{best[0]} {fmt_s(best[1])}" if best else "–"
        speed = f"{best[1] / r['gpu_s']:.0f}×" if best else "–"
        lines.append(
            f"| {r['op']} | {r['faces'] / 1e6:.1f}M | {fmt_s(r['gpu_s'])} | "
            f"{fmt_s(r['floor_s'])} | {r['gpu_s'] / r['floor_s']:.1f} | "
            f"{fmt_s(r.get('numpy_s'))} | {lib_txt} | {speed} |"
        )
    if report.get("topology"):
        lines += [
            "",
            "| topology build (once per job) | faces | GPU | NumPy |",
            "|---|---|---|---|",
        ]
        for t in report["topology"]:
            lines.append(
                f"| edges, EF, used vertices | {t['faces'] / 1e6:.1f}M | "
                f"{fmt_s(t['gpu_s'])} | {fmt_s(t.get('numpy_s'))} |"
            )
    if report.get("jobs"):
        lines += [
            "",
            "Whole job: parse binary PLY → weld + vertex_normals + gaussian_curvature → "
            "write binary PLY.",
            "",
            "| device | faces | parse | pipeline | write | total | PLY GB/s |",
            "|---|---|---|---|---|---|---|",
        ]
        for j in report["jobs"]:
            gbs = j["ply_bytes"] / (j["parse_s"] + j["write_s"]) / 1e9
            lines.append(
                f"| {j['device']} | {j['faces'] / 1e6:.1f}M | {fmt_s(j['parse_s'])} | "
                f"{fmt_s(j['pipeline_s'])} | {fmt_s(j['write_s'])} | "
                f"{fmt_s(j['total_s'])} | {gbs:.2f} |"
            )
    if report.get("marching_cubes"):
        lines += [
            "",
            "Marching cubes on the KEY-WELD paper's spherical-distance field (isovalue 0.98): "
            "our whole op (field, extraction, edge-keyed weld, normals) against the paper's "
            "CUDA weld-only times (Table 3; Table 8 with coarsening k = 1), scikit-image's "
            "extraction without weld on the host CPU.",
            "",
            "| resolution | faces | GPU | paper T3 | faces k=1 | GPU k=1 | paper T8 | "
            "NumPy twin | scikit-image |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in report["marching_cubes"]:
            lines.append(
                f"| {r['resolution']}³ | {r.get('faces', '–')} | {fmt_s(r.get('gpu_s'))} | "
                f"{r.get('paper_table3_ms') or '–'} ms | {r.get('faces_k1', '–')} | "
                f"{fmt_s(r.get('gpu_k1_s'))} | {r.get('paper_table8_ms') or '–'} ms | "
                f"{fmt_s(r.get('numpy_s'))} | {fmt_s(r.get('lib:scikit-image'))} |"
            )
    for w in report.get("wald", []):
        lines.append(
            f"\nWald quad soup {w['n']}×{w['n']}: {w['input_vertices'] / 1e6:.0f}M input "
            f"vertices → {w.get('output_vertices', 0) / 1e6:.1f}M, weld "
            f"{fmt_s(w.get('gpu_s', w.get('error')))} on the GPU."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--mesh", default=os.environ.get("TESSERA_BENCH_MESH", ""))
    ap.add_argument("--sizes", default="1e6,4e6,16e6", help="minimum face counts")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-cpu", action="store_true", help="skip NumPy and library timings")
    ap.add_argument(
        "--cpu-max-faces",
        default="2e7",
        help="largest mesh the NumPy twins and CPU libraries are timed on",
    )
    ap.add_argument("--wald", default="4096,8192", help="quad-soup sizes for the weld benchmark")
    ap.add_argument("--shuffle", action="store_true", help="shuffle vertex and face order")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--ops", default="", help="only these operations (comma-separated names)")
    ap.add_argument(
        "--mc",
        default="",
        help="marching-cubes resolutions for the KEY-WELD comparison (e.g. 64,128,256,512)",
    )
    ap.add_argument("--no-jobs", action="store_true", help="skip the whole-job timings")
    args = ap.parse_args()
    only = {o for o in args.ops.split(",") if o}

    from tests.conftest import MESHES

    mesh_file = Path(args.mesh) if args.mesh else MESHES / "stanford-bunny.obj"
    cp = _cp()
    bw = bandwidth()
    report: dict[str, Any] = {
        "commit": os.environ.get("TESSERA_COMMIT", "unknown"),
        "device": device_name(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "bandwidth_gbs": bw / 1e9,
        "mesh": mesh_file.name,
        "shuffle": args.shuffle,
        "ops": [],
        "topology": [],
        "jobs": [],
        "wald": [],
        "marching_cubes": [],
    }
    for size in [int(float(s)) for s in args.sizes.split(",") if s]:
        mesh_cpu = bench_mesh(mesh_file, size, shuffle=args.shuffle)
        from workers.engine.topology import Topology

        t_np = cpu_time(lambda m=mesh_cpu: Topology.build(m.F, m.n_vertices).used_vertices, 1)
        mesh_gpu = mesh_cpu.to("cupy")

        def build(m: TriMesh = mesh_gpu) -> None:
            t = Topology.build(m.F, m.n_vertices)
            t.used_vertices, t.boundary_edges  # noqa: B018

        report["topology"].append(
            {"faces": mesh_cpu.n_faces, "gpu_s": gpu_time(build, 3), "numpy_s": t_np}
        )
        mesh_gpu.topology.boundary_edges  # noqa: B018  (built once, as inside a job)
        mesh_cpu.topology.boundary_edges  # noqa: B018
        for case in cases():
            if only and case.op not in only:
                continue
            row = run_case(
                case,
                mesh_cpu,
                mesh_gpu,
                bw,
                args.repeat,
                not args.no_cpu,
                int(float(args.cpu_max_faces)),
            )
            if row is None:
                continue
            report["ops"].append(row)
            print(json.dumps(row), flush=True)
        for device in ("gpu", "cpu"):
            if args.no_jobs or (device == "cpu" and args.no_cpu):
                continue
            j = whole_job(mesh_cpu, device)
            report["jobs"].append({"device": device, "faces": mesh_cpu.n_faces, **j})
            print(json.dumps(report["jobs"][-1]), flush=True)
        del mesh_gpu
        cp.get_default_memory_pool().free_all_blocks()
    weld = OPS.get("weld")
    for n in [int(s) for s in args.wald.split(",") if s]:
        w: dict[str, Any] = {"n": n, "input_vertices": 5 * n * n}
        try:
            soup = wald_soup(n)
            params = weld.parse_params({})
            w["gpu_s"] = gpu_time(lambda s=soup, p=params: weld.cupy(s, p), 3)
            w["output_vertices"] = weld.cupy(soup, params).mesh.n_vertices
        except Exception as exc:  # out of memory is a result to report
            w["error"] = f"{exc.__class__.__name__}: {str(exc)[:100]}"
        report["wald"].append(w)
        print(json.dumps(w), flush=True)
        soup = None
        cp.get_default_memory_pool().free_all_blocks()
    for r in [int(x) for x in args.mc.split(",") if x]:
        row = marching_cubes_row(r, args.repeat, not args.no_cpu)
        report["marching_cubes"].append(row)
        print(json.dumps(row), flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=1))
    md = markdown(report)
    (out / "RESULTS.md").write_text(md)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "RESULTS.md").write_text(md)
        Path(os.environ["OUT"], "results.json").write_text(json.dumps(report, indent=1))
    print(md)


if __name__ == "__main__":
    main()
