"""Columns in and out of fixed-size binary rows (PLY elements, STL records), one copy each.

A run of bytes that sits at the same place in every row is moved as a single void field
(``V<width>``): NumPy copies such fields with one ``memcpy`` per row, several times faster than
assigning or extracting the typed fields one by one (an unaligned int32 field behind a count byte
is the slow case this avoids).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: rows packed at a time by :func:`pack_chunks`: about a megabyte, so each chunk is written while
#: it is still in cache and no file-sized block of fresh memory is touched
CHUNK_ROWS = 1 << 16


def pack(blocks: list[np.ndarray]) -> np.ndarray:
    """Rows made of ``blocks`` (each ``(n, ...)``, written in its own dtype, C order) side by
    side: a structured ``(n,)`` array whose memory is the packed rows."""
    n = blocks[0].shape[0]
    flat = [np.ascontiguousarray(b).reshape(n, -1) for b in blocks]
    widths = [f.shape[1] * f.dtype.itemsize for f in flat]
    rows = np.empty(n, dtype=[(f"f{j}", f"V{w}") for j, w in enumerate(widths)])
    for j, (f, w) in enumerate(zip(flat, widths, strict=True)):
        rows[f"f{j}"] = f.view(f"V{w}").reshape(n)
    return rows


def pack_chunks(blocks: list[np.ndarray], rows: int | None = None) -> Iterator[memoryview]:
    """The bytes of :func:`pack` of ``blocks``, ``rows`` (default :data:`CHUNK_ROWS`) rows at a
    time; every chunk is a buffer of its own (it stays valid after the next one is made)."""
    n = blocks[0].shape[0]
    rows = rows or CHUNK_ROWS
    for s in range(0, n, rows):
        yield pack([b[s : s + rows] for b in blocks]).data


def take(
    data: bytes, start: int, count: int, row: int, at: int, dtype: np.dtype, k: int
) -> np.ndarray:
    """Copy of the ``k`` values of ``dtype`` stored at byte ``at`` of each of ``count`` rows of
    ``row`` bytes that begin at ``start``: ``(count,)`` when ``k == 1``, else ``(count, k)``."""
    width = k * dtype.itemsize
    field = np.dtype({"names": ["s"], "formats": [f"V{width}"], "offsets": [at], "itemsize": row})
    raw = np.array(np.frombuffer(data, field, count=count, offset=start)["s"])
    values = raw.view(dtype)
    return values if k == 1 else values.reshape(count, k)
