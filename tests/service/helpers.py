"""Small helpers for the service tests."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.conftest import mesh_path


def spec(*ops: Any, fmt: str = "ply", attributes: list[str] | None = None, **extra: Any) -> str:
    pipeline = [o if isinstance(o, dict) else {"op": o} for o in ops]
    out: dict[str, Any] = {"format": fmt}
    if attributes is not None:
        out["attributes"] = attributes
    return json.dumps({"pipeline": pipeline, "output": out, **extra})


def submit(
    client: Any,
    mesh: str | bytes = "rx-cube.obj",
    spec_text: str | None = None,
    filename: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    data = mesh if isinstance(mesh, bytes) else mesh_path(mesh).read_bytes()
    name = filename or (mesh if isinstance(mesh, str) else "upload.obj")
    return client.post(
        "/v1/jobs",
        files={"mesh": (name, data)},
        data={"spec": spec_text if spec_text is not None else spec("stats")},
        headers=headers or {},
    )


def wait(
    client: Any,
    url: str,
    states: tuple[str, ...] = ("succeeded", "failed", "cancelled"),
    timeout: float = 60.0,
) -> dict[str, Any]:
    deadline = time.time() + timeout
    while True:
        j = client.get(url).json()
        assert "state" in j, f"not a job: {j}"  # a problem (404, 410...) says which
        if j["state"] in states:
            return j  # type: ignore[no-any-return]
        if time.time() > deadline:
            raise AssertionError(f"job stuck in {j['state']}: {j}")
        time.sleep(0.05)


def assert_problem(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["code"] == code, body
    assert body["status"] == status
    return body  # type: ignore[no-any-return]
