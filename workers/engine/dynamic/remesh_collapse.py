"""Short-edge collapse rounds for ``isotropic_remesh`` (a minimal collapse of this branch's own).

A collapse removes the vertex ``u`` of an interior edge ``u-w`` and moves its faces onto ``w``
(``w`` stays where it is); the two faces of the edge disappear. The cavity is the closed one-ring
of ``u``: candidates claim ``u`` and all its neighbours (:func:`~._edges.claim_pairs`, shortest
edge first), so accepted collapses neither share a face nor change each other's link condition.

Checked per candidate, never assumed:

* ``u`` is free: not on the boundary, not non-manifold, not on a feature edge (the caller's
  ``locked`` mask); the edge has exactly two faces. ``w`` may be locked; if both ends are free
  the smaller id goes;
* link condition: ``u`` and ``w`` have exactly two common neighbours (the edge's opposite corners),
  and each of those keeps at least three edges (no tetrahedron collapses flat);
* no fold-over: every face of ``u`` that survives keeps a non-degenerate normal turned by less than
  :data:`MAX_NORMAL_TURN` degrees;
* no new edge longer than ``max_length`` (Botsch-Kobbelt's guard against collapse/split cycles);
* no sliver: the smallest angle of the surviving faces stays at least ``min(before, min_angle)``
  (the fold-over test alone lets a face of three nearly collinear vertices through, and where
  those are locked feature vertices no later relaxation can repair it).

The Euler characteristic is kept (one vertex, three edges, two faces fewer).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from ..graph import csr_from_pairs, expand_counts, scatter_min
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

#: the largest turn of a surviving face's normal a collapse may cause, degrees
MAX_NORMAL_TURN = 60.0

#: degrees: a collapse may lower the smallest angle of the surviving faces only while it stays
#: above this
MIN_ANGLE = 10.0


def collapse_round(
    xp: ModuleType, S: Surface, min_length: float, max_length: float, min_angle: float = MIN_ANGLE
) -> tuple[Surface, int]:
    """One round of disjoint collapses of interior edges shorter than ``min_length``."""
    E = edge_table(xp, S.F)
    n = S.n_vertices
    a, b = E.EV[:, 0], E.EV[:, 1]
    length = xp.linalg.norm(S.V[a] - S.V[b], axis=1)
    free_a, free_b = ~S.locked[a], ~S.locked[b]
    cand = xp.nonzero((length < min_length) & (E.count == 2) & (free_a | free_b))[0]
    if cand.shape[0] == 0:
        return S, 0
    u = xp.where(free_a[cand], a[cand], b[cand])
    w = xp.where(free_a[cand], b[cand], a[cand])
    val = valence(xp, E, n)
    c = opposite_corner(S.F, E.s0[cand])
    d = opposite_corner(S.F, E.s1[cand])
    p0, _ = side_ends(S.F, E.s0[cand])
    _, q1 = side_ends(S.F, E.s1[cand])
    ok = (val[c] >= 4) & (val[d] >= 4) & (c != d) & (p0 == q1)  # two faces, opposite walks
    # the faces of u, one pair (candidate, face) each
    vf_off, vf_face, _ = csr_from_pairs(
        xp, n, S.F.ravel(), xp.repeat(xp.arange(S.n_faces, dtype=xp.int64), 3)
    )
    cnt = vf_off[u + 1] - vf_off[u]
    own = expand_counts(xp, cnt)
    rank = xp.arange(int(own.shape[0]), dtype=xp.int64) - (xp.cumsum(cnt) - cnt)[own]
    f = vf_face[vf_off[u[own]] + rank]
    T = S.F[f]
    uo, wo = u[own], w[own]
    # corner of u in the face (no argmax over booleans: CuPy lacks it)
    k = xp.where(T[:, 0] == uo, 0, xp.where(T[:, 1] == uo, 1, 2))
    nxt = T[xp.arange(T.shape[0]), (k + 1) % 3]
    prv = T[xp.arange(T.shape[0]), (k + 2) % 3]
    survives = (nxt != wo) & (prv != wo)
    # link condition: neighbours of u (each is the next corner of exactly one face of u) that are
    # also neighbours of w, counted per candidate
    common = edge_lookup(xp, E.key, edge_keys(xp, wo, nxt))[0] & (nxt != wo)
    ok &= xp.bincount(own[common], minlength=int(cand.shape[0])) == 2
    # fold-over and new edge lengths on the surviving faces
    Pu, Pw, Pn, Pp = S.V[uo], S.V[wo], S.V[nxt], S.V[prv]
    n_old = xp.cross(Pn - Pu, Pp - Pu)
    n_new = xp.cross(Pn - Pw, Pp - Pw)
    lim = math.cos(math.radians(MAX_NORMAL_TURN))
    norm_old = xp.linalg.norm(n_old, axis=1)
    norm_new = xp.linalg.norm(n_new, axis=1)
    side2 = xp.maximum(((Pn - Pw) ** 2).sum(axis=1), ((Pp - Pw) ** 2).sum(axis=1))
    good = ((n_old * n_new).sum(axis=1) > lim * norm_old * norm_new) & (norm_new > 1e-10 * side2)
    good &= xp.linalg.norm(Pn - Pw, axis=1) <= max_length
    bad = survives & ~good
    ok &= xp.bincount(own[bad], minlength=int(cand.shape[0])) == 0
    # smallest angle of the surviving faces: at least min(before, MIN_ANGLE)
    k_c = int(cand.shape[0])
    q_old, q_new = xp.ones(k_c), xp.ones(k_c)
    scatter_min(xp, q_old, own[survives], sin_min_angle(xp, Pu, Pn, Pp)[survives])
    scatter_min(xp, q_new, own[survives], sin_min_angle(xp, Pw, Pn, Pp)[survives])
    ok &= q_new >= xp.minimum(q_old, math.sin(math.radians(min_angle)))
    sel = xp.nonzero(ok)[0]
    if sel.shape[0] == 0:
        return S, 0
    # claims: u and every neighbour of u (next corners; w among them)
    pick = ok[own]
    owner = xp.concatenate([sel, own[pick]])
    remap = xp.full(int(cand.shape[0]), -1, dtype=xp.int64)
    remap[sel] = xp.arange(int(sel.shape[0]), dtype=xp.int64)
    elements = xp.concatenate([u[sel], nxt[pick]])
    # shortest first by eighths of min_length, hashed ties (:func:`~._edges.bucket_priority`)
    level = xp.floor(8.0 * length[cand[sel]] / min_length)
    won = claim_pairs(xp, remap[owner], elements, bucket_priority(xp, level, u[sel]), n)
    ua, wa = u[sel][won], w[sel][won]
    return apply_collapses(xp, S, ua, wa), int(ua.shape[0])


def apply_collapses(xp: ModuleType, S: Surface, u: Any, w: Any) -> Surface:
    """Merge every ``u[i]`` into ``w[i]`` (disjoint cavities), drop the collapsed faces and the
    removed vertices; attributes, locks and feature keys follow the renumbering."""
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
    feature = S.feature
    if feature.shape[0]:
        lo, hi = feature >> SHIFT, feature & ((1 << SHIFT) - 1)
        feature = xp.sort(edge_keys(xp, renum[lo], renum[hi]))
    return Surface(
        S.V[kept],
        renum[F],
        None if S.A is None else S.A[kept],
        S.face_src[keep],
        S.locked[kept],
        feature,
    )


def collapse_short_edges_rounds(
    xp: ModuleType,
    S: Surface,
    min_length: float,
    max_length: float,
    max_rounds: int = 50,
    tail: float = 0.0,
) -> tuple[Surface, dict[str, Any]]:
    """Collapse rounds until none is accepted; returns the surface and ``{"collapses",
    "rounds"}``."""
    total, rounds, first = 0, 0, 0
    while rounds < max_rounds:
        S, k = collapse_round(xp, S, min_length, max_length)
        if k == 0:
            break
        total += k
        rounds += 1
        first = first or k
        if k < tail * first:  # a thin tail: leave it to the next iteration
            break
    return S, {"collapses": total, "rounds": rounds}
