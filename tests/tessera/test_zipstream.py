"""The result archive's writer: what it writes, ``zipfile`` reads back whole (names, bytes,
CRC-32s), with and without the ZIP64 fields that large results, far offsets and many members
need (their thresholds lowered here so that small archives need them)."""

from __future__ import annotations

import io
import zipfile
import zlib

import pytest

from tessera import zipstream
from tessera.zipstream import StoredZip


def write(members: dict[str, bytes]) -> bytes:
    zw = StoredZip()
    out = b""
    for name, data in members.items():
        out += zw.member(name, len(data), zlib.crc32(data)) + data
    return out + zw.end()


MEMBERS = {
    "a/cow.ply": bytes(range(256)) * 40,
    "b/ünïcode name.obj": b"v 0 0 0\n" * 300,
    "empty.ply": b"",
    "manifest.jsonl": b'{"path": "a"}\n',
}


@pytest.mark.parametrize("limit,count", [(None, None), (2000, None), (2000, 2), (None, 2)])
def test_what_it_writes_zipfile_reads_back(monkeypatch, limit, count):
    if limit is not None:  # members and offsets past it: ZIP64 sizes and offsets
        monkeypatch.setattr(zipstream, "_LIMIT", limit)
    if count is not None:  # more members than the end record may count: ZIP64 end records
        monkeypatch.setattr(zipstream, "_COUNT", count)
    data = write(MEMBERS)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        assert zf.namelist() == list(MEMBERS)
        for name, body in MEMBERS.items():
            assert zf.read(name) == body
            info = zf.getinfo(name)
            assert info.compress_type == zipfile.ZIP_STORED and info.date_time[0] == 2020
    # the ZIP64 records are there exactly when asked for
    assert (b"PK\x06\x06" in data) == (limit is not None or count is not None)


def test_a_wrong_sum_is_caught_by_the_reader():
    zw = StoredZip()
    body = b"some bytes"
    data = zw.member("x.ply", len(body), zlib.crc32(body) ^ 1) + body + zw.end()
    with zipfile.ZipFile(io.BytesIO(data)) as zf, pytest.raises(zipfile.BadZipFile):
        zf.read("x.ply")
