"""Wavefront OBJ, read and written by us.

Why not trimesh here: its OBJ loader drops unused vertices and splits vertices where texture
coordinates or normals differ (even with ``process=False``), so a mesh with UVs arrives with seams
cut open and statistics describe the loader instead of the file. We read positions and faces
exactly as stored: every ``v`` line is a vertex, every ``f`` line a polygon (fanned into
triangles); ``vt`` references and materials are ignored, so no image library is needed. ``vn``
references become the ``vertex_normals`` attribute only when they give every vertex one normal
(as our writer does, ``f a//a b//b c//c``); per-corner normals that differ are ignored too.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import FormatError, MeshError

_SLASH_TAIL = re.compile(rb"/\S*")
_NORMAL_REF = re.compile(rb"(?<!\S)[^\s/]+/[^\s/]*/([^\s/]*)")


def read_obj(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Parse OBJ bytes. Returns ``V (n, 3) float64``, ``F (m, 3) int64`` (0-based) and the
    vertex normals ``(n, 3) float32`` or None (see the module docstring)."""
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark: would hide the first line
        data = data[3:]
    vlines: list[bytes] = []
    nlines: list[bytes] = []
    flines: list[bytes] = []
    nv_at_face: list[int] = []
    nn_at_face: list[int] = []
    for raw in data.splitlines():
        line = raw.strip()
        if line[:2] == b"v " or line[:2] == b"v\t":
            vlines.append(line[2:])
        elif line[:2] == b"f " or line[:2] == b"f\t":
            flines.append(line[2:])
            nv_at_face.append(len(vlines))
            nn_at_face.append(len(nlines))
        elif line[:3] == b"vn " or line[:3] == b"vn\t":
            nlines.append(line[3:])
    V = _parse_vertices(vlines)
    idx, k = _corner_indices(flines, np.asarray(nv_at_face, dtype=np.int64), V.shape[0])
    N = None
    if nlines and idx.shape[0]:
        N = _vertex_normals(
            flines, np.asarray(nn_at_face, dtype=np.int64), nlines, idx, k, V.shape[0]
        )
    return V, _fan(idx, k), N


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
            raise FormatError(
                "vertex line with fewer than 3 coordinates", code="format.obj_bad_vertex"
            )
        return np.array(rows, dtype=np.float64)
    except ValueError:
        raise FormatError(
            "vertex coordinate is not a number", code="format.obj_bad_vertex"
        ) from None


def _corner_indices(
    flines: list[bytes], nv_at: np.ndarray, n_vertices: int
) -> tuple[np.ndarray, np.ndarray]:
    """0-based vertex index of every polygon corner, and the corner count of each polygon."""
    if not flines:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    stripped = [_SLASH_TAIL.sub(b"", ln).split() for ln in flines]
    k = np.fromiter((len(t) for t in stripped), dtype=np.int64, count=len(stripped))
    if int(k.min()) < 3:
        line = int(np.argmax(k < 3))
        raise FormatError(
            "face with fewer than 3 vertices", code="format.obj_bad_face", face_line=line
        )
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
        raise MeshError(
            "face index out of range",
            code="mesh.index_out_of_range",
            min_index=int(idx.min()) + 1,
            max_index=int(idx.max()) + 1,
            n_vertices=n_vertices,
        )
    return idx, k


def _fan(idx: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Triangles of the polygons with ``k`` corners each, corners flattened in ``idx``."""
    if k.shape[0] == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if bool((k == 3).all()):
        return idx.reshape(-1, 3)
    # fan polygons: (c0, c_i, c_i+1) for i = 1 .. k-2
    start = np.cumsum(k) - k
    ntri = k - 2
    line = np.repeat(np.arange(k.shape[0]), ntri)
    i = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    s = start[line]
    return np.stack([idx[s], idx[s + i], idx[s + i + 1]], axis=1)


def _vertex_normals(
    flines: list[bytes],
    nn_at: np.ndarray,
    nlines: list[bytes],
    idx: np.ndarray,
    k: np.ndarray,
    n_vertices: int,
) -> np.ndarray | None:
    """One normal per vertex from the corners' ``vn`` references, or None when some corner has
    none, a reference or a ``vn`` line is malformed, or the corners of one vertex disagree."""
    rows = [ln.split()[:3] for ln in nlines]
    refs = _NORMAL_REF.findall(b"\n".join(flines))  # third field of every v/vt/vn corner
    if any(len(r) < 3 for r in rows) or len(refs) != idx.shape[0] or b"" in refs:
        return None
    try:
        normals = np.array(rows, dtype=np.float64)
        nidx = np.array(refs, dtype=np.int64)
    except ValueError:
        return None
    if not bool(np.isfinite(normals).all()) or bool((nidx == 0).any()):
        return None
    nidx = np.where(nidx > 0, nidx - 1, np.repeat(nn_at, k) + nidx)
    if bool((nidx < 0).any()) or bool((nidx >= normals.shape[0]).any()):
        return None
    corner = normals[nidx]
    out = np.zeros((n_vertices, 3), dtype=np.float64)
    out[idx] = corner
    if not bool((out[idx] == corner).all()):
        return None
    return out.astype(np.float32)


def write_obj(V: np.ndarray, F: np.ndarray, normals: Any | None = None) -> bytes:
    """OBJ text with ``v`` lines, ``vn`` lines when normals are given (one per vertex, so faces
    read ``f a//a b//b c//c``), and 1-based faces."""
    parts = [b"# written by tessera\n"]
    parts.append(_rows(b"v", V.astype(np.float64)))
    f1 = F.astype(np.int64) + 1
    if normals is not None:
        parts.append(_rows(b"vn", np.asarray(normals, dtype=np.float64)))
        trip = np.repeat(f1, 2, axis=1)
        body = "\n".join(
            " ".join(["f"] + [f"{a}//{b}" for a, b in zip(r[::2], r[1::2], strict=True)])
            for r in trip.tolist()
        )
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
