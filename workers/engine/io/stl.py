"""Binary STL, read and written with one structured array of 50-byte records.

A binary STL is an 80-byte header, a little-endian uint32 face count and one record per face: the
face normal, the three corners (float32 each) and a 2-byte attribute count. The loaded mesh is the
soup the file stores (three vertices per face, as trimesh loads it): welding is the ``weld``
operation's business. ASCII STL is read here too (:func:`read_ascii`), as the same soup whether
the file holds one solid or several. The writer computes face normals as trimesh
does (``(b - a) x (c - b)`` in float64, zero for a cross product shorter than ``1e-13``), so the
bytes are the ones trimesh's exporter wrote before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from ..errors import FormatError
from . import _records

#: one face: normal, three corners, attribute byte count
RECORD = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
HEADER_BYTES = 84
#: the same record as two raw fields, for writing
_PACKED = np.dtype([("normal_corners", "V48"), ("attribute", "V2")])
#: faces per chunk when writing: the float64 temporaries stay in cache
_CHUNK = 1 << 14


def read_binary(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Corners ``V (3 n_faces, 3) float32`` and faces ``F (n_faces, 3) int32`` of a binary STL
    whose face count the caller has checked against its size."""
    n = int.from_bytes(data[80:84], "little")
    corners = _records.take(data, HEADER_BYTES, n, RECORD.itemsize, 12, np.dtype("<f4"), 9)
    V = corners.reshape(-1, 3)
    if not V.dtype.isnative:
        V = V.astype(np.float32)
    F = np.arange(3 * n, dtype=np.int32).reshape(-1, 3)
    return V, F


_LOOP = re.compile(rb"\bouter\s+loop\b", re.IGNORECASE)
_END_LOOP = re.compile(rb"\bendloop\b", re.IGNORECASE)
_VERTEX = re.compile(rb"\bvertex\s+(\S+)\s+(\S+)\s+(\S+)", re.IGNORECASE)


def read_ascii(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Corners ``V (n, 3) float64`` and faces ``F (m, 3) int64`` of an ASCII STL: every facet of
    every solid, in file order, as a soup (three corners per triangle, as :func:`read_binary`
    gives). A missing ``endsolid`` (or several solids one after another) changes nothing; a
    facet whose loop holds more than three corners is split like any polygon
    (``polygons.triangulate``). Refused, with the line: a loop with fewer than three corners, a
    loop never closed (a file that ends mid-facet), a corner that is not three numbers."""
    from .polygons import triangulate

    opens = np.array([m.start() for m in _LOOP.finditer(data)], dtype=np.int64)
    closes = np.array([m.start() for m in _END_LOOP.finditer(data)], dtype=np.int64)
    matches = list(_VERTEX.finditer(data))
    at = np.array([m.start() for m in matches], dtype=np.int64)
    if opens.shape[0] == 0:
        raise FormatError("the ASCII STL holds no facet", code="mesh.empty")
    if closes.shape[0] < opens.shape[0]:
        where = int(opens[closes.shape[0]])
        raise FormatError(
            "the file ends inside a facet (a loop is never closed)",
            code="format.truncated",
            line=_line(data, where),
        )
    paired = (closes.shape[0] == opens.shape[0]) and bool((opens < closes).all())
    paired = paired and bool((closes[:-1] < opens[1:]).all())
    if not paired:
        raise FormatError(
            "facet loops are not closed in order (outer loop ... endloop)",
            code="format.stl_bad_facet",
            line=_line(data, int(opens[0])),
        )
    loop = np.searchsorted(opens, at, side="right") - 1
    inside = (loop >= 0) & (at < closes[np.maximum(loop, 0)])
    if not bool(inside.all()):
        stray = int(at[np.flatnonzero(~inside)[0]])
        raise FormatError(
            "a vertex line outside any facet loop",
            code="format.stl_bad_facet",
            line=_line(data, stray),
        )
    k = np.bincount(loop, minlength=opens.shape[0])
    if bool((k < 3).any()):
        raise FormatError(
            "a facet has fewer than three vertices",
            code="format.stl_bad_facet",
            line=_line(data, int(opens[np.flatnonzero(k < 3)[0]])),
        )
    try:
        V = np.array([m.groups() for m in matches], dtype=np.bytes_).astype(np.float64)
    except ValueError:
        bad = next(m for m in matches if not _numbers(m.groups()))
        raise FormatError(
            "a vertex is not three numbers",
            code="format.parse_error",
            line=_line(data, bad.start()),
        ) from None
    V = V.reshape(-1, 3)
    idx = np.arange(V.shape[0], dtype=np.int64)
    F = idx.reshape(-1, 3) if bool((k == 3).all()) else triangulate(V, idx, k)
    return V, F


def _numbers(words: tuple[bytes, ...]) -> bool:
    try:
        [float(w) for w in words]
        return True
    except ValueError:
        return False


def _line(data: bytes, offset: int) -> int:
    """The 1-based line number of byte ``offset``."""
    return data.count(b"\n", 0, offset) + 1


def write_binary(V: np.ndarray, F: np.ndarray) -> bytes:
    """Binary STL of the triangles ``V[F]`` (see :func:`stl_chunks`)."""
    return b"".join(stl_chunks(V, F))


def stl_chunks(V: np.ndarray, F: np.ndarray) -> Iterator[bytes | memoryview]:
    """Binary STL of the triangles ``V[F]`` in pieces: a zero header and the count, then the
    records of ``_CHUNK`` faces at a time, each piece a buffer of its own. A record's normal and
    corners are assembled as 12 aligned float32 values, then moved into the 50-byte record as
    one 48-byte field."""
    m = F.shape[0]
    yield bytes(80) + m.to_bytes(4, "little")
    for s in range(0, m, _CHUNK):
        tri = np.take(V, F[s : s + _CHUNK], axis=0)  # (c, 3, 3): corners gathered once
        c = tri.shape[0]
        row = np.empty((c, 12), dtype="<f4")
        _unit_normals(tri, row[:, :3])
        row[:, 3:] = tri.reshape(c, 9)
        records = np.zeros(c, dtype=_PACKED)
        records["normal_corners"] = row.view("V48").reshape(c)
        yield records.data


def _unit_normals(tri: np.ndarray, out: np.ndarray) -> None:
    """Into ``out`` ((c, 3) float32): the unit normals of the triangles ``tri (c, 3, 3)``,
    computed in float64; zero where the cross product is (nearly) zero."""
    # coordinates first: every component below is a contiguous (c,) array
    t = np.ascontiguousarray(tri.transpose(1, 2, 0), dtype=np.float64)
    ux, uy, uz = t[1] - t[0]
    wx, wy, wz = t[2] - t[1]
    cx, cy, cz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    norm = np.sqrt(cx * cx + cy * cy + cz * cz)
    inv = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-13)
    out[:, 0], out[:, 1], out[:, 2] = cx * inv, cy * inv, cz * inv
