"""``python -m bench.service``: what a user of the service waits for, end to end.

It starts the whole service (``tessera up``: a private Redis, ``--api-workers`` API processes,
``--workers`` workers) on this host, then measures through HTTP with the Python client:

- **Large jobs**: the Stanford bunny subdivided to ``--sizes`` faces, written as binary PLY,
  weld + vertex_normals(angle) + gaussian_curvature -> binary PLY with the normals and the
  curvature, from the client's first byte sent to the last byte of the result written to disk;
  each stage the job record and the client saw, beside the floor its bytes allow on this host
  (loopback TCP, the page cache, memory copies and, with a GPU, PCIe and device memory, each
  measured here).
- **Small jobs**: ``--clients`` concurrent clients (in ``--procs`` processes) submitting a 12-face
  cube with the same pipeline, waiting and downloading, for ``--seconds``: jobs per second and
  latency percentiles.
- **Host overhead**: for each large job, its run minus its own steps, reading and writing, as a
  share of the run.

Writes ``bench/results/SERVICE.md`` and ``service.json`` (or under ``$OUT``) and prints the
table. ``--device cpu`` measures the CPU backend (no GPU needed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MESHES = Path(os.environ.get("TESSERA_MESHES", ROOT.parent / "shared" / "meshes"))
PIPELINE: list[Any] = ["weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"]
OUTPUT = {"format": "ply", "attributes": ["vertex_normals", "gaussian_curvature"]}


# ----------------------------------------------------------------------------- the service
class Service:
    """``tessera up`` in a process group of its own, on a free port, data in ``data_dir``."""

    def __init__(
        self, data_dir: Path, workers: int, api_workers: int, device: str, root: Path = ROOT
    ) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.pop("TESSERA_REDIS_URL", None)
        env.pop("REDIS_URL", None)
        if device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""  # auto then finds no GPU
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(data_dir / "service.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "up",
                "--port",
                str(self.port),
                "--data-dir",
                str(data_dir),
                "--workers",
                str(workers),
                *(["--api-workers", str(api_workers)] if api_workers > 1 else []),
            ],
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers = workers

    def wait_ready(self, timeout: float = 180.0) -> None:
        import httpx

        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("tessera up exited; see service.log")
            try:
                r = httpx.get(self.url + "/readyz", timeout=2)
                if r.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError("the service did not become ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


# ----------------------------------------------------------------------------- floors
def _loopback_rate(nbytes: int = 1 << 30) -> float:
    """Bytes per second one TCP connection over loopback carries (a thread sends, we receive)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    buf = bytearray(4 << 20)

    def send() -> None:
        c = socket.create_connection(srv.getsockname())
        mv = memoryview(bytes(4 << 20))
        left = nbytes
        while left > 0:
            c.sendall(mv[: min(len(mv), left)])
            left -= len(mv)
        c.close()

    t = threading.Thread(target=send)
    t.start()
    conn, _ = srv.accept()
    t0 = time.perf_counter()
    got = 0
    while got < nbytes:
        n = conn.recv_into(buf)
        if not n:
            break
        got += n
    dt = time.perf_counter() - t0
    t.join()
    conn.close()
    srv.close()
    return got / dt


def _page_cache_rates(folder: Path, nbytes: int = 1 << 30) -> tuple[float, float]:
    """Bytes per second written to a file (into the page cache, not synced) and read back."""
    data = np.ones(nbytes, dtype=np.uint8)
    path = folder / "floor.bin"
    t = time.perf_counter()
    with open(path, "wb") as fh:
        fh.write(memoryview(data))
    w = nbytes / (time.perf_counter() - t)
    out = np.empty_like(data)
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        fh.readinto(memoryview(out))
    r = nbytes / (time.perf_counter() - t)
    path.unlink()
    return w, r


def _memcpy_rate(nbytes: int = 1 << 30) -> float:
    """Bytes per second of one large host memory copy (bytes read, not read plus written)."""
    a = np.ones(nbytes, dtype=np.uint8)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return nbytes / best


def _gpu_rates(nbytes: int = 1 << 30) -> dict[str, Any]:
    """Host to device and back from ordinary (pageable) host memory, as a job's arrays are;
    the device's own copy rate and name as ``python -m bench`` measures them."""
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
    except Exception:
        return {}
    from bench.__main__ import bandwidth, device_name

    host = np.ones(nbytes, dtype=np.uint8)
    dev = cp.empty(nbytes, dtype=cp.uint8)
    dev.set(host)
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    dev.set(host)
    cp.cuda.Device().synchronize()
    h2d = nbytes / (time.perf_counter() - t)
    t = time.perf_counter()
    dev.get(out=host)
    d2h = nbytes / (time.perf_counter() - t)
    del dev
    return {"h2d": h2d, "d2h": d2h, "device": bandwidth(), "gpu_name": device_name()}


