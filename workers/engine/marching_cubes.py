"""Marching cubes with vertices keyed by grid-edge id and welded by KEY-WELD (Miller, Moreland, Ma:
*Finely-Threaded History-Based Topology Computation*; Lorensen and Cline for the cell cases),
written once for NumPy and CuPy.

The case table is generated here rather than copied: for each of the 256 sign patterns of a cell,
every cube face with a sign change contributes directed segments between its crossed edges (on a
face with two diagonal inside corners the inside corners are cut off separately: the rule looks
only at the face's four corners, so the two cells sharing a face always agree and the surface is
watertight); the segments are directed so that, seen from outside the cell, the outside region
(field above the isovalue) lies to their left; each cell's segments chain into closed loops, and
each loop is fanned into triangles whose normals point to increasing field values.

Extraction: each sign-changing grid edge (the edge from grid point ``p`` along axis ``a`` has key
``3 * p + a``) gets exactly one vertex, numbered by the sorted keys (a binary search per triangle
corner finds it): no duplicate vertices and no floating-point comparisons. With the coarsening
parameter ``k`` (the paper's section 5.3), a crossing within ``k / 2`` of an edge's length of a
grid point takes that point's key instead, so the vertices near one grid point weld into one
(positions and attributes averaged, KEY-WELD's sum then normalize) and the skinny triangles there
become degenerate and are dropped.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

from .backend import array_backend, xp_for
from .graph import compact_groups, expand_counts
from .mesh import TriMesh, segment_mean

#: corner ``c`` of a cell sits at offset ``(c & 1, c >> 1 & 1, c >> 2 & 1)``
CORNERS = np.array([(c & 1, (c >> 1) & 1, (c >> 2) & 1) for c in range(8)], dtype=np.int64)
#: cell edge ``4 * axis + j`` starts at the corner whose other two bits are ``j``
EDGES: list[tuple[int, int]] = []
for _axis in range(3):
    _others = [b for b in range(3) if b != _axis]
    for _j in range(4):
        _c0 = ((_j & 1) << _others[0]) | (((_j >> 1) & 1) << _others[1])
        EDGES.append((_c0, _c0 | (1 << _axis)))
EDGE_AXIS = np.array([e // 4 for e in range(12)], dtype=np.int64)
EDGE_START = np.array([CORNERS[a] for a, _ in EDGES], dtype=np.int64)  # (12, 3)


def _faces() -> list[tuple[list[int], np.ndarray]]:
    """The six cube faces: corners in cyclic order and the outward normal."""
    out = []
    for axis in range(3):
        for side in (0, 1):
            o = [b for b in range(3) if b != axis]
            cyc = [(0, 0), (1, 0), (1, 1), (0, 1)]
            corners = [(side << axis) | (u << o[0]) | (v << o[1]) for u, v in cyc]
            normal = np.zeros(3)
            normal[axis] = 1.0 if side else -1.0
            out.append((corners, normal))
    return out


def _edge_of(c0: int, c1: int) -> int:
    for e, (a, b) in enumerate(EDGES):
        if {a, b} == {c0, c1}:
            return e
    raise ValueError((c0, c1))


@functools.cache
def case_table() -> tuple[np.ndarray, np.ndarray]:
    """``(n_triangles (256,), triangles (256, 5, 3))``: cell-edge ids of each case's triangles,
    padded with -1. Corner ``c`` is inside (field below the isovalue) when bit ``c`` is set."""
    mid = np.array([(CORNERS[a] + CORNERS[b]) / 2.0 for a, b in EDGES])
    faces = _faces()
    ntri = np.zeros(256, dtype=np.int64)
    tris = np.full((256, 5, 3), -1, dtype=np.int64)
    for case in range(256):
        inside = [(case >> c) & 1 for c in range(8)]
        nxt: dict[int, int] = {}
        for corners, normal in faces:
            ins = [inside[c] for c in corners]
            cross = [
                _edge_of(corners[i], corners[(i + 1) % 4])
                for i in range(4)
                if ins[i] != ins[(i + 1) % 4]
            ]
            if not cross:
                continue
            if len(cross) == 2:
                pairs = [(cross[0], cross[1], [c for c in corners if inside[c]])]
            else:  # diagonal inside corners: cut each off
                pairs = []
                for i, c in enumerate(corners):
                    if inside[c]:
                        e0 = _edge_of(c, corners[(i + 1) % 4])
                        e1 = _edge_of(c, corners[(i - 1) % 4])
                        pairs.append((e0, e1, [c]))
            for e0, e1, ref in pairs:
                centre_in = CORNERS[ref].mean(axis=0)
                d = mid[e1] - mid[e0]
                m = (mid[e0] + mid[e1]) / 2
                if np.dot(np.cross(normal, d), m - centre_in) < 0:
                    e0, e1 = e1, e0
                nxt[e0] = e1
        seen: set[int] = set()
        k = 0
        for start in sorted(nxt):
            if start in seen:
                continue
            loop = [start]
            seen.add(start)
            e = nxt[start]
            while e != start:
                loop.append(e)
                seen.add(e)
                e = nxt[e]
            for i in range(1, len(loop) - 1):
                tris[case, k] = (loop[0], loop[i], loop[i + 1])
                k += 1
        ntri[case] = k
    return ntri, tris


def _point_ids(shape: tuple[int, ...], ijk: Any) -> Any:
    return (ijk[..., 0] * shape[1] + ijk[..., 1]) * shape[2] + ijk[..., 2]


def _gradient_at(xp: ModuleType, S: Any, pid: Any, spacing: Any) -> Any:
    """Central differences of the field at the flat grid points ``pid`` (one-sided at the
    border), as ``(len(pid), 3)``."""
    nx, ny, nz = S.shape
    flat = S.reshape(-1)
    i = pid // (ny * nz)
    j = (pid // nz) % ny
    k = pid % nz
    out = []
    for axis, (idx, n, stride) in enumerate(((i, nx, ny * nz), (j, ny, nz), (k, nz, 1))):
        up = xp.minimum(idx + 1, n - 1)
        dn = xp.maximum(idx - 1, 0)
        fu = flat[pid + (up - idx) * stride].astype(xp.float64)
        fd = flat[pid + (dn - idx) * stride].astype(xp.float64)
        h = (up - dn).astype(xp.float64) * float(spacing[axis])
        out.append((fu - fd) / xp.maximum(h, 1e-300))
    return xp.stack(out, axis=1)


def extract(
    xp: ModuleType,
    S: Any,
    iso: float,
    origin: tuple[float, float, float],
    spacing: tuple[float, float, float],
    k: float = 0.0,
) -> tuple[Any, Any, Any, dict[str, int]]:
    """``(V (n, 3) float64, F (m, 3) int64, normals (n, 3) float64, counts)`` of the isosurface
    ``S == iso`` of the grid ``S`` (``S[i, j, k]`` at ``origin + spacing * (i, j, k)``)."""
    shape = tuple(int(s) for s in S.shape)
    nx, ny, nz = shape
    inside = iso > S
    # sign-changing grid edges: keys 3 * point + axis, sorted (one pass per axis)
    keys = []
    for axis in range(3):
        sl_a = [slice(None)] * 3
        sl_b = [slice(None)] * 3
        sl_a[axis] = slice(0, shape[axis] - 1)
        sl_b[axis] = slice(1, shape[axis])
        ch = inside[tuple(sl_a)] != inside[tuple(sl_b)]
        idx = xp.nonzero(ch.reshape(-1))[0]
        sub = list(shape)
        sub[axis] -= 1
        i = idx // (sub[1] * sub[2])
        j = (idx // sub[2]) % sub[1]
        kk = idx % sub[2]
        pid = (i * ny + j) * nz + kk
        keys.append(3 * pid + axis)
    ekey = xp.sort(xp.concatenate(keys))
    n_edges = int(ekey.shape[0])
    # cell cases
    case = xp.zeros((nx - 1, ny - 1, nz - 1), dtype=xp.int64)
    for c in range(8):
        dx, dy, dz = (int(v) for v in CORNERS[c])
        case += inside[dx : nx - 1 + dx, dy : ny - 1 + dy, dz : nz - 1 + dz].astype(xp.int64) << c
    case = case.reshape(-1)
    active = xp.nonzero((case != 0) & (case != 255))[0]
    ntri_h, tris_h = case_table()
    ntri, tris = xp.asarray(ntri_h), xp.asarray(tris_h)
    ac = case[active]
    counts = ntri[ac]
    owner = expand_counts(xp, counts)
    starts = xp.cumsum(counts) - counts
    local = xp.arange(owner.shape[0], dtype=xp.int64) - starts[owner]
    cell = active[owner]
    cedges = tris[ac[owner], local]  # (m, 3) cell-edge ids
    ci = cell // ((ny - 1) * (nz - 1))
    cj = (cell // (nz - 1)) % (ny - 1)
    ck = cell % (nz - 1)
    cijk = xp.stack([ci, cj, ck], axis=1)
    start = cijk[:, None, :] + xp.asarray(EDGE_START)[cedges]  # (m, 3, 3)
    corner_key = 3 * _point_ids(shape, start) + xp.asarray(EDGE_AXIS)[cedges]
    # the vertex of each corner: its edge's rank among the sorted keys
    F = xp.searchsorted(ekey, corner_key.reshape(-1)).reshape(-1, 3)
    # positions on the edges (float64), normals from the field's gradient
    pid = ekey // 3
    axis = ekey % 3
    step = xp.asarray([ny * nz, nz, 1], dtype=xp.int64)[axis]
    flat = S.reshape(-1)
    s0 = flat[pid].astype(xp.float64)
    s1 = flat[pid + step].astype(xp.float64)
    t = (iso - s0) / (s1 - s0)
    pi = pid // (ny * nz)
    pj = (pid // nz) % ny
    pk = pid % nz
    unit = xp.eye(3, dtype=xp.float64)[axis]
    grid = xp.stack([pi, pj, pk], axis=1).astype(xp.float64) + t[:, None] * unit
    sp = xp.asarray(spacing, dtype=xp.float64)
    V = xp.asarray(origin, dtype=xp.float64) + grid * sp
    g0 = _gradient_at(xp, S, pid, spacing)
    g1 = _gradient_at(xp, S, pid + step, spacing)
    N = (1.0 - t)[:, None] * g0 + t[:, None] * g1
    counts_out = {
        "sign_changing_edges": n_edges,
        "active_cells": int(active.shape[0]),
        "triangles_generated": int(F.shape[0]),
        "vertices_merged": 0,
        "degenerate_removed": 0,
    }
    if k > 0 and n_edges:
        # KEY-WELD coarsening: near an end, take the grid point's key (4 * point + 3)
        key = 4 * pid + axis
        key = xp.where(t < k / 2, 4 * pid + 3, key)
        key = xp.where(t > 1 - k / 2, 4 * (pid + step) + 3, key)
        grp, first = compact_groups(xp, key)
        n_new = int(first.shape[0])
        V = segment_mean(xp, V, grp, n_new)
        N = segment_mean(xp, N, grp, n_new)
        F = grp[F]
        bad = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
        F = F[~bad]
        counts_out["vertices_merged"] = n_edges - n_new
        counts_out["degenerate_removed"] = int(bad.sum())
    nrm = xp.sqrt((N * N).sum(axis=1))
    N = N / xp.where(nrm > 0, nrm, 1.0)[:, None]
    return V, F, N, counts_out


def sphere_distance(
    xp: ModuleType, resolution: int, center: tuple[float, float, float]
) -> tuple[Any, tuple[float, float, float], tuple[float, float, float]]:
    """The KEY-WELD paper's spherical-distance data set: ``resolution^3`` samples of the distance
    to ``center`` over the cube [-1, 1]^3. Returns ``(S, origin, spacing)``."""
    h = 2.0 / (resolution - 1)
    x = -1.0 + h * xp.arange(resolution, dtype=xp.float64)  # elementwise: same on both backends
    X = (x - center[0])[:, None, None]
    Y = (x - center[1])[None, :, None]
    Z = (x - center[2])[None, None, :]
    S = xp.sqrt(X * X + Y * Y + Z * Z)
    return S, (-1.0, -1.0, -1.0), (h, h, h)


def volume_mesh(S: Any, origin: Any = None, spacing: Any = None) -> TriMesh:
    """An uploaded volume as the pipeline carries it: a faceless mesh of one vertex whose
    ``volume`` attribute is the grid (shape ``(1, nx, ny, nz)``), so that it is stored, queued
    and moved between backends like any mesh. Only a source step reads it. When the file gave
    them (NRRD), ``volume_origin`` and ``volume_spacing`` (``(1, 3)`` float64) say where the
    samples lie."""
    xp = xp_for(array_backend(S))
    attrs = {"volume": S[None]}
    if origin is not None:
        attrs["volume_origin"] = xp.asarray(origin, dtype=xp.float64).reshape(1, 3)
    if spacing is not None:
        attrs["volume_spacing"] = xp.asarray(spacing, dtype=xp.float64).reshape(1, 3)
    return TriMesh(xp.zeros((1, 3), dtype=xp.float32), xp.zeros((0, 3), dtype=xp.int32), attrs)
