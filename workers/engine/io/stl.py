"""Binary STL, read and written with one structured array of 50-byte records.

A binary STL is an 80-byte header, a little-endian uint32 face count and one record per face: the
face normal, the three corners (float32 each) and a 2-byte attribute count. The loaded mesh is the
soup the file stores (three vertices per face, as trimesh loads it): welding is the ``weld``
operation's business. ASCII STL stays with trimesh. The writer computes face normals as trimesh
does (``(b - a) x (c - b)`` in float64, zero for a cross product shorter than ``1e-13``), so the
bytes are the ones trimesh's exporter wrote before.
"""

from __future__ import annotations

import numpy as np

from . import _records

#: one face: normal, three corners, attribute byte count
RECORD = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
HEADER_BYTES = 84
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


def write_binary(V: np.ndarray, F: np.ndarray) -> bytes:
    """Binary STL of the triangles ``V[F]``: a zero header, the count, one record per face."""
    m = F.shape[0]
    records = np.empty(m, dtype=[("normal", "V12"), ("corners", "V36"), ("attribute", "<u2")])
    records["attribute"] = 0
    for s in range(0, m, _CHUNK):
        tri = np.take(V, F[s : s + _CHUNK], axis=0)  # (c, 3, 3): corners gathered once
        corners = np.ascontiguousarray(tri, dtype="<f4").reshape(-1, 9)
        records["corners"][s : s + _CHUNK] = corners.view("V36").reshape(-1)
        records["normal"][s : s + _CHUNK] = _unit_normals(tri).view("V12").reshape(-1)
    head = bytes(80) + m.to_bytes(4, "little")
    return b"".join([head, records.data])


def _unit_normals(tri: np.ndarray) -> np.ndarray:
    """(c, 3) little-endian float32 unit normals of the triangles ``tri (c, 3, 3)``, computed in
    float64; zero where the cross product is (nearly) zero."""
    # coordinates first: every component below is a contiguous (c,) array
    t = np.ascontiguousarray(tri.transpose(1, 2, 0), dtype=np.float64)
    ux, uy, uz = t[1] - t[0]
    wx, wy, wz = t[2] - t[1]
    cx, cy, cz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    norm = np.sqrt(cx * cx + cy * cy + cz * cz)
    inv = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-13)
    out = np.empty((tri.shape[0], 3), dtype="<f4")
    out[:, 0], out[:, 1], out[:, 2] = cx * inv, cy * inv, cz * inv
    return out
