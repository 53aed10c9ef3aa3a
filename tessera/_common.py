"""What the sync and the async client share: request building, retry policy, answers."""

from __future__ import annotations

import email.utils
import io
import json
import os
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx

from . import errors

MeshInput = str | os.PathLike[str] | bytes
Step = str | tuple[str, dict[str, Any]] | dict[str, Any]
ProgressCallback = Callable[[dict[str, Any]], None]

RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: pieces a file is sent and received in
CHUNK_BYTES = 1 << 20
#: the longest job spec sent in a header (longer ones go in a multipart form)
MAX_SPEC_HEADER = 8192
#: the longest long poll asked of the API per request (it allows 60 s)
LONG_POLL_SECONDS = 30.0
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "expired"})
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: attempt ``n`` (from 0) waits a random time in
    ``[d/2, d]`` with ``d = min(max_delay, base * 2**n)``, or what ``Retry-After`` says; a
    ``Retry-After`` longer than ``max_retry_after`` (a daily quota's hours) gives up at once, so
    the error reaches the caller instead of a wait. ``retries`` is the number of tries after the
    first."""

    retries: int = 5
    base: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, attempt: int) -> float:
        d = min(self.max_delay, self.base * (2**attempt))
        return random.uniform(d / 2, d)

    def delay(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to wait before trying again, or None to give up."""
        if attempt >= self.retries:
            return None
        if response is not None:
            if response.status_code not in RETRY_STATUSES:
                return None
            after = retry_after(response.headers.get("retry-after"))
            if after is not None:
                return after if after <= self.max_retry_after else None
        return self.backoff(attempt)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def normalize_step(step: Step) -> dict[str, Any]:
    """``"weld"``, ``("vertex_normals", {"weighting": "angle"})`` or ``{"op": ..., ...}``."""
    if isinstance(step, str):
        return {"op": step}
    if isinstance(step, tuple):
        name, params = step
        return {"op": name, **params}
    if isinstance(step, dict) and "op" in step:
        return dict(step)
    raise TypeError(f"a pipeline step is a name, (name, params) or a dict with 'op': {step!r}")


def build_spec(
    pipeline: Sequence[Step] | None,
    *,
    spec: dict[str, Any] | None = None,
    output: str | dict[str, Any] | None = None,
    device: str | None = None,
    deadline_seconds: int | None = None,
    callback_url: str | None = None,
) -> dict[str, Any]:
    """The job spec (the API's ``JobCreate`` as JSON); keyword arguments override ``spec``."""
    out: dict[str, Any] = json.loads(json.dumps(spec)) if spec else {}
    if pipeline is not None:
        out["pipeline"] = [normalize_step(s) for s in pipeline]
    if isinstance(output, str):
        out["output"] = {**out.get("output", {}), "format": output}
    elif output is not None:
        out["output"] = dict(output)
    if device is not None:
        out["device"] = device
    if deadline_seconds is not None:
        out["deadline_seconds"] = deadline_seconds
    if callback_url is not None:
        out["callback_url"] = callback_url
    return out


@dataclass(frozen=True)
class Upload:
    """One mesh part: read again for every try, so a retry sends the same bytes."""

    filename: str
    path: Path | None = None
    data: bytes | None = None

    def content(self) -> bytes:
        return self.data if self.data is not None else Path(self.path or "").read_bytes()

    def size(self) -> int:
        return len(self.data) if self.data is not None else Path(self.path or "").stat().st_size

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes | memoryview]:
        """The bytes in pieces (a file is read as it is sent, never whole): HTTP libraries
        send one large ``bytes`` body far more slowly than the same bytes in pieces."""
        if self.data is not None:
            mv = memoryview(self.data)
            for i in range(0, len(mv), size):
                yield mv[i : i + size]
            return
        with open(self.path or "", "rb") as fh:
            while piece := fh.read(size):
                yield piece


