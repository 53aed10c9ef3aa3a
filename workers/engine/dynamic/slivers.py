"""Sliver removal before feature detection: needles collapsed, caps flipped.

A sliver is a face whose smallest angle is below a bound (``sliver_angle`` degrees). Its normal
is unreliable: a vertex moved by a fraction of the face's small height turns it by tens of
degrees, so the dihedral angles across its edges say nothing about the surface. A remesher that
locks the vertices of every edge sharper than ``feature_angle`` locks the slivers of a scan in
place (their vertices never move nor disappear) and hands them back unchanged. So those
slivers (with an edge sharper than ``feature_angle``; the others lock nothing, and the
remesher's own collapses and flips reach them) go first, while nothing but the boundary,
non-manifold and seam vertices is locked, and the features are detected on what is left:

* a *needle* (its shortest edge below :data:`NEEDLE_RATIO` of its longest) loses its shortest
  edge: a collapse (:func:`~.remesh_collapse.collapse_edges`, with all its checks: link
  condition, fold-over, no face's smallest angle lowered below 10 degrees) to the midpoint, or
  onto a locked end: the surface moves by at most the short edge;
* a *cap* (three nearly collinear vertices: its largest angle above :data:`CAP_ANGLE`) loses
  its longest edge by a flip when the flip raises the smallest angle of the two faces, both new
  faces are proper and turn less than 90 degrees from the other face of the edge (the cap's own
  normal is the unreliable one) and from each other; the surface moves by at most the cap's
  height.

Rounds of disjoint cavities as everywhere in :mod:`~workers.engine.dynamic` (claims on the one-
rings for the collapses, on the two faces for the flips), array code on NumPy and CuPy. The
Euler characteristic is kept; a collapse or flip never makes a non-manifold edge or vertex.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import ModuleType
from typing import Any

from ..graph import unique
from ._edges import EdgeTables, Surface, float_priority, follows, sin_min_angle
from .flip import FOLD, OK, Quads, apply_flips, edges_after_flips, flip_quads, select_flips
from .remesh_collapse import collapse_edges

#: a sliver whose shortest edge is below this fraction of its longest is a needle
NEEDLE_RATIO = 0.25

#: degrees: the largest turn of a face's normal a needle collapse may cause (the collapse of a
#: sliver's short edge barely moves a proper neighbour; where it would turn one further, the
#: needle is part of a fan or a crease, not noise, and making a new crease of it would lock
#: vertices that were free)
MAX_TURN = 20.0

#: degrees: a sliver whose largest angle is above this is a cap
CAP_ANGLE = 120.0

#: rounds of collapses and flips at most
MAX_ROUNDS = 8


def face_angles(xp: ModuleType, V: Any, F: Any) -> Any:
    """(m, 3) float64 corner angles in degrees, corner ``k`` at ``F[:, k]``."""
    P = [V[F[:, k]] for k in range(3)]
    out = []
    for k in range(3):
        p, q, r = P[k], P[(k + 1) % 3], P[(k + 2) % 3]
        u, w = q - p, r - p
        out.append(xp.arctan2(xp.linalg.norm(xp.cross(u, w), axis=1), (u * w).sum(axis=1)))
    return xp.degrees(xp.stack(out, axis=1))


def sliver_faces(
    xp: ModuleType,
    V: Any,
    F: Any,
    sliver_angle: float,
    feature_angle: float = 0.0,
    tables: EdgeTables | None = None,
) -> Any:
    """(m,) bool: faces whose smallest angle is below ``sliver_angle`` degrees and, with a
    ``feature_angle`` above 0, that have an edge whose dihedral angle exceeds it (the slivers
    whose vertices a feature detection would lock). ``tables``: the edge tables already built
    (:class:`EdgeTables`)."""
    m = int(F.shape[0])
    if sliver_angle <= 0.0 or m == 0:
        return xp.zeros(m, dtype=bool)
    thin = face_angles(xp, V, F).min(axis=1) < sliver_angle
    if feature_angle <= 0.0:
        return thin
    E = (tables or EdgeTables(xp))(F)
    two = xp.nonzero(E.count == 2)[0]
    f0, f1 = E.s0[two] // 3, E.s1[two] // 3
    N = xp.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    N = N / xp.maximum(xp.linalg.norm(N, axis=1), 1e-300)[:, None]
    sharp = (N[f0] * N[f1]).sum(axis=1) < math.cos(math.radians(min(feature_angle, 180.0)))
    marked = xp.zeros(m, dtype=bool)
    marked[f0[sharp]] = True
    marked[f1[sharp]] = True
    return thin & marked


def _needle_round(
    xp: ModuleType, S: Surface, sliver: Any, tables: EdgeTables
) -> tuple[Surface, int]:
    """Collapse the shortest edge of every needle (disjoint cavities, thinnest first)."""
    E = tables(S.F)
    side = xp.arange(3 * S.n_faces, dtype=xp.int64).reshape(-1, 3)
    a, b = E.EV[:, 0], E.EV[:, 1]
    length = xp.linalg.norm(S.V[a] - S.V[b], axis=1)
    L = length[E.of_side[side]]  # (m, 3) length of every face's sides
    shortest = xp.argmin(L, axis=1)
    ratio = L.min(axis=1) / xp.maximum(L.max(axis=1), 1e-300)
    needle = xp.nonzero(sliver & (ratio < NEEDLE_RATIO))[0]
    if needle.shape[0] == 0:
        return S, 0
    cand = E.of_side[3 * needle + shortest[needle]]
    cand, first = xp.unique(cand, return_index=True)
    # thinnest first, by 1/64 steps of NEEDLE_RATIO
    level = xp.floor(64.0 * ratio[needle][first] / NEEDLE_RATIO)
    return collapse_edges(xp, S, E, cand, level, math.inf, max_turn=MAX_TURN, tables=tables)


def _cap_round(xp: ModuleType, S: Surface, sliver: Any, tables: EdgeTables) -> tuple[Surface, int]:
    """Flip the longest edge of every cap where the flip is proper and better."""
    V, F = S.V, S.F
    ang = face_angles(xp, V, F)
    cap = xp.nonzero(sliver & (ang.max(axis=1) > CAP_ANGLE))[0]
    if cap.shape[0] == 0:
        return S, 0
    E = tables(F)
    # the longest side faces the largest angle: side (k + 1) % 3 runs opposite corner k
    k = xp.argmax(ang[cap], axis=1)
    edges = unique(xp, E.of_side[3 * cap + (k + 1) % 3])
    Q = flip_quads(xp, V, F, E, 180.0, S.seam)
    sub = Quads(*(getattr(Q, f)[edges] for f in ("a", "b", "c", "d", "f0", "f1", "reason")))
    Pa, Pb, Pc, Pd = V[sub.a], V[sub.b], V[sub.c], V[sub.d]
    old = xp.minimum(sin_min_angle(xp, Pa, Pb, Pc), sin_min_angle(xp, Pb, Pa, Pd))
    new = xp.minimum(sin_min_angle(xp, Pa, Pd, Pc), sin_min_angle(xp, Pb, Pc, Pd))
    # the reliable normal: that of the face across the edge that is not the thinner one
    n0 = xp.cross(Pb - Pa, Pc - Pa)
    n1 = xp.cross(Pa - Pb, Pd - Pb)
    thin0 = sin_min_angle(xp, Pa, Pb, Pc) <= sin_min_angle(xp, Pb, Pa, Pd)
    ref = xp.where(thin0[:, None], n1, n0)
    m0 = xp.cross(Pd - Pa, Pc - Pa)
    m1 = xp.cross(Pc - Pb, Pd - Pb)
    agree = ((m0 * ref).sum(axis=1) > 0) & ((m1 * ref).sum(axis=1) > 0)
    agree &= (m0 * m1).sum(axis=1) > 0
    # reasons other than a fold are final (boundary, non-manifold, inconsistent, the edge c-d
    # exists, a seam); the fold test is the one replaced by the checks above
    allowed = (sub.reason == OK) | (sub.reason == FOLD)
    ok = allowed & agree & (new > old)
    cand = xp.zeros(E.n_edges, dtype=bool)
    cand[edges[ok]] = True
    # worst first: the smaller the quad's smallest angle, the earlier
    prio = xp.zeros(E.n_edges, dtype=xp.int64)
    prio[edges] = float_priority(xp, old, larger_first=False)
    acc = select_flips(xp, Q, cand, prio, S.n_faces, S.n_vertices)
    if acc.shape[0] == 0:
        return S, 0
    out = apply_flips(xp, F, Q, acc)
    tables.derive(E, out, lambda: edges_after_flips(xp, E, Q, acc))
    return replace(S, F=out), int(acc.shape[0])


def remove_slivers(
    xp: ModuleType,
    S: Surface,
    sliver_angle: float,
    feature_angle: float = 0.0,
    max_rounds: int = MAX_ROUNDS,
    tables: EdgeTables | None = None,
) -> tuple[Surface, dict[str, int]]:
    """Rounds of needle collapses and cap flips until no sliver (smallest angle below
    ``sliver_angle`` degrees; with a ``feature_angle``, only those with an edge sharper than
    it, :func:`sliver_faces`) is left or a round changes nothing. ``S.locked`` vertices never
    move nor disappear; ``S.seam`` edges are never flipped. Returns the surface and ``{"before",
    "after", "collapses", "flips"}`` (slivers before and after). ``tables``: the edge tables
    handed from round to round (by default the removal's own, which follow its rounds where
    :func:`~._edges.follows` says so)."""
    if tables is None:
        tables = EdgeTables(xp, follows(xp, S.n_faces))

    def slivers() -> Any:
        return sliver_faces(xp, S.V, S.F, sliver_angle, feature_angle, tables)

    sliver = slivers()
    out = {"before": int(sliver.sum()), "after": 0, "collapses": 0, "flips": 0}
    for _ in range(max_rounds if out["before"] else 0):
        S, kc = _needle_round(xp, S, sliver, tables)
        if kc:
            sliver = slivers()
        S, kf = _cap_round(xp, S, sliver, tables)
        if kf:
            sliver = slivers()
        out["collapses"] += kc
        out["flips"] += kf
        if kc + kf == 0 or not bool(sliver.any()):
            break
    out["after"] = int(sliver.sum())
    return S, out
