"""``python -m bench.batch``: one pipeline over many small meshes, as one batch and as jobs.

It starts the whole service (``tessera up``: a private Redis, the API, ``--workers`` workers) on
this host, builds a folder of ``--items`` meshes (copies of the shared test meshes of 1k to 70k
faces, in turn), and runs weld + repair + vertex_normals + stats over all of them twice, in the
same run and on the same service:

- **batch**: the folder as one zip to ``POST /v1/batches``, waited for, and the result archive
  downloaded (from the first byte of the archive made to the last byte of the results written);
- **jobs**: the same files as one job each (``--concurrency`` clients at once, each submitting,
  waiting and downloading), as a client without batches would.

Prints a Markdown table (items per second of each and their ratio) and writes it, with the JSON,
under ``$OUT`` (or ``bench/results``) as ``BATCH.md`` and ``batch.json``. ``--device cpu`` runs
the CPU backend (no GPU needed); ``auto`` or ``gpu`` the GPU where there is one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from bench.service import MESHES, ROOT, Service

PIPELINE: list[Any] = ["weld", "repair", ("vertex_normals", {"weighting": "angle"}), "stats"]
#: the shared meshes (faces from meshes/README.md); by default those of 1k to 70k faces
SOURCES = {
    "rx-cube.obj": 12,
    "rx-plane_5.obj": 32,
    "rx-sphere3.obj": 768,
    "suzanne.obj": 968,
    "alligator.obj": 5981,
    "beetle.obj": 2053,
    "cheburashka.obj": 13334,
    "cow.obj": 5804,
    "fandisk.obj": 12946,
    "rocker-arm.obj": 20088,
    "rx-bumpy-cube.obj": 39936,
    "rx-cloth.obj": 1682,
    "rx-dragon.obj": 20000,
    "rx-el_topo_sphere_1280.obj": 1280,
    "rx-giraffe.obj": 6256,
    "rx-torus.obj": 9216,
    "spot.obj": 5856,
    "stanford-bunny.obj": 69451,
    "teapot.obj": 6320,
    "woody.obj": 1267,
}


#: the shared textured assets (faces from assets/README.md): materials, textures, texture
#: coordinates, glTF's split vertices; ``--assets`` makes the dataset of these
ASSET_SOURCES = {
    "BoxTextured.glb": 12,
    "CesiumMilkTruck.glb": 3624,
    "Duck.glb": 4212,
    "fuze.zip": 1000,
    "2CylinderEngine.glb": 121496,
}
ASSETS = Path(os.environ.get("TESSERA_ASSETS", MESHES.parent / "assets"))


def make_folder(
    folder: Path, n: int, max_faces: int = 70_000, min_faces: int = 1_000, assets: bool = False
) -> tuple[list[Path], int]:
    """``n`` meshes in ``folder`` (sub-folders of 100), the shared ones of ``min_faces`` to
    ``max_faces`` faces in turn (``assets``: the shared textured assets); their faces."""
    sources, where = (ASSET_SOURCES, ASSETS) if assets else (SOURCES, MESHES)
    names = sorted(k for k, f in sources.items() if min_faces <= f <= max_faces)
    paths, faces = [], 0
    for i in range(n):
        name = names[i % len(names)]
        p = folder / f"d{i // 100:03d}" / f"{i:06d}-{name}"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(where / name, p)
        paths.append(p)
        faces += sources[name]
    return paths, faces


def run_batch(
    url: str, folder: Path, out: Path, device: str, fmt: str = "ply", follow: bool = True
) -> dict[str, Any]:
    """One batch, timed from the first byte zipped to the last result written. ``follow``:
    the results come down while the batch runs (``Client.follow_batch``), and ``download`` is
    the time from the batch's end (seen by the progress poll) to the archive's; otherwise they
    are downloaded once it has ended."""
    import tessera

    ended: list[float] = []

    def heard(b: dict[str, Any]) -> None:
        if b["state"] not in ("queued", "running") and not ended:
            ended.append(time.perf_counter())

    t0 = time.perf_counter()
    with tessera.Client(url, timeout=600) as tc:
        batch = tc.submit_batch(folder, PIPELINE, output=fmt, device=device)
        t_sub = time.perf_counter()
        if follow:
            done = tc.follow_batch(batch, out, progress=heard, timeout=3600, poll=0.25)
            t_wait = ended[0] if ended else time.perf_counter()
        else:
            done = tc.wait_batch(batch, timeout=3600)
            t_wait = time.perf_counter()
            tc.download_batch(done, out)
    t1 = time.perf_counter()
    with zipfile.ZipFile(out) as zf:
        written = len(zf.namelist()) - 1
        lines = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
    # where the workers' time went: each stage summed over the items (packed steps shared out
    # by faces), in worker-seconds
    stages: dict[str, float] = {}
    for line in lines:
        for k, v in (line.get("timings") or {}).items():
            stages[k] = stages.get(k, 0.0) + float(v)
    # what failed, by error code, with one path and message each (a dataset's batch should
    # have no failures: each one is a defect to look at)
    errors: dict[str, dict[str, Any]] = {}
    for line in lines:
        err = line.get("error")
        if line.get("state") == "failed" and err:
            e = errors.setdefault(err["code"], {"count": 0, "path": line["path"]})
            e["count"] += 1
            e.setdefault("message", err.get("message"))
            e.setdefault("detail", err.get("detail"))
    return {
        "errors": errors,
        "stages": {k: round(v, 3) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])},
        "seconds": t1 - t0,
        "submit": t_sub - t0,
        "run": t_wait - t_sub,
        "download": t1 - t_wait,
        "counts": done["counts"],
        "written": written,
        "follow": follow,
    }


def run_jobs(
    url: str, paths: list[Path], out: Path, device: str, concurrency: int, fmt: str = "ply"
) -> dict[str, Any]:
    import httpx

    import tessera

    out.mkdir(parents=True, exist_ok=True)

    async def main() -> dict[str, int]:
        todo = list(enumerate(paths))
        counts = {"succeeded": 0, "failed": 0}
        http = httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=concurrency + 4))
        async with tessera.AsyncClient(url, http=http) as tc:

            async def one() -> None:
                while todo:
                    i, p = todo.pop()
                    try:
                        job = await tc.submit(p, PIPELINE, output=fmt, device=device)
                        await tc.wait(job, timeout=3600)
                        await tc.download(job, out / f"{i}.{fmt}")
                        counts["succeeded"] += 1
                    except tessera.TesseraError:
                        counts["failed"] += 1

            await asyncio.gather(*(one() for _ in range(concurrency)))
        await http.aclose()
        return counts

    t0 = time.perf_counter()
    counts = asyncio.run(main())
    return {"seconds": time.perf_counter() - t0, "counts": counts}


def report(res: dict[str, Any]) -> str:
    n, faces = res["items"], res["faces"]
    rows = [
        "| mode | items | faces | seconds | items/s | faces/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    runs = [
        (f"batch ({'follow' if r.get('follow') else 'after'})", r)
        for r in res.get("runs") or [res["batch"]] * bool(res.get("batch"))
    ]
    for mode, r in runs + [("jobs", res.get("jobs"))]:
        if not r:
            continue
        s, k, f = r["seconds"], r.get("items", n), r.get("faces", faces)
        rows.append(f"| {mode} | {k} | {f:,} | {s:.2f} | {k / s:.1f} | {f / s / 1e6:.2f} M |")
    head = (
        f"`{res['command']}` on {res['host']}, device {res['device']}, "
        f"{res['workers']} workers, {'textured assets' if res.get('assets') else 'meshes'} "
        f"of {res.get('min_faces', 1000):,} to "
        f"{res['max_faces']:,} faces; pipeline weld + repair + vertex_normals(angle) + stats, "
        f"results as {res.get('output', 'ply').upper()}; load average before: "
        f"{res.get('load', '?')}.\n\n"
    )
    tail = ""
    if res.get("batch") and res.get("jobs"):
        jobs_rate = res["jobs"].get("items", n) / res["jobs"]["seconds"]
        ratio = n / res["batch"]["seconds"] / jobs_rate
        b = res["batch"]
        tail = (
            f"\nbatch / jobs: **{ratio:.2f}x** the rate. Batch: submit {b['submit']:.2f} s, "
            f"run {b['run']:.2f} s, download {b['download']:.2f} s.\n"
        )
    if res.get("batch", {}).get("stages"):
        tail += (
            "\nWorker-seconds per stage, summed over the batch's items: "
            + ", ".join(f"{k} {v:.2f}" for k, v in res["batch"]["stages"].items())
            + ".\n"
        )
    return head + "\n".join(rows) + "\n" + tail


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.batch", description=__doc__)
    ap.add_argument("--items", type=int, default=200, help="meshes in the batch")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto")
    ap.add_argument("--concurrency", type=int, default=16, help="clients of the jobs run")
    ap.add_argument("--no-jobs", action="store_true", help="only the batch")
    ap.add_argument(
        "--jobs-items",
        type=int,
        default=0,
        help="send only the first N files as single jobs (their rate per item is what the "
        "ratio needs; the same files in turn, so the mix of sizes stays): for hosts that "
        "limit a command's time",
    )
    ap.add_argument(
        "--max-faces", type=int, default=70_000, help="only the shared meshes this small"
    )
    ap.add_argument(
        "--min-faces", type=int, default=1_000, help="only the shared meshes this large"
    )
    ap.add_argument(
        "--chunk-items",
        type=int,
        default=0,
        help="items per chunk of the batch (TESSERA_BATCH_CHUNK_ITEMS; 0: the service's own); "
        "a chunk's small meshes are packed together, so larger chunks make larger packs",
    )
    ap.add_argument(
        "--assets",
        action="store_true",
        help="the dataset of the shared textured assets (glTF, OBJ zip) instead of the meshes",
    )
    ap.add_argument(
        "--runs",
        default="follow",
        help="the batch runs, in turn, each 'follow' (results downloaded while the batch "
        "runs: what the client's process_batch and the CLI do) or 'after' (downloaded once it "
        "has ended); e.g. follow,after,follow,after",
    )
    ap.add_argument("--output", default="ply", help="the results' format (glb keeps textures)")
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose service is started")
    args = ap.parse_args()

    out_dir = Path(os.environ.get("OUT", ROOT / "bench" / "results"))
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tessera-batch-bench-"))
    res: dict[str, Any] = {
        "command": "python -m bench.batch " + " ".join(sys.argv[1:]),
        "host": f"{platform.node()} ({os.cpu_count()} CPUs)",
        "device": args.device,
        "workers": args.workers,
        "max_faces": args.max_faces,
        "min_faces": args.min_faces,
        "assets": args.assets,
        "output": args.output,
        # the host may be shared: what else ran shows here
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    try:
        paths, faces = make_folder(
            work / "in", args.items, args.max_faces, args.min_faces, args.assets
        )
        res["items"], res["faces"] = len(paths), faces
        if args.chunk_items:
            os.environ["TESSERA_BATCH_CHUNK_ITEMS"] = str(args.chunk_items)
            os.environ["TESSERA_BATCH_CHUNK_BYTES"] = str(1 << 30)
            res["chunk_items"] = args.chunk_items
        svc = Service(work / "service", args.workers, 1, args.device, Path(args.root))
        try:
            svc.wait_ready()
            # every worker's child warmed by a small batch first
            warm = work / "warm"
            make_folder(warm, 2 * args.workers)
            run_batch(svc.url, warm, work / "warm.zip", args.device)
            res["runs"] = []
            for mode in args.runs.split(","):
                b = run_batch(
                    svc.url, work / "in", work / "out.zip", args.device, args.output,
                    follow=mode == "follow",
                )  # fmt: skip
                res["runs"].append(b)
                res["batch"] = b
                print(
                    f"batch ({mode}): {b['seconds']:.2f} s (submit {b['submit']:.2f}, run "
                    f"{b['run']:.2f}, download {b['download']:.2f}) {b['counts']} "
                    f"stages {b['stages']}",
                    flush=True,
                )
                if b["errors"]:
                    print(f"failed items by code: {json.dumps(b['errors'])[:3000]}", flush=True)
            if not args.no_jobs:
                some = paths[: args.jobs_items] if args.jobs_items else paths
                res["jobs"] = run_jobs(
                    svc.url, some, work / "jobs", args.device, args.concurrency, args.output
                )
                res["jobs"]["items"] = len(some)
                sources = ASSET_SOURCES if args.assets else SOURCES
                res["jobs"]["faces"] = sum(sources[q.name.split("-", 1)[1]] for q in some)
                print(f"jobs: {res['jobs']['seconds']:.2f} s {res['jobs']['counts']}")
        finally:
            svc.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (out_dir / "batch.json").write_text(json.dumps(res, indent=1, default=str))
    text = report(res)
    (out_dir / "BATCH.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