def floors(folder: Path) -> dict[str, Any]:
    w, r = _page_cache_rates(folder)
    return {"loopback": _loopback_rate(), "file_write": w, "file_read": r, "memcpy": _memcpy_rate()}


# ----------------------------------------------------------------------------- large jobs
def make_input(faces: float, folder: Path) -> tuple[Path, int, int]:
    from bench.meshes import bench_mesh
    from workers.engine.io import serialize_chunks

    mesh = bench_mesh(MESHES / "stanford-bunny.obj", int(faces))
    path = folder / f"bunny-{mesh.n_faces}.ply"
    with open(path, "wb") as fh:
        for piece in serialize_chunks(mesh, "ply", None):
            fh.write(piece)
    return path, mesh.n_vertices, mesh.n_faces


def large_job(url: str, path: Path, out: Path, form: bool = False) -> dict[str, Any]:
    import tessera
    from tessera._common import build_spec, multipart, uploads

    with tessera.Client(url, timeout=600) as tc:
        t0 = time.perf_counter()
        if form:  # as a multipart form (what a service without file bodies takes)
            spec = build_spec(PIPELINE, output=OUTPUT)
            parts = uploads(path, None)
            job = tc._json("POST", "/v1/jobs", make=lambda: multipart(parts, spec))
        else:
            job = tc.submit(path, PIPELINE, output=OUTPUT)
        t1 = time.perf_counter()
        done = tc.wait(job, timeout=600)
        t2 = time.perf_counter()
        tc.download(done, out)
        t3 = time.perf_counter()
    return {
        "end_to_end": t3 - t0,
        "submit": t1 - t0,
        "wait": t2 - t1,
        "download": t3 - t2,
        "upload_bytes": path.stat().st_size,
        "result_bytes": out.stat().st_size,
        "job": done,
    }


def host_overhead(job: dict[str, Any]) -> dict[str, float]:
    """The job's run minus its own steps, reading and writing: the share a job pays for being a
    job (statistics, transfers, plumbing)."""
    t = job["timings"]
    steps = sum(v for k, v in t.items() if k[:1].isdigit())
    io_s = t.get("load", 0.0) + t.get("serialize", 0.0) + t.get("store", 0.0)
    run = t["run"]
    return {"run": run, "steps": steps, "io": io_s, "overhead": run - steps - io_s}


# ----------------------------------------------------------------------------- small jobs
def _client_proc(url: str, data: bytes, n_tasks: int, seconds: float, q: Any) -> None:
    import tessera

    async def main() -> list[tuple[float, float]]:
        out: list[tuple[float, float]] = []
        stop = time.time() + seconds
        limits = __import__("httpx").Limits(max_connections=n_tasks + 4)
        http = __import__("httpx").AsyncClient(timeout=60, limits=limits)
        async with tessera.AsyncClient(url, http=http) as tc:

            async def one() -> None:
                while time.time() < stop:
                    t = time.perf_counter()
                    job = await tc.submit(data, PIPELINE, filename="cube.obj", output=OUTPUT)
                    await tc.wait(job, timeout=60)
                    await tc.result(job)
                    out.append((time.time(), time.perf_counter() - t))

            await asyncio.gather(*(one() for _ in range(n_tasks)))
        await http.aclose()
        return out

    q.put(asyncio.run(main()))


def small_jobs(url: str, clients: int, procs: int, seconds: float) -> dict[str, Any]:
    data = (MESHES / "rx-cube.obj").read_bytes()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    per = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    ps = [ctx.Process(target=_client_proc, args=(url, data, n, seconds, q)) for n in per if n]
    t0 = time.time()
    for p in ps:
        p.start()
    results: list[tuple[float, float]] = []
    for _ in ps:
        results += q.get()
    for p in ps:
        p.join()
    # the middle of the run: clients starting and finishing at the edges are left out
    lo, hi = t0 + 0.25 * seconds, t0 + 0.9 * seconds
    window = [lat for end, lat in results if lo <= end < hi]
    lat = sorted(lat for _, lat in results)
    pct = (lambda p: lat[min(int(p * len(lat)), len(lat) - 1)]) if lat else (lambda p: None)
    return {
        "clients": clients,
        "jobs": len(results),
        "jobs_per_second": len(window) / (hi - lo) if hi > lo else None,
        "p50": pct(0.5),
        "p90": pct(0.9),
        "p99": pct(0.99),
    }


