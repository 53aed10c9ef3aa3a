"""Short-edge collapse rounds for ``isotropic_remesh`` (a minimal collapse of this branch's own).

A collapse removes the vertex ``u`` of an interior edge ``u-w`` and moves its faces onto ``w``;
the two faces of the edge disappear. Where both ends are free the merged vertex goes to the
edge's midpoint (as in Botsch and Kobbelt's paper and gpytoolbox's remesher; keeping ``w`` where
it was makes every collapse next to a long edge create an edge over ``max_length``, and on the
Stanford bunny left 23 % of the edges short against 8 % with midpoints), else it stays at the
locked end. The cavity is the closed one-rings of ``u`` and ``w``: candidates claim both ends and
all their neighbours (:func:`~._edges.claim_pairs`, shortest edge first), so accepted collapses
neither share a face, nor move a vertex another one reads, nor change each other's link
condition.

Checked per candidate, never assumed:

* ``u`` is free: not on the boundary, not non-manifold, not on a feature edge (the caller's
  ``locked`` mask); the edge has exactly two faces. ``w`` may be locked (then it stays);
* link condition: ``u`` and ``w`` have exactly two common neighbours (the edge's opposite corners),
  and each of those keeps at least three edges (no tetrahedron collapses flat);
* no fold-over: every surviving face that changes (those of ``u``, and those of ``w`` when it
  moves) keeps a non-degenerate normal turned by less than :data:`MAX_NORMAL_TURN` degrees;
* no new edge longer than ``max_length`` (Botsch-Kobbelt's guard against collapse/split cycles);
* no sliver: the smallest angle of those faces stays at least ``min(before, min_angle)``
  (the fold-over test alone lets a face of three nearly collinear vertices through, and where
  those are locked feature vertices no later relaxation can repair it).

The Euler characteristic is kept (one vertex, three edges, two faces fewer).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from .. import progress
from ..graph import csr_from_pairs, scatter_min
from ._edges import (
    SHIFT,
    Surface,
    bucket_priority,
    claim_pairs,
    edge_keys,
    edge_lookup,
    edge_table,
    opposite_corner,
    side_ends,
    sin_min_angle,
    valence,
)
from .cavity import gather_rows

#: the largest turn of a surviving face's normal a collapse may cause, degrees
MAX_NORMAL_TURN = 60.0

#: degrees: a collapse may lower the smallest angle of the surviving faces only while it stays
#: above this
MIN_ANGLE = 10.0

#: candidates whose faces are checked at once
CHECK_SLICE = 1 << 21


def _check(
    xp: ModuleType,
    S: Surface,
    E: Any,
    vf_off: Any,
    vf_face: Any,
    u: Any,
    w: Any,
    P: Any,
    mid: Any,
    max_length: float,
    min_angle: float,
    max_turn: float = MAX_NORMAL_TURN,
) -> tuple[Any, Any, Any]:
    """The per-face checks of the collapses ``u -> w`` placed at ``P``: ``(ok (k,), own, nxt)``,
    ``own``/``nxt`` pairing each candidate with the neighbours of its two ends (for claims)."""
    k_c = int(u.shape[0])
    ok = xp.ones(k_c, dtype=bool)
    # the faces of u and of w, one row (candidate, face) each; rows [0, k) of ``ends`` are u's
    row, f = gather_rows(xp, vf_off, vf_face, xp.concatenate([u, w]))
    own = row % k_c
    of_u = row < k_c
    T = S.F[f]
    uo, wo = u[own], w[own]
    has_u = (uo[:, None] == T).any(axis=1)
    has_w = (wo[:, None] == T).any(axis=1)
    # the corner that moves in each face: u in u's faces, w in the faces of w alone
    me = xp.where(of_u, uo, wo)
    # corner of ``me`` in the face (no argmax over booleans: CuPy lacks it)
    k = xp.where(T[:, 0] == me, 0, xp.where(T[:, 1] == me, 1, 2))
    nxt = T[xp.arange(T.shape[0]), (k + 1) % 3]
    prv = T[xp.arange(T.shape[0]), (k + 2) % 3]
    # each surviving face once: u's faces from u's rows, the faces of w alone from w's rows; the
    # latter change only where w moves
    survives = ~(has_u & has_w) & (of_u | mid[own])
    # link condition: neighbours of u (each is the next corner of exactly one face of u) that are
    # also neighbours of w, counted per candidate
    common = of_u & edge_lookup(xp, E.key, edge_keys(xp, wo, nxt))[0] & (nxt != wo)
    ok &= xp.bincount(own[common], minlength=k_c) == 2
    # fold-over and new edge lengths on the surviving faces
    Pm, Pq, Pn, Pp = S.V[me], P[own], S.V[nxt], S.V[prv]
    n_old = xp.cross(Pn - Pm, Pp - Pm)
    n_new = xp.cross(Pn - Pq, Pp - Pq)
    lim = math.cos(math.radians(max_turn))
    norm_old = xp.linalg.norm(n_old, axis=1)
    norm_new = xp.linalg.norm(n_new, axis=1)
    side2 = xp.maximum(((Pn - Pq) ** 2).sum(axis=1), ((Pp - Pq) ** 2).sum(axis=1))
    good = ((n_old * n_new).sum(axis=1) > lim * norm_old * norm_new) & (norm_new > 1e-10 * side2)
    good &= xp.linalg.norm(Pn - Pq, axis=1) <= max_length
    bad = survives & ~good
    ok &= xp.bincount(own[bad], minlength=k_c) == 0
    # smallest angle of the surviving faces: at least min(before, MIN_ANGLE)
    q_old, q_new = xp.ones(k_c), xp.ones(k_c)
    scatter_min(xp, q_old, own[survives], sin_min_angle(xp, Pm, Pn, Pp)[survives])
    scatter_min(xp, q_new, own[survives], sin_min_angle(xp, Pq, Pn, Pp)[survives])
    ok &= q_new >= xp.minimum(q_old, math.sin(math.radians(min_angle)))
    return ok, own, nxt


def collapse_round(
    xp: ModuleType, S: Surface, min_length: float, max_length: float, min_angle: float = MIN_ANGLE
) -> tuple[Surface, int]:
    """One round of disjoint collapses of interior edges shorter than ``min_length``."""
    E = edge_table(xp, S.F)
    a, b = E.EV[:, 0], E.EV[:, 1]
    length = xp.linalg.norm(S.V[a] - S.V[b], axis=1)
    cand = xp.nonzero(length < min_length)[0]
    # shortest first by eighths of min_length, hashed ties (:func:`~._edges.bucket_priority`)
    level = xp.floor(8.0 * length[cand] / min_length)
    return collapse_edges(xp, S, E, cand, level, max_length, min_angle)


def collapse_edges(
    xp: ModuleType,
    S: Surface,
    E: Any,
    cand: Any,
    level: Any,
    max_length: float,
    min_angle: float = MIN_ANGLE,
    max_turn: float = MAX_NORMAL_TURN,
) -> tuple[Surface, int]:
    """One round of disjoint collapses among the edges ``cand (k,)`` int64 of the edge table
    ``E`` of ``S.F``, smaller ``level (k,)`` first (non-negative integers, hashed ties): those
    with two faces and a free end that pass every check of the module docstring, the merged
    vertex placed at the midpoint or on the locked end. Returns the surface and the number of
    collapses. ``max_turn``: degrees, the largest turn of a surviving face's normal."""
    n = S.n_vertices
    a, b = E.EV[:, 0], E.EV[:, 1]
    free_a, free_b = ~S.locked[a], ~S.locked[b]
    usable = (E.count[cand] == 2) & (free_a[cand] | free_b[cand])
    cand, level = cand[usable], level[usable]
    if cand.shape[0] == 0:
        return S, 0
    k_c = int(cand.shape[0])
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
    ok = (val[c] >= 4) & (val[d] >= 4) & (c != d) & (p0 == q1)  # two faces, opposite walks
    vf_off, vf_face, _ = csr_from_pairs(
        xp, n, S.F.ravel(), xp.repeat(xp.arange(S.n_faces, dtype=xp.int64), 3)
    )
    # checked in slices of candidates: a few dozen (rows, 3) temporaries per face row of both
    # ends would not fit on the device for tens of millions of candidates at once
    oks, owns, nbrs = [], [], []
    for s0 in range(0, k_c, CHECK_SLICE):
        sl = slice(s0, min(s0 + CHECK_SLICE, k_c))
        ok_s, own_s, nxt_s = _check(
            xp,
            S,
            E,
            vf_off,
            vf_face,
            u[sl],
            w[sl],
            P[sl],
            mid[sl],
            max_length,
            min_angle,
            max_turn,
        )
        oks.append(ok_s)
        keep = ok_s[own_s]
        owns.append(own_s[keep] + s0)
        nbrs.append(nxt_s[keep])
    ok &= xp.concatenate(oks)
    own, nxt = xp.concatenate(owns), xp.concatenate(nbrs)
    sel = xp.nonzero(ok)[0]
    if sel.shape[0] == 0:
        return S, 0
    # claims: u, w and every neighbour of either (next corners; w and u among them)
    pick = ok[own]
    owner = xp.concatenate([sel, own[pick]])
    remap = xp.full(k_c, -1, dtype=xp.int64)
    remap[sel] = xp.arange(int(sel.shape[0]), dtype=xp.int64)
    elements = xp.concatenate([u[sel], nxt[pick]])
    won = claim_pairs(xp, remap[owner], elements, bucket_priority(xp, level[sel], u[sel]), n)
    ua, wa = u[sel][won], w[sel][won]
    return apply_collapses(xp, S, ua, wa, P[sel][won]), int(ua.shape[0])


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
    alive = xp.ones(n, dtype=bool)
    alive[u] = False
    renum = xp.cumsum(alive) - 1
    kept = xp.nonzero(alive)[0]
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
) -> tuple[Surface, dict[str, Any]]:
    """Collapse rounds until none is accepted; returns the surface and ``{"collapses",
    "rounds"}``. Reports progress per round (:func:`~workers.engine.progress.rounds_done` of
    the collapses)."""
    total, rounds, first, k = 0, 0, 0, 0
    while rounds < max_rounds:
        progress.report(
            progress.rounds_done(rounds, max_rounds, first, k, tail), f"round {rounds + 1}"
        )
        S, k = collapse_round(xp, S, min_length, max_length)
        if k == 0:
            break
        total += k
        rounds += 1
        first = first or k
        if k < tail * first:  # a thin tail: leave it to the next iteration
            break
    return S, {"collapses": total, "rounds": rounds}
