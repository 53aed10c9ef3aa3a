"""A compact binary form of a mesh for the browser's 3D preview.

Layout (little-endian)::

    b"TPV1"  uint32 header_length  header (UTF-8 JSON, space-padded to a multiple of 4)  data

The header says ``vertices``, ``faces``, ``source`` (the counts before any reduction),
``reduced`` and ``buffers``: ``[{role, name, element, dtype, components, offset, length}]`` with
byte offsets into ``data``. Roles ``position`` (float32 × 3) and ``index`` (uint32 × 3) are always
there, ``normal`` (float32 × 3) when the mesh has vertex normals; every other buffer has the role
``attribute``: a scalar float32 attribute (``element`` vertex or face) with its range: ``min``
and ``max`` over the finite values, ``low`` and ``high`` (the 2nd and 98th percentiles, for a
colour scale that outliers do not flatten) and ``nonfinite`` (how many values are NaN or
infinite, e.g. unreachable vertices of a geodesic distance).

Meshes with more than ``max_faces`` faces are reduced by vertex clustering on a uniform grid
(KEY-WELD's coarsening: one key per grid cell, positions and vertex attributes averaged per key,
faces re-indexed, collapsed and repeated faces dropped), the grid refined until the face count
fits. A preview is a picture, not a result: downloads always carry the full mesh.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from workers.engine.mesh import TriMesh

MAGIC = b"TPV1"
MEDIA_TYPE = "application/vnd.tessera.preview"
DEFAULT_MAX_FACES = 200_000
NORMALS = "vertex_normals"


def _scalar(a: np.ndarray, n: int) -> np.ndarray | None:
    """The attribute as a float32 column of length ``n``, or None when it is not one scalar per
    element (vector attributes other than normals are left out of the preview)."""
    a = np.asarray(a)
    if a.shape[:1] != (n,) or a.dtype.kind not in "biuf":
        return None
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        return None
    return np.ascontiguousarray(a, dtype=np.float32)


def _cluster(
    V: np.ndarray, F: np.ndarray, max_faces: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertex clustering: ``(cluster (n_vertices,) int64, F (k, 3) int64, kept (k,) face ids)``
    with ``k <= max_faces``."""
    lo = V.min(axis=0)
    extent = float((V.max(axis=0) - lo).max()) or 1.0
    # faces after clustering grow about as the square of the grid's resolution
    res = max(int(np.sqrt(max_faces / 2.0)), 2)
    best: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    for _ in range(12):
        q = np.clip(((V - lo) / extent * res).astype(np.int64), 0, res)
        key = (q[:, 0] * (res + 1) + q[:, 1]) * (res + 1) + q[:, 2]
        _, cluster = np.unique(key, return_inverse=True)
        cluster = cluster.reshape(-1)
        G = cluster[F]
        ok = (G[:, 0] != G[:, 1]) & (G[:, 1] != G[:, 2]) & (G[:, 0] != G[:, 2])
        kept = np.flatnonzero(ok)
        _, first = np.unique(np.sort(G[kept], axis=1), axis=0, return_index=True)
        kept = kept[np.sort(first)]
        if len(kept) <= max_faces:
            best = (cluster, G[kept], kept)
            if len(kept) >= 0.7 * max_faces:
                break
            res = int(res * min(np.sqrt(max_faces / max(len(kept), 1)) * 0.95, 2.0))
        else:
            res = max(int(res * np.sqrt(max_faces / len(kept)) * 0.95), 2)
            if best is not None:
                break
    if best is None:  # a pathological input: a single cell holds everything
        cluster = np.zeros(len(V), dtype=np.int64)
        return cluster, np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return best


def _mean(values: np.ndarray, cluster: np.ndarray, counts: np.ndarray) -> np.ndarray:
    k = len(counts)
    if values.ndim == 1:
        return (np.bincount(cluster, weights=values, minlength=k) / counts).astype(np.float32)
    cols = [np.bincount(cluster, weights=values[:, j], minlength=k) for j in range(values.shape[1])]
    return (np.stack(cols, axis=1) / counts[:, None]).astype(np.float32)


