"""OFF (Object File Format): positions and polygons, no attributes.

Reading: plain OFF files (our own output among them) by :func:`read_off`, the rest (comments,
colours, COFF, NOFF...) by trimesh after our count check (see ``__init__.py``). Writing is ours,
with the OBJ writer's block formatting (``obj.py``, ``_text.py``): a header ``OFF`` and
``n_vertices n_faces 0``, one ``x y z`` line per vertex (``"%.9g"``), one ``k i j ...`` line per
face (0-based).
"""

from __future__ import annotations

import numpy as np

from ._text import parse_floats, parse_ints, spaces
from .obj import number_lines, polygon_lines
from .polygons import triangulate


def write_off(V: np.ndarray, corners: np.ndarray, offsets: np.ndarray) -> bytes:
    """OFF text of the vertices ``V (n, 3)`` and the polygons ``corners[offsets[p]:offsets[p +
    1]]`` (``corners`` flat, 0-based; triangles are polygons of three)."""
    V = np.asarray(V)
    head = f"OFF\n{V.shape[0]} {offsets.shape[0] - 1} 0\n".encode()
    parts = number_lines(b"", V)
    parts += polygon_lines(np.asarray(offsets), np.asarray(corners), lead=None, base=0)
    return b"".join([head, *(p.data for p in parts)])


def read_off(data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """``V (n, 3) float64`` and ``F (m, 3) int64`` (polygons fanned, polygon by polygon) of a
    plain ``OFF`` file, or None for trimesh's path (COFF, NOFF and the other variants, colours on
    face lines, anything that does not add up).

    OFF is whitespace-separated: ``#`` comments run to the end of their line, and the caller
    blanks them first (:func:`without_comments`, also for trimesh's path); the header token
    ``OFF``, the three counts and the ``3 n_vertices`` coordinates are the first tokens, wherever
    their lines break. Faces are rows ``k i j ...``, one per line
    (checked, so that colour values on face lines send the file to trimesh). Faces of several
    sizes are what trimesh cannot read here. Rows are told apart without a loop over them: the
    face section's integers are one array, row ``r`` starts at token ``s_r`` and the next at
    ``s_r + 1 + count``, and the chain of starts is found by pointer doubling; it must end
    exactly at the last token."""
    if data.lstrip()[:3] != b"OFF":
        return None
    b = np.frombuffer(data, dtype=np.uint8)
    blank = spaces(b)
    starts = np.flatnonzero(~blank & np.concatenate([[True], blank[:-1]]))
    if starts.shape[0] < 4:
        return None
    head = data[: int(starts[4]) if starts.shape[0] > 4 else len(data)].split()
    if head[0] != b"OFF" or not all(c.isdigit() for c in head[1:4]):
        return None
    nv, nf = int(head[1]), int(head[2])
    if starts.shape[0] < 4 + 3 * nv:
        return None
    split = int(starts[4 + 3 * nv]) if starts.shape[0] > 4 + 3 * nv else len(data)
    try:
        V = parse_floats(data[int(starts[4]) : split] if nv else b"")
        T = parse_ints(data[split:])
    except ValueError:
        return None
    if V.shape[0] != 3 * nv:
        return None
    sizes = _row_sizes(T, nf)
    if sizes is None or not _rows_are_lines(data[split:], sizes + 1):
        return None
    row_at = np.cumsum(sizes + 1) - (sizes + 1)
    j = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    corners = T[np.repeat(row_at + 1, sizes) + j]
    if corners.shape[0] and (int(corners.min()) < 0 or int(corners.max()) >= nv):
        return None  # trimesh's path gives the error
    V = V.reshape(-1, 3)
    return V, triangulate(V, corners, sizes)


def without_comments(data: bytes) -> bytes:
    """``data`` with every ``#`` comment (to the end of its line) replaced by spaces."""
    b = np.frombuffer(data, dtype=np.uint8)
    marks = np.flatnonzero(b == ord("#"))
    if marks.shape[0] == 0:
        return data
    newlines = np.flatnonzero(b == 10)
    at = np.searchsorted(newlines, marks)
    ends = np.append(newlines, b.shape[0])[at]  # the line's end, or the file's
    depth = np.zeros(b.shape[0] + 1, dtype=np.int64)
    np.add.at(depth, marks, 1)
    np.add.at(depth, ends, -1)
    out = b.copy()
    out[np.cumsum(depth[:-1]) > 0] = ord(" ")
    return out.tobytes()


def _row_sizes(T: np.ndarray, rows: int) -> np.ndarray | None:
    """Counts of the rows ``count i j ...`` that fill ``T`` exactly, or None."""
    total = int(T.shape[0])
    if rows == 0 or total == 0:
        return None if rows or total else np.zeros(0, dtype=np.int64)
    if int(T.min()) < 0:
        return None
    # a count past the end is capped first (a huge one would overflow the sum)
    ahead = np.arange(total) + 1 + np.minimum(T, total)
    jump = np.concatenate([np.minimum(ahead, total + 1), [total, total + 1]])
    reached = np.zeros(total + 2, dtype=bool)
    reached[0] = True
    while not (reached[total] or reached[total + 1]):
        reached[jump[reached]] = True
        jump = jump[jump]
    starts = np.flatnonzero(reached[:total])
    if reached[total + 1] or starts.shape[0] != rows:
        return None
    sizes = T[starts]
    return None if bool((sizes < 3).any()) else sizes


def _rows_are_lines(text: bytes, tokens_per_row: np.ndarray) -> bool:
    """Whether the non-blank lines of ``text`` hold exactly ``tokens_per_row`` tokens each."""
    b = np.frombuffer(text, dtype=np.uint8)
    blank = spaces(b)
    starts = ~blank
    starts[1:] &= blank[:-1]
    line = np.cumsum(b == 10)
    per_line = np.bincount(line[starts])
    per_line = per_line[per_line > 0]
    return per_line.shape == tokens_per_row.shape and bool((per_line == tokens_per_row).all())
