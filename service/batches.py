"""Accepting a batch: one spec over the files of an archive (zip or tar), of a form, or under
an S3 prefix (:func:`s3_places`, :func:`s3_members`: listed here, read by the workers).

The spec is checked once, as a job's is; the files are only unpacked here (in memory, with
limits: nothing touches the filesystem), not parsed: each is parsed by the worker that runs its
chunk, so that a broken file fails alone with its own error while the rest go on. A member too
large, or a second member at the same path, fails at once. The items are cut into chunks (a
chunk closes at ``batch_chunk_items`` items or ``batch_chunk_bytes`` bytes); each chunk's files
are stored as one blob and queued as one job that a worker leases (see
:mod:`workers.queue.batches`).
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import mmap
import os
import posixpath
import struct
import tarfile
import time
import uuid
import zipfile
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from workers.engine.errors import FormatError, SpecError
from workers.engine.io.archive import check_member_count
from workers.engine.io.formats import FILE_EXTENSIONS, MESH_FORMATS
from workers.engine.mesh import TriMesh
from workers.engine.pipeline import parse_pipeline, starts_with_source
from workers.queue.batches import BatchQueue, Chunk
from workers.queue.blobs import BlobStore, job_prefix, members_key, pack_members
from workers.queue.jobs import JobQueue
from workers.queue.s3batch import split_url
from workers.settings import Settings

from .errors import ProblemError
from .schemas import BatchS3Places, JobCreate
from .submission import check_pipeline, earlier_id, parse_spec

#: a batch is cut into at least this many chunks per live worker (while its chunks may hold
#: ``batch_chunk_items`` items), so that the workers share it evenly
CHUNKS_PER_WORKER = 4
#: archive members that are an archiver's bookkeeping, not the user's files
_SKIP_PARTS = ("__MACOSX",)


@dataclass
class Member:
    path: str
    data: bytes | None  # None: too large (its size in ``size``)
    size: int
    #: a stored zip member's place: where its bytes start in the archive, and its CRC-32
    at: int | None = None
    crc: int | None = None


def clean_path(name: str) -> str:
    """A member's relative path as the batch keeps it: ``/`` separators, no leading ``/``, no
    ``.`` or ``..`` segments (dropped), at most 1000 characters; ``""`` for none left."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)[-1000:]


def _skipped(path: str) -> bool:
    parts = path.split("/")
    return any(p in _SKIP_PARTS for p in parts) or parts[-1].startswith("._")


def _read_bounded(fh: Any, limit: int) -> tuple[bytes | None, int]:
    """At most ``limit`` bytes of ``fh`` (None and the bytes read when there are more)."""
    out = bytearray()
    while True:
        piece = fh.read(min(1 << 20, limit + 1 - len(out)))
        if not piece:
            return bytes(out), len(out)
        out += piece
        if len(out) > limit:
            return None, len(out)


def is_archive(data: bytes, name: str = "") -> str | None:
    """``zip`` or ``tar`` when the bytes are one (a tar possibly gzip/bzip2/xz-compressed)."""
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return "zip"
    lowered = name.lower()
    tars = (".tar", ".tgz", ".tar.gz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tbz")
    if data[257:262] == b"ustar" or lowered.endswith(tars):
        return "tar"
    if data[:2] == b"\x1f\x8b" and lowered.endswith((".tgz", ".tar.gz")):
        return "tar"
    if _compressed_head(data)[257:262] == b"ustar":  # a compressed tar sent without its name
        return "tar"
    return None


def _compressed_head(data: bytes) -> bytes:
    """The first 512 bytes of gzip, bzip2 or xz data (b"" for other data or a broken stream)."""
    import bz2

    if data[:2] == b"\x1f\x8b":
        d: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif data[:3] == b"BZh":
        d = bz2.BZ2Decompressor()
    elif data[:6] == b"\xfd7zXZ\x00":
        d = lzma.LZMADecompressor()
    else:
        return b""
    try:
        return d.decompress(data[:65536], 512)  # type: ignore[no-any-return]
    except (zlib.error, OSError, lzma.LZMAError, EOFError):
        return b""


