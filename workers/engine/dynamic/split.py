"""Edge split rounds: split every edge longer than a threshold at its midpoint.

The cavity of a split is the edge's faces (one on the boundary, two inside). A split of ``a-b``
with the new vertex ``m`` turns each face ``(p, q, r)`` whose side ``p -> q`` is the edge into
``(p, m, r)`` (same face id) and ``(m, q, r)`` (a new face with the attributes of the old one):
an interior edge's two faces become four, a boundary edge's one face two. Orientation, boundary
loops and the Euler characteristic are kept (one vertex, three or two edges and two or one faces
more). Edges with three or more faces are not split, nor an edge whose two faces share their
opposite corner (a fin: the split would make an edge of four faces). So a split never makes a
non-manifold edge or vertex: the new vertex's edges are all new, its faces one fan.

A round: long edges claim their faces by a packed (length, edge id) key, longest first
(:func:`~._edges.claim`); every winner is applied at once, so a face is cut at most once per
round. Rounds repeat until no edge is longer than the threshold or ``max_rounds`` ran.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import progress
from ._edges import (
    Surface,
    bucket_priority,
    claim,
    edge_keys,
    edge_lookup,
    edge_table,
    opposite_corner,
)


def split_round(xp: ModuleType, S: Surface, max_length: float) -> tuple[Surface, int]:
    """One round of disjoint splits of the edges longer than ``max_length``; returns the new
    surface and the number of splits."""
    E = edge_table(xp, S.F)
    a, b = E.EV[:, 0], E.EV[:, 1]
    length = xp.linalg.norm(S.V[a] - S.V[b], axis=1)
    # a two-face edge whose faces share their opposite corner (a fin: two back-to-back
    # triangles) is never split: both halves would meet the new vertex on one edge, four faces
    two = E.count == 2
    fin = two & (opposite_corner(S.F, E.s0) == opposite_corner(S.F, xp.where(two, E.s1, E.s0)))
    cand = xp.nonzero((length > max_length) & (E.count <= 2) & ~fin)[0]
    if cand.shape[0] == 0:
        return S, 0
    elements = xp.stack([E.s0[cand] // 3, xp.where(E.s1[cand] >= 0, E.s1[cand] // 3, -1)], axis=1)
    # longest first by quarters of max_length, hashed ties (:func:`~._edges.bucket_priority`)
    scale = 4.0 / max_length if max_length > 0 else 0.0
    level = xp.maximum(64.0 - xp.floor(scale * length[cand]), 0.0)
    won = claim(xp, elements, bucket_priority(xp, level, cand), S.n_faces)
    acc = cand[won]
    k = int(acc.shape[0])
    n = S.n_vertices
    mid = n + xp.arange(k, dtype=xp.int64)
    ea, eb = a[acc], b[acc]
    V = xp.concatenate([S.V, 0.5 * (S.V[ea] + S.V[eb])])
    A = None if S.A is None else xp.concatenate([S.A, 0.5 * (S.A[ea] + S.A[eb])])
    is_feature = edge_lookup(xp, S.feature, E.key[acc])[0]
    locked = xp.concatenate([S.locked, (E.count[acc] == 1) | is_feature])
    # every side on an accepted edge: face (p, q, r) -> (p, m, r) in place + (m, q, r) appended
    two = E.s1[acc] >= 0
    sides = xp.concatenate([E.s0[acc], E.s1[acc][two]])
    smid = xp.concatenate([mid, mid[two]])
    f, kk = sides // 3, sides % 3
    p, q, r = S.F[f, kk], S.F[f, (kk + 1) % 3], S.F[f, (kk + 2) % 3]
    F = S.F.copy()
    F[f] = xp.stack([p, smid, r], axis=1)
    F = xp.concatenate([F, xp.stack([smid, q, r], axis=1)])
    face_src = xp.concatenate([S.face_src, S.face_src[f]])
    feature = S.feature
    seam = S.seam
    if bool(is_feature.any()):
        feature = _split_keys(xp, feature, E.key[acc], ea, eb, mid, is_feature)
        if seam is not None and seam.shape[0]:
            is_seam = edge_lookup(xp, seam, E.key[acc])[0]
            seam = _split_keys(xp, seam, E.key[acc], ea, eb, mid, is_seam)
    return Surface(V, F, A, face_src, locked, feature, seam), k


def _split_keys(xp: ModuleType, keys: Any, split: Any, ea: Any, eb: Any, mid: Any, hit: Any) -> Any:
    """The sorted edge ``keys`` after the splits of the edges ``split`` (keys, (k,)) at the new
    vertices ``mid``: each split edge ``a-b`` among them (``hit``) becomes ``a-m`` and ``m-b``."""
    fa, fb, fm = ea[hit], eb[hit], mid[hit]
    keep = ~edge_lookup(xp, split[hit], keys)[0]
    return xp.sort(xp.concatenate([keys[keep], edge_keys(xp, fa, fm), edge_keys(xp, fm, fb)]))


def split_long_edges(
    xp: ModuleType, S: Surface, max_length: float, max_rounds: int = 50, tail: float = 0.0
) -> tuple[Surface, dict[str, Any]]:
    """Split rounds until no edge (with at most two faces) is longer than ``max_length``.

    Reports progress per round (:func:`~workers.engine.progress.rounds_done` of the splits).

    Returns the surface and ``{"splits", "rounds"}``."""
    total, rounds, first, k = 0, 0, 0, 0
    while rounds < max_rounds:
        progress.report(
            progress.rounds_done(rounds, max_rounds, first, k, tail), f"round {rounds + 1}"
        )
        S, k = split_round(xp, S, max_length)
        if k == 0:
            break
        total += k
        rounds += 1
        first = first or k
        if k < tail * first:  # a thin tail: leave it to the next iteration
            break
    return S, {"splits": total, "rounds": rounds}
