"""``python -m reliability chaos``: kill -9 compute children and whole workers, freeze a worker
past its lease, under a few dozen concurrent jobs; then audit every job.

Figures: how fast a job whose child was killed runs again (its supervisor lives); how fast a job
of a killed worker is running elsewhere or queued for retry while the other workers are busy;
what a frozen worker could commit when it woke up; the final state of every job.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from typing import Any

import httpx
import redis

from workers.queue import keys

from ._stack import Stack, pct, spawn_children, submit


def _busy(r: redis.Redis, stack: Stack) -> list[tuple[str, str]]:
    """(worker, job) for every live worker running a job."""
    out = []
    for name, p in stack.workers.items():
        if p.poll() is not None:
            continue
        raw = r.get(keys.worker(name))
        if raw:
            info = json.loads(raw)
            if info.get("busy") and info.get("job"):
                out.append((name, info["job"]))
    return out


def _job(r: redis.Redis, job_id: str) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in r.hgetall(keys.job(job_id)).items()}


def _wait(pred: Any, timeout: float, step: float = 0.05) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def run(args: Any) -> dict[str, Any]:
    rng = random.Random(args.seed)
    stack = Stack(lease=args.lease, keep=args.keep)
    figures: dict[str, Any] = {"workers": args.workers, "lease_seconds": args.lease}
    try:
        stack.start_redis()
        stack.start_api()
        for i in range(args.workers):
            stack.start_worker(f"w{i}")
        r = redis.Redis.from_url(stack.redis_url)
        c = httpx.Client(base_url=stack.url, timeout=30)
        jobs: dict[str, dict[str, Any]] = {}
        server_errors = 0

        def add(n: int, lo: float, hi: float) -> None:
            nonlocal server_errors
            for _ in range(n):
                body = {"pipeline": [{"op": "sleep", "seconds": round(rng.uniform(lo, hi), 2)},
                                     {"op": "stats"}]}  # fmt: skip
                res = submit(c, json.dumps(body))
                server_errors += res.status_code >= 500
                if res.status_code == 202:
                    jobs[res.json()["id"]] = {}

        # ------------------------------------------------ 1. compute children killed
        t_start = time.monotonic()
        add(args.jobs, 0.5, 3.0)
        child_recovery: list[float] = []
        respawn: list[float] = []
        misses = 0
        while len(child_recovery) + misses < args.child_kills:
            time.sleep(rng.uniform(0.3, 1.2))
            busy = _busy(r, stack)
            if not busy:
                if all(_job(r, j).get("state") in ("succeeded", "failed") for j in jobs):
                    add(10, 0.5, 3.0)  # keep the load up until every kill is done
                continue
            name, job_id = rng.choice(busy)
            before = _job(r, job_id)
            kids = spawn_children(stack.workers[name].pid)
            if before.get("state") != "running" or not kids:
                continue
            attempt = int(before["attempt"])
            os.kill(kids[0], signal.SIGKILL)
            t_kill = time.monotonic()

            def again(job_id: str = job_id, attempt: int = attempt) -> bool:
                j = _job(r, job_id)
                return j.get("state") == "failed" or (
                    int(j.get("attempt", 0)) > attempt and j.get("state") in ("running",
                                                                              "succeeded")
                )  # fmt: skip

            dt = _wait(again, 60)
            if dt is None:
                misses += 1
            else:
                child_recovery.append(dt)
                # and the job's next attempt has a process again: the new child (it imports
                # NumPy and the engine first, then takes the job waiting in its pipe)
                pid = stack.workers[name].pid
                _wait(lambda: [k for k in spawn_children(pid) if k != kids[0]], 60)  # noqa: B023
                respawn.append(time.monotonic() - t_kill)
        figures["child_kills"] = {
            "kills": len(child_recovery) + misses,
            "not_running_again_within_60s": misses,
            "running_again_p50_s": round(pct(child_recovery, 50), 2),
            "running_again_p95_s": round(pct(child_recovery, 95), 2),
            "running_again_max_s": round(max(child_recovery, default=float("nan")), 2),
            "new_child_p50_s": round(pct(respawn, 50), 2),
            "new_child_max_s": round(max(respawn, default=float("nan")), 2),
        }
        print("child kills:", figures["child_kills"], flush=True)

        # ------------------------------------------------ 2. whole workers killed
        worker_recovery: list[float] = []
        spare = args.workers
        for _ in range(args.worker_kills):
            add(args.workers * 2, 8.0, 10.0)  # every worker busy for a while
            _wait(lambda: len(_busy(r, stack)) == len(
                [p for p in stack.workers.values() if p.poll() is None]), 60)  # fmt: skip
            busy = _busy(r, stack)
            if not busy:
                continue
            name, job_id = rng.choice(busy)
            attempt = int(_job(r, job_id)["attempt"])
            stack.kill_worker(name)

            def elsewhere(job_id: str = job_id, attempt: int = attempt, name: str = name) -> bool:
                j = _job(r, job_id)
                return j.get("state") in ("queued", "succeeded", "failed") or (
                    j.get("state") == "running" and j.get("owner") != name
                )

            dt = _wait(elsewhere, 120, 0.1)
            worker_recovery.append(float("inf") if dt is None else dt)
            stack.start_worker(f"w{spare}")  # the pool keeps its size
            spare += 1
        figures["worker_kills"] = {
            "kills": len(worker_recovery),
            "recovery_s": [round(x, 1) for x in worker_recovery],
            "recovery_max_s": round(max(worker_recovery, default=float("nan")), 1),
        }
        print("worker kills:", figures["worker_kills"], flush=True)

        # ------------------------------------------------ 3. a worker frozen past its lease
        add(args.workers, 4.0, 5.0)
        while True:  # a worker frozen while its job is running under it (heartbeats lag 2 s)
            _wait(lambda: bool(_busy(r, stack)), 60)
            name, job_id = rng.choice(_busy(r, stack))
            victim = stack.workers[name]
            os.killpg(victim.pid, signal.SIGSTOP)
            j = _job(r, job_id)
            if j.get("state") == "running" and j.get("owner") == name:
                break
            os.killpg(victim.pid, signal.SIGCONT)  # its job had just ended: another
            add(1, 4.0, 5.0)
        _wait(lambda: _job(r, job_id).get("owner") not in (name,), args.lease * 3, 0.1)
        frozen_for = args.lease + 6
        time.sleep(max(0.0, frozen_for - args.lease))
        os.killpg(victim.pid, signal.SIGCONT)
        _wait(lambda: _job(r, job_id).get("state") in ("succeeded", "failed"), 120, 0.1)
        time.sleep(6)  # the woken worker finishes its run and tries to renew or commit
        log = (stack.dir / f"{name}.log").read_text(errors="replace")
        final = _job(r, job_id)
        figures["frozen_worker"] = {
            "job_state": final.get("state"),
            "attempt_committed": final.get("attempt"),
            "committed_by": final.get("owner"),
            "frozen_worker": name,
            "frozen_attempt": j.get("attempt"),
            "frozen_worker_refused": any(
                job_id in line and ("lost" in line or "can no longer commit" in line)
                for line in log.splitlines()
            ),
        }
        print("frozen worker:", figures["frozen_worker"], flush=True)

        # ------------------------------------------------ every job ends, audited
        drained = _wait(
            lambda: all(_job(r, j).get("state") in ("succeeded", "failed", "cancelled")
                        for j in jobs), 600, 0.5)  # fmt: skip
        figures["drained_after_s"] = None if drained is None else round(drained, 1)
        audit = stack.audit(jobs)
        figures["audit"] = {
            "jobs": audit["jobs"],
            "states": audit["states"],
            "failed_with": audit.get("errors", {}),
            "problems": audit["problems"][:20],
            "api_5xx": server_errors,
            "dead_lettered": int(r.zcard(keys.DEAD)),
            "counters": {k.decode(): int(v) for k, v in r.hgetall(keys.COUNTERS).items()},
        }
        figures["wall_s"] = round(time.monotonic() - t_start, 1)
        print("audit:", figures["audit"], flush=True)
        return figures
    finally:
        stack.stop()