def _stored_member(
    data: bytes, info: zipfile.ZipInfo, crcs: list[tuple[Any, zipfile.ZipInfo]] | None = None
) -> tuple[memoryview, int] | None:
    """A stored (uncompressed, unencrypted) zip member's bytes as a view of the archive, its
    CRC-32 checked, without the two copies reading it through ``zipfile`` makes (the client
    sends stored zips: 950 MB of them a batch of 2,000 meshes), and where they start; None for
    other members."""
    # encrypted (0x1), patched (0x20), strongly encrypted (0x40): zipfile refuses them
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x61:
        return None
    at = info.header_offset
    head = data[at : at + 30] if at >= 0 else b""  # a lying central directory: < 0
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    flags, name_len, extra_len = struct.unpack("<H18xHH", head[6:30])
    # the local header names the member as the central directory does (zipfile checks it too)
    name = data[at + 30 : at + 30 + name_len].decode("utf-8" if flags & 0x800 else "cp437")
    if name != info.orig_filename:
        raise zipfile.BadZipFile(f"file name in directory and header differ: {name!r}")
    start = at + 30 + name_len + extra_len
    view = memoryview(data)[start : start + info.compress_size]
    if len(view) != info.file_size:
        raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")
    if crcs is not None:  # checked later, all at once on threads
        crcs.append((view, info))
    elif zlib.crc32(view) != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")
    return view, start


def _check_crcs(crcs: list[tuple[Any, zipfile.ZipInfo]]) -> None:
    """The stored members' CRC-32s, on threads (``zlib`` lets the GIL go): 4.75 GB of them
    take 1.6 s on one core."""
    ok = in_parallel(lambda c: zlib.crc32(c[0]) == c[1].CRC, crcs)
    for (_, info), good in zip(crcs, ok, strict=True):
        if not good:
            raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")


#: threads for the work on a batch's bytes at submission (CRC-32s, hashes, writing chunks)
THREADS = min(8, os.cpu_count() or 1)


class _Later:
    """``fn()`` started now on a thread of its own; :meth:`result` waits for it. (A request
    that fails before asking lets it finish unseen: a mapped body stays mapped while it reads.)"""

    def __init__(self, fn: Callable[[], Any]) -> None:
        ex = ThreadPoolExecutor(1, thread_name_prefix="tessera-hash")
        self._future = ex.submit(fn)
        ex.shutdown(wait=False)

    def result(self) -> Any:
        return self._future.result()


