"""Unwrapping ``.zip`` and ``.gz`` uploads in memory, with limits.

Nothing here touches the filesystem: member names are only looked at for their extension, so a
name like ``../../etc/passwd`` can do no harm beyond being rejected. Expansion is bounded both in
total bytes and in ratio, and read in chunks so that a bomb is stopped before it is inflated.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile
import zlib

from ..errors import FormatError

CHUNK = 1 << 20
#: the end-of-central-directory record, and where it may start (a comment of at most 64 KiB follows)
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"  # a member's entry in the central directory


def declared_members(data: bytes, cap: int = 1 << 16) -> int | None:
    """How many members a zip holds, known without ``zipfile`` (which builds one object per
    member first: a million empty members cost seconds and hundreds of MB before any limit could
    be checked): the larger of the count its end record declares and the number of entries in
    its central directory, walked header by header as ``zipfile`` will read them (it reads every
    entry there, whatever the end record says), the walk stopping after ``cap``. None when there
    is no end record."""
    at = data.rfind(_EOCD, max(0, len(data) - (1 << 16) - 22))
    if at < 0 or len(data) < at + 22:
        return None
    total, size = struct.unpack_from("<HI", data, at + 10)
    end = at  # the directory ends where the end records begin
    record = at - 20 - 56  # where zipfile looks for a zip64 end record
    zip64 = record >= 0 and data[at - 20 : at - 16] == _EOCD64_LOCATOR
    if zip64 and data[record : record + 4] == b"PK\x06\x06":
        total, size = struct.unpack_from("<QQ", data, record + 32)
        end = record
    pos, entries = end - int(size), 0
    while pos >= 0 and pos + 46 <= end and entries <= cap and data[pos : pos + 4] == _CENTRAL:
        name, extra, comment = struct.unpack_from("<HHH", data, pos + 28)
        pos += 46 + name + extra + comment
        entries += 1
    return max(int(total), entries)


def check_member_count(data: bytes, max_members: int) -> None:
    n = declared_members(data, cap=max_members)
    if n is not None and n > max_members:
        raise FormatError(
            "archive has too many members",
            code="format.archive_too_many_members",
            members=n,
            limit=max_members,
        )


def gunzip(data: bytes, max_bytes: int) -> bytes:
    """Decompress a gzip stream (concatenated members too) up to ``max_bytes``."""
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    buf = data
    try:
        while buf:
            out += d.decompress(buf, max_bytes + 1 - len(out))
            if len(out) > max_bytes:
                raise FormatError(
                    "archive expands beyond the limit",
                    code="format.archive_too_large",
                    limit=max_bytes,
                )
            buf = d.unconsumed_tail
            if d.eof:  # another gzip member may follow
                buf = d.unused_data
                if buf:
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    except zlib.error as exc:
        raise FormatError(
            "corrupt gzip data", code="format.archive_corrupt", reason=str(exc)
        ) from None
    if not d.eof:
        raise FormatError("truncated gzip data", code="format.archive_corrupt")
    return bytes(out)


def unzip_members(
    data: bytes, wanted_ext: set[str], max_bytes: int, max_members: int = 1000
) -> dict[str, bytes]:
    """Read the members of a zip that have one of ``wanted_ext`` (lower-case, with the dot), plus
    every other member when a glTF needs its buffers. Returns ``{name: bytes}``."""
    check_member_count(data, max_members)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, NotImplementedError, struct.error) as exc:
        raise FormatError(
            "corrupt zip archive", code="format.archive_corrupt", reason=str(exc)
        ) from None
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > max_members:
        raise FormatError(
            "archive has too many members",
            code="format.archive_too_many_members",
            members=len(infos),
            limit=max_members,
        )
    out: dict[str, bytes] = {}
    total = 0
    for info in infos:
        name = info.filename
        if name.startswith("/") or ".." in name.split("/") or "\\" in name or "\x00" in name:
            raise FormatError(
                "unsafe member name in archive", code="format.archive_unsafe_name", name=name[:200]
            )
        if posixpath.basename(name).startswith("."):
            continue  # __MACOSX/._foo and similar
        if info.file_size > max_bytes - total:
            raise FormatError(
                "archive expands beyond the limit", code="format.archive_too_large", limit=max_bytes
            )
        try:
            with zf.open(info) as fh:
                chunks = []
                while True:
                    c = fh.read(CHUNK)
                    if not c:
                        break
                    total += len(c)
                    if total > max_bytes:  # the declared size lied
                        raise FormatError(
                            "archive expands beyond the limit",
                            code="format.archive_too_large",
                            limit=max_bytes,
                        )
                    chunks.append(c)
        except (
            zipfile.BadZipFile,
            zlib.error,
            NotImplementedError,
            RuntimeError,
            ValueError,  # a local header pointing before the file start: "negative seek"
            EOFError,
            OSError,
            struct.error,
        ) as exc:
            raise FormatError(
                "corrupt zip member", code="format.archive_corrupt", reason=str(exc)
            ) from None
        out[name] = b"".join(chunks)
    meshes = [n for n in out if posixpath.splitext(n)[1].lower() in wanted_ext]
    if not meshes:
        raise FormatError(
            "archive holds no mesh file", code="format.archive_no_mesh", members=sorted(out)[:20]
        )
    return out
