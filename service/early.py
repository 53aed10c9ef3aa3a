"""A batch's first chunks queued while its body still comes.

A dataset's archive takes seconds to send on a fast link (4.75 GB over loopback: 4-6 s) and
minutes over a slow one; the batch need not wait for its last byte to start. The client sends a
zip of stored members whose sizes and CRC-32s are in their local headers (``zip -0`` writes
them so too), so each member is whole, and known, as soon as its bytes have come.

:class:`EarlyChunks` reads the local headers of a spooled body as it is written (``written``,
called on the writing thread after each write). Once enough whole members have come for a
chunk per live worker (so that a batch too small to share out this way is accepted as before,
in chunks fitted to the workers), it hands them, and every later one, to a
:class:`~service.batches.BatchWriter` on a thread of its own: each checked against its CRC-32,
numbered, stored and queued a chunk at a time, under a batch record marked receiving (it cannot
end, nor call its webhook, before its body is whole). :func:`~service.batches.accept_batch`
then checks the archive's central directory against what was queued and goes on with the rest.

At the first member of another kind (compressed, sizes in a data descriptor, ZIP64, a name that
does not decode), or a failure of any kind, it stops; what it stored is undone (the batch's
chunks cancelled, its record and files deleted) and the body is accepted at its end as before,
or refused with the same error as before.
"""

from __future__ import annotations

import logging
import os
import struct
import uuid
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from workers.queue.batches import BatchQueue
from workers.queue.blobs import BlobStore
from workers.queue.jobs import JobQueue
from workers.settings import Settings

from .batches import BatchWriter, Member, _skipped, check_spec, clean_path, in_parallel

log = logging.getLogger(__name__)

