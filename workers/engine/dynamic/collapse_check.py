"""The preconditions of an edge collapse, checked once for every collapsing operation.

``decimate``, ``collapse_short_edges``, ``isotropic_remesh`` and the sliver removal all collapse
edges: ``b`` goes onto ``a``, which moves to ``p`` (or stays, ``p == X[a]``). They differ in
which edges they offer, where they put ``p`` and in what order they take them, not in what makes
a collapse legal, so that is decided here, in one place, with the operation's thresholds in a
:class:`Rules`. A candidate's cavity is every face of ``a`` or ``b``; the faces holding both go
away, a surviving face *changes* when it holds ``b``, or ``a`` and ``a`` moves. The checks, in the
order their reasons are reported (a candidate gets the first that applies):

1. ``link``: the link condition: the common neighbours of ``a`` and ``b`` are exactly the edge's
   opposite vertices, a virtual vertex joined to every boundary vertex counted (the caller
   passes the count expected: 2 for an interior edge, 1 for a boundary one, one less where both
   ends are on the boundary, so an interior edge between two boundary vertices fails); no face
   of the result repeats another (a surviving face with ``a`` and both opposite vertices and one
   with ``b`` and both: a tetrahedron's edge); and whatever the caller found already (``pre``:
   an isolated triangle, an operation's own valence rule).
2. ``long_edge``: a new edge (from ``p`` to a corner of a changed face) longer than
   ``max_edge_length``.
3. ``fold``: a changed face whose normal turns by more than ``acos(min_normal_dot)``.
4. ``degenerate``: a changed face with (numerically) no area, one whose quality (1 for
   equilateral) falls below ``min_quality`` and below its own before, or, with ``min_angle``, a
   smallest angle over the changed faces below both its value before and ``min_angle``.

Two implementations that give the same reasons bit for bit (``tests/.../test_collapse_check.py``
on every shared mesh): array code over (candidate, face) rows, which the NumPy twin runs, and on
the GPU one kernel thread per candidate walking the two vertex-face rows (``kernels/collapse.cu``):
the array code's sorts and scatters took 37 % of a decimation's time on an H100 and over a third
of a remesh's (``python -m bench.dynamic_profile``). Both use the same floating-point expressions
in the same order (no fused multiply-add), hence the same decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from types import ModuleType
from typing import Any

from ..graph import counts, csr_from_pairs, scatter_min, unique
from .cavity import gather_rows

#: rejection reasons, in the order they are reported
REASONS = ("link", "long_edge", "fold", "degenerate")
#: a face whose doubled area is at most this times its longest side squared has no area
NO_AREA = 1e-10
#: candidates whose (candidate, face) rows the array code builds at once
CHECK_SLICE = 1 << 21
#: 2 sqrt(3): the quality's scale (the product as Python folds it)
_QUALITY_SCALE = 2.0 * 3.0**0.5


@dataclass(frozen=True)
class Rules:
    """An operation's thresholds. ``min_normal_dot``: the cosine of the largest turn of a changed
    face's normal; ``max_edge_length``: None for no limit; ``min_quality``: 0 for no per-face
    quality floor; ``min_angle``: degrees, 0 for no floor on the smallest angle."""

    min_normal_dot: float
    max_edge_length: float | None = None
    min_quality: float = 0.0
    min_angle: float = 0.0

    @property
    def max_len2(self) -> float:
        return -1.0 if self.max_edge_length is None else float(self.max_edge_length) ** 2

    @property
    def min_sin(self) -> float:
        return math.sin(math.radians(self.min_angle)) if self.min_angle > 0 else 0.0


@dataclass(frozen=True)
class Collapses:
    """Collapses to check: ``b[i]`` onto ``a[i]`` placed at ``p[i]`` (``(k, 3)`` float64);
    ``expected (k,)`` the common neighbours the link condition wants, ``opp (k, 2)`` int64 the
    edge's opposite vertices (-1 for none), ``pre (k,)`` bool: already failing the link
    condition."""

    a: Any
    b: Any
    p: Any
    expected: Any
    opp: Any
    pre: Any

    def __getitem__(self, sl: slice) -> Collapses:
        return Collapses(*(getattr(self, f.name)[sl] for f in fields(self)))

    def __len__(self) -> int:
        return int(self.a.shape[0])


def check_collapses(
    xp: ModuleType, X: Any, F: Any, vf: tuple[Any, Any], c: Collapses, rules: Rules
) -> Any:
    """``reason (k,) int8`` for the collapses ``c``: 0 when legal, else ``1 +
    REASONS.index(why)``. ``X (n, 3)`` float64, ``F (m, 3)`` int64, ``vf`` the vertex-face CSR
    of ``F`` (:func:`vertex_faces`)."""
    k = len(c)
    if k == 0:
        return xp.zeros(0, dtype=xp.int8)
    if xp.__name__ == "cupy":
        return _kernel(xp, X, F, vf, c, rules)
    out = []
    for s in range(0, k, CHECK_SLICE):
        out.append(_array_code(xp, X, F, vf, c[s : s + CHECK_SLICE], rules))
    return xp.concatenate(out)


def vertex_faces(xp: ModuleType, F: Any, n: int) -> tuple[Any, Any]:
    """The vertex-face CSR ``(offsets (n+1,), faces)`` of ``F (m, 3)`` int64 for the check: in
    face order on NumPy (:func:`~workers.engine.graph.csr_from_pairs`); on the GPU by counts and
    one scatter through per-row atomic cursors, in no set order within a row (the reasons do not
    depend on it), without the stable sort of every corner the ordered rows take."""
    if xp.__name__ != "cupy":
        faces = xp.repeat(xp.arange(F.shape[0], dtype=xp.int64), 3)
        off, val, _ = csr_from_pairs(xp, n, F.ravel(), faces)
        return off, val
    from ..kernels.loader import launch, load_kernel

    flat = xp.ascontiguousarray(F, dtype=xp.int64).ravel()
    off = xp.zeros(n + 1, dtype=xp.int64)
    xp.cumsum(counts(xp, flat, n), out=off[1:])
    cursor = off[:-1].astype(xp.uint64)
    vf = xp.empty(flat.shape[0], dtype=xp.int64)
    corners = int(flat.shape[0])
    args = (flat, xp.int64(corners), cursor, vf)
    launch(load_kernel("collapse", "vertex_faces_fill"), corners, args, op="collapse_check")
    return off, vf


def _any_per(xp: ModuleType, k: int, owner: Any, flag: Any) -> Any:
    return counts(xp, owner[flag], k) > 0


def _norm(xp: ModuleType, v: Any) -> Any:
    return xp.sqrt(_sq(v))


def _cross(xp: ModuleType, u: Any, w: Any) -> Any:
    return xp.stack(
        [
            u[:, 1] * w[:, 2] - u[:, 2] * w[:, 1],
            u[:, 2] * w[:, 0] - u[:, 0] * w[:, 2],
            u[:, 0] * w[:, 1] - u[:, 1] * w[:, 0],
        ],
        axis=1,
    )


def _sq(v: Any) -> Any:
    return v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2]


def triangle_measures(xp: ModuleType, P0: Any, P1: Any, P2: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Per triangle: ``(cross (k, 3), doubled area, quality, sine of the smallest angle, longest
    side squared)``: the cross product ``(P1 - P0) x (P2 - P0)``, the quality ``2 sqrt(3) area2 /
    (sum of squared sides)`` and the sine as twice the area over the product of the two longest
    sides (0 where degenerate). The kernel evaluates the same expressions in the same order."""
    e0, e1, e2 = P1 - P0, P2 - P1, P0 - P2
    cr = _cross(xp, e0, P2 - P0)
    area2 = _norm(xp, cr)
    l0, l1, l2 = _sq(e0), _sq(e1), _sq(e2)
    s = l0 + l1 + l2
    q = _QUALITY_SCALE * area2 / xp.where(s > 0, s, 1.0)
    lmax = xp.maximum(xp.maximum(l0, l1), l2)
    lmin = xp.minimum(xp.minimum(l0, l1), l2)
    den = xp.sqrt(lmax * (s - lmax - lmin))
    sin = xp.where(den > 0, area2 / xp.where(den > 0, den, 1.0), 0.0)
    return cr, area2, q, sin, lmax


