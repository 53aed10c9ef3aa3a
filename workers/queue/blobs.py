"""Blob store: uploads, results and job manifests. Redis never holds mesh bytes.

:class:`BlobStore` is the interface; :class:`LocalBlobStore` keeps blobs as files under a root
directory (one machine, or a shared volume); :class:`~.s3.S3BlobStore` implements the same
methods on any S3-compatible store.
Keys are relative paths of ``[A-Za-z0-9._-]`` segments: they never come from user input unchecked.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, Protocol

_KEY = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$")


class BlobNotFound(KeyError):
    pass


#: how a local blob's temporary file begins (written there, then renamed into place)
TMP_PREFIX = ".tmp-"


#: what a blob may be written from: pieces of bytes-like objects, written in order
Chunks = Iterable["bytes | bytearray | memoryview"]


class BlobStore(Protocol):
    def put_bytes(self, key: str, data: bytes) -> int: ...
    def put_chunks(self, key: str, chunks: Chunks) -> int: ...
    def get_bytes(self, key: str) -> bytes: ...
    def open(self, key: str) -> BinaryIO: ...
    def local_path(self, key: str) -> Path | None: ...
    def size(self, key: str) -> int: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> None: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def list_prefix(self, prefix: str) -> list[str]: ...
    def abort_unfinished(self, prefix: str) -> int: ...


def check_key(key: str) -> str:
    if not _KEY.match(key) or ".." in key.split("/"):
        raise ValueError(f"invalid blob key {key!r}")
    return key


class LocalBlobStore:
    """Files under ``root``; writes go to a temporary file first and are renamed into place, so a
    reader never sees half a blob."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put_bytes(self, key: str, data: bytes) -> int:
        return self.put_chunks(key, [data])

    def put_chunks(self, key: str, chunks: Chunks) -> int:
        """The blob made of ``chunks`` in order (each written as it comes, so a large blob is
        never whole in memory); its size in bytes."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                size = sum(fh.write(c) or 0 for c in chunks)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return size

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def open(self, key: str) -> BinaryIO:
        try:
            return open(self._path(key), "rb")
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def local_path(self, key: str) -> Path | None:
        return self._path(key)

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> int:
        path = self._path(prefix.rstrip("/"))
        if path.is_dir():
            n = sum(1 for p in path.rglob("*") if p.is_file() and not p.name.startswith(TMP_PREFIX))
            shutil.rmtree(path, ignore_errors=True)
            return n
        if path.is_file():
            path.unlink(missing_ok=True)
            return 1
        return 0

    def list_prefix(self, prefix: str) -> list[str]:
        path = self._path(prefix.rstrip("/"))
        if not path.is_dir():
            return []
        return sorted(
            str(p.relative_to(self.root))
            for p in path.rglob("*")
            if p.is_file() and not p.name.startswith(TMP_PREFIX)
        )

    def abort_unfinished(self, prefix: str) -> int:
        """Remove the partial writes under ``prefix`` that a killed writer left (its temporary
        files). Only for writers known dead: a live writer's temporary goes too. Their count."""
        path = self._path(prefix.rstrip("/"))
        if not path.is_dir():
            return 0
        partial = list(path.rglob(TMP_PREFIX + "*"))
        for p in partial:
            p.unlink(missing_ok=True)
        return len(partial)


def open_store(config: str | os.PathLike[str] | dict[str, Any]) -> BlobStore:
    """The blob store for a location: a local path or ``file://`` URL, an ``s3://bucket/prefix``
    URL, or a dict from :func:`store_config` (location plus the S3 options)."""
    options: dict[str, Any] = {}
    if isinstance(config, dict):
        options = {k: v for k, v in config.items() if k != "location"}
        config = config["location"]
    s = os.fspath(config)
    if s.startswith("s3://"):
        from .s3 import S3BlobStore

        return S3BlobStore(s, **options)
    if "://" in s and not s.startswith("file://"):
        raise ValueError(f"unsupported blob store URL {s!r}: a path, file:// or s3://")
    return LocalBlobStore(s[len("file://") :] if s.startswith("file://") else s)


def store_config(settings: Any) -> dict[str, Any]:
    """What :func:`open_store` needs, from the settings (picklable: the compute child gets it)."""
    if not settings.blob_url:
        return {"location": str(settings.blob_root)}
    return {
        "location": settings.blob_url,
        "endpoint_url": settings.s3_endpoint_url,
        "region": settings.s3_region,
        "access_key_id": settings.s3_access_key_id,
        "secret_access_key": settings.s3_secret_access_key,
        "multipart_threshold": settings.s3_multipart_threshold_bytes,
        "create_bucket": settings.s3_create_bucket,
    }


