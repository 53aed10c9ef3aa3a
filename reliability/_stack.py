"""A whole Tessera on one machine, as processes the harness may kill: Redis, API, workers."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import redis

ROOT = Path(__file__).resolve().parent.parent
MESHES = Path(os.environ.get("TESSERA_MESHES", ROOT.parent / "shared" / "meshes"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_children(pid: int) -> list[int]:
    """The compute children of a supervisor (multiprocessing's resource tracker left out)."""
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for c in (task / "children").read_text().split():
                if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes():
                    out.append(int(c))
    except OSError:
        pass
    return out


class Stack:
    def __init__(self, lease: float = 20.0, max_attempts: int = 3, keep: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tessera-rel-"))
        self.keep = keep
        self.redis_port = free_port()
        self.api_port = free_port()
        self.redis_dir = self.dir / "redis"
        self.redis_dir.mkdir()
        self.redis_proc: subprocess.Popen[bytes] | None = None
        self.api_proc: subprocess.Popen[bytes] | None = None
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.env = dict(
            os.environ,
            TESSERA_REDIS_URL=self.redis_url,
            TESSERA_DATA_DIR=str(self.dir / "data"),
            TESSERA_LEASE_SECONDS=str(lease),
            TESSERA_MAX_ATTEMPTS=str(max_attempts),
            TESSERA_SHUTDOWN_GRACE_SECONDS="5",
            TESSERA_TEST_OPS="1",
            PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        )
        self.env.pop("REDIS_URL", None)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def blob_root(self) -> Path:
        return self.dir / "data" / "blobs"

    # ------------------------------------------------------------------ redis
    def start_redis(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server not found")
        self.redis_proc = subprocess.Popen(
            [exe, "--bind", "127.0.0.1", "--port", str(self.redis_port), "--dir",
             str(self.redis_dir), "--appendonly", "yes", "--appendfsync", "everysec",
             "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.time() + 20
        while True:
            try:
                redis.Redis.from_url(self.redis_url).ping()
                return
            except redis.ConnectionError:  # also LOADING while the AOF is read
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def kill_redis(self) -> None:
        assert self.redis_proc is not None
        self.redis_proc.send_signal(signal.SIGKILL)
        self.redis_proc.wait(10)

    def wipe_redis(self) -> None:
        shutil.rmtree(self.redis_dir)
        self.redis_dir.mkdir()

    # ------------------------------------------------------------------ api, workers
    def _popen(self, argv: list[str], log: Any, new_session: bool = False) -> Any:
        return subprocess.Popen(
            argv,
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=new_session,
        )

    def start_api(self, workers: int = 1) -> None:
        with open(self.dir / "api.log", "ab") as log:
            self.api_proc = self._popen(
                [sys.executable, "-m", "uvicorn", "service.main:create_app", "--factory",
                 "--host", "127.0.0.1", "--port", str(self.api_port), "--log-level", "warning",
                 "--workers", str(workers), "--no-access-log"],
                log,
            )  # fmt: skip
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise SystemExit("API did not start: see " + str(self.dir / "api.log"))
            time.sleep(0.1)

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        with open(self.dir / f"{name}.log", "ab") as log:
            p = self._popen([sys.executable, "-m", "workers", "--name", name], log, True)
        self.workers[name] = p
        return p

    def kill_worker(self, name: str) -> None:
        p = self.workers[name]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)

    def stop(self) -> None:
        for p in self.workers.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        for p in (self.api_proc, self.redis_proc):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ checks
    def job_files(self, job_id: str) -> list[str]:
        folder = self.blob_root / "jobs" / job_id
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def audit(self, jobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Every promise on every job: terminal, exactly one result per success, no orphans."""
        out: dict[str, Any] = {"jobs": len(jobs), "states": {}, "problems": []}
        with httpx.Client(base_url=self.url, timeout=30) as c:
            for job_id in jobs:
                r = c.get(f"/v1/jobs/{job_id}")
                if r.status_code != 200:
                    out["problems"].append(f"{job_id}: GET {r.status_code}")
                    continue
                j = r.json()
                out["states"][j["state"]] = out["states"].get(j["state"], 0) + 1
                if j["state"] == "failed":
                    errs = out.setdefault("errors", {})
                    code = (j.get("error") or {}).get("code", "?")
                    errs[code] = errs.get(code, 0) + 1
                files = self.job_files(job_id)
                results = [f for f in files if f.startswith("result-")]
                junk = [f for f in files if f.startswith(".tmp")]
                if j["state"] not in ("succeeded", "failed", "cancelled"):
                    out["problems"].append(f"{job_id}: not terminal ({j['state']})")
                if j["state"] == "succeeded":
                    if results != [f"result-a{j['attempts']}.ply"]:
                        out["problems"].append(f"{job_id}: results {results}")
                    if c.get(f"/v1/jobs/{job_id}/result").status_code != 200:
                        out["problems"].append(f"{job_id}: result not downloadable")
                elif results:
                    out["problems"].append(f"{job_id}: {j['state']} but results {results}")
                if junk:
                    out["problems"].append(f"{job_id}: temporaries {junk}")
        return out


def cube() -> bytes:
    return (MESHES / "rx-cube.obj").read_bytes()


def submit(c: httpx.Client, spec: str, data: bytes | None = None, **headers: str) -> httpx.Response:
    return c.post(
        "/v1/jobs",
        files={"mesh": ("cube.obj", data if data is not None else cube())},
        data={"spec": spec},
        headers=headers,
    )


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q / 100 * len(s)))]