def _array_code(
    xp: ModuleType, X: Any, F: Any, vf: tuple[Any, Any], c: Collapses, rules: Rules
) -> Any:
    a, b, p, expected, opp, pre = c.a, c.b, c.p, c.expected, c.opp, c.pre
    k = int(a.shape[0])
    n = int(X.shape[0])
    row, f = gather_rows(xp, vf[0], vf[1], xp.concatenate([a, b]))
    own = row % k
    from_a = row < k
    corners = F[f]
    ao, bo = a[own][:, None], b[own][:, None]
    ma, mb = corners == ao, corners == bo
    has_a, has_b = ma.any(axis=1), mb.any(axis=1)
    survives = ~(has_a & has_b)
    moves = (p != X[a]).any(axis=1)
    changed = survives & (has_b | moves[own])

    # -- link: distinct neighbours of a (from a's faces) that are neighbours of b (from b's)
    other = ~(ma | mb)
    side = xp.broadcast_to(from_a[:, None], corners.shape)
    keys = ((own[:, None] * n + corners) * 2 + side)[other]
    keys = unique(xp, keys) // 2
    pair = keys[1:] == keys[:-1]  # (x, from b) then (x, from a): a common neighbour
    common = counts(xp, keys[1:][pair] // n, k)
    link = pre | (common != expected)
    o0, o1 = opp[own, 0][:, None], opp[own, 1][:, None]
    both = survives & (corners == o0).any(axis=1) & (corners == o1).any(axis=1) & (opp[own, 1] >= 0)
    link |= _any_per(xp, k, own, both & has_a) & _any_per(xp, k, own, both & has_b)

    # -- the changed faces before and after
    P_old = X[corners]
    P_new = xp.where((ma | mb)[:, :, None], p[own][:, None, :], P_old)
    c_old, l_old, q_old, s_old, _ = triangle_measures(xp, P_old[:, 0], P_old[:, 1], P_old[:, 2])
    c_new, l_new, q_new, s_new, m_new = triangle_measures(xp, P_new[:, 0], P_new[:, 1], P_new[:, 2])
    long = xp.zeros(k, dtype=bool)
    if rules.max_edge_length is not None:
        far = xp.zeros(corners.shape[0], dtype=bool)
        for j in range(3):
            d = p[own] - X[corners[:, j]]
            far |= other[:, j] & (_sq(d) > rules.max_len2)
        long = _any_per(xp, k, own, changed & far)
    dot = c_old[:, 0] * c_new[:, 0] + c_old[:, 1] * c_new[:, 1] + c_old[:, 2] * c_new[:, 2]
    flat = l_new <= NO_AREA * m_new
    turned = (l_old > 0) & ~flat & (dot < rules.min_normal_dot * l_old * l_new)
    fold = _any_per(xp, k, own, changed & turned)
    worse = flat | ((q_new < rules.min_quality) & (q_new < q_old))
    degenerate = _any_per(xp, k, own, changed & worse)
    if rules.min_angle > 0:
        lo_old, lo_new = xp.ones(k), xp.ones(k)
        scatter_min(xp, lo_old, own[changed], s_old[changed])
        scatter_min(xp, lo_new, own[changed], s_new[changed])
        degenerate |= lo_new < xp.minimum(lo_old, rules.min_sin)

    reason = xp.zeros(k, dtype=xp.int8)
    for i, bad in reversed(list(enumerate([link, long, fold, degenerate]))):
        reason = xp.where(bad, xp.int8(i + 1), reason)
    return reason


def _kernel(xp: ModuleType, X: Any, F: Any, vf: tuple[Any, Any], c: Collapses, rules: Rules) -> Any:
    from ..kernels.loader import launch, load_kernel

    k = len(c)
    i64 = xp.int64
    reason = xp.empty(k, dtype=xp.int8)
    launch(
        load_kernel("collapse", "collapse_check"),
        k,
        (
            xp.ascontiguousarray(X, dtype=xp.float64),
            xp.ascontiguousarray(F, dtype=i64),
            xp.ascontiguousarray(vf[0], dtype=i64),
            xp.ascontiguousarray(vf[1], dtype=i64),
            xp.ascontiguousarray(c.a, dtype=i64),
            xp.ascontiguousarray(c.b, dtype=i64),
            xp.ascontiguousarray(c.p, dtype=xp.float64),
            xp.ascontiguousarray(c.expected, dtype=i64),
            xp.ascontiguousarray(c.opp, dtype=i64),
            xp.ascontiguousarray(c.pre, dtype=xp.uint8),
            xp.float64(rules.min_normal_dot),
            xp.float64(rules.max_len2),
            xp.float64(rules.min_quality),
            xp.float64(rules.min_sin),
            xp.int64(k),
            reason,
        ),
        op="collapse_check",
    )
    return reason
