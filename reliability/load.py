"""``python -m reliability load``: a few hundred concurrent clients on loopback, each submitting a
small job, polling it until it ends and downloading the result, for a while. Figures: requests
by status (no 5xx), latency percentiles per kind of request, end-to-end job time, and how long
the queue takes to drain once the clients stop."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter, defaultdict
from typing import Any

import httpx
import redis

from workers.queue import keys

from ._stack import Stack, cube, pct


async def _client(
    base: str,
    until: float,
    lat: dict[str, list[float]],
    codes: Counter[str],
    e2e: list[float],
    ids: list[str],
    data: bytes,
    rng: random.Random,
) -> None:
    body = json.dumps({"pipeline": [{"op": "weld"}, {"op": "vertex_normals"}, {"op": "stats"}]})
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        await asyncio.sleep(rng.uniform(0, 2))

        async def call(kind: str, method: str, url: str, **kw: Any) -> httpx.Response | None:
            t = time.perf_counter()
            try:
                r = await c.request(method, url, **kw)
            except httpx.HTTPError as exc:
                codes[f"{kind} {exc.__class__.__name__}"] += 1
                return None
            lat[kind].append(time.perf_counter() - t)
            codes[f"{kind} {r.status_code}"] += 1
            return r

        while time.monotonic() < until:
            t0 = time.perf_counter()
            r = await call(
                "submit",
                "POST",
                "/v1/jobs",
                files={"mesh": ("cube.obj", data)},
                data={"spec": body},
            )
            if r is None or r.status_code != 202:
                await asyncio.sleep(1)
                continue
            job_id = r.json()["id"]
            ids.append(job_id)
            while True:
                await asyncio.sleep(0.5)
                g = await call("poll", "GET", f"/v1/jobs/{job_id}")
                if g is not None and g.status_code == 200 and g.json()["state"] in (
                    "succeeded", "failed", "cancelled"):  # fmt: skip
                    break
            if g.json()["state"] == "succeeded":
                await call("result", "GET", f"/v1/jobs/{job_id}/result")
                e2e.append(time.perf_counter() - t0)


async def _drive(args: Any, base: str) -> dict[str, Any]:
    lat: dict[str, list[float]] = defaultdict(list)
    codes: Counter[str] = Counter()
    e2e: list[float] = []
    ids: list[str] = []
    data = cube()
    until = time.monotonic() + args.seconds
    rng = random.Random(args.seed)
    await asyncio.gather(
        *(_client(base, until, lat, codes, e2e, ids, data, rng) for _ in range(args.clients))
    )
    return {"lat": lat, "codes": codes, "e2e": e2e, "ids": ids}


def run(args: Any) -> dict[str, Any]:
    stack = Stack(keep=args.keep)
    try:
        stack.start_redis()
        stack.start_api(workers=args.api_processes)
        for i in range(args.workers):
            stack.start_worker(f"w{i}")
        t0 = time.monotonic()
        out = asyncio.run(_drive(args, stack.url))
        ran = time.monotonic() - t0
        r = redis.Redis.from_url(stack.redis_url)

        def waiting() -> int:
            return sum(
                r.hget(keys.job(j), "state") not in (b"succeeded", b"failed") for j in out["ids"]
            )

        left = waiting()
        t1 = time.monotonic()
        while waiting() and time.monotonic() - t1 < 300:
            time.sleep(0.5)
        drain = time.monotonic() - t1
        codes = out["codes"]
        figures: dict[str, Any] = {
            "clients": args.clients,
            "seconds": round(ran, 1),
            "api_processes": args.api_processes,
            "workers": args.workers,
            "requests": sum(codes.values()),
            "by_status": dict(sorted(codes.items())),
            "server_errors": sum(n for k, n in codes.items() if k.split()[1].startswith("5")),
            "jobs_submitted": len(out["ids"]),
            "jobs_completed_by_clients": len(out["e2e"]),
            "jobs_per_second": round(len(out["e2e"]) / ran, 2),
            "unfinished_when_clients_stopped": left,
            "queue_drained_in_s": round(drain, 1),
            "still_unfinished": waiting(),
        }
        for kind, values in sorted(out["lat"].items()):
            figures[f"{kind}_ms"] = {
                q: round(1000 * pct(values, float(q[1:])), 1) for q in ("p50", "p95", "p99")
            } | {"max": round(1000 * max(values), 1), "n": len(values)}
        figures["job_end_to_end_s"] = {
            q: round(pct(out["e2e"], float(q[1:])), 2) for q in ("p50", "p95", "p99")
        }
        print(json.dumps(figures, indent=1), flush=True)
        return figures
    finally:
        stack.stop()
