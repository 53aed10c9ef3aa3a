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
    SHIFT,
    EdgeTable,
    EdgeTables,
    Surface,
    bucket_priority,
    claim,
    edge_keys,
    edge_lookup,
    edge_table,
    merged_numbering,
    opposite_corner,
)


def split_round(
    xp: ModuleType, S: Surface, max_length: float, tables: EdgeTables | None = None
) -> tuple[Surface, int]:
    """One round of disjoint splits of the edges longer than ``max_length``; returns the new
    surface and the number of splits. ``tables``: where the edge table of ``S.F`` may already
    be (:class:`~._edges.EdgeTables`)."""
    E = tables(S.F) if tables is not None else edge_table(xp, S.F)
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
    out = Surface(V, F, A, face_src, locked, feature, seam)
    if tables is not None:
        tables.derive(E, out.F, lambda: edges_after_splits(xp, E, S.F, acc, n))
    return out, k


def edges_after_splits(xp: ModuleType, E: EdgeTable, F: Any, acc: Any, n: int) -> EdgeTable:
    """The edge table of the faces :func:`split_round` makes of ``F`` (``n`` vertices) by
    splitting the edges ``acc`` (increasing ids of ``E``, ``F``'s table; each face cut at most
    once), derived from ``E`` without building it again: the same arrays as
    :func:`~._edges.edge_table` of the new faces, bit for bit. The caller makes sure every edge
    of ``E`` has at most two faces.

    A split of ``a-b`` at the new vertex ``m`` removes the edge and makes ``a-m`` and ``m-b``
    (each with the split edge's faces), and an edge ``m-r`` to each face's opposite corner
    ``r`` (two faces: the cut face and the appended one). Of a cut face ``(p, q, r)``, the side
    ``q-r`` moves to the appended face ``(m, q, r)`` and ``r-p`` to the cut face's new row
    ``(p, m, r)``. No edge or face is renumbered but by the merge: every new key ends at a new
    vertex, the largest ids, and the new keys, sorted, are merged with the others by binary
    searches of the new keys among the old ones."""
    i64 = xp.int64
    n_e, m_old, k = E.n_edges, int(F.shape[0]), int(acc.shape[0])
    if k == 0:
        return E
    mid = n + xp.arange(k, dtype=i64)
    ea, eb = E.EV[acc, 0], E.EV[acc, 1]
    two = E.s1[acc] >= 0
    # the appended faces: one per side of a split edge, the first sides first (split_round)
    g0 = m_old + xp.arange(k, dtype=i64)
    g1 = m_old + k + xp.cumsum(two) - 1
    per_face = []
    for s, g in ((E.s0[acc], g0), (xp.where(two, E.s1[acc], E.s0[acc]), g1)):
        f, kk = s // 3, s % 3
        per_face.append((f, kk, F[f, kk], F[f, (kk + 2) % 3], g))  # of (p, q, r): p and r
    # the new edges: a-m (2i), m-b (2i + 1), then m-r of each first face, of each second face
    (f0, _, _, r0, g0), (f1, _, _, r1, g1) = per_face
    # an end's half gets the cut face's side 0 where the end is p, else the appended face's
    a_sides = [xp.where(p == ea, 3 * f, 3 * g) for f, _, p, _, g in per_face]
    b_sides = [xp.where(p == eb, 3 * f, 3 * g) for f, _, p, _, g in per_face]
    half_s0 = xp.stack([a_sides[0], b_sides[0]], axis=1).ravel()
    half_s1 = xp.stack([a_sides[1], b_sides[1]], axis=1).ravel()
    two2 = xp.repeat(two, 2)
    lo_s = xp.where(two2, xp.minimum(half_s0, half_s1), half_s0)
    hi_s = xp.where(two2, xp.maximum(half_s0, half_s1), -1)
    new_key = xp.concatenate(
        [
            xp.stack([edge_keys(xp, ea, mid), edge_keys(xp, eb, mid)], axis=1).ravel(),
            edge_keys(xp, r0, mid),
            edge_keys(xp, r1, mid),
        ]
    )
    new_count = xp.concatenate([xp.repeat(E.count[acc], 2), xp.full(2 * k, 2, dtype=i64)])
    new_s0 = xp.concatenate([lo_s, 3 * f0 + 1, 3 * f1 + 1])
    new_s1 = xp.concatenate([hi_s, 3 * g0 + 2, 3 * g1 + 2])
    # a one-face split edge has no second face: its m-r row is a placeholder, dropped below
    real = xp.concatenate([xp.ones(3 * k, dtype=bool), two])
    # sides of old edges that move: q-r to the appended face, r-p to the cut face's side 2
    moved_edge, old_side, new_side = [], [], []
    for f, kk, _, _, g in per_face:
        moved_edge += [E.of_side[3 * f + (kk + 1) % 3], E.of_side[3 * f + (kk + 2) % 3]]
        old_side += [3 * f + (kk + 1) % 3, 3 * f + (kk + 2) % 3]
        new_side += [3 * g + 1, 3 * f + 2]
    valid = xp.concatenate([xp.ones(2 * k, dtype=bool), two, two])
    moved_edge = xp.where(valid, xp.concatenate(moved_edge), n_e)
    old_side, new_side = xp.concatenate(old_side), xp.concatenate(new_side)
    spare = xp.full(1, -1, dtype=i64)
    s0, s1 = xp.concatenate([E.s0, spare]), xp.concatenate([E.s1, spare])
    in_s0 = s0[moved_edge] == old_side
    s0[xp.where(in_s0, moved_edge, n_e)] = new_side
    s1[xp.where(in_s0, n_e, moved_edge)] = new_side
    s0, s1 = s0[:n_e], s1[:n_e]
    touched = xp.minimum(moved_edge, n_e - 1)  # the placeholders re-sort the last row: no change
    has2 = E.count[touched] == 2
    lo = xp.where(has2, xp.minimum(s0[touched], s1[touched]), s0[touched])
    hi = xp.where(has2, xp.maximum(s0[touched], s1[touched]), s1[touched])
    s0[touched], s1[touched] = lo, hi
    # renumber: the old edges but the split ones keep their order, the new keys go between
    new_idx = xp.nonzero(real)[0]
    new_key, new_count = new_key[new_idx], new_count[new_idx]
    new_s0, new_s1 = new_s0[new_idx], new_s1[new_idx]
    new_of_old, id_of_new = merged_numbering(xp, E.key, new_key, acc)
    gone = xp.zeros(n_e, dtype=i64)
    gone[acc] = 1
    total = n_e - k + int(new_key.shape[0])
    # every old row to its place, the split edges' to a spare last row; then the new rows
    to = xp.where(gone == 1, total, new_of_old)
    key, count, t0, t1 = (xp.empty(total + 1, dtype=i64) for _ in range(4))
    key[to], count[to], t0[to], t1[to] = E.key, E.count, s0, s1
    key[id_of_new], count[id_of_new] = new_key, new_count
    t0[id_of_new], t1[id_of_new] = new_s0, new_s1
    key, count, t0, t1 = key[:total], count[:total], t0[:total], t1[:total]
    # every side's edge: the old faces' sides renumbered, then the cut and appended faces' rows
    of_side = xp.concatenate([new_of_old[E.of_side], xp.empty(3 * (k + int(two.sum())), dtype=i64)])
    slot = xp.full(4 * k, -1, dtype=i64)
    slot[new_idx] = id_of_new
    half_a, half_b = slot[0 : 2 * k : 2], slot[1 : 2 * k : 2]
    for j, (f, kk, p, _, g) in enumerate(per_face):
        mr = slot[(2 + j) * k : (3 + j) * k]
        rows = xp.arange(k, dtype=i64) if j == 0 else xp.nonzero(two)[0]
        f, kk, p, g, mr = f[rows], kk[rows], p[rows], g[rows], mr[rows]
        qr, rp = E.of_side[3 * f + (kk + 1) % 3], E.of_side[3 * f + (kk + 2) % 3]
        at_a = p == ea[rows]
        of_side[3 * f] = xp.where(at_a, half_a[rows], half_b[rows])
        of_side[3 * f + 1] = mr
        of_side[3 * f + 2] = new_of_old[rp]
        of_side[3 * g] = xp.where(at_a, half_b[rows], half_a[rows])
        of_side[3 * g + 1] = new_of_old[qr]
        of_side[3 * g + 2] = mr
    EV = xp.stack([key >> SHIFT, key & ((1 << SHIFT) - 1)], axis=1)
    return EdgeTable(key, EV, count, t0, t1, of_side)