def uploads(
    mesh: MeshInput | Sequence[MeshInput], filename: str | Sequence[str] | None
) -> list[Upload]:
    multi = isinstance(mesh, (list, tuple))
    items: list[MeshInput] = list(mesh) if multi else [cast(MeshInput, mesh)]  # type: ignore[arg-type]
    names: list[str | None]
    if filename is None:
        names = [None] * len(items)
    elif isinstance(filename, str):
        names = [filename] + [None] * (len(items) - 1)
    else:
        names = list(filename)
    if len(names) != len(items):
        raise ValueError("give one filename per mesh")
    out = []
    for item, name in zip(items, names, strict=True):
        if isinstance(item, (bytes, bytearray, memoryview)):
            if not name:
                raise ValueError("bytes need a filename (its extension names the format)")
            out.append(Upload(name, data=bytes(item)))
        else:
            p = Path(item)
            out.append(Upload(name or p.name, path=p))
    if not out:
        raise ValueError("no mesh to submit")
    return out


def multipart(parts: list[Upload], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        # a file object is sent in pieces (a whole bytes value is sent slowly)
        "files": [
            ("mesh", (u.filename, io.BytesIO(u.content()), "application/octet-stream"))
            for u in parts
        ],
        "data": {"spec": json.dumps(spec)},
    }


def file_body(part: Upload, spec_json: str) -> dict[str, Any]:
    """One file as the whole request body, the spec (JSON) in the ``Tessera-Spec`` header: the
    API streams such a body straight in, with no form to parse."""
    return {
        "content": part.chunks(),
        "headers": {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(part.size()),
            "Tessera-Spec": spec_json,
        },
        "params": {"filename": part.filename},
    }


def submission(parts: list[Upload], spec: dict[str, Any]) -> dict[str, Any]:
    """The request for a submission: one file goes as the body itself, several files (or a
    spec too long for a header) as a multipart form."""
    spec_json = json.dumps(spec, separators=(",", ":"))
    if len(parts) == 1 and len(spec_json) <= MAX_SPEC_HEADER:
        return file_body(parts[0], spec_json)
    return multipart(parts, spec)


#: where the client's URL comes from, for messages that say how to change it
URL_SETTINGS = "--url or the TESSERA_URL environment variable (Client(url) in Python)"
#: connect timeout: an address where nothing answers fails in seconds, not a minute
CONNECT_TIMEOUT = 5.0


def unreachable(exc: httpx.TransportError, reached: bool) -> bool:
    """Whether a request that got no answer shows a wrong or stopped URL: no connection could be
    made (refused, unknown host, connect timeout) to a service that never answered this client.
    That is not retried; once the service has answered, such failures are a restart or a blip,
    retried like the rest."""
    return not reached and isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))


