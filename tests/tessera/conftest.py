"""One live service (API on a port, two workers) shared by the client and CLI tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live import LiveService, flush, live_settings


@pytest.fixture(scope="package")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    flush(redis_url)
    tmp = tmp_path_factory.mktemp("live")
    svc = LiveService(live_settings(redis_url, tmp / "data"), tmp, n_workers=2)
    try:
        svc.wait_ready()
        yield svc
    finally:
        svc.stop()
        flush(redis_url)
