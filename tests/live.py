"""A live service for end-to-end tests of clients: the API served by uvicorn on a free port (in
a thread of the test process) and worker processes, all on the test Redis."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Workers, _free_port


class LiveApi:
    def __init__(self, settings: Any) -> None:
        import uvicorn

        from service.main import create_app

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-api", daemon=True)

    def start(self) -> LiveApi:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the live API did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class LiveService:
    """API plus ``n_workers`` workers; ``stop()`` ends all of them."""

    def __init__(self, settings: Any, logdir: Path, n_workers: int = 1) -> None:
        self.settings = settings
        self.api = LiveApi(settings).start()
        self.url = self.api.url
        self.workers = Workers(settings, logdir)
        for i in range(n_workers):
            self.workers.start(f"w{i}")

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.time() + timeout
        while httpx.get(self.url + "/readyz").status_code != 200:
            if time.time() > deadline:
                raise RuntimeError("no worker came up")
            time.sleep(0.05)

    def stop(self) -> None:
        self.workers.stop_all()
        self.api.stop()


def live_settings(redis_url: str, data_dir: Path, **extra: Any) -> Any:
    from workers.settings import Settings

    return Settings(
        redis_url=redis_url,
        data_dir=data_dir,
        lease_seconds=2.0,
        max_attempts=2,
        max_upload_bytes=8 << 20,
        **{"warm_up": False, **extra},
    )


def flush(redis_url: str) -> None:
    import redis

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    r.close()