def transport_error(
    url: str, method: str, path: str, exc: httpx.TransportError, reached: bool
) -> errors.ConnectionFailed:
    """The error for a request that got no answer, naming the URL and where it is set."""
    why = _reason(exc)
    if unreachable(exc, reached):
        return errors.ServiceUnreachable(
            "client.unreachable",
            f"no Tessera service answers at {url} ({why}). Start one (tessera up, ./dev.sh run) "
            f"or give the right address: {URL_SETTINGS}",
            context={"url": url},
        )
    return errors.ConnectionFailed(
        "client.connection",
        f"{method} {url}{path}: no answer after retries ({why}); the address comes from "
        f"{URL_SETTINGS}",
        context={"url": url},
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception and what caused it (asyncio's connect wraps the refusal in an OSError or
    an exception group)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [x for x in (e.__cause__, e.__context__) if x is not None]
        todo += list(getattr(e, "exceptions", ()) or ())


def _reason(exc: httpx.TransportError) -> str:
    text = str(exc) or exc.__class__.__name__
    if any(isinstance(e, ConnectionRefusedError) for e in _causes(exc)):
        return "connection refused"
    if isinstance(exc, httpx.ConnectTimeout):
        return "connection timed out"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return text


def s3_batch_body(
    spec: dict[str, Any], source: Any, s3_prefix: str | None, output_prefix: str | None
) -> dict[str, Any]:
    """The JSON body of a batch over an S3 prefix (``BatchFromS3``)."""
    if s3_prefix is None:
        raise TypeError("output_prefix is for a batch over an S3 prefix: give s3_prefix")
    if source is not None:
        raise TypeError("a batch reads its files from s3_prefix or from source, not both")
    for url in (s3_prefix, output_prefix):
        if url is not None and not url.startswith("s3://"):
            raise ValueError(f"not an S3 prefix: {url!r} (s3://bucket/some/prefix/)")
    body: dict[str, Any] = {"spec": spec, "input": {"s3_prefix": s3_prefix}}
    if output_prefix is not None:
        body["output"] = {"s3_prefix": output_prefix}
    return body


def _archive_files(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[tuple[Path, str]]:
    """The files a folder or a list of files puts in a batch's zip, with their names there; a
    path that is neither a file nor a folder (or, in a list, not a file) is a ValueError that
    names it, before anything is sent."""
    if isinstance(source, str | os.PathLike):
        root = Path(source)
        if not root.is_dir():
            raise ValueError(f"{root}: no such file or folder to send as a batch")
        files = sorted(p for p in root.rglob("*") if p.is_file())
        return [(p, p.relative_to(root).as_posix()) for p in files]
    out = [(Path(p), Path(p).name) for p in source]
    for p, _ in out:
        if not p.is_file():
            what = "a folder: give it as the source itself" if p.is_dir() else "no such file"
            raise ValueError(f"{p}: {what}")
    return out


#: the client reads and sums a batch's files on this many threads, this many bytes ahead
ZIP_THREADS = min(8, os.cpu_count() or 1)
ZIP_AHEAD_BYTES = 256 << 20


def zip_pieces(
    files: list[tuple[Path, str]], *, bare: bool = False
) -> Iterator[bytes | memoryview]:
    """A stored zip of ``files`` (path, name in the archive), made while it is sent: the pieces
    come file by file, so the archive is never whole in memory and is sent as it is made.
    Stored, not deflated: meshes are sent once over a fast link, and the service reads the
    members without inflating them. The files are read and their CRC-32s computed on
    :data:`ZIP_THREADS` threads, up to :data:`ZIP_AHEAD_BYTES` ahead of what is sent
    (:mod:`tessera.zipstream`). ``bare``: without the files' times, so that the same names and
    bytes make the same archive (a body sent again under its Idempotency-Key)."""
    import zlib
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    from .zipstream import StoredZip

    def load(path: Path) -> tuple[bytes, int]:
        data = path.read_bytes()
        return data, zlib.crc32(data)

    zw = StoredZip()
    todo = iter(files)
    ahead: deque[tuple[str, int, Any, Future[Any]]] = deque()
    in_flight = 0
    with ThreadPoolExecutor(ZIP_THREADS, thread_name_prefix="tessera-zip") as ex:
        while True:
            while not ahead or in_flight < ZIP_AHEAD_BYTES:
                nxt = next(todo, None)
                if nxt is None:
                    break
                st = nxt[0].stat()
                when = (1980, 1, 1, 0, 0, 0) if bare else _zip_time(st.st_mtime)
                ahead.append((nxt[1], st.st_size, when, ex.submit(load, nxt[0])))
                in_flight += st.st_size
            if not ahead:
                break
            name, size, when, job = ahead.popleft()
            in_flight -= size
            data, crc = job.result()
            yield zw.member(name, len(data), crc, when)
            mv = memoryview(data)
            for i in range(0, len(mv), CHUNK_BYTES):
                yield mv[i : i + CHUNK_BYTES]
    yield zw.end()


def _zip_time(mtime: float) -> tuple[int, int, int, int, int, int]:
    """A file's time as zip keeps it: local time, clamped to what zip can hold (before 1980:
    a Nix store's, SOURCE_DATE_EPOCH=0)."""
    t = time.localtime(mtime)[:6]
    if t[0] < 1980:
        return (1980, 1, 1, 0, 0, 0)
    if t[0] > 2107:
        return (2107, 12, 31, 23, 59, 59)
    return t  # type: ignore[return-value]


def batch_upload(
    source: str | os.PathLike[str] | bytes | Sequence[str | os.PathLike[str]],
) -> Callable[[], dict[str, Any]]:
    """The body of a batch's request, made anew for every try: an archive file or bytes in
    pieces with their length, a folder or a list of files as a zip made while it is sent
    (chunked). httpx sends one large ``bytes`` body in time that grows with its square (32 s
    for 2,000 meshes, 950 MB), hence pieces."""
    if isinstance(source, bytes | bytearray | memoryview):
        part = Upload("batch.zip", data=bytes(source))
    elif isinstance(source, str | os.PathLike) and Path(source).is_file():
        part = Upload(Path(source).name, path=Path(source))
    else:
        files = _archive_files(source)
        return lambda: {"content": zip_pieces(files)}
    return lambda: {
        "content": part.chunks(),
        "headers": {"Content-Length": str(part.size())},
        # the archive's name tells the service a gzipped tar from other bytes
        "params": {"filename": part.filename},
    }


def new_idempotency_key() -> str:
    return f"tessera-py-{uuid.uuid4().hex}"


def job_id_of(job: str | dict[str, Any]) -> str:
    return job["id"] if isinstance(job, dict) else str(job)


def raise_for_problem(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    raise errors.from_problem(response.status_code, body, response.text)


def check_terminal(job: dict[str, Any]) -> dict[str, Any]:
    """A finished job's record, or the error for how it ended."""
    state = job.get("state")
    if state == "succeeded":
        return job
    if state == "expired":
        raise errors.Gone("job.expired", "the job has expired", status=410, body=job)
    raise errors.from_job(job)


class Progress:
    """Calls back when the state, stage or progress of a job changes."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self.callback = callback
        self.seen: tuple[Any, ...] | None = None

    def start(self, job: str | dict[str, Any]) -> None:
        """The record the caller already holds (``submit``'s answer) is heard first, so that a
        job that ends before the first request is still seen queued, then ended."""
        if isinstance(job, dict) and "state" in job:
            self.update(job)

    def update(self, job: dict[str, Any]) -> None:
        key = (job.get("state"), job.get("stage"), job.get("progress"), job.get("attempts"))
        if self.callback is not None and key != self.seen:
            self.seen = key
            self.callback(job)


class LongPoll:
    """How long each request of a wait asks the API to hold it: as long as allowed when only the
    end matters, about ``poll_max`` when the caller follows progress; and the pause before the
    next request, which is none unless the API answered early (one without long polls answers
    at once: then the requests are spaced as a polling loop would space them)."""

    def __init__(self, follow_progress: bool, poll_max: float = 1.0) -> None:
        self.longest = max(poll_max, 0.05) if follow_progress else LONG_POLL_SECONDS
        self._delays = poll_delays(most=max(poll_max, 0.05))
        self._first = follow_progress  # a progress display sees the job as it is at once

    def next(self, deadline: float | None) -> float:
        if self._first:
            self._first = False
            return 0.0
        if deadline is None:
            return self.longest
        return max(min(self.longest, deadline - time.monotonic()), 0.0)

    def pause(self, asked: float, took: float, deadline: float | None) -> float:
        if asked > 0 and took >= asked / 2:
            return 0.0
        d = float(next(self._delays))
        return d if deadline is None else max(min(d, deadline - time.monotonic()), 0.0)


def poll_delays(first: float = 0.05, factor: float = 1.5, most: float = 1.0) -> Any:
    d = first
    while True:
        yield d
        d = min(d * factor, most)


def tmp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.part-{uuid.uuid4().hex[:8]}")
