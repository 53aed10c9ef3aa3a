"""``python -m bench.latency``: end-to-end job latency through a running service (submit, wait,
download), a few runs per mesh; start the service first with ``tessera up``."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import httpx

SPEC = {
    "pipeline": [
        {"op": "weld"},
        {"op": "vertex_normals", "weighting": "angle"},
        {"op": "gaussian_curvature"},
    ],
    "output": {"format": "ply", "attributes": ["vertex_normals", "gaussian_curvature"]},
}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument(
        "--meshes", default=str(Path(__file__).resolve().parents[2] / "shared" / "meshes")
    )
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("names", nargs="*", default=["rx-cube.obj", "spot.obj", "stanford-bunny.obj"])
    args = ap.parse_args()
    spec = json.dumps(SPEC)
    with httpx.Client(base_url=args.url, timeout=120) as c:
        for name in args.names:
            data = (Path(args.meshes) / name).read_bytes()
            lat, job = [], {}
            for _ in range(args.runs):
                t0 = time.perf_counter()
                url = c.post("/v1/jobs", files={"mesh": (name, data)}, data={"spec": spec}).json()[
                    "url"
                ]
                while (job := c.get(url).json())["state"] not in ("succeeded", "failed"):
                    time.sleep(0.005)
                c.get(url + "/result")
                lat.append(time.perf_counter() - t0)
            stages = {k: round(v, 3) for k, v in job["timings"].items()}
            print(
                f"{name}: {job['input']['faces']} faces, {job['state']}, latency median "
                f"{statistics.median(lat):.3f}s (min {min(lat):.3f}s, max {max(lat):.3f}s); "
                f"last job's stages {stages}"
            )


if __name__ == "__main__":
    main()