def input_key(job_id: str) -> str:
    """The accepted upload, parsed (see ``workers.engine.io.stored``)."""
    return f"jobs/{job_id}/input.arrays"


def legacy_input_key(job_id: str) -> str:
    """Where jobs accepted before the stored form existed keep their input (NPZ)."""
    return f"jobs/{job_id}/input.npz"


def input_keys(job_id: str) -> tuple[str, str]:
    """Where a job's stored input may be: the stored form's key, then the NPZ name."""
    return input_key(job_id), legacy_input_key(job_id)


def find_input(store: BlobStore, job_id: str) -> str | None:
    """The key of a job's stored input (either form), or None when it has none."""
    return next((k for k in input_keys(job_id) if store.exists(k)), None)


def read_input(store: BlobStore, job_id: str) -> Any:
    """The job's stored input (either form) in one writable buffer, read by trying each key
    (no existence check first): a local file is read straight into it."""
    for key in input_keys(job_id):
        try:
            return read_buffer(store, key)
        except BlobNotFound:
            continue
    raise BlobNotFound(input_key(job_id))


def read_buffer(store: BlobStore, key: str) -> Any:
    """The blob's bytes in a writable buffer (a NumPy uint8 array for a local file)."""
    import numpy as np

    path = store.local_path(key)
    if path is None:
        return bytearray(store.get_bytes(key))
    try:
        with open(path, "rb", buffering=0) as fh:
            buf = np.empty(os.fstat(fh.fileno()).st_size, dtype=np.uint8)
            view, got = memoryview(buf), 0
            while got < len(buf) and (n := fh.readinto(view[got:])):
                got += n
    except FileNotFoundError:
        raise BlobNotFound(key) from None
    return buf[:got]


def manifest_key(job_id: str) -> str:
    return f"jobs/{job_id}/manifest.json"


def outcome_key(job_id: str) -> str:
    """The record of a job that ended, kept beside its manifest (see workers.recovery)."""
    return f"jobs/{job_id}/outcome.json"


def result_key(job_id: str, attempt: int, fmt: str) -> str:
    return f"jobs/{job_id}/result-a{attempt}.{fmt}"


def artifact_key(job_id: str, attempt: int, name: str, fmt: str) -> str:
    return f"jobs/{job_id}/artifact-{name}-a{attempt}.{fmt}"


def members_key(job_id: str) -> str:
    """A batch chunk's input: its members' files as uploaded, packed (:func:`pack_members`)."""
    return f"jobs/{job_id}/members.bin"


def item_key(job_id: str, index: int, fmt: str) -> str:
    """The result of a batch's item ``index``, made by its chunk ``job_id`` (one key whatever
    the attempt: a re-run writes the same bytes there)."""
    return f"jobs/{job_id}/item-{index}.{fmt}"


#: a packed chunk begins with the length of its JSON index, as 8 little-endian bytes
_INDEX_LEN = 8


def pack_members(members: list[tuple[int, bytes]]) -> list[bytes]:
    """The pieces of one blob holding several files: ``[(item index, bytes)]`` behind a JSON
    index of ``[index, offset, size]``; read back by :func:`unpack_members`."""
    import json

    index, offset = [], 0
    for i, data in members:
        index.append([i, offset, len(data)])
        offset += len(data)
    head = json.dumps(index).encode()
    return [len(head).to_bytes(_INDEX_LEN, "little"), head, *(d for _, d in members)]


def unpack_members(buf: Any) -> dict[int, memoryview]:
    """Item index -> its file's bytes (views of ``buf``), from a blob :func:`pack_members` made."""
    import json

    view = memoryview(buf).cast("B")
    n = int.from_bytes(view[:_INDEX_LEN], "little")
    base = _INDEX_LEN + n
    out = {}
    for i, off, size in json.loads(bytes(view[_INDEX_LEN:base])):
        out[int(i)] = view[base + off : base + off + size]
    return out


def job_prefix(job_id: str) -> str:
    return f"jobs/{job_id}"


class ChunkReader(io.RawIOBase):
    """A read-only, forward-only file over pieces of bytes (for APIs that read a file object);
    ``size`` counts the bytes taken from the pieces so far."""

    def __init__(self, chunks: Chunks) -> None:
        self._chunks = iter(chunks)
        self._left = memoryview(b"")
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._left:
            try:
                self._left = memoryview(next(self._chunks)).cast("B")
            except StopIteration:
                return 0
            self.size += len(self._left)
        n = min(len(b), len(self._left))
        memoryview(b).cast("B")[:n] = self._left[:n]
        self._left = self._left[n:]
        return n
