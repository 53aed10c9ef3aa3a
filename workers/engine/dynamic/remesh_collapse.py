"""Short-edge collapse rounds for ``isotropic_remesh``, ``collapse_short_edges``' remeshing
mode and the sliver removal, on the collapse core the decimation uses.

A collapse removes the vertex ``u`` of an interior edge ``u-w`` and moves its faces onto ``w``;
the two faces of the edge disappear. Where both ends are free the merged vertex goes to the
edge's midpoint (as in Botsch and Kobbelt's paper and gpytoolbox's remesher; keeping ``w`` where
it was makes every collapse next to a long edge create an edge over ``max_length``, and on the
Stanford bunny left 23 % of the edges short against 8 % with midpoints), else it stays at the
locked end.

What this module adds to the shared core is the remesher's choice of edges and its thresholds:

* ``u`` is free: not on the boundary, not non-manifold, not on a feature edge (the caller's
  ``locked`` mask); the edge has exactly two faces, walked in opposite directions. ``w`` may be
  locked (then it stays);
* each opposite vertex keeps at least three edges (no tetrahedron collapses flat);
* the preconditions of every collapse (:mod:`.collapse_check`): the link condition, no face
  turned by more than :data:`MAX_NORMAL_TURN` degrees, no new edge longer than ``max_length``
  (Botsch-Kobbelt's guard against collapse/split cycles), no smallest angle of the changed faces
  below ``min(before, min_angle)`` (the fold-over test alone lets a face of three nearly collinear
  vertices through, and where those are locked feature vertices no later relaxation can repair
  it);
* the conflict resolution (:func:`.cavity.independent_collapses`) keeps the closed one-rings of
  accepted collapses apart (``reach=2``), shortest edge first: fewer collapses per round than the
  decimation's ``reach=1``, each nearer the sequential order.

The Euler characteristic is kept (one vertex, three edges, two faces fewer).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from .. import progress
from ._edges import (
    CLAIM_PASSES,
    SHIFT,
    EdgeTable,
    EdgeTables,
    Surface,
    boundary_vertices,
    bucket_priority,
    edge_keys,
    follows,
    merged_numbering,
    opposite_corner,
    side_ends,
    valence,
)
from .cavity import independent_collapses, priority_keys
from .collapse_check import Collapses, Rules, check_collapses, vertex_faces

#: the largest turn of a surviving face's normal a collapse may cause, degrees
MAX_NORMAL_TURN = 60.0

#: degrees: a collapse may lower the smallest angle of the surviving faces only while it stays
#: above this
MIN_ANGLE = 10.0


def collapse_round(
    xp: ModuleType,
    S: Surface,
    min_length: float,
    max_length: float,
    min_angle: float = MIN_ANGLE,
    tables: EdgeTables | None = None,
) -> tuple[Surface, int]:
    """One round of disjoint collapses of interior edges shorter than ``min_length``.
    ``tables``: the edge tables handed from round to round (:class:`~._edges.EdgeTables`)."""
    tables = tables or EdgeTables(xp)
    E = tables(S.F)
    a, b = E.EV[:, 0], E.EV[:, 1]
    length = xp.linalg.norm(S.V[a] - S.V[b], axis=1)
    cand = xp.nonzero(length < min_length)[0]
    # shortest first by eighths of min_length, hashed ties (:func:`~._edges.bucket_priority`)
    level = xp.floor(8.0 * length[cand] / min_length)
    return collapse_edges(xp, S, E, cand, level, max_length, min_angle, tables=tables)


def collapse_edges(
    xp: ModuleType,
    S: Surface,
    E: Any,
    cand: Any,
    level: Any,
    max_length: float,
    min_angle: float = MIN_ANGLE,
    max_turn: float = MAX_NORMAL_TURN,
    tables: EdgeTables | None = None,
) -> tuple[Surface, int]:
    """One round of disjoint collapses among the edges ``cand (k,)`` int64 of the edge table
    ``E`` of ``S.F``, smaller ``level (k,)`` first (non-negative integers, hashed ties): those
    with two faces and a free end that pass every check of the module docstring, the merged
    vertex placed at the midpoint or on the locked end. Returns the surface and the number of
    collapses. ``max_turn``: degrees, the largest turn of a surviving face's normal.
    ``tables``: where ``E`` is the table they hold, they are handed the new faces' table
    (:func:`edges_after_collapses`)."""
    n = S.n_vertices
    a, b = E.EV[:, 0], E.EV[:, 1]
    free_a, free_b = ~S.locked[a], ~S.locked[b]
    usable = (E.count[cand] == 2) & (free_a[cand] | free_b[cand])
    cand, level = cand[usable], level[usable]
    if cand.shape[0] == 0:
        return S, 0
    u = xp.where(free_a[cand], a[cand], b[cand])
    w = xp.where(free_a[cand], b[cand], a[cand])
    # the merged vertex: the midpoint where both ends are free, else the locked end
    mid = free_a[cand] & free_b[cand]
    P = xp.where(mid[:, None], 0.5 * (S.V[u] + S.V[w]), S.V[w])
    val = valence(xp, E, n)
    c = opposite_corner(S.F, E.s0[cand])
    d = opposite_corner(S.F, E.s1[cand])
    p0, _ = side_ends(S.F, E.s0[cand])
    _, q1 = side_ends(S.F, E.s1[cand])
    # the operation's own link rule: two faces walked in opposite directions, and each opposite
    # vertex keeps three edges at least (no tetrahedron collapses flat)
    own_rule = (val[c] >= 4) & (val[d] >= 4) & (c != d) & (p0 == q1)
    vf = vertex_faces(xp, S.F, n)
    bnd = boundary_vertices(xp, E, n)
    expected = 2 - (bnd[u] & bnd[w]).astype(xp.int64)
    rules = Rules(
        math.cos(math.radians(max_turn)),
        None if math.isinf(max_length) else max_length,
        min_angle=min_angle,
    )
    checked = Collapses(w, u, P, expected, xp.stack([c, d], axis=1), ~own_rule)
    reason = check_collapses(xp, S.V, S.F, vf, checked, rules)
    key = priority_keys(xp, bucket_priority(xp, level, u))
    won = independent_collapses(xp, n, E.EV, w, u, key, reason == 0, CLAIM_PASSES, reach=2)
    sel = xp.nonzero(won)[0]
    if sel.shape[0] == 0:
        return S, 0
    u, w, edge = u[sel], w[sel], cand[sel]
    out = apply_collapses(xp, S, u, w, P[sel])
    if tables is not None:
        tables.derive(E, out.F, lambda: edges_after_collapses(xp, E, S.F, n, u, w, edge))
    return out, int(sel.shape[0])


def apply_collapses(xp: ModuleType, S: Surface, u: Any, w: Any, P: Any) -> Surface:
    """Merge every ``u[i]`` into ``w[i]`` (disjoint cavities), placed at ``P[i]``, drop the
    collapsed faces and the removed vertices; attributes, locks and feature keys follow the
    renumbering."""
    n = S.n_vertices
    vmap = xp.arange(n, dtype=xp.int64)
    vmap[u] = w
    F = vmap[S.F]
    keep = (F[:, 0] != F[:, 1]) & (F[:, 1] != F[:, 2]) & (F[:, 2] != F[:, 0])
    F = F[keep]
    renum, kept = _vertex_renumbering(xp, n, u)
    feature = _renumbered(xp, S.feature, renum)
    seam = None if S.seam is None else _renumbered(xp, S.seam, renum)
    V = S.V[kept]
    V[renum[w]] = P
    return Surface(
        V,
        renum[F],
        None if S.A is None else S.A[kept],
        S.face_src[keep],
        S.locked[kept],
        feature,
        seam,
    )


def _vertex_renumbering(xp: ModuleType, n: int, u: Any) -> tuple[Any, Any]:
    """``(renum (n,), kept)``: the ids of the vertices left when the vertices ``u`` go, in
    order (``renum`` of a removed vertex is meaningless), and those vertices' old ids."""
    alive = xp.ones(n, dtype=bool)
    alive[u] = False
    return xp.cumsum(alive) - 1, xp.nonzero(alive)[0]


