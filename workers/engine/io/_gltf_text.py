"""The ``accessors`` of a glTF document as JSON text, whole arrays at a time.

A GLB with a primitive per material holds three or more accessors per primitive (200 000
one-face materials: 600 000 accessors, 76 MB of JSON); ``json.dumps`` of as many dicts took two
seconds. Accessors of one kind differ only in their numbers, so their text is laid out as rows
of fixed-width byte columns (constant pieces, integers, the bounds' floats; 0 bytes for "no
character", as the OBJ writer does in ``_text.py``) and compacted once. Bounds (``min``,
``max``) are written as ``"%.9g"`` gives them: nine significant digits read back as the same
float32, which is how the Khronos validator compares them with the data.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._text import NUMBER_WIDTH, compact_rows, format_g9, format_ints


def accessor_rows(
    view: int,
    offsets: np.ndarray,
    counts: np.ndarray,
    fixed: dict[str, Any],
    lo: np.ndarray | None = None,
    hi: np.ndarray | None = None,
) -> bytes:
    """The JSON objects (joined by commas) of accessors into buffer view ``view``, one per row
    of ``offsets`` (``byteOffset``) and ``counts``, each with the fields ``fixed`` and, given
    ``lo``/``hi`` (``(n, k)``), ``min`` and ``max``."""
    n = int(np.asarray(offsets).shape[0])
    if n == 0:
        return b""
    columns: list[bytes | np.ndarray] = [
        b'{"bufferView":%d,"byteOffset":' % view,
        format_ints(offsets),
        b',"count":',
        format_ints(counts),
        b"," + json.dumps(fixed, separators=(",", ":"))[1:-1].encode(),
    ]
    for name, bound in (("min", lo), ("max", hi)):
        if bound is None:
            continue
        bound = np.asarray(bound, dtype=np.float64).reshape(n, -1)
        columns.append(b',"%s":[' % name.encode())
        for j in range(bound.shape[1]):
            text = np.zeros((n, NUMBER_WIDTH), dtype=np.uint8)
            format_g9(bound[:, j], text)
            columns.append(text)
            columns.append(b"," if j + 1 < bound.shape[1] else b"]")
    columns.append(b"},")
    return _rows(n, [(c, None) for c in columns])


def primitive_rows(
    indices: np.ndarray, attributes: dict[str, np.ndarray], material: np.ndarray, mode: int
) -> bytes:
    """The JSON objects (joined by commas) of triangle primitives, one per row of ``indices``
    (their index accessors): ``attributes`` names each attribute's accessor per primitive (-1
    where a primitive has none; the first, ``POSITION``, every primitive has), ``material``
    each primitive's material (-1: none, glTF's default)."""
    n = int(np.asarray(indices).shape[0])
    if n == 0:
        return b""
    columns: list[tuple[bytes | np.ndarray, np.ndarray | None]] = [
        (b'{"indices":', None),
        (format_ints(indices), None),
        (b',"mode":%d,"attributes":{' % mode, None),
    ]
    for k, (name, at) in enumerate(attributes.items()):
        there = np.asarray(at) >= 0
        key = json.dumps(name).encode() + b":"
        columns.append(((b"," if k else b"") + key, there))
        columns.append((format_ints(np.maximum(at, 0)), there))
    has = np.asarray(material) >= 0
    columns += [(b"}", None), (b',"material":', has), (format_ints(np.maximum(material, 0)), has)]
    columns.append((b"},", None))
    return _rows(n, columns)


def _rows(n: int, columns: list[tuple[bytes | np.ndarray, np.ndarray | None]]) -> bytes:
    """Rows of ``n`` texts laid out from ``columns`` (constant bytes, or ``(n, w)`` uint8; each
    with the mask of the rows it is written in, None for all), compacted, the last byte (a
    trailing comma) left out."""
    # a column of characters no row uses is left out (the rows are compacted, and narrow rows
    # compact fast): integers are 13 wide, numbers 26
    columns = [(c if isinstance(c, bytes) else c[:, c.any(axis=0)], m) for c, m in columns]
    width = sum(len(c) if isinstance(c, bytes) else c.shape[1] for c, _ in columns)
    rows = np.zeros((n, width), dtype=np.uint8)
    at = 0
    for c, mask in columns:
        w = len(c) if isinstance(c, bytes) else c.shape[1]
        values = np.frombuffer(c, dtype=np.uint8) if isinstance(c, bytes) else c
        if mask is None:
            rows[:, at : at + w] = values
        elif isinstance(c, bytes):
            rows[mask, at : at + w] = values
        else:
            rows[mask, at : at + w] = values[mask]
        at += w
    return compact_rows(rows).tobytes()[:-1]