_LOCAL = b"PK\x03\x04"
#: what may follow the last member: the central directory, or the end records
_AFTER = (b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06")
#: encrypted (0x1), sizes in a data descriptor (0x8), patched (0x20), strongly encrypted (0x40)
_UNREAD_FLAGS = 0x69
#: a member as its local header places it: path, where its bytes start, size, CRC-32 (start and
#: CRC None for one too large to read, which fails alone)
Place = tuple[str, int | None, int, int | None]


class EarlyChunks:
    """See the module's docstring. ``written(file, upto)`` after each write of the body's
    first ``upto`` bytes to ``file``; :meth:`settled` (acceptance) gives the writer that
    queued chunks, or None; :meth:`close` undoes what a request that failed left."""

    def __init__(
        self,
        *,
        queue: JobQueue,
        batches: BatchQueue,
        store: BlobStore,
        settings: Settings,
        spec_text: str,
        idempotency_key: str | None,
        extra: dict[str, Any],
        admit: Callable[[str], None] | None,
        release: Callable[[str], None] | None = None,
    ) -> None:
        self.spec, self.spec_dict = check_spec(spec_text, settings.default_deadline_seconds)
        self.queue_, self.batches, self.store, self.settings = queue, batches, store, settings
        self.idempotency_key = idempotency_key
        self.extra = extra
        self.admit = admit
        self.release = release  # gives back what ``admit`` counted
        self._admitted: str | None = None
        self.chunk_items = settings.batch_chunk_items
        #: whole members before the first chunks: one chunk for each live worker
        self.start_at = self.chunk_items * max(queue.live_workers(), 1)
        self.writer: BatchWriter | None = None
        self.stopped = False  # no more members are handed on (given up, or the last came)
        self.failed = False  # given up: what was stored is undone at the end
        self.handed_over = False
        self._at = 0  # where the next local header starts
        self._whole: list[Place] = []  # whole members not handed on yet
        #: the members handed on, in order, as their local headers place them
        self.handed: list[Place] = []
        self._items = 0
        self._fd: int | None = None  # the body's file, opened again: read after it closes
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="tessera-early")
        self._futures: list[Future[None]] = []

    # ------------------------------------------------------------------ the writing thread
    def written(self, file: Any, upto: int) -> None:
        if self.stopped:
            return
        if self._fd is None:
            self._fd = os.dup(file.fileno())
        try:
            self._scan(self._fd, upto)
        except (OSError, ValueError, struct.error) as exc:  # accepted at the end instead
            self._give_up(f"{exc.__class__.__name__}: {exc}")
        if self._whole and not self.failed and (self.writer or len(self._whole) >= self.start_at):
            ready, self._whole = self._whole, []
            self._futures.append(self._pool.submit(self._queue, self._fd, ready))

    def _scan(self, fd: int, upto: int) -> None:
        while not self.stopped and self._at + 30 <= upto:
            head = os.pread(fd, 30, self._at)
            if head[:4] in _AFTER:
                self.stopped = True  # every member has come
                return
            if head[:4] != _LOCAL:
                return self._give_up("not a zip's local header")
            flags, method, crc, size, usize, n_name, n_extra = struct.unpack(
                "<2xHH4xIIIHH", head[4:30]
            )
            if flags & _UNREAD_FLAGS or method != 0 or size != usize or size == 0xFFFFFFFF:
                return self._give_up("a member not stored with its sizes in its header")
            start = self._at + 30 + n_name + n_extra
            if start + size > upto:
                return  # not whole yet
            raw = os.pread(fd, n_name, self._at + 30)
            # as zipfile reads a name: cut at a NUL
            name = raw.decode("utf-8" if flags & 0x800 else "cp437").split("\0", 1)[0]
            self._at = start + size
            path = clean_path(name)
            if name.endswith("/") or not path or _skipped(path):
                continue  # as the archive's reading leaves them out
            self._items += 1
            if self._items > self.settings.batch_max_items:
                return self._give_up("more members than a batch may hold")
            if size > self.settings.batch_max_member_bytes:  # fails alone, never read
                self._whole.append((path, None, size, None))
            else:
                self._whole.append((path, start, size, crc))

    def _give_up(self, why: str) -> None:
        log.info("batch body: its chunks wait for its end (%s)", why)
        self.stopped = self.failed = True

    # ------------------------------------------------------------------ its own thread
    def _queue(self, fd: int, ready: list[Place]) -> None:
        if self.failed:
            return

        def read(m: Place) -> Member:
            path, at, size, crc = m
            if at is None:
                return Member(path, None, size)
            data = os.pread(fd, size, at)
            if len(data) != size or zlib.crc32(data) != crc:
                raise ValueError(f"bad CRC-32 for file {path!r}")
            return Member(path, data, size)

        try:
            members = in_parallel(read, ready)
            if self.writer is None:
                batch_id = uuid.uuid4().hex
                if self.admit is not None:
                    self.admit(batch_id)
                    self._admitted = batch_id
                writer = BatchWriter(
                    queue=self.queue_,
                    batches=self.batches,
                    store=self.store,
                    settings=self.settings,
                    batch_id=batch_id,
                    spec_dict=self.spec_dict,
                    fmt=self.spec.output.format,
                    input_record={},
                    places=None,
                    extra=self.extra,
                )
                writer.add(members, self.chunk_items)
                if writer.create(self.idempotency_key, "", receiving=True) is not None:
                    self._give_back()
                    return self._give_up("its Idempotency-Key is in use")
                self.writer = writer
            else:
                self.writer.add(members, self.chunk_items)
            self.handed += ready
            self.writer.queue()
        except Exception as exc:  # noqa: BLE001 (the body is accepted, or refused, at its end)
            self._give_up(f"{exc.__class__.__name__}: {exc}"[:300])

    # ------------------------------------------------------------------ acceptance
    def _wait(self) -> None:
        for f in self._futures:
            f.result()
        self._pool.shutdown()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _give_back(self) -> None:
        if self._admitted is not None and self.release is not None:
            self.release(self._admitted)
        self._admitted = None

    def settled(self) -> BatchWriter | None:
        """Once the body is whole: the writer that queued chunks (acceptance goes on with it,
        and calls :meth:`undo` if it cannot), or None (nothing was queued, or it gave up and
        undid what it had stored)."""
        self._wait()
        if self.failed or self.writer is None:
            self.undo()
            return None
        self.handed_over = True
        return self.writer

    def undo(self) -> None:
        """The batch's record, chunks and files deleted, its quota given back."""
        if self.writer is not None:
            self.writer.drop(self.idempotency_key)
        self._give_back()

    def close(self) -> None:
        """After the request: undo what was stored for a body that was not accepted (it was
        cut off, too large, or refused before acceptance)."""
        if self.handed_over:
            return
        self.failed = True
        self._wait()
        self.undo()
