"""Tangential relaxation and projection back onto the input surface.

:func:`tangential_relax` moves every free vertex toward the centroid of its one-ring (the
area-weighted mean of its faces' centroids, or the plain mean of its neighbours) with the
component along the vertex normal removed, so the vertex slides in its tangent plane (Botsch and
Kobbelt 2004, section 3). Locked vertices (boundary, non-manifold, feature) do not move.

:class:`SurfaceProjector` finds the nearest point on the input triangles, data-parallel: the input
faces are hashed once into a uniform grid of cell size ``h``, each face into every cell that its
bounding box grown by ``r = h / 2`` touches (sort of int64 cell keys; CSR by binary search). A
query point reads the faces listed in its own cell and takes the exact point-triangle distance
(Ericson, *Real-Time Collision Detection*, 5.1.5) to each; the minimum wins by a scatter-min of
packed (distance, pair) keys. The answer is exact whenever the nearest point is within ``r`` of
the query (its face is then registered in the query's cell); a point with no face within reach
is reported as a miss and left where it is. Queries run in chunks to bound memory.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from ..errors import MeshError
from ..graph import counts, expand_counts, scatter_min, sums
from ._edges import float_priority, normals

#: pairs (query, candidate face) evaluated at once
CHUNK_PAIRS = 1 << 22


def vertex_normals(xp: ModuleType, V: Any, F: Any) -> Any:
    """(n, 3) unit area-weighted vertex normals (zero where the faces cancel)."""
    N = normals(xp, V, F)
    out = xp.zeros_like(V)
    for k in range(3):
        for c in range(3):
            out[:, c] += sums(xp, F[:, k], N[:, c], V.shape[0])
    norm = xp.linalg.norm(out, axis=1)
    return out / xp.where(norm > 0, norm, 1.0)[:, None]


def tangential_relax(
    xp: ModuleType, V: Any, F: Any, movable: Any, weighting: str = "area", step: float = 1.0
) -> Any:
    """Positions after one relaxation step (``V`` float64 (n, 3), ``movable`` (n,) bool)."""
    n = int(V.shape[0])
    if weighting == "area":
        N = normals(xp, V, F)
        w = 0.5 * xp.linalg.norm(N, axis=1)
        C = V[F].mean(axis=1) * w[:, None]
        num = xp.zeros_like(V)
        for k in range(3):
            for c in range(3):
                num[:, c] += sums(xp, F[:, k], C[:, c], n)
        den = xp.zeros(n, dtype=V.dtype)
        for k in range(3):
            den += sums(xp, F[:, k], w, n)
    else:
        src = F.ravel()
        dst = F[:, [1, 2, 0]].ravel()
        # each undirected edge of a manifold mesh appears as (p, q) in one face and (q, p) in the
        # other: count both directions once each per vertex
        num = xp.stack(
            [sums(xp, src, V[dst, c], n) + sums(xp, dst, V[src, c], n) for c in range(3)],
            axis=1,
        )
        den = 2.0 * counts(xp, src, n).astype(V.dtype)
    ok = movable & (den > 0)
    target = num / xp.where(den > 0, den, 1.0)[:, None]
    d = target - V
    Nv = vertex_normals(xp, V, F)
    d = d - (d * Nv).sum(axis=1)[:, None] * Nv
    return xp.where(ok[:, None], V + step * d, V)


def closest_points(xp: ModuleType, P: Any, a: Any, b: Any, c: Any) -> tuple[Any, Any]:
    """Closest points (k, 3) on the triangles ``(a, b, c)`` to the points ``P`` and their
    barycentric coordinates (k, 3), all (k, 3) float64 (Ericson's region tests, as masks)."""

    def dot(x: Any, y: Any) -> Any:
        return (x * y).sum(axis=1)

    def div(x: Any, y: Any) -> Any:
        return x / xp.where(y != 0, y, 1.0)

    ab, ac, ap = b - a, c - a, P - a
    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = P - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = P - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    den = va + vb + vc
    v = div(vb, den)
    w = div(vc, den)
    bary = xp.stack([1.0 - v - w, v, w], axis=1)
    one = xp.ones_like(d1)
    zero = xp.zeros_like(d1)
    t_bc = div(d4 - d3, (d4 - d3) + (d5 - d6))
    t_ac = div(d2, d2 - d6)
    t_ab = div(d1, d1 - d3)
    # Ericson returns at the first region that holds: apply the tests last to first
    regions = [
        ((d1 <= 0) & (d2 <= 0), (one, zero, zero)),
        ((d3 >= 0) & (d4 <= d3), (zero, one, zero)),
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), (1.0 - t_ab, t_ab, zero)),
        ((d6 >= 0) & (d5 <= d6), (zero, zero, one)),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), (1.0 - t_ac, zero, t_ac)),
        ((va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0), (zero, 1.0 - t_bc, t_bc)),
    ]
    for mask, coords in reversed(regions):
        bary = xp.where(mask[:, None], xp.stack(coords, axis=1), bary)
    Q = bary[:, 0:1] * a + bary[:, 1:2] * b + bary[:, 2:3] * c
    return Q, bary