def single_latency(url: str, runs: int = 30) -> dict[str, Any]:
    """One client alone, one 12-face job after another: the latency nothing else slows."""
    import tessera

    data = (MESHES / "rx-cube.obj").read_bytes()
    lat = []
    with tessera.Client(url) as tc:
        for _ in range(runs):
            t = time.perf_counter()
            job = tc.submit(data, PIPELINE, filename="cube.obj", output=OUTPUT)
            tc.wait(job, timeout=60)
            tc.result(job)
            lat.append(time.perf_counter() - t)
        last = tc.get(job)
    return {"p50": statistics.median(lat), "min": min(lat), "last": last}


# ----------------------------------------------------------------------------- report
def _ms(x: float | None) -> str:
    return "" if x is None else f"{x * 1e3:.0f} ms" if x < 10 else f"{x:.1f} s"


def _s(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"


def stage_rows(big: dict[str, Any], fl: dict[str, Any]) -> list[tuple[str, float, str, float]]:
    """(stage, seconds, what bounds it, floor seconds) for one large job."""
    job, t = big["job"], big["job"]["timings"]
    up, res = big["upload_bytes"], big["result_bytes"]
    inp = job["input"]
    arrays = inp["vertices"] * 12 + inp["faces"] * 12  # float32 positions, int32 faces
    out_arrays = res  # the PLY holds the arrays it was written from
    gpu = fl.get("gpu") or {}
    rows = [
        ("upload (API receives the body)", t.get("upload", 0.0), "loopback", up / fl["loopback"]),
        ("parse", t.get("parse", 0.0), "memcpy of the file", up / fl["memcpy"]),
        ("store input", t.get("store_input", 0.0), "file write", arrays / fl["file_write"]),
        ("queued", t.get("queued", 0.0), "", 0.0),
        ("load (worker)", t.get("load", 0.0), "file read", arrays / fl["file_read"]),
    ]
    if "transfer" in t:
        rows.append(("transfer to GPU", t["transfer"], "PCIe h2d", arrays / gpu.get("h2d", 1e30)))
    rows.append(("stats_before", t.get("stats_before", 0.0), "", 0.0))
    for k, v in t.items():
        if k[:1].isdigit():
            rows.append((k, v, "", 0.0))
    rows.append(("stats_after", t.get("stats_after", 0.0), "", 0.0))
    d2h = out_arrays / gpu["d2h"] if "d2h" in gpu and "transfer" in t else 0.0
    rows.append(
        (
            "serialize + store result",
            t.get("serialize", 0.0),
            "d2h + file write",
            d2h + res / fl["file_write"],
        )
    )
    rows.append(("run (worker, whole)", t.get("run", 0.0), "", 0.0))
    rows.append(("client: submit (upload..202)", big["submit"], "loopback", up / fl["loopback"]))
    rows.append(("client: wait (202..end seen)", big["wait"], "", 0.0))
    rows.append(
        (
            "client: download",
            big["download"],
            "loopback + file write",
            res / fl["loopback"] + res / fl["file_write"],
        )
    )
    rows.append(("**end to end**", big["end_to_end"], "", 0.0))
    return rows


def report(res: dict[str, Any]) -> str:
    fl = res["floors"]
    gpu = fl.get("gpu") or {}
    lines = [
        f"# Service end to end ({res['device']})",
        "",
        f"`{res['command']}` on {res['host']}; GPU: {gpu.get('gpu_name', 'none')}; "
        f"{res['workers']} workers, {res['api_workers']} API processes; service from "
        f"{res.get('root')}.",
        "",
        "Floors measured here: loopback TCP {:.2f} GB/s, file write {:.2f} GB/s and read "
        "{:.2f} GB/s (page cache), memcpy {:.2f} GB/s{}.".format(
            fl["loopback"] / 1e9,
            fl["file_write"] / 1e9,
            fl["file_read"] / 1e9,
            fl["memcpy"] / 1e9,
            (
                f", PCIe h2d {gpu['h2d'] / 1e9:.1f} GB/s and d2h {gpu['d2h'] / 1e9:.1f} GB/s "
                f"(pageable), device copy {gpu['device'] / 1e9:.0f} GB/s"
                if gpu
                else ""
            ),
        ),
        "",
    ]
    for big in res["large"]:
        job = big["job"]
        ov = host_overhead(job)
        lines += [
            f"## {job['input']['faces']:,} faces: {big['upload_bytes'] / 1e6:.0f} MB PLY in, "
            f"{big['result_bytes'] / 1e6:.0f} MB PLY out, backend {job['backend']}",
            "",
            f"End to end **{_s(big['end_to_end'])}**; host overhead {_s(ov['overhead'])} of a "
            f"{_s(ov['run'])} run ({100 * ov['overhead'] / ov['run']:.0f} %; steps "
            f"{_s(ov['steps'])}, reading and writing {_s(ov['io'])}); upload accepted at "
            f"{big['upload_bytes'] / big['submit'] / 1e6:.0f} MB/s.",
            "",
            "| stage | time | bound by | floor |",
            "|---|---|---|---|",
        ]
        for name, sec, bound, floor in stage_rows(big, fl):
            lines.append(f"| {name} | {_s(sec)} | {bound} | {_s(floor) if floor else ''} |")
        lines.append("")
    sm = res.get("small")
    if sm:
        one = res["single"]
        lines += [
            "## Small jobs (12-face cube, same pipeline)",
            "",
            f"One client alone: p50 **{_ms(one['p50'])}** (min {_ms(one['min'])}), backend "
            f"{one['last'].get('backend')} ({(one['last'].get('device') or {}).get('reason')}).",
            "",
            f"{sm['clients']} concurrent clients: **{sm['jobs_per_second']:.0f} jobs/s**, "
            f"latency p50 {_ms(sm['p50'])}, p90 {_ms(sm['p90'])}, p99 {_ms(sm['p99'])} "
            f"({sm['jobs']} jobs).",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.service", description=__doc__)
    ap.add_argument("--sizes", default="4e6,16e6", help="faces of the large jobs")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each large job (best kept)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--api-workers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--procs", type=int, default=8, help="processes the clients run in")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--device", choices=["auto", "cpu"], default="auto")
    ap.add_argument("--no-small", action="store_true")
    ap.add_argument("--data-dir", default=None, help="the service's data (default: a temp dir)")
    ap.add_argument(
        "--root",
        default=str(ROOT),
        help="the checkout whose service is started (e.g. an earlier commit, as a baseline)",
    )
    ap.add_argument("--form", action="store_true", help="upload as multipart forms")
    ap.add_argument(
        "--pipeline",
        default=None,
        help="the large jobs' steps as JSON, e.g. "
        '\'["weld", {"op": "geodesic_distance", "sources": [0]}]\' (default: weld, angle-weighted '
        "vertex normals, Gaussian curvature)",
    )
    ap.add_argument(
        "--attributes",
        default=None,
        help="the attributes the result PLY keeps, comma-separated (default: the default "
        "pipeline's two)",
    )
    args = ap.parse_args()
    if args.pipeline:
        PIPELINE[:] = json.loads(args.pipeline)
    if args.attributes is not None:
        OUTPUT["attributes"] = [a for a in args.attributes.split(",") if a]

    out_dir = Path(os.environ.get("OUT", ROOT / "bench" / "results"))
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(args.data_dir or tempfile.mkdtemp(prefix="tessera-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {
        "command": "python -m bench.service " + " ".join(sys.argv[1:]),
        "root": args.root,
        "host": f"{platform.node()} ({os.cpu_count()} CPUs)",
        "device": args.device,
        "workers": args.workers,
        "api_workers": args.api_workers,
        "large": [],
    }
    fl = floors(work)
    if args.device != "cpu":
        fl["gpu"] = _gpu_rates()
    res["floors"] = fl
    inputs = [make_input(float(s), work) for s in args.sizes.split(",") if s]
    svc = Service(work / "service", args.workers, args.api_workers, args.device, Path(args.root))
    try:
        svc.wait_ready()
        # compile and warm every worker's child (jobs go to idle workers: one each at once)
        warm = [
            threading.Thread(
                target=large_job, args=(svc.url, inputs[0][0], work / f"w{i}.ply", args.form)
            )
            for i in range(args.workers)
        ]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        for path, _, _ in inputs:
            runs = [
                large_job(svc.url, path, work / "out.ply", args.form) for _ in range(args.repeat)
            ]
            best = min(runs, key=lambda r: r["end_to_end"])
            best["all_end_to_end"] = [r["end_to_end"] for r in runs]
            res["large"].append(best)
            print(f"{path.name}: end to end {[round(r, 3) for r in best['all_end_to_end']]} s")
        if not args.no_small:
            res["single"] = single_latency(svc.url)
            res["small"] = small_jobs(svc.url, args.clients, args.procs, args.seconds)
    finally:
        svc.stop()
        if args.data_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    (out_dir / "service.json").write_text(json.dumps(res, indent=1, default=str))
    text = report(res)
    (out_dir / "SERVICE.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
