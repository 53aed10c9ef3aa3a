"""``python -m reliability redis``: Redis killed (kill -9, AOF fsynced every second) and restarted
under load, then killed and wiped. Figures: what the API answered while Redis was down (503,
never 500), how soon it accepted jobs again, whether the workers came back by themselves, how
long until every accepted job had ended, and how many were re-created from the manifests (queued
again) or from their saved outcomes (ended as they had)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import httpx
import redis

from workers.queue import keys

from ._stack import Stack, submit

ENDED = ("succeeded", "failed", "cancelled")


class Load:
    """Clients submitting small jobs and reading them back, recording every status."""

    def __init__(self, url: str, clients: int) -> None:
        self.url = url
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.accepted: list[str] = []
        self.statuses: list[tuple[float, int]] = []
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def _run(self) -> None:
        body = json.dumps({"pipeline": [{"op": "sleep", "seconds": 0.2}, {"op": "stats"}]})
        with httpx.Client(base_url=self.url, timeout=30) as c:
            while not self.stop.is_set():
                try:
                    r = submit(c, body)
                except httpx.HTTPError:
                    self._note(-1)
                    time.sleep(0.2)
                    continue
                self._note(r.status_code)
                if r.status_code != 202:
                    time.sleep(0.2)
                    continue
                job_id = r.json()["id"]
                with self.lock:
                    self.accepted.append(job_id)
                # a caller waits for its job (polling through the outage) before the next one
                while not self.stop.is_set():
                    time.sleep(0.25)
                    try:
                        g = c.get(f"/v1/jobs/{job_id}")
                    except httpx.HTTPError:
                        self._note(-1)
                        continue
                    self._note(g.status_code)
                    if g.status_code == 200 and g.json()["state"] in ENDED:
                        break

    def _note(self, status: int) -> None:
        with self.lock:
            self.statuses.append((time.monotonic(), status))

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def between(self, t0: float, t1: float) -> Counter[int]:
        with self.lock:
            return Counter(s for t, s in self.statuses if t0 <= t < t1)


def _all_ended(r: redis.Redis, ids: list[str]) -> bool:
    for job_id in ids:
        st = r.hget(keys.job(job_id), "state")
        if st not in (b"succeeded", b"failed", b"cancelled"):
            return False
    return True


def _wait(pred: Any, timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.25)
    return None


def run(args: Any) -> dict[str, Any]:
    stack = Stack(lease=args.lease, keep=args.keep)
    figures: dict[str, Any] = {"workers": args.workers, "clients": args.clients}
    try:
        stack.start_redis()
        stack.start_api()
        for i in range(args.workers):
            stack.start_worker(f"w{i}")
        load = Load(stack.url, args.clients)
        load.start()
        time.sleep(args.before)

        # ------------------------------------------------ 1. kill -9 and restart, AOF kept
        t_kill = time.monotonic()
        stack.kill_redis()
        time.sleep(args.down)
        t_up = time.monotonic()
        stack.start_redis()
        first_ok = _wait(lambda: load.between(t_up, time.monotonic() + 1)[202] > 0, 60)
        time.sleep(args.after)
        load.join()
        down = load.between(t_kill, t_up)
        r = redis.Redis.from_url(stack.redis_url)
        accepted = list(load.accepted)
        ended = _wait(lambda: _all_ended(r, accepted), args.settle)
        alive = sum(p.poll() is None for p in stack.workers.values())
        live = httpx.get(stack.url + "/readyz", timeout=10).json()["checks"].get("workers")
        figures["restart"] = {
            "answers_while_down": dict(down),
            "server_errors_500_while_down": sum(
                n for s, n in down.items() if s >= 500 and s != 503
            ),
            "all_answers": dict(load.between(0, time.monotonic())),
            "accepting_again_after_restart_s": None if first_ok is None else round(first_ok, 2),
            "accepted_jobs": len(accepted),
            "all_ended_within_s": None if ended is None else round(ended, 1),
            "not_ended": sum(not _all_ended(r, [j]) for j in accepted),
            "recovered_from_manifests": int(r.hget(keys.COUNTERS, "recovered") or 0),
            "worker_processes_alive": f"{alive}/{args.workers}",
            "workers_heartbeating": live,
        }
        print("restart:", figures["restart"], flush=True)

        # ------------------------------------------------ 2. kill -9 and wipe: data lost
        stack.kill_redis()
        stack.wipe_redis()
        stack.start_redis()
        r = redis.Redis.from_url(stack.redis_url)
        t0 = time.monotonic()
        back = _wait(lambda: all(r.exists(keys.job(j)) for j in accepted), 120)
        ended = _wait(lambda: _all_ended(r, accepted), args.settle)
        audit = stack.audit({j: {} for j in accepted})
        figures["wiped"] = {
            "jobs_known_before": len(accepted),
            "recreated_within_s": None if back is None else round(back, 2),
            "recovered_from_manifests": int(r.hget(keys.COUNTERS, "recovered") or 0),
            "restored_as_ended": int(r.hget(keys.COUNTERS, "recovered_final") or 0),
            "all_ended_within_s": None if ended is None else round(time.monotonic() - t0, 1),
            "states": audit["states"],
            "failed_with": audit.get("errors", {}),
            "problems": audit["problems"][:20],
        }
        print("wiped:", figures["wiped"], flush=True)
        return figures
    finally:
        stack.stop()