class SurfaceProjector:
    """Nearest points on the triangles ``(V0 (n, 3) float64, F0 (m, 3) int64)``.

    ``h``: grid cell size; a nearest point within ``h / 2`` of the query is found exactly."""

    def __init__(self, xp: ModuleType, V0: Any, F0: Any, h: float) -> None:
        self.xp, self.V0, self.F0, self.h = xp, V0, F0, float(h)
        self.r = 0.5 * self.h
        T = V0[F0]
        lo = T.min(axis=1) - self.r
        hi = T.max(axis=1) + self.r
        self.origin = V0.min(axis=0) - 2 * self.h
        cmin = xp.floor((lo - self.origin) / self.h).astype(xp.int64)
        cmax = xp.floor((hi - self.origin) / self.h).astype(xp.int64)
        ext = [float(e) for e in (V0.max(axis=0) - self.origin)]
        self.D = int(max(math.ceil(e / self.h) for e in ext)) + 3
        if self.D**3 >= 2**62:
            raise MeshError(
                "the mesh spans over a million of its mean edge lengths: too sparse to remesh",
                code="mesh.too_sparse",
                cells_per_axis=self.D,
            )
        span = cmax - cmin + 1
        cells = span[:, 0] * span[:, 1] * span[:, 2]
        owner = expand_counts(xp, cells)
        start = xp.cumsum(cells) - cells
        j = xp.arange(int(owner.shape[0]), dtype=xp.int64) - start[owner]
        sx, sy = span[owner, 0], span[owner, 1]
        cx = cmin[owner, 0] + j % sx
        cy = cmin[owner, 1] + (j // sx) % sy
        cz = cmin[owner, 2] + j // (sx * sy)
        key = (cx * self.D + cy) * self.D + cz
        order = xp.argsort(key, kind="stable")
        self.cell_key = key[order]
        self.cell_face = owner[order]

    def _cell(self, P: Any) -> Any:
        xp = self.xp
        c = xp.floor((P - self.origin) / self.h).astype(xp.int64)
        c = xp.clip(c, 0, self.D - 1)
        return (c[:, 0] * self.D + c[:, 1]) * self.D + c[:, 2]

    def nearest(self, P: Any) -> tuple[Any, Any, Any, Any]:
        """``(Q (k, 3), face (k,) int64, bary (k, 3), found (k,) bool)`` for points ``P``; where
        nothing is within reach, ``Q = P``, ``face = -1``."""
        xp = self.xp
        k = int(P.shape[0])
        Q = P.copy()
        face = xp.full(k, -1, dtype=xp.int64)
        bary = xp.zeros((k, 3), dtype=xp.float64)
        key = self._cell(P)
        lo = xp.searchsorted(self.cell_key, key, side="left")
        hi = xp.searchsorted(self.cell_key, key, side="right")
        if xp.__name__ == "cupy":  # one thread per point over its cell (kernels/relax.cu)
            return self._nearest_kernel(P, lo, hi, Q, face, bary)
        cnt = hi - lo
        csum = xp.cumsum(cnt)
        # chunks of consecutive points with at most CHUNK_PAIRS pairs (one point may exceed it)
        bounds = [0]
        total = int(csum[-1]) if k else 0
        if total:
            marks = xp.searchsorted(
                csum, xp.arange(CHUNK_PAIRS, total, CHUNK_PAIRS, dtype=xp.int64), side="left"
            )
            bounds += [int(x) for x in marks]
        bounds.append(k)
        for s, e in zip(bounds[:-1], bounds[1:], strict=True):
            if e <= s:
                continue
            pt = s + expand_counts(xp, cnt[s:e])
            if pt.shape[0] == 0:
                continue
            first = xp.cumsum(cnt[s:e]) - cnt[s:e]
            rank = xp.arange(int(pt.shape[0]), dtype=xp.int64) - first[pt - s]
            f = self.cell_face[lo[pt] + rank]
            T = self.F0[f]
            q, bc = closest_points(xp, P[pt], self.V0[T[:, 0]], self.V0[T[:, 1]], self.V0[T[:, 2]])
            d = xp.linalg.norm(q - P[pt], axis=1)
            ok = d <= self.r
            pair = xp.arange(int(pt.shape[0]), dtype=xp.int64)
            pk = (float_priority(xp, d, larger_first=False) << 32) | pair
            best = xp.full(e - s, xp.iinfo(xp.int64).max, dtype=xp.int64)
            scatter_min(xp, best, (pt - s)[ok], pk[ok])
            hit = best != xp.iinfo(xp.int64).max
            win = best[hit] & ((1 << 32) - 1)
            idx = s + xp.nonzero(hit)[0]
            Q[idx] = q[win]
            face[idx] = f[win]
            bary[idx] = bc[win]
        return Q, face, bary, face >= 0

    def _nearest_kernel(
        self, P: Any, lo: Any, hi: Any, Q: Any, face: Any, bary: Any
    ) -> tuple[Any, Any, Any, Any]:
        """:meth:`nearest`'s pairs without the pairs: each point walks its cell's faces, keeps
        the one the array code's scatter-min keeps, and writes its point, face and barycentric
        coordinates (the same bits)."""
        from ..kernels.loader import launch, load_kernel

        xp = self.xp
        k = int(P.shape[0])
        args = (
            xp.ascontiguousarray(P, dtype=xp.float64),
            lo,
            hi,
            xp.ascontiguousarray(self.cell_face, dtype=xp.int64),
            xp.ascontiguousarray(self.F0, dtype=xp.int64),
            xp.ascontiguousarray(self.V0, dtype=xp.float64),
            xp.float64(self.r),
            xp.int64(k),
            Q,
            face,
            bary,
        )
        launch(load_kernel("relax", "nearest_in_cells"), k, args, op="isotropic_remesh")
        return Q, face, bary, face >= 0
