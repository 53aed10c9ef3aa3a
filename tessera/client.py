"""HTTP clients for a Tessera service: :class:`Client` (blocking) and :class:`AsyncClient`.

>>> with Client("http://127.0.0.1:8000") as tc:
...     job = tc.submit("bunny.obj", ["weld", ("vertex_normals", {"weighting": "angle"})])
...     tc.wait(job, progress=lambda j: print(j["state"], j["progress"]))
...     tc.download(job, "bunny.ply")

Answers 429, 502, 503 and 504 and connection failures are retried with exponential backoff and
jitter (``Retry-After`` honoured), except an address where nothing has answered yet (refused,
unknown host): that raises :class:`~tessera.errors.ServiceUnreachable` at once, naming the URL.
A submission always carries an ``Idempotency-Key`` (one is made up when none is given), so a
retried upload never makes a second job. Refusals raise the
:mod:`tessera.errors` class of their status, with the API's ``code``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from . import errors
from ._common import (
    CONNECT_TIMEOUT,
    DEFAULT_URL,
    TERMINAL,
    LongPoll,
    MeshInput,
    Progress,
    ProgressCallback,
    RetryPolicy,
    Step,
    batch_upload,
    build_spec,
    check_terminal,
    job_id_of,
    new_idempotency_key,
    raise_for_problem,
    s3_batch_body,
    submission,
    tmp_path_for,
    transport_error,
    unreachable,
    uploads,
)

log = logging.getLogger(__name__)


def _headers(api_key: str | None) -> dict[str, str]:
    h = {"User-Agent": "tessera-python"}
    if api_key:
        h["Authorization"] = f"Bearer {api_key}"
    return h


def _merge(kw: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The request's keyword arguments with the body's (its headers added)."""
    body = dict(body)
    headers = {**(kw.get("headers") or {}), **body.pop("headers", {})}
    return {**kw, **body, "headers": headers}


async def _aiter(pieces: Any) -> Any:
    for piece in pieces:
        yield piece