def edges_after_collapses(
    xp: ModuleType, E: EdgeTable, F: Any, n: int, u: Any, w: Any, edge: Any
) -> EdgeTable | None:
    """The edge table of the faces :func:`apply_collapses` makes of ``F`` (``n`` vertices, the
    vertices ``u`` merged into ``w``, the edges ``edge`` between them collapsed), derived from
    ``E``, ``F``'s table, without building it again: the same arrays as
    :func:`~._edges.edge_table` of the new faces, bit for bit. None where a collapse is not the
    plain interior case (an edge at ``u`` with other than two faces): build the table then. The
    caller makes sure every edge of ``E`` has at most two faces and the collapses are the ones
    :func:`collapse_edges` accepts (two faces an edge, the link condition, disjoint cavities).

    A collapse of ``u-w`` with the faces ``(u, w, c)`` and ``(w, u, d)`` removes the edge and
    the two faces; ``u-c`` merges into ``w-c`` (which takes ``u-c``'s side in the face beyond
    it for its side in the removed face: its face count stays) and ``u-d`` into ``w-d``; every
    other edge at ``u`` becomes an edge at ``w`` (a new key); the vertices and faces left are
    renumbered in order, so every other edge keeps its place in key order. The new keys,
    sorted, are merged with the others by one binary search of each new key among the kept
    ones; a count of them before each kept edge places the kept edges (no sort of every edge,
    no hash table)."""
    i64 = xp.int64
    n_e, m = E.n_edges, int(F.shape[0])
    side = E.of_side
    s_e0, s_e1 = E.s0[edge], E.s1[edge]
    ends = []
    for s in (s_e0, s_e1):
        f, i = s // 3, s % 3
        # side i runs from F[f, i] to F[f, i + 1]; side i + 1 ends at the opposite corner, side
        # i + 2 starts there: the u-x side is i + 2 where u starts side i, else i + 1
        u_first = F[f, i] == u
        s_u = 3 * f + xp.where(u_first, (i + 2) % 3, (i + 1) % 3)
        s_w = 3 * f + xp.where(u_first, (i + 1) % 3, (i + 2) % 3)
        ends.append((f, side[s_u], side[s_w], s_w))
    (f0, uc, wc, s_wc), (f1, ud, wd, s_wd) = ends
    merged_u, merged_w = xp.concatenate([uc, ud]), xp.concatenate([wc, wd])
    if bool((E.count[merged_u] != 2).any()):
        return None
    # each merged u-x edge's side in the face beyond the removed one goes to w-x
    in_face = xp.concatenate([f0, f1])
    beyond = xp.where(E.s0[merged_u] // 3 == in_face, E.s1[merged_u], E.s0[merged_u])
    gone_side = xp.concatenate([s_wc, s_wd])
    other = xp.where(E.s0[merged_w] == gone_side, E.s1[merged_w], E.s0[merged_w])
    s0, s1 = E.s0.copy(), E.s1.copy()
    s0[merged_w] = xp.where(other < 0, beyond, xp.minimum(other, beyond))
    s1[merged_w] = xp.where(other < 0, -1, xp.maximum(other, beyond))
    # faces and vertices left, renumbered in order
    keep_face = xp.ones(m, dtype=bool)
    keep_face[f0] = False
    keep_face[f1] = False
    newface = xp.cumsum(keep_face) - 1
    kept_faces = xp.nonzero(keep_face)[0]
    renum, _ = _vertex_renumbering(xp, n, u)
    vmap = xp.arange(n, dtype=i64)
    vmap[u] = w
    lo, hi = renum[vmap[E.EV[:, 0]]], renum[vmap[E.EV[:, 1]]]
    key = edge_keys(xp, lo, hi)
    # 0: kept in place, 1: a new key (an edge at u), 2: gone (collapsed or merged)
    at_u = xp.zeros(n, dtype=bool)
    at_u[u] = True
    state = (at_u[E.EV[:, 0]] | at_u[E.EV[:, 1]]).astype(xp.int8)
    state[edge] = 2
    state[merged_u] = 2
    kept, moved = xp.nonzero(state == 0)[0], xp.nonzero(state == 1)[0]
    nk, nm = int(kept.shape[0]), int(moved.shape[0])
    # the kept keys stay in order (the renumbering keeps it); the re-keyed ones go between
    of_kept, of_moved = merged_numbering(xp, key[kept], key[moved])
    new_of_old = xp.full(n_e, -1, dtype=i64)
    new_of_old[kept] = of_kept
    new_of_old[moved] = of_moved
    new_of_old[merged_u] = new_of_old[merged_w]
    old = xp.empty(nk + nm, dtype=i64)
    old[new_of_old[kept]] = kept
    old[new_of_old[moved]] = moved
    new_key = key[old]

    def renumbered(s: Any) -> Any:
        return xp.where(s >= 0, 3 * newface[s // 3] + s % 3, -1)

    sides = (3 * kept_faces[:, None] + xp.arange(3, dtype=i64)).ravel()
    return EdgeTable(
        new_key,
        xp.stack([new_key >> SHIFT, new_key & ((1 << SHIFT) - 1)], axis=1),
        E.count[old],
        renumbered(s0[old]),
        renumbered(s1[old]),
        new_of_old[side[sides]],
    )


def _renumbered(xp: ModuleType, keys: Any, renum: Any) -> Any:
    """Sorted edge keys after the vertex renumbering ``renum`` (their ends all survive)."""
    if keys.shape[0] == 0:
        return keys
    lo, hi = keys >> SHIFT, keys & ((1 << SHIFT) - 1)
    return xp.sort(edge_keys(xp, renum[lo], renum[hi]))


def collapse_short_edges_rounds(
    xp: ModuleType,
    S: Surface,
    min_length: float,
    max_length: float,
    max_rounds: int = 50,
    tail: float = 0.0,
    tables: EdgeTables | None = None,
) -> tuple[Surface, dict[str, Any]]:
    """Collapse rounds until none is accepted; returns the surface and ``{"collapses",
    "rounds"}``. Reports progress per round (:func:`~workers.engine.progress.rounds_done` of
    the collapses). ``tables``: the edge tables handed from round to round (by default the
    rounds' own, which follow the collapses where :func:`~._edges.follows` says so)."""
    if tables is None:
        tables = EdgeTables(xp, follows(xp, S.n_faces))
    total, rounds, first, k = 0, 0, 0, 0
    while rounds < max_rounds:
        progress.report(
            progress.rounds_done(rounds, max_rounds, first, k, tail), f"round {rounds + 1}"
        )
        S, k = collapse_round(xp, S, min_length, max_length, tables=tables)
        if k == 0:
            break
        total += k
        rounds += 1
        first = first or k
        if k < tail * first:  # a thin tail: leave it to the next iteration
            break
    return S, {"collapses": total, "rounds": rounds}
