"""Wavefront OBJ, read and written by us.

Why not trimesh here: its OBJ loader drops unused vertices and splits vertices where texture
coordinates or normals differ (even with ``process=False``), so a mesh with UVs arrives with seams
cut open and statistics describe the loader instead of the file. We read positions and faces
exactly as stored: every ``v`` line is a vertex, every ``f`` line a polygon (fanned into
triangles), ``vt``/``vn`` references and materials are ignored, so no image library is needed.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import FormatError, MeshError

_SLASH_TAIL = re.compile(rb"/\S*")


def read_obj(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Parse OBJ bytes. Returns ``V (n, 3) float64`` and ``F (m, 3) int64`` (0-based)."""
    vlines: list[bytes] = []
    flines: list[bytes] = []
    nv_at_face: list[int] = []
    for raw in data.splitlines():
        line = raw.strip()
        if line[:2] == b"v " or line[:2] == b"v\t":
            vlines.append(line[2:])
        elif line[:2] == b"f " or line[:2] == b"f\t":
            flines.append(line[2:])
            nv_at_face.append(len(vlines))
    V = _parse_vertices(vlines)
    F = _parse_faces(flines, np.asarray(nv_at_face, dtype=np.int64), V.shape[0])
    return V, F


def _parse_vertices(vlines: list[bytes]) -> np.ndarray:
    if not vlines:
        return np.zeros((0, 3))
    try:
        vals = np.array(b" ".join(vlines).split(), dtype=np.float64)
        if vals.shape[0] == 3 * len(vlines):
            return vals.reshape(-1, 3)
        # some lines carry w or colours: take the first three numbers of each
        rows = [ln.split()[:3] for ln in vlines]
        if any(len(r) < 3 for r in rows):
            raise FormatError("vertex line with fewer than 3 coordinates", code="format.obj_bad_vertex")
        return np.array(rows, dtype=np.float64)
    except ValueError:
        raise FormatError("vertex coordinate is not a number", code="format.obj_bad_vertex") from None


def _parse_faces(flines: list[bytes], nv_at: np.ndarray, n_vertices: int) -> np.ndarray:
    if not flines:
        return np.zeros((0, 3), dtype=np.int64)
    stripped = [_SLASH_TAIL.sub(b"", ln).split() for ln in flines]
    k = np.fromiter((len(t) for t in stripped), dtype=np.int64, count=len(stripped))
    if int(k.min()) < 3:
        line = int(np.argmax(k < 3))
        raise FormatError("face with fewer than 3 vertices", code="format.obj_bad_face",
                          face_line=line)
    try:
        idx = np.array([t for ts in stripped for t in ts], dtype=np.int64)
    except ValueError:
        raise FormatError("face index is not an integer", code="format.obj_bad_face") from None
    if bool((idx == 0).any()):
        raise MeshError("OBJ face indices are 1-based; found index 0", code="mesh.obj_zero_index")
    # 1-based positive indices; negative ones count back from the vertices read so far
    base = np.repeat(nv_at, k)
    idx = np.where(idx > 0, idx - 1, base + idx)
    if int(idx.min()) < 0 or int(idx.max()) >= n_vertices:
        raise MeshError("face index out of range", code="mesh.index_out_of_range",
                        min_index=int(idx.min()) + 1, max_index=int(idx.max()) + 1,
                        n_vertices=n_vertices)
    if bool((k == 3).all()):
        return idx.reshape(-1, 3)
    # fan polygons: (c0, c_i, c_i+1) for i = 1 .. k-2
    start = np.cumsum(k) - k
    ntri = k - 2
    line = np.repeat(np.arange(k.shape[0]), ntri)
    i = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    s = start[line]
    return np.stack([idx[s], idx[s + i], idx[s + i + 1]], axis=1)


def write_obj(V: np.ndarray, F: np.ndarray, normals: Any | None = None) -> bytes:
    """OBJ text with ``v`` lines, ``vn`` lines when normals are given (one per vertex, so faces
    read ``f a//a b//b c//c``), and 1-based faces."""
    parts = [b"# written by tessera\n"]
    parts.append(_rows(b"v", V.astype(np.float64)))
    f1 = F.astype(np.int64) + 1
    if normals is not None:
        parts.append(_rows(b"vn", np.asarray(normals, dtype=np.float64)))
        trip = np.repeat(f1, 2, axis=1)
        body = "\n".join(" ".join(["f"] + [f"{a}//{b}" for a, b in zip(r[::2], r[1::2])])
                         for r in trip.tolist())
        parts.append(body.encode() + b"\n")
    else:
        parts.append(_rows(b"f", f1))
    return b"".join(parts)


def _rows(tag: bytes, a: np.ndarray) -> bytes:
    if a.shape[0] == 0:
        return b""
    fmt = " %.9g" if a.dtype.kind == "f" else " %d"
    line = tag.decode() + fmt * a.shape[1]
    return ("\n".join(line % tuple(r) for r in a.tolist()) + "\n").encode()