def _poll_timeout(client: Any, wait: float) -> Any:
    """The HTTP timeout of a long poll: the client's, with the wait added to the read."""
    if wait <= 0:
        return httpx.USE_CLIENT_DEFAULT
    t = client.http.timeout
    return httpx.Timeout(t.connect, read=(t.read or 60.0) + wait, write=t.write, pool=t.pool)


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
        self.http = http or httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            follow_redirects=True,
        )
        self._reached = False  # whether the service has answered this client yet
        self.http.headers.update(_headers(key))

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        if self._own:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(
        self, method: str, path: str, *, stream: bool = False, **kw: Any
    ) -> httpx.Response:
        make = kw.pop("make", None)  # rebuilds the body for every try (a file is read again)
        attempt = 0
        while True:
            try:
                body = make() if make else {}
                req = self.http.build_request(method, self.url + path, **_merge(kw, body))
                resp = self.http.send(req, stream=stream)
            except httpx.TransportError as exc:
                wait = None if unreachable(exc, self._reached) else self.retry.delay(attempt, None)
                if wait is None:
                    raise transport_error(self.url, method, path, exc, self._reached) from exc
                log.warning("%s %s: %r; retry in %.2fs", method, path, exc, wait)
            else:
                self._reached = True
                wait = self.retry.delay(attempt, resp) if resp.status_code >= 400 else None
                if wait is None:
                    if resp.status_code >= 400 and stream:
                        resp.read()
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
            make=lambda: submission(parts, body),
            headers={"Idempotency-Key": key},
        )

    def get(self, job: str | dict[str, Any], wait: float = 0.0) -> dict[str, Any]:
        """The job's record; with ``wait``, a long poll: the API answers once the job has ended
        or after ``wait`` seconds (at most 60)."""
        params = {"wait": wait} if wait > 0 else None
        return self._json(  # type: ignore[no-any-return]
            "GET", f"/v1/jobs/{job_id_of(job)}", params=params, timeout=_poll_timeout(self, wait)
        )

    def wait(
        self,
        job: str | dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        poll_max: float = 1.0,
    ) -> dict[str, Any]:
        """Wait until the job ends (long polls; short ones while ``progress`` wants the job's
        progress); returns its record when it succeeded, raises
        :class:`~tessera.errors.JobFailed`, ``JobCancelled`` or ``Gone`` otherwise, and
        :class:`~tessera.errors.WaitTimeout` after ``timeout`` seconds."""
        job_id = job_id_of(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = Progress(progress)
        seen.start(job)
        waits = LongPoll(progress is not None, poll_max)
        while True:
            ask = waits.next(deadline)
            t = time.monotonic()
            rec = self.get(job_id, wait=ask)
            seen.update(rec)
            if rec["state"] in TERMINAL:
                return check_terminal(rec)
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(
                    "client.timeout", f"job {job_id} still {rec['state']}", body=rec
                )
            time.sleep(waits.pause(ask, time.monotonic() - t, deadline))

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

    def _save(self, route: str, path: Path, deadline: float | None = None, **kw: Any) -> Path:
        """Stream the file to a temporary name beside ``path``, then rename it into place
        (:class:`~tessera.errors.WaitTimeout` when it is still coming at ``deadline``, a
        ``time.monotonic()``)."""
        tmp = tmp_path_for(path)
        try:
            resp = self._request("GET", route, stream=True, **kw)
            try:
                with open(tmp, "wb") as fh:
                    try:  # pieces as they arrive: re-chunking halves the rate
                        for piece in resp.iter_raw():
                            fh.write(piece)
                            if deadline is not None and time.monotonic() > deadline:
                                raise httpx.ReadTimeout("past the deadline")
                    except httpx.TimeoutException as exc:
                        raise errors.WaitTimeout(
                            "client.timeout", f"GET {route}: still coming after the timeout"
                        ) from exc
                    except httpx.TransportError as exc:
                        raise errors.ConnectionFailed(
                            "client.connection", f"GET {self.url}{route}: cut off ({exc!r})"
                        ) from exc
            finally:
                resp.close()
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

    # ------------------------------------------------------------------ batches
    def submit_batch(
        self,
        source: str | os.PathLike[str] | bytes | Sequence[str | os.PathLike[str]] | None = None,
        pipeline: Sequence[Step] | None = None,
        *,
        output: str | dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None,
        device: str | None = None,
        deadline_seconds: int | None = None,
        idempotency_key: str | None = None,
        s3_prefix: str | None = None,
        output_prefix: str | None = None,
    ) -> dict[str, Any]:
        """Queue a batch: one pipeline over many meshes. ``source`` is a folder (every file
        under it, at its relative path), a zip or tar archive (a path, or its bytes), or a list
        of files (by their names). Or, on a service whose blob store is S3, ``s3_prefix``
        (``s3://bucket/some/prefix/``, no ``source``): every mesh file under it, read there by
        the workers; with ``output_prefix`` the results and ``manifest.jsonl`` are written
        under it too. Returns the batch (``id``, ``url``, ``state``, ``counts``)."""
        body = build_spec(
            pipeline, spec=spec, output=output, device=device, deadline_seconds=deadline_seconds
        )
        key = idempotency_key or new_idempotency_key()
        if s3_prefix is not None or output_prefix is not None:
            return self._json(  # type: ignore[no-any-return]
                "POST",
                "/v1/batches",
                json=s3_batch_body(body, source, s3_prefix, output_prefix),
                headers={"Idempotency-Key": key},
            )
        if source is None:
            raise TypeError("submit_batch needs a source (files, a folder or an archive)")
        return self._json(  # type: ignore[no-any-return]
            "POST",
            "/v1/batches",
            make=batch_upload(source),
            headers={
                "Idempotency-Key": key,
                "Content-Type": "application/zip",
                "Tessera-Spec": json.dumps(body),
            },
        )

    def get_batch(
        self, batch: str | dict[str, Any], wait: float = 0.0, items: bool = False
    ) -> dict[str, Any]:
        """The batch's state and counts (``items``: every item's outcome too); with ``wait``, a
        long poll that answers once the batch has ended or after ``wait`` seconds (at most 60)."""
        params: dict[str, Any] = {"wait": wait} if wait > 0 else {}
        if items:
            params["items"] = "true"
        return self._json(  # type: ignore[no-any-return]
            "GET",
            f"/v1/batches/{job_id_of(batch)}",
            params=params or None,
            timeout=_poll_timeout(self, wait),
        )

    def wait_batch(
        self,
        batch: str | dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        poll: float = 1.0,
        items: bool = False,
    ) -> dict[str, Any]:
        """Wait until the batch ends (succeeded: every item ended, see ``counts`` for those that
        failed; or cancelled) and return it; ``progress(batch)`` hears every change of its
        counts; :class:`~tessera.errors.WaitTimeout` after ``timeout`` seconds, ``Gone`` when
        it has expired."""
        batch_id = job_id_of(batch)
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = None
        while True:
            ask = poll if progress is not None else 30.0
            if deadline is not None:
                ask = max(min(ask, deadline - time.monotonic()), 0.0)
            rec = self.get_batch(batch_id, wait=ask)
            if progress is not None and rec["counts"] != seen:
                seen = rec["counts"]
                progress(rec)
            if rec["state"] == "expired":
                raise errors.Gone("batch.expired", "the batch has expired", status=410, body=rec)
            if rec["state"] in ("succeeded", "cancelled"):
                return self.get_batch(batch_id, items=True) if items else rec
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(
                    "client.timeout", f"batch {batch_id} still {rec['state']}", body=rec
                )

    def download_batch(
        self,
        batch: str | dict[str, Any],
        path: str | os.PathLike[str],
        *,
        follow: bool = False,
        timeout: float | None = None,
    ) -> Path:
        """Write the batch's result archive (every result and ``manifest.jsonl``) to ``path``.
        ``follow``: start before the batch has ended; each result comes as its item ends and
        the manifest once the batch has ended, so the download runs beside the batch
        (``timeout``: about the most seconds that takes, None for no limit; the stream is
        silent while no item ends)."""
        route = f"/v1/batches/{job_id_of(batch)}/result"
        if not follow:
            return self._save(route, Path(path))
        wait = httpx.Timeout(timeout, connect=self.http.timeout.connect)
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._save(route, Path(path), deadline, params={"follow": "true"}, timeout=wait)

    def follow_batch(
        self,
        batch: str | dict[str, Any],
        path: str | os.PathLike[str],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        poll: float = 1.0,
    ) -> dict[str, Any]:
        """Download the batch's result archive to ``path`` while it runs (``download_batch``
        with ``follow``) and return the batch once it has ended. ``progress(batch)`` hears
        every change of its counts, from a thread that polls beside the download, and the
        ended batch last."""
        batch_id = job_id_of(batch)
        stop = threading.Event()
        heard: list[Any] = [None]

        def watch() -> None:
            while not stop.is_set():
                try:
                    rec = self.get_batch(batch_id, wait=poll)
                except errors.TesseraError:  # the download says what went wrong
                    return
                if rec["counts"] != heard[0] and not stop.is_set():
                    heard[0] = rec["counts"]
                    progress(rec)  # type: ignore[misc]
                if rec["state"] not in ("queued", "running"):
                    return

        watcher = threading.Thread(target=watch, daemon=True) if progress else None
        if watcher:
            watcher.start()
        try:
            self.download_batch(batch_id, path, follow=True, timeout=timeout)
        finally:
            stop.set()
            if watcher:
                watcher.join()
        done = self.get_batch(batch_id)
        if progress is not None and done["counts"] != heard[0]:
            progress(done)
        return done

    def process_batch(
        self,
        source: str | os.PathLike[str] | bytes | Sequence[str | os.PathLike[str]],
        pipeline: Sequence[Step] | None,
        out: str | os.PathLike[str],
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        **submit: Any,
    ) -> dict[str, Any]:
        """Submit a batch (``submit_batch``), download its result archive to ``out`` as its
        items end (``follow_batch``) and return the ended batch."""
        batch = self.submit_batch(source, pipeline, **submit)
        return self.follow_batch(batch, out, progress=progress, timeout=timeout)

    def cancel_batch(self, batch: str | dict[str, Any]) -> dict[str, Any]:
        return self._json("DELETE", f"/v1/batches/{job_id_of(batch)}")  # type: ignore[no-any-return]

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
        self.http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            follow_redirects=True,
        )
        self._reached = False  # whether the service has answered this client yet
        self.http.headers.update(_headers(key))

    async def aclose(self) -> None:
        if self._own:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _request(
        self, method: str, path: str, *, stream: bool = False, **kw: Any
    ) -> httpx.Response:
        make = kw.pop("make", None)
        attempt = 0
        while True:
            try:
                body = await asyncio.to_thread(make) if make else {}
                if "content" in body:  # pieces of a file, read as they are sent
                    body["content"] = _aiter(body["content"])
                req = self.http.build_request(method, self.url + path, **_merge(kw, body))
                resp = await self.http.send(req, stream=stream)
            except httpx.TransportError as exc:
                wait = None if unreachable(exc, self._reached) else self.retry.delay(attempt, None)
                if wait is None:
                    raise transport_error(self.url, method, path, exc, self._reached) from exc
                log.warning("%s %s: %r; retry in %.2fs", method, path, exc, wait)
            else:
                self._reached = True
                wait = self.retry.delay(attempt, resp) if resp.status_code >= 400 else None
                if wait is None:
                    if resp.status_code >= 400 and stream:
                        await resp.aread()
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
            make=lambda: submission(parts, body),
            headers={"Idempotency-Key": key},
        )

    async def get(self, job: str | dict[str, Any], wait: float = 0.0) -> dict[str, Any]:
        params = {"wait": wait} if wait > 0 else None
        return await self._json(  # type: ignore[no-any-return]
            "GET", f"/v1/jobs/{job_id_of(job)}", params=params, timeout=_poll_timeout(self, wait)
        )

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
        seen.start(job)
        waits = LongPoll(progress is not None, poll_max)
        while True:
            ask = waits.next(deadline)
            t = time.monotonic()
            rec = await self.get(job_id, wait=ask)
            seen.update(rec)
            if rec["state"] in TERMINAL:
                return check_terminal(rec)
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(
                    "client.timeout", f"job {job_id} still {rec['state']}", body=rec
                )
            await asyncio.sleep(waits.pause(ask, time.monotonic() - t, deadline))

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
        tmp = tmp_path_for(path)
        try:
            resp = await self._request("GET", route, stream=True)
            try:
                with open(tmp, "wb") as fh:
                    async for piece in resp.aiter_raw():
                        fh.write(piece)
            finally:
                await resp.aclose()
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
