"""HTTP clients for a Tessera service: :class:`Client` (blocking) and :class:`AsyncClient`.

>>> with Client("http://127.0.0.1:8000") as tc:
...     job = tc.submit("bunny.obj", ["weld", ("vertex_normals", {"weighting": "angle"})])
...     tc.wait(job, progress=lambda j: print(j["state"], j["progress"]))
...     tc.download(job, "bunny.ply")

Answers 429, 502, 503 and 504 and connection failures are retried with exponential backoff and
jitter (``Retry-After`` honoured); a submission always carries an ``Idempotency-Key`` (one is made
up when none is given), so a retried upload never makes a second job. Refusals raise the
:mod:`tessera.errors` class of their status, with the API's ``code``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from . import errors
from ._common import (
    DEFAULT_URL,
    TERMINAL,
    MeshInput,
    Progress,
    ProgressCallback,
    RetryPolicy,
    Step,
    build_spec,
    check_terminal,
    job_id_of,
    multipart,
    new_idempotency_key,
    poll_delays,
    raise_for_problem,
    tmp_path_for,
    uploads,
)

log = logging.getLogger(__name__)


def _headers(api_key: str | None) -> dict[str, str]:
    h = {"User-Agent": "tessera-python"}
    if api_key:
        h["Authorization"] = f"Bearer {api_key}"
    return h


def _default_url(url: str | None) -> str:
    return (url or os.environ.get("TESSERA_URL") or DEFAULT_URL).rstrip("/")


class Client:
    """A blocking client. ``url`` defaults to ``$TESSERA_URL`` or ``http://127.0.0.1:8000``;
    ``api_key`` to ``$TESSERA_API_KEY``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = _default_url(url)
        self.retry = retry or RetryPolicy()
        key = api_key if api_key is not None else os.environ.get("TESSERA_API_KEY")
        self._own = http is None
        # results may answer 307 to a presigned URL of the blob store
        self.http = http or httpx.Client(timeout=timeout, follow_redirects=True)
        self.http.headers.update(_headers(key))

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        if self._own:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        make = kw.pop("make", None)  # rebuilds the body for every try (multipart)
        attempt = 0
        while True:
            try:
                resp = self.http.request(method, self.url + path, **(make() if make else {}), **kw)
            except httpx.TransportError as exc:
                wait = self.retry.delay(attempt, None)
                if wait is None:
                    raise errors.ConnectionFailed(
                        "client.connection", f"{method} {path}: {exc!r}"
                    ) from exc
                log.warning("%s %s: %r; retry in %.2fs", method, path, exc, wait)
            else:
                wait = self.retry.delay(attempt, resp) if resp.status_code >= 400 else None
                if wait is None:
                    raise_for_problem(resp)
                    return resp
                log.warning("%s %s: %d; retry in %.2fs", method, path, resp.status_code, wait)
                resp.close()
            time.sleep(wait)
            attempt += 1

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        return self._request(method, path, **kw).json()

    # ------------------------------------------------------------------ jobs
    def submit(
        self,
        mesh: MeshInput | Sequence[MeshInput],
        pipeline: Sequence[Step] | None = None,
        *,
        filename: str | Sequence[str] | None = None,
        output: str | dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None,
        device: str | None = None,
        deadline_seconds: int | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Queue a job: one mesh (a path, or bytes with ``filename``) or several (a list), a
        pipeline of steps (names, ``(name, params)`` or ``{"op": name, ...}``) and the rest of the
        job spec. Returns the job record (``id``, ``url``, ``state``...)."""
        parts = uploads(mesh, filename)
        body = build_spec(
            pipeline,
            spec=spec,
            output=output,
            device=device,
            deadline_seconds=deadline_seconds,
            callback_url=callback_url,
        )
        key = idempotency_key or new_idempotency_key()
        return self._json(  # type: ignore[no-any-return]
            "POST",
            "/v1/jobs",
            make=lambda: multipart(parts, body),
            headers={"Idempotency-Key": key},
        )

    def get(self, job: str | dict[str, Any]) -> dict[str, Any]:
        return self._json("GET", f"/v1/jobs/{job_id_of(job)}")  # type: ignore[no-any-return]

    def wait(
        self,
        job: str | dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        poll_max: float = 1.0,
    ) -> dict[str, Any]:
        """Poll until the job ends; returns its record when it succeeded, raises
        :class:`~tessera.errors.JobFailed`, ``JobCancelled`` or ``Gone`` otherwise, and
        :class:`~tessera.errors.WaitTimeout` after ``timeout`` seconds."""
        job_id = job_id_of(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = Progress(progress)
        for delay in poll_delays(most=poll_max):
            rec = self.get(job_id)
            seen.update(rec)
            if rec["state"] in TERMINAL:
                return check_terminal(rec)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.WaitTimeout(
                        "client.timeout", f"job {job_id} still {rec['state']}", body=rec
                    )
                delay = min(delay, left)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def result(self, job: str | dict[str, Any]) -> bytes:
        return self._request("GET", f"/v1/jobs/{job_id_of(job)}/result").content

    def download(self, job: str | dict[str, Any], path: str | os.PathLike[str]) -> Path:
        """Write the result to ``path`` (a temporary file renamed into place: never half a file)."""
        return self._save(f"/v1/jobs/{job_id_of(job)}/result", Path(path))

    def artifact(self, job: str | dict[str, Any], name: str) -> bytes:
        return self._request("GET", f"/v1/jobs/{job_id_of(job)}/artifacts/{name}").content

    def download_artifact(
        self, job: str | dict[str, Any], name: str, path: str | os.PathLike[str]
    ) -> Path:
        return self._save(f"/v1/jobs/{job_id_of(job)}/artifacts/{name}", Path(path))

    def _save(self, route: str, path: Path) -> Path:
        data = self._request("GET", route).content
        tmp = tmp_path_for(path)
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    def cancel(self, job: str | dict[str, Any]) -> dict[str, Any]:
        return self._json("DELETE", f"/v1/jobs/{job_id_of(job)}")  # type: ignore[no-any-return]

    def process(
        self,
        mesh: MeshInput | Sequence[MeshInput],
        pipeline: Sequence[Step] | None,
        out: str | os.PathLike[str],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        **submit: Any,
    ) -> dict[str, Any]:
        """Submit, wait and download the result to ``out``; returns the finished job."""
        job = self.submit(mesh, pipeline, **submit)
        done = self.wait(job, progress=progress, timeout=timeout)
        self.download(done, out)
        return done

    # ------------------------------------------------------------------ catalogue
    def operations(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/operations")["data"]  # type: ignore[no-any-return]

    def operation(self, name: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/operations/{name}")  # type: ignore[no-any-return]


class AsyncClient:
    """The same as :class:`Client`, for asyncio."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = _default_url(url)
        self.retry = retry or RetryPolicy()
        key = api_key if api_key is not None else os.environ.get("TESSERA_API_KEY")
        self._own = http is None
        self.http = http or httpx.AsyncClient(timeout=timeout, follow_redirects=True)
        self.http.headers.update(_headers(key))

    async def aclose(self) -> None:
        if self._own:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        make = kw.pop("make", None)
        attempt = 0
        while True:
            try:
                body = await asyncio.to_thread(make) if make else {}
                resp = await self.http.request(method, self.url + path, **body, **kw)
            except httpx.TransportError as exc:
                wait = self.retry.delay(attempt, None)
                if wait is None:
                    raise errors.ConnectionFailed(
                        "client.connection", f"{method} {path}: {exc!r}"
                    ) from exc
                log.warning("%s %s: %r; retry in %.2fs", method, path, exc, wait)
            else:
                wait = self.retry.delay(attempt, resp) if resp.status_code >= 400 else None
                if wait is None:
                    raise_for_problem(resp)
                    return resp
                log.warning("%s %s: %d; retry in %.2fs", method, path, resp.status_code, wait)
                await resp.aclose()
            await asyncio.sleep(wait)
            attempt += 1

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        return (await self._request(method, path, **kw)).json()

    async def submit(
        self,
        mesh: MeshInput | Sequence[MeshInput],
        pipeline: Sequence[Step] | None = None,
        *,
        filename: str | Sequence[str] | None = None,
        output: str | dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None,
        device: str | None = None,
        deadline_seconds: int | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        parts = uploads(mesh, filename)
        body = build_spec(
            pipeline,
            spec=spec,
            output=output,
            device=device,
            deadline_seconds=deadline_seconds,
            callback_url=callback_url,
        )
        key = idempotency_key or new_idempotency_key()
        return await self._json(  # type: ignore[no-any-return]
            "POST",
            "/v1/jobs",
            make=lambda: multipart(parts, body),
            headers={"Idempotency-Key": key},
        )

    async def get(self, job: str | dict[str, Any]) -> dict[str, Any]:
        return await self._json("GET", f"/v1/jobs/{job_id_of(job)}")  # type: ignore[no-any-return]

    async def wait(
        self,
        job: str | dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        poll_max: float = 1.0,
    ) -> dict[str, Any]:
        job_id = job_id_of(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = Progress(progress)
        for delay in poll_delays(most=poll_max):
            rec = await self.get(job_id)
            seen.update(rec)
            if rec["state"] in TERMINAL:
                return check_terminal(rec)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.WaitTimeout(
                        "client.timeout", f"job {job_id} still {rec['state']}", body=rec
                    )
                delay = min(delay, left)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def result(self, job: str | dict[str, Any]) -> bytes:
        return (await self._request("GET", f"/v1/jobs/{job_id_of(job)}/result")).content

    async def download(self, job: str | dict[str, Any], path: str | os.PathLike[str]) -> Path:
        return await self._save(f"/v1/jobs/{job_id_of(job)}/result", Path(path))

    async def artifact(self, job: str | dict[str, Any], name: str) -> bytes:
        route = f"/v1/jobs/{job_id_of(job)}/artifacts/{name}"
        return (await self._request("GET", route)).content

    async def download_artifact(
        self, job: str | dict[str, Any], name: str, path: str | os.PathLike[str]
    ) -> Path:
        return await self._save(f"/v1/jobs/{job_id_of(job)}/artifacts/{name}", Path(path))

    async def _save(self, route: str, path: Path) -> Path:
        data = (await self._request("GET", route)).content
        tmp = tmp_path_for(path)
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    async def cancel(self, job: str | dict[str, Any]) -> dict[str, Any]:
        return await self._json("DELETE", f"/v1/jobs/{job_id_of(job)}")  # type: ignore[no-any-return]

    async def process(
        self,
        mesh: MeshInput | Sequence[MeshInput],
        pipeline: Sequence[Step] | None,
        out: str | os.PathLike[str],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        **submit: Any,
    ) -> dict[str, Any]:
        job = await self.submit(mesh, pipeline, **submit)
        done = await self.wait(job, progress=progress, timeout=timeout)
        await self.download(done, out)
        return done

    async def operations(self) -> list[dict[str, Any]]:
        return (await self._json("GET", "/v1/operations"))["data"]  # type: ignore[no-any-return]

    async def operation(self, name: str) -> dict[str, Any]:
        return await self._json("GET", f"/v1/operations/{name}")  # type: ignore[no-any-return]
