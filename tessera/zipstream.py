"""A stored (uncompressed) zip written front to back as pieces of bytes, for members whose size
and CRC-32 are known before their bytes are sent.

A batch goes up as such a zip and its results come back as one (10,000 meshes: 4.75 GB of OBJ
up, about 3.5 GB of PLY down). ``zipfile`` writing to a stream computes each member's CRC-32 on
the writing thread and copies the bytes through its own writer: about 1.2 GB/s up and 700 MB/s
down. With the sums known (computed on threads by the client, by the workers as they wrote the
results), each member is its header and then its bytes.

The layout is the one ``zipfile`` reads and writes (APPNOTE 6.3): a local header before each
member's bytes, no data descriptors (the sizes and sum are in the header), then the central
directory and its end records. ZIP64 fields are written only where a size, an offset or the
count of members needs them, so that small archives stay readable by every unzip.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_LIMIT = 0xFFFFFFFF  # sizes and offsets at or past this need ZIP64 fields
_COUNT = 0xFFFF  # and member counts past this
_MARK, _COUNT_MARK = 0xFFFFFFFF, 0xFFFF  # what the short fields then hold
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_END64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR = struct.Struct("<IIQI")
_UTF8 = 0x800  # general purpose flag: names in UTF-8
_UNIX_FILE = 0o100644 << 16


@dataclass
class _Entry:
    name: bytes
    size: int
    crc: int
    offset: int
    dos: tuple[int, int]


def _dos_time(date_time: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    y, mo, d, h, mi, s = date_time
    return (h << 11) | (mi << 5) | (s // 2), ((y - 1980) << 9) | (mo << 5) | d


class StoredZip:
    """Call :meth:`member` before each member's bytes (it gives the header to send first), then
    send exactly ``size`` bytes; :meth:`end` gives the central directory and end records."""

    def __init__(self, date_time: tuple[int, int, int, int, int, int] = (2020, 1, 1, 0, 0, 0)):
        self._entries: list[_Entry] = []
        self._at = 0
        self._dos = _dos_time(date_time)

    def member(
        self,
        name: str,
        size: int,
        crc: int,
        date_time: tuple[int, int, int, int, int, int] | None = None,
    ) -> bytes:
        """The local header of member ``name`` (``date_time``: its time, else the archive's)."""
        raw = name.encode("utf-8")
        dos = self._dos if date_time is None else _dos_time(date_time)
        extra = b""
        if size >= _LIMIT:  # ZIP64: both sizes in the extra field
            extra = struct.pack("<HHQQ", 1, 16, size, size)
        small = _MARK if extra else size
        version = 45 if extra else 20
        head = _LOCAL.pack(
            0x04034B50, version, _UTF8, 0, *dos, crc, small, small, len(raw), len(extra)
        )
        self._entries.append(_Entry(raw, size, crc, self._at, dos))
        self._at += len(head) + len(raw) + len(extra) + size
        return head + raw + extra

    def end(self) -> bytes:
        parts: list[bytes] = []
        for e in self._entries:
            big = [e.size, e.size] if e.size >= _LIMIT else []
            if e.offset >= _LIMIT:
                big.append(e.offset)
            extra = struct.pack(f"<HH{len(big)}Q", 1, 8 * len(big), *big) if big else b""
            version = 45 if extra else 20
            size = _MARK if e.size >= _LIMIT else e.size
            offset = _MARK if e.offset >= _LIMIT else e.offset
            parts.append(
                _CENTRAL.pack(
                    0x02014B50,
                    version | (3 << 8),  # made on Unix (the external attributes are its mode)
                    version,
                    _UTF8,
                    0,
                    *e.dos,
                    e.crc,
                    size,
                    size,
                    len(e.name),
                    len(extra),
                    0,
                    0,
                    0,
                    _UNIX_FILE,
                    offset,
                )
                + e.name
                + extra
            )
        directory = b"".join(parts)
        n, start, length = len(self._entries), self._at, len(directory)
        tail = b""
        if n >= _COUNT or start >= _LIMIT or length >= _LIMIT:
            end64 = _END64.pack(0x06064B50, 44, 45, 45, 0, 0, n, n, length, start)
            tail = end64 + _LOCATOR.pack(0x07064B50, 0, start + length, 1)
        count = _COUNT_MARK if n >= _COUNT else n
        end = _END.pack(
            0x06054B50,
            0,
            0,
            count,
            count,
            _MARK if length >= _LIMIT else length,
            _MARK if start >= _LIMIT else start,
            0,
        )
        return directory + tail + end