def _range(a: np.ndarray) -> dict[str, Any]:
    finite = a[np.isfinite(a)]
    out: dict[str, Any] = {"nonfinite": int(a.size - finite.size)}
    if finite.size:
        low, high = np.percentile(finite, [2.0, 98.0])
        out.update(
            min=float(finite.min()), max=float(finite.max()), low=float(low), high=float(high)
        )
    else:
        out.update(min=None, max=None, low=None, high=None)
    return out


def encode(mesh: TriMesh, max_faces: int = DEFAULT_MAX_FACES) -> bytes:
    """The preview bytes of a NumPy-backed mesh (see the module docstring)."""
    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    n, m = len(V), len(F)
    normals = mesh.vertex_attrs.get(NORMALS)
    vattrs = {k: a for k, v in mesh.vertex_attrs.items() if (a := _scalar(v, n)) is not None}
    fattrs = {k: a for k, v in mesh.face_attrs.items() if (a := _scalar(v, m)) is not None}
    if normals is not None:
        normals = np.asarray(normals, dtype=np.float32)
        if normals.shape != (n, 3):
            normals = None

    reduced = m > max_faces and n > 0
    if reduced:
        cluster, F, kept = _cluster(V, F, max_faces)
        counts = np.bincount(cluster).astype(np.float64)
        V = _mean(V, cluster, counts)
        vattrs = {k: _mean(a.astype(np.float64), cluster, counts) for k, a in vattrs.items()}
        fattrs = {k: a[kept] for k, a in fattrs.items()}
        if normals is not None:
            s = _mean(normals.astype(np.float64), cluster, counts)
            length = np.linalg.norm(s, axis=1, keepdims=True)
            normals = np.divide(s, length, out=np.zeros_like(s), where=length > 0)

    buffers: list[tuple[dict[str, Any], np.ndarray]] = [
        ({"role": "position", "name": "position", "element": "vertex", "dtype": "float32",
          "components": 3}, np.ascontiguousarray(V, dtype=np.float32)),
        ({"role": "index", "name": "index", "element": "face", "dtype": "uint32",
          "components": 3}, np.ascontiguousarray(F, dtype=np.uint32)),
    ]  # fmt: skip
    if normals is not None:
        buffers.append(
            (
                {
                    "role": "normal",
                    "name": NORMALS,
                    "element": "vertex",
                    "dtype": "float32",
                    "components": 3,
                },
                np.ascontiguousarray(normals, dtype=np.float32),
            )
        )
    for element, attrs in (("vertex", vattrs), ("face", fattrs)):
        for name in sorted(attrs):
            a = attrs[name]
            meta = {
                "role": "attribute",
                "name": name,
                "element": element,
                "dtype": "float32",
                "components": 1,
            }
            buffers.append(({**meta, **_range(a)}, a))

    offset = 0
    for meta, arr in buffers:
        meta["offset"], meta["length"] = offset, arr.nbytes
        offset += arr.nbytes  # every buffer is 4-byte items: offsets stay aligned
    header = {
        "vertices": len(V),
        "faces": len(F),
        "source": {"vertices": n, "faces": m},
        "reduced": bool(reduced),
        "buffers": [meta for meta, _ in buffers],
    }
    text = json.dumps(header, allow_nan=False).encode()
    text += b" " * (-(len(text)) % 4)
    return b"".join([MAGIC, struct.pack("<I", len(text)), text, *(a.tobytes() for _, a in buffers)])


def decode(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and the arrays of preview bytes (what the page does, for tests)."""
    if data[:4] != MAGIC:
        raise ValueError("not a Tessera preview")
    (length,) = struct.unpack("<I", data[4:8])
    header = json.loads(data[8 : 8 + length])
    base = 8 + length
    arrays = {}
    for b in header["buffers"]:
        raw = data[base + b["offset"] : base + b["offset"] + b["length"]]
        a = np.frombuffer(raw, dtype=b["dtype"])
        key = b["role"] if b["role"] != "attribute" else f"{b['element']}.{b['name']}"
        arrays[key] = a.reshape(-1, 3) if b["components"] == 3 else a
    return header, arrays
