"""A request body read to the end, in memory when small and in an unlinked temporary file
(mapped) when large.

A batch's archive can be gigabytes (10,000 meshes of a dataset: 4.75 GB of OBJ). Held as
``bytes``, it would cost its size in the API's memory, and its stored members are views of it
(:func:`service.batches.archive_members`). Spooled, the members are views of a mapping of a
file whose pages the kernel can drop: the API's own memory stays small however large the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import tempfile
from collections.abc import Callable
from typing import Any

from fastapi import UploadFile
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request

#: bodies up to this stay in memory
IN_MEMORY_BYTES = 64 << 20
#: a spooled body goes to its file in writes of about this size, each on a thread
WRITE_BYTES = 16 << 20


class Body:
    """``data``: the body (``bytes``, or an ``mmap`` of the spooled file; both slice to
    ``bytes`` and give views). :meth:`close` releases the file."""

    def __init__(self, data: Any, file: Any = None) -> None:
        self.data = data
        self._file = file

    def __len__(self) -> int:
        return len(self.data)

    @property
    def spooled(self) -> bool:
        return self._file is not None

    def close(self) -> None:
        if self._file is None:
            return
        # a view of it still alive somewhere (BufferError): the mapping goes with the view
        with contextlib.suppress(BufferError):
            self.data.close()
        self._file.close()
        self._file = None


async def read_body(
    request: Request,
    in_memory: int | None = None,
    written: Callable[[Any, int], None] | None = None,
) -> Body:
    """The whole body of ``request`` (see the module's docstring). A client that goes away or a
    body cut off by the size limit raises as ``request.stream()`` does; the file is closed.

    A spooled body is written on a thread while the next pieces are received: awaiting each
    write would stop the reading (the server stops reading the socket while a request's unread
    body passes 64 KiB), and receiving and writing would take turns. ``written(file, n)`` is
    called on the writing thread once the body's first ``n`` bytes are in ``file`` (a spooled
    body's: :class:`service.early.EarlyChunks` reads what has come)."""
    in_memory = IN_MEMORY_BYTES if in_memory is None else in_memory
    parts: list[bytes] = []
    pending = 0
    file: Any = None
    writing: asyncio.Future[None] | None = None
    done = 0  # bytes handed to the writes

    def write(parts: list[bytes], upto: int) -> None:
        file.writelines(parts)
        if written is not None:
            file.flush()
            written(file, upto)

    try:
        async for chunk in request.stream():
            if not chunk:
                continue
            parts.append(chunk)
            pending += len(chunk)
            if file is None and pending > in_memory:
                file = tempfile.TemporaryFile(prefix="tessera-body-")  # noqa: SIM115 (unlinked at once; closed by Body.close)
            if file is not None and pending >= WRITE_BYTES:
                if writing is not None:
                    await writing  # one write in flight: the memory held stays bounded
                done += pending
                writing = asyncio.ensure_future(run_in_threadpool(write, parts, done))
                parts, pending = [], 0
        if file is None:
            return Body(b"".join(parts))
        if writing is not None:
            await writing
            writing = None
        if parts:
            await run_in_threadpool(write, parts, done + pending)
        file.flush()
        return Body(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ), file)
    except BaseException:
        if writing is not None:  # the thread's write ends before its file is closed
            with contextlib.suppress(BaseException):
                await asyncio.shield(writing)
        if file is not None:
            file.close()
        raise


async def upload_body(upload: UploadFile, in_memory: int | None = None) -> Body:
    """A multipart form's file: read into memory when small; when large, a mapping of the
    temporary file the form parser spooled it to."""
    size = upload.size
    if size is None or size <= (IN_MEMORY_BYTES if in_memory is None else in_memory):
        return Body(await upload.read())
    fh = upload.file
    fh.flush()
    return Body(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), _Kept())


class _Kept:
    """The file of a form's upload: the form closes it, not the body."""

    def close(self) -> None:
        pass