def _split_keys(xp: ModuleType, keys: Any, split: Any, ea: Any, eb: Any, mid: Any, hit: Any) -> Any:
    """The sorted edge ``keys`` after the splits of the edges ``split`` (keys, (k,)) at the new
    vertices ``mid``: each split edge ``a-b`` among them (``hit``) becomes ``a-m`` and ``m-b``."""
    fa, fb, fm = ea[hit], eb[hit], mid[hit]
    keep = ~edge_lookup(xp, split[hit], keys)[0]
    return xp.sort(xp.concatenate([keys[keep], edge_keys(xp, fa, fm), edge_keys(xp, fm, fb)]))


def split_long_edges(
    xp: ModuleType,
    S: Surface,
    max_length: float,
    max_rounds: int = 50,
    tail: float = 0.0,
    tables: EdgeTables | None = None,
) -> tuple[Surface, dict[str, Any]]:
    """Split rounds until no edge (with at most two faces) is longer than ``max_length``.

    Reports progress per round (:func:`~workers.engine.progress.rounds_done` of the splits).

    Returns the surface and ``{"splits", "rounds"}``."""
    total, rounds, first, k = 0, 0, 0, 0
    while rounds < max_rounds:
        progress.report(
            progress.rounds_done(rounds, max_rounds, first, k, tail), f"round {rounds + 1}"
        )
        S, k = split_round(xp, S, max_length, tables)
        if k == 0:
            break
        total += k
        rounds += 1
        first = first or k
        if k < tail * first:  # a thin tail: leave it to the next iteration
            break
    return S, {"splits": total, "rounds": rounds}