def in_parallel(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``[fn(x) for x in items]`` on :data:`THREADS` threads (for work that lets the GIL go)."""
    if len(items) < 2 or THREADS < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(THREADS, thread_name_prefix="tessera-batch") as ex:
        return list(ex.map(fn, items))


def _file(data: Any) -> Any:
    """``data`` to read as a file: a mapped body (:mod:`service.spool`) is one already, where
    ``io.BytesIO`` would copy it (``bytes`` it shares)."""
    return _MapReader(data) if isinstance(data, mmap.mmap) else io.BytesIO(data)


class _MapReader(io.RawIOBase):
    """A mapping read as a file (``mmap`` has no ``seekable`` before Python 3.13)."""

    def __init__(self, data: mmap.mmap) -> None:
        self._data, self._at = data, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = max(0, min(len(b), len(self._data) - self._at))
        b[:n] = self._data[self._at : self._at + n]
        self._at += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._at, len(self._data))[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._at = base + offset
        return self._at

    def tell(self) -> int:
        return self._at


def archive_members(
    data: bytes, kind: str, *, max_items: int, max_member: int, max_expanded: int
) -> list[Member]:
    """The regular files of a zip or tar, in the archive's order. ``max_expanded`` bounds what
    reading them makes anew (decompressed members, a tar's copies); a stored zip member is a
    view of ``data`` and costs nothing more."""
    out: list[Member] = []
    total = 0

    def add(name: str, size: int, read: Callable[[], tuple[bytes | None, int]]) -> None:
        nonlocal total
        path = clean_path(name)
        if not path or _skipped(path):
            return
        if len(out) >= max_items:
            raise ProblemError(
                422,
                "batch.too_many_items",
                "the batch holds more files than one batch may",
                limit=max_items,
            )
        if size > max_member:
            out.append(Member(path, None, size))
            return
        body, got = read()
        if body is None:  # the header understated it
            out.append(Member(path, None, got))
            return
        if not isinstance(body, memoryview):  # a stored zip member is the body's own bytes
            total += got
        if total > max_expanded:
            raise FormatError(
                "archive expands beyond the limit",
                code="format.archive_too_large",
                limit=max_expanded,
            )
        out.append(Member(path, body, got))

    try:
        if kind == "zip":
            check_member_count(data, max_items)
            crcs: list[tuple[Any, zipfile.ZipInfo]] = []
            places: dict[int, tuple[int, int]] = {}  # member -> (start, CRC-32), when stored
            with zipfile.ZipFile(_file(data)) as zf:
                for info in zf.infolist():
                    if info.filename.endswith("/"):  # is_dir(): IndexError on ""
                        continue

                    def read_zip(info: zipfile.ZipInfo = info) -> tuple[bytes | None, int]:
                        stored = _stored_member(data, info, crcs)
                        if stored is not None:
                            view, start = stored
                            places[len(out)] = (start, info.CRC)
                            return view, len(view)
                        with zf.open(info) as fh:
                            return _read_bounded(fh, max_member)

                    add(info.filename, info.file_size, read_zip)
            _check_crcs(crcs)
            for k, (at, crc) in places.items():
                out[k].at, out[k].crc = at, crc
        else:
            with tarfile.open(fileobj=_file(data), mode="r:*") as tf:
                for ti in tf:
                    if not ti.isfile():
                        continue

                    def read_tar(ti: tarfile.TarInfo = ti) -> tuple[bytes | None, int]:
                        fh = tf.extractfile(ti)
                        assert fh is not None
                        return _read_bounded(fh, max_member)

                    add(ti.name, ti.size, read_tar)
    # ValueError: a negative offset (zipfile seeks there), a name not UTF-8 as its flag says
    except (
        zipfile.BadZipFile,
        tarfile.TarError,
        EOFError,
        OSError,
        NotImplementedError,
        ValueError,
        zlib.error,
        lzma.LZMAError,
    ) as exc:
        raise FormatError(
            "the batch's archive cannot be read",
            code="format.archive_invalid",
            reason=f"{exc.__class__.__name__}: {exc}"[:200],
        ) from None
    except RuntimeError as exc:  # zipfile: an encrypted member
        raise FormatError(
            "the batch's archive cannot be read",
            code="format.archive_invalid",
            reason=str(exc)[:200],
        ) from None
    return out


def members_of(files: list[tuple[str, bytes]], settings: Settings) -> list[Member]:
    """Every file of the upload: an archive's members, other files as they are."""
    out: list[Member] = []
    for name, data in files:
        kind = is_archive(data, name)
        if kind is not None:
            out += archive_members(
                data,
                kind,
                max_items=settings.batch_max_items - len(out),
                max_member=settings.batch_max_member_bytes,
                max_expanded=settings.max_expanded_bytes,
            )
        elif (path := clean_path(name)) and not _skipped(path):
            too_big = len(data) > settings.batch_max_member_bytes
            own = bytes(data) if isinstance(data, mmap.mmap) and not too_big else data
            out.append(Member(path, None if too_big else own, len(data)))
        if len(out) > settings.batch_max_items:
            raise ProblemError(
                422,
                "batch.too_many_items",
                "the batch holds more files than one batch may",
                limit=settings.batch_max_items,
            )
    if not out:
        raise ProblemError(422, "batch.empty", "the batch holds no files")
    return out


#: the extensions of the files an S3 prefix's listing makes items of (every readable format)
S3_MESH_EXTENSIONS = frozenset(MESH_FORMATS)


def s3_places(places: BatchS3Places, store: BlobStore, settings: Settings) -> dict[str, Any]:
    """The batch's S3 input and output as ``{"input": {"bucket", "prefix"}, "output": ...}``,
    once each is known to be an S3 URL the deployment allows: on an S3 blob store only, in
    one of ``batch_s3_prefixes`` (by default anywhere in the store's bucket), never among the
    store's own keys (other jobs' files)."""
    from workers.queue.s3 import S3BlobStore

    if not isinstance(store, S3BlobStore):
        raise ProblemError(
            422,
            "batch.s3_unavailable",
            "this deployment's blob store is not S3: a batch cannot read or write an S3 prefix",
        )
    allowed = [a for p in settings.batch_s3_prefixes if (a := split_url(p)) is not None]
    if not settings.batch_s3_prefixes:
        allowed = [(store.bucket, "")]
    own = store.prefix or "jobs/"
    out: dict[str, Any] = {}
    for role, place in (("input", places.input), ("output", places.output)):
        if place is None:
            out[role] = None
            continue
        url = place.s3_prefix
        where = split_url(url)
        if where is None:
            raise ProblemError(
                422,
                "batch.s3_prefix_invalid",
                "not an S3 prefix: s3://bucket/some/prefix/",
                role=role,
                prefix=url[:200],
            )
        bucket, prefix = where
        inside_store = bucket == store.bucket and (prefix.startswith(own) or own.startswith(prefix))
        if inside_store or not any(bucket == b and prefix.startswith(p) for b, p in allowed):
            raise ProblemError(
                403,
                "batch.s3_prefix_not_allowed",
                "this deployment does not let batches use that S3 prefix",
                role=role,
                prefix=url[:200],
            )
        out[role] = {"bucket": bucket, "prefix": prefix, "url": f"s3://{bucket}/{prefix}"}
    src, dst = out["input"], out["output"]
    if dst is not None and src["bucket"] == dst["bucket"]:
        a, b = src["prefix"], dst["prefix"]
        if a.startswith(b) or b.startswith(a):  # a result could overwrite an unread input
            raise ProblemError(
                422,
                "batch.s3_prefixes_overlap",
                "the output prefix may not be inside the input prefix, nor hold it",
                input=src["url"][:200],
                output=dst["url"][:200],
            )
    return out


def s3_members(store: Any, source: dict[str, Any], settings: Settings) -> list[Member]:
    """The items of an S3 prefix: its mesh files (by extension), in key order, at their paths
    relative to it (their bytes stay in S3: the workers read them)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = source["bucket"], source["prefix"]
    limit = settings.batch_max_items
    out: list[Member] = []
    try:
        listed = store.list_objects(bucket, prefix, limit, keep=_s3_mesh_key(prefix))
    except ClientError as exc:
        err = getattr(exc, "response", {}).get("Error", {})
        raise ProblemError(
            422,
            "batch.s3_prefix_unreadable",
            "the S3 prefix cannot be listed with the service's credentials",
            prefix=source["url"][:200],
            reason=str(err.get("Code") or exc.__class__.__name__)[:100],
        ) from None
    except BotoCoreError as exc:
        raise ProblemError(
            503,
            "batch.s3_unreachable",
            "the S3 service cannot be reached",
            reason=exc.__class__.__name__,
        ) from None
    keys, skipped = listed
    if len(keys) > limit:
        raise ProblemError(
            422,
            "batch.too_many_items",
            "the batch holds more files than one batch may",
            limit=limit,
        )
    for key, size in keys:
        too_big = size > settings.batch_max_member_bytes
        out.append(Member(key[len(prefix) :], None if too_big else b"", size))
    if not out:
        raise ProblemError(
            422,
            "batch.s3_prefix_empty",
            "the S3 prefix holds no mesh files",
            prefix=source["url"][:200],
            other_objects=skipped,
            extensions=sorted(S3_MESH_EXTENSIONS),
        )
    return out


def _s3_mesh_key(prefix: str) -> Callable[[str], bool]:
    def keep(key: str) -> bool:
        rel = key[len(prefix) :]
        ext = posixpath.splitext(rel)[1][1:].lower()
        # a key the batch could not name as it is (``a//b``, ``../x``) is left out with the rest
        return ext in S3_MESH_EXTENSIONS and clean_path(rel) == rel and not _skipped(rel)

    return keep


def output_paths(paths: list[str], fmt: str) -> list[str]:
    """Each result's path in the result archive: the input's, with the output format's
    extension (``a.obj`` -> ``a.ply``); where an earlier input's result has that path
    (``a.obj`` and ``a.stl``), the later keeps its whole name (``a.stl.ply``). Decided from the
    earlier paths only, so a batch whose first items run while its body still comes names
    them as it would after."""
    taken: set[str] = set()
    return [output_path(p, fmt, taken) for p in paths]


def output_path(path: str, fmt: str, taken: set[str]) -> str:
    """One input's result path (see :func:`output_paths`), added to ``taken``."""
    ext = FILE_EXTENSIONS.get(fmt, fmt)
    stem, _ext = posixpath.splitext(path)
    cand = f"{stem or path}.{ext}"
    if cand in taken:
        cand = f"{path}.{ext}"
    while cand in taken:
        cand = f"{cand}.{ext}"
    taken.add(cand)
    return cand


@dataclass
class AcceptedBatch:
    batch_id: str
    replayed: bool


#: a file larger than this is hashed in pieces of this size, on threads
HASH_PIECE = 64 << 20


def _file_hash(data: Any) -> bytes:
    if len(data) <= HASH_PIECE:
        return hashlib.sha256(data).digest()
    view = memoryview(data)
    pieces = [view[i : i + HASH_PIECE] for i in range(0, len(view), HASH_PIECE)]
    return hashlib.sha256(b"".join(in_parallel(_sha256, pieces))).digest()


def _sha256(data: Any) -> bytes:
    return hashlib.sha256(data).digest()


def body_hash(spec_text: str, files: list[tuple[str, bytes]]) -> str:
    """What an Idempotency-Key's request is compared by: the spec, the files' names and their
    bytes (a file over :data:`HASH_PIECE` by the hashes of its pieces, hashed on threads: one
    SHA-256 of 4.75 GB takes 4 s)."""
    h = hashlib.sha256(hashlib.sha256(spec_text.encode()).digest())
    for name, data in files:
        h.update(hashlib.sha256(name.encode()).digest())
        h.update(_file_hash(data))
    return h.hexdigest()


def check_spec(spec_text: str, deadline_limit: int) -> tuple[JobCreate, dict[str, Any]]:
    """The batch's spec, checked as a job's is (against a mesh with no attributes of its own:
    the output may ask only for what the pipeline makes), and as stored."""
    spec = parse_spec(spec_text)
    if spec.deadline_seconds is not None and spec.deadline_seconds > deadline_limit:
        raise SpecError(
            "deadline above the service's limit",
            code="spec.deadline_too_long",
            limit_seconds=deadline_limit,
        )
    steps = parse_pipeline(spec.pipeline)
    if starts_with_source(steps):
        raise SpecError(
            "a batch's pipeline runs on its files: it cannot start with a source step",
            code="batch.source_step",
        )
    empty = TriMesh(np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.int32))
    check_pipeline(spec, steps, empty)
    spec_dict: dict[str, Any] = spec.model_dump(mode="json")
    if spec.deadline_seconds is None:
        spec_dict["deadline_seconds"] = deadline_limit
    return spec, spec_dict


class BatchWriter:
    """A batch's items numbered, checked, stored and queued in order, a chunk at a time.

    :meth:`add` takes members as they become known: all at once at submission
    (:func:`accept_batch`), or while the body still comes (:class:`service.early.EarlyChunks`).
    Each item gets its result's path; a repeated path or a member too large fails alone. A chunk
    is cut once it holds ``chunk_items`` items or ``batch_chunk_bytes``; :meth:`queue` stores
    each cut chunk's members as one blob and submits its job (the batch's record first: with
    the first chunks when the body still comes, marked receiving until the body is whole,
    :meth:`BatchQueue.received`)."""

    def __init__(
        self,
        *,
        queue: JobQueue,
        batches: BatchQueue,
        store: BlobStore,
        settings: Settings,
        batch_id: str,
        spec_dict: dict[str, Any],
        fmt: str,
        input_record: dict[str, Any],
        places: dict[str, Any] | None,
        extra: dict[str, Any],
        t0: float | None = None,
    ) -> None:
        self.q, self.b, self.store, self.settings = queue, batches, store, settings
        self.batch_id = batch_id
        self.fmt = fmt
        s3 = {"s3": places} if places is not None else {}
        self.fields = {"spec": spec_dict, "input": input_record, **s3, **extra}  # the record's
        # the batch calls its callback_url once it has ended; its chunks call none
        chunk_spec = {k: v for k, v in spec_dict.items() if k != "callback_url"}
        self.chunk_fields = {"spec": chunk_spec, **s3, **extra}
        self.s3 = places is not None
        self.items: list[dict[str, Any]] = []
        self.failed: dict[int, dict[str, Any]] = {}
        self.unrecorded: dict[int, dict[str, Any]] = {}  # failed since the record last grew
        self._json: list[str | None] = []  # each item's JSON, once its chunk is known
        self._paths: set[str] = set()
        self._taken: set[str] = set()
        self._open: list[tuple[int, Any, int]] = []  # (index, bytes, size) not in a chunk yet
        self._open_bytes = 0
        self.chunks: list[Chunk] = []
        self._cut: list[tuple[int, Chunk, list[tuple[int, Any]]]] = []  # cut, not queued yet
        self.stored = False  # whether the batch's record exists
        self.t0 = time.perf_counter() if t0 is None else t0

    def add(self, members: list[Member], chunk_items: int, last: bool = False) -> None:
        for m in members:
            i = len(self.items)
            if m.path in self._paths:
                self.failed[i] = self.unrecorded[i] = _error(
                    "batch.duplicate_path", "another file of the batch has this path", path=m.path
                )
            elif m.data is None:
                self.failed[i] = self.unrecorded[i] = _error(
                    "batch.member_too_large",
                    "the file is larger than a batch's member may be",
                    bytes=m.size,
                    limit=self.settings.batch_max_member_bytes,
                )
            else:
                self._open.append((i, m.data, m.size))
                self._open_bytes += m.size
            self._paths.add(m.path)
            out = output_path(m.path, self.fmt, self._taken)
            self.items.append({"path": m.path, "output": out, "bytes": m.size, "chunk": -1})
            self._json.append(None)
            if self._open and (
                len(self._open) >= chunk_items
                or self._open_bytes >= self.settings.batch_chunk_bytes
            ):
                self._cut_open()
        if last and self._open:
            self._cut_open()

    def _cut_open(self) -> None:
        k = len(self.chunks)
        idx = [i for i, _, _ in self._open]
        for i in idx:
            self.items[i]["chunk"] = k
            self._json[i] = None
        # a chunk's items are contiguous among the runnable ones, not always in the batch's
        # order: each chunk names its own (its record's start..end index the batch's item list)
        chunk = Chunk(uuid.uuid4().hex, idx[0], idx[-1] + 1, len(idx))
        self.chunks.append(chunk)
        self._cut.append((k, chunk, [(i, data) for i, data, _ in self._open]))
        self._open, self._open_bytes = [], 0

    def _items_json(self) -> str:
        """The items as the record holds them, each item's JSON made once (the record is
        written whole each time chunks are added: 10,000 items, 80 times, while the body
        comes; dumping them all each time held the interpreter from the upload's thread)."""
        for i, j in enumerate(self._json):
            if j is None:
                self._json[i] = json.dumps(self.items[i])
        return "[" + ",".join(self._json) + "]"  # type: ignore[arg-type]

    def create(
        self, idempotency_key: str | None, body_hash: str, receiving: bool = False
    ) -> str | None:
        """Store the batch's record with the items so far (:meth:`BatchQueue.create`)."""
        dup = self.b.create(
            self.batch_id,
            self.fields,
            self.items,
            self.failed,
            idempotency_key=idempotency_key,
            body_hash=body_hash,
            receiving=receiving,
        )
        if dup is None:
            self.stored = True
            self.unrecorded = {}
        return dup

    def queue(self) -> None:
        """Store the cut chunks' members (each chunk one blob, on threads), record the items
        and chunks so far, then submit the chunks' jobs."""
        cut, self._cut = self._cut, []
        if not self.s3:  # an S3 batch's files stay where they are
            in_parallel(
                lambda c: self.store.put_chunks(members_key(c[1].job), pack_members(c[2])), cut
            )
        if self.unrecorded or cut:
            self.b.extend(
                self.batch_id, self._items_json(), len(self.items), self.chunks, self.unrecorded
            )
            self.unrecorded = {}
        accept_s = time.perf_counter() - self.t0
        for k, chunk, _ in cut:
            fields = {
                **self.chunk_fields,
                "input": {
                    "name": f"batch {self.batch_id} chunk {k}",
                    "bytes": 0,
                    "vertices": 0,
                    "faces": 0,
                },
                "timings": {"accept_batch": accept_s},
                "batch": self.batch_id,
                "chunk": k,
                "start": chunk.start,
                "end": chunk.end,
            }
            try:
                self.q.submit_job(chunk.job, fields, listed=False)
            except BaseException:
                self.store.delete_prefix(job_prefix(chunk.job))
                raise

    def drop(self, idempotency_key: str | None) -> None:
        """Undo what is stored of a batch whose body failed while it came."""
        if not self.stored:
            return
        recorded = self.b.drop(self.batch_id, idempotency_key)  # its chunks cancelled
        for job in {*recorded, *(c.job for c in self.chunks)}:  # stored, maybe not recorded
            self.store.delete_prefix(job_prefix(job))
        self.stored = False


def accept_batch(
    *,
    queue: JobQueue,
    batches: BatchQueue,
    store: BlobStore,
    settings: Settings,
    spec_text: str,
    files: list[tuple[str, bytes]],
    idempotency_key: str | None,
    extra: dict[str, Any],
    admit: Callable[[str], None] | None = None,
    s3: BatchS3Places | None = None,
    early: Any = None,
) -> AcceptedBatch:
    """Validate, store and queue a batch; ``admit(batch_id)`` counts it against the caller's
    quotas once it is known to be valid and new. ``s3``: the batch's files are the mesh files
    under an S3 prefix (``files`` is empty), read there by the workers (:mod:`.s3batch`).
    ``early``: the :class:`service.early.EarlyChunks` that may have queued the batch's first
    chunks while its body came (its writer then goes on with the rest)."""
    t0 = time.perf_counter()
    hashed = files if s3 is None else [("s3", s3.model_dump_json().encode())]
    # hashed while the members are read and checked: it is needed only at the end
    hashing = _Later(lambda: body_hash(spec_text, hashed)) if idempotency_key else None

    def digest() -> str:
        return hashing.result() if hashing is not None else ""

    def replayed(dup: str | None = None) -> AcceptedBatch | None:
        """The earlier batch under the Idempotency-Key (``dup``: its record, when known), if
        any; waited for while that request's body still comes."""
        if not idempotency_key:
            return None
        prev = dup if dup and not dup.endswith("|") else earlier_batch(batches, idempotency_key)
        return None if prev is None else AcceptedBatch(earlier_id(prev, digest(), "batch_id"), True)

    writer: BatchWriter | None = early.settled() if early is not None else None
    if writer is None and (earlier := replayed()) is not None:
        return earlier
    spec, spec_dict = check_spec(spec_text, settings.default_deadline_seconds)
    places = s3_places(s3, store, settings) if s3 is not None else None
    if places is not None:
        members = s3_members(store, places["input"], settings)
        input_record: dict[str, Any] = {
            "bytes": sum(m.size for m in members),
            "files": len(members),
            "s3_prefix": places["input"]["url"],
        }
    else:
        try:
            members = members_of(files, settings)
        except BaseException:
            if writer is not None:
                early.undo()
            raise
        input_record = {"bytes": sum(len(d) for _, d in files), "files": len(files)}
    if writer is not None:
        try:
            rest = _accept_rest(
                writer, early.handed, members, input_record, idempotency_key, digest
            )
        except BaseException:
            early.undo()
            raise
        if rest is not None:
            return rest
        # the archive's directory does not list, first and in order, the members queued as
        # they came: what was queued is undone and the archive is accepted as it lists them
        early.undo()
        if (earlier := replayed()) is not None:
            return earlier
    batch_id = uuid.uuid4().hex
    if admit is not None:
        admit(batch_id)
    writer = BatchWriter(
        queue=queue,
        batches=batches,
        store=store,
        settings=settings,
        batch_id=batch_id,
        spec_dict=spec_dict,
        fmt=spec.output.format,
        input_record=input_record,
        places=places,
        extra=extra,
        t0=t0,
    )
    # enough chunks for every live worker to take several (the last ones to end are short)
    runnable = sum(1 for m in members if m.data is not None)
    per_worker = -(-runnable // (CHUNKS_PER_WORKER * max(queue.live_workers(), 1)))
    writer.add(members, max(1, min(settings.batch_chunk_items, per_worker)), last=True)
    dup = writer.create(idempotency_key, digest())
    while dup is not None:
        if (earlier := replayed(dup)) is not None:
            return earlier
        dup = writer.create(idempotency_key, digest())  # the one it waited for was undone
    writer.queue()
    return AcceptedBatch(batch_id, False)


#: how long a request waits for an earlier one under the same Idempotency-Key whose body is
#: still coming (its batch's first chunks running), before it is told to send again
IDEMPOTENCY_WAIT_SECONDS = 30.0


def earlier_batch(batches: BatchQueue, key: str) -> str | None:
    """The earlier request's ``"id|hash"`` under ``key``, or None. One whose body is still
    coming has no hash yet: it is waited for (it may also fail and leave None), at most
    :data:`IDEMPOTENCY_WAIT_SECONDS`; then 409 ``idempotency.in_progress``."""
    deadline = time.monotonic() + IDEMPOTENCY_WAIT_SECONDS
    while True:
        prev = batches.idempotent_batch(key)
        if prev is None or not prev.endswith("|"):
            return prev
        if time.monotonic() > deadline:
            raise ProblemError(
                409,
                "idempotency.in_progress",
                "an earlier request with this Idempotency-Key is still sending its body: "
                "send this one again once that one has been answered",
                batch_id=prev[:-1],
            )
        time.sleep(0.1)


def _accept_rest(
    writer: BatchWriter,
    handed: list[tuple[str, int, int, int]],
    members: list[Member],
    input_record: dict[str, Any],
    idempotency_key: str | None,
    digest: Callable[[], str],
) -> AcceptedBatch | None:
    """The rest of a batch whose first chunks were queued while its body came (``handed``:
    those members' paths, where their bytes start, sizes and CRC-32s, as their local headers
    gave them). The archive's directory must list them first, in the same order and at the
    same places; then the others are queued as the writer goes on, and the batch may end.
    None when it does not (a valid zip may list its members in another order, or leave one
    out): the caller undoes what was queued and accepts the archive as it lists them."""
    listed = [(m.path, m.at, m.size, m.crc) for m in members[: len(handed)]]
    if listed != handed:
        return None
    writer.add(members[len(handed) :], writer.settings.batch_chunk_items, last=True)
    writer.queue()
    writer.b.received(writer.batch_id, {"input": input_record}, idempotency_key, digest())
    writer.b.notify_if_ended(writer.batch_id)  # its chunks may all have ended already
    return AcceptedBatch(writer.batch_id, False)


def _error(code: str, message: str, **detail: Any) -> dict[str, Any]:
    return {"state": "failed", "error": {"code": code, "message": message, "detail": detail}}
