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
    Surface,
    boundary_vertices,
    bucket_priority,
    edge_keys,
    edge_table,
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
    return apply_collapses(xp, S, u[sel], w[sel], P[sel]), int(sel.shape[0])


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
