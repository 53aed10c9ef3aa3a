"""Shared fixtures: a real Redis (private server or ``TESSERA_TEST_REDIS_URL``), settings on a
temporary data directory, the API client, worker processes, and the real meshes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MESHES = Path(os.environ.get("TESSERA_MESHES", ROOT.parent / "shared" / "meshes"))
#: textured, multi-material assets (glTF, OBJ + MTL in a zip) as asset pipelines send them
ASSETS = Path(os.environ.get("TESSERA_ASSETS", ROOT.parent / "shared" / "assets"))

pytest_plugins = ["tests.s3"]  # the s3_server fixture (a real SeaweedFS)

# the testing operation (sleep/fail) is registered in this process and in every child it starts
os.environ["TESSERA_TEST_OPS"] = "1"


def all_meshes() -> list[str]:
    """Every mesh file in the shared folder, for tests that hold on all of them."""
    return sorted(p.name for p in MESHES.glob("*.obj"))


@pytest.fixture(autouse=True)
def _gpu_guard(request: pytest.FixtureRequest) -> None:
    """Tests marked ``gpu`` skip where no GPU is usable, unless ``TESSERA_REQUIRE_GPU=1`` (the GPU
    host's suite), where a missing GPU is a failure."""
    if request.node.get_closest_marker("gpu") is None:
        return
    from workers.engine.backend import _probe_cupy

    mod, why = _probe_cupy()
    if mod is None:
        if os.environ.get("TESSERA_REQUIRE_GPU") == "1":
            pytest.fail(f"GPU required but unavailable: {why}")
        pytest.skip(f"no GPU: {why}")


def mesh_path(name: str) -> Path:
    p = MESHES / name
    if not p.is_file():
        pytest.fail(f"test mesh {p} missing: set TESSERA_MESHES to the shared/meshes folder")
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A private redis-server the tests own (so they may stop and restart it)."""

    def __init__(self, workdir: Path) -> None:
        self.exe = shutil.which("redis-server")
        if self.exe is None:
            pytest.fail(
                "redis-server not found: install it (make test does) or set TESSERA_TEST_REDIS_URL"
            )
        self.dir = workdir
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it on its port; a first start that finds the port taken (another test process
        picked it too) takes another. A restart keeps the port: the tests' URL must stay."""
        for _ in range(1 if self.started else 5):
            if self._spawn():
                self.started = True
                return
            self.port = _free_port()
        pytest.fail("private redis-server did not start")

    def _spawn(self) -> bool:
        self.proc = subprocess.Popen(
            [
                str(self.exe),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        deadline = time.time() + 10
        while time.time() < deadline and self.proc.poll() is None:
            try:
                info = redis.Redis.from_url(self.url).info("server")
            except redis.ConnectionError:
                time.sleep(0.05)
                continue
            if int(info["process_id"]) == self.proc.pid:
                return True
            break  # another process's server answers on this port
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def _database_of_this_process(url: str) -> str:
    """``TESSERA_TEST_REDIS_URL`` as this test process uses it: under pytest-xdist, worker
    ``gwK`` uses the database K above the one given (each process flushes its own); a URL whose
    database cannot be told, or a database past 15, stops the run with a clear word."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    path = parts.path.strip("/") or "0"
    if parts.scheme not in ("redis", "rediss") or parts.query or not path.isdigit():
        pytest.fail(
            f"TESSERA_TEST_REDIS_URL={url!r}: under pytest-xdist it must be redis://host:port/N "
            "(each test process uses database N + its number); or run TESSERA_TEST_PROCESSES=1"
        )
    db = int(path) + int(worker[2:])
    if db > 15:
        pytest.fail(f"TESSERA_TEST_REDIS_URL: test process {worker} would need database {db}")
    return urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("TESSERA_TEST_REDIS_URL")
    if url:
        yield _database_of_this_process(url)
        return
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[object]:
    import redis

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    yield r
    r.flushdb()
    r.close()


@pytest.fixture
def settings(redis_client: object, redis_url: str, tmp_path: Path) -> object:
    from workers.settings import Settings

    return Settings(
        redis_url=redis_url,
        data_dir=tmp_path / "data",
        lease_seconds=2.0,
        max_attempts=3,
        max_upload_bytes=8 << 20,
        shutdown_grace_seconds=3.0,
        # a worker's compute child starts at once (tests start and kill many); the warm-up has
        # its own tests
        warm_up=False,
    )


def settings_env(s: object) -> dict[str, str]:
    """Environment that makes a child process read the same settings."""
    env = dict(os.environ)
    for k, v in s.model_dump().items():  # type: ignore[attr-defined]
        if v is not None:
            env[f"TESSERA_{k.upper()}"] = json.dumps(v) if isinstance(v, (dict, list)) else str(v)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def client(settings: object) -> Iterator[object]:
    from fastapi.testclient import TestClient

    from service.main import create_app

    with TestClient(create_app(settings)) as c:  # type: ignore[arg-type]
        yield c


class Workers:
    """Worker processes (``python -m workers``) started by a test and stopped after it."""

    def __init__(self, settings: object, logdir: Path) -> None:
        self.settings = settings
        self.logdir = logdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *, cpu_only: bool = False) -> subprocess.Popen[bytes]:
        """Start a worker; ``cpu_only`` hides every GPU from it (a CPU-only deployment, also
        on a GPU host)."""
        env = settings_env(self.settings)
        if cpu_only:
            env["CUDA_VISIBLE_DEVICES"] = ""
        with open(self.logdir / f"{name}.log", "ab") as log:
            p = subprocess.Popen(
                [sys.executable, "-m", "workers", "--name", name],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        self.procs[name] = p
        return p

    def kill(self, name: str) -> None:
        """SIGKILL the worker's whole process group: supervisor and child."""
        import signal

        p = self.procs[name]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)

    def stop_all(self) -> None:
        import signal

        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(10)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(10)

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text(errors="replace")


@pytest.fixture
def workers(settings: object, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(settings, tmp_path)
    yield w
    w.stop_all()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``TESSERA_LEAVE_OUT_S3=1`` (the offline GPU host's suite, which has no SeaweedFS)
    deselects the tests that need the S3 server; CI runs them."""
    if os.environ.get("TESSERA_LEAVE_OUT_S3") != "1":
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        needs = {"s3_server", "s3_service"} & set(getattr(item, "fixturenames", ()))
        s3_param = any(isinstance(v, str) and v == "s3" for v in params.values())
        (drop if needs or s3_param else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
