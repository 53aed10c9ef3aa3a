"""Edge collapse in parallel rounds: eligibility, preconditions, conflict resolution, apply.

The collapse of edge ``(a, b)`` moves ``a`` (the survivor) to a new position ``p``, renames ``b``
to ``a`` in every face, and deletes the edge's one or two faces. Its cavity is the one-ring of
``a`` and ``b``: every face that touches either end, and the vertices of those faces.

One round (:func:`collapse_round`):

1. **eligible edges**: one or two faces, no locked end (non-manifold vertex, vertex of a
   non-manifold edge or of a face with a repeated vertex, all measured on the input), and with
   ``preserve_boundary`` no boundary edge and no edge with both ends on the boundary; when only
   one end is on the boundary that end survives and stays where it is. A *pinned* end (a vertex
   of a texture seam, :mod:`.seams`) is treated like such a boundary end, whatever
   ``preserve_boundary`` says: it survives and stays; an edge with two pinned ends, or with
   ``preserve_boundary`` a pinned end and a boundary end, is not eligible, unless the state
   carries its seam edges and the edge runs inside one seam line (:func:`seam_line_edges`):
   then either end may go onto the other, which stays (two candidates).
2. **plan** (the operation's part): for each candidate the new position, the parameter ``t``
   along the edge for interpolating attributes, and a priority (smaller first).
3. **preconditions**, checked per candidate on the current mesh (:func:`check_candidates`,
   the one check every collapsing operation shares: :mod:`.collapse_check`): the link condition
   (the common neighbours of ``a`` and ``b`` are exactly the edge's opposite vertices, counting a
   virtual vertex joined to every boundary vertex, so an interior edge between two boundary
   vertices fails; a boundary edge whose face has three boundary edges fails; no face of the
   result repeats another), no fold-over (every changed cavity face keeps its normal within
   ``acos(0.2)``), no flat or near-degenerate face created (quality below ``1e-3`` and worse
   than before), no new edge longer than ``max_edge_length`` when one is given.
4. **independent cavities** (:func:`.cavity.independent_collapses`): a valid candidate is
   accepted when its priority is the best among the valid candidates with an end in the closed
   one-rings of its ends (a few passes); then no accepted end is another accepted
   collapse's end or neighbour, so their cavities share no face, no vertex of one cavity moves or
   merges in another, and their preconditions, checked on the mesh before the round, still hold
   after it.
5. **apply** all accepted at once: ``b -> a`` in the faces, ``a`` moved, per-vertex attributes
   interpolated ``(1 - t) A[a] + t A[b]``, quadrics summed (texture error quadrics too, and the
   tracked corner texture coordinates updated: :func:`merged_corners`), the edges' faces
   removed; surviving faces keep their order, their orientation and their face attributes.

What a round may change and what it may not: it removes vertices, edges and faces inside the
accepted cavities only. An edge-manifold mesh stays edge-manifold and a manifold vertex stays
manifold (the link condition), the orientation of every surviving face is kept, each collapse
removes one vertex, three edges and two faces (interior) or one vertex, two edges and one face
(boundary), so the Euler characteristic of every component is preserved and no component
vanishes; with ``preserve_boundary`` no boundary vertex moves and no boundary edge changes. Locked
vertices (non-manifold input) never move or merge; only manifold parts are simplified. Pinned
vertices never move and are never removed (but along a seam line), so an edge between two of
them (a seam edge) is never collapsed (but along its line) and stays an edge: a collapse never
removes an edge but the collapsed one and the one it merges with (``b-c`` into ``a-c``, which
keeps ``a-c``). Along a seam line ``a-b-c``, ``b`` going onto ``a`` leaves the seam ``a-c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..graph import counts, sums, unique
from ..topology import Topology
from ._edges import SHIFT, edge_keys, edge_lookup
from .cavity import PASSES, gather_rows, independent_collapses, priority_keys
from .collapse_check import REASONS, Collapses, Rules, check_collapses, vertex_faces

#: a surviving cavity face may turn its normal by at most acos(MIN_NORMAL_DOT)
MIN_NORMAL_DOT = 0.2
#: a created face whose quality (1 for equilateral) is below this, and worse than before, is
#: near-degenerate
MIN_QUALITY = 1e-3


@dataclass
class CollapseState:
    """The mesh being simplified, in the working precision.

    ``X (n, 3) float64`` positions (centred, see the ops), ``F (m, 3) int64`` faces, ``A (n, k)
    float64`` stacked vertex attributes or None, ``origin (m,) int64`` the input face each face
    is, ``locked (n,) bool`` vertices that never move or merge, ``Q (n, 10) float64`` per-vertex
    quadrics (decimation) or None: summed when two vertices merge, ``pinned (n,) bool`` vertices
    that never move and are never removed but may take a neighbour collapsing onto them (seam
    vertices), or None; ``seams (K,)`` sorted int64 keys of the seam edges (current vertex ids)
    or None; ``seam_lines``: collapses may run along seam lines (:func:`seam_line_edges`);
    ``U (n, 19) float64`` per-vertex texture error quadrics
    (:func:`.quadrics.attribute_quadrics`; zero rows at pinned vertices) or None, summed when two
    vertices merge; ``C (m, 3, 2) float64`` each face's corner texture coordinates (scaled as
    ``U``'s), or None: the working estimate of what the result's corners get, the values of a
    vertex within one chart kept equal (:func:`apply_collapses`)."""

    X: Any
    F: Any
    A: Any
    origin: Any
    locked: Any
    Q: Any = None
    pinned: Any = None
    seams: Any = None
    seam_lines: bool = False
    U: Any = None
    C: Any = None
    #: ``(topology, keep, edge, b)`` of the round that made this state (:func:`apply_collapses`),
    #: from which :meth:`topology` derives this state's
    made_by: Any = field(default=None, repr=False)

    def topology(self) -> Topology:
        """The topology of ``F``: derived from the last round's
        (:meth:`~workers.engine.topology.Topology.after_collapses`) when this state came from
        one, else built."""
        if self.made_by is not None:
            topo, keep, edge, b = self.made_by
            return topo.after_collapses(self.F, keep, edge, b)
        return Topology.build(self.F, self.n_vertices)

    @property
    def xp(self) -> ModuleType:
        from ..backend import array_backend, xp_for

        return xp_for(array_backend(self.X))

    @property
    def n_vertices(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.F.shape[0])


@dataclass
class Candidates:
    """Planned collapses: edge ids, survivor ``a``, removed ``b``, new position ``p (k, 3)``,
    attribute parameter ``t`` (0 at ``a``, 1 at ``b``), ``priority`` (smaller first) and, when
    the state carries corner texture coordinates, ``s (k, 2)``: the merged vertex's in the chart
    of the edge's first face (``a``'s own there when ``a`` stays where it is). ``ranked``: the
    candidates come in priority order (so each one's rank is its index and
    the round sorts nothing more)."""

    edge: Any
    a: Any
    b: Any
    p: Any
    t: Any
    priority: Any
    s: Any = None
    ranked: bool = False

    def take(self, idx: Any) -> Candidates:
        """The candidates ``idx`` (in that order: no longer ranked)."""
        return Candidates(
            self.edge[idx],
            self.a[idx],
            self.b[idx],
            self.p[idx],
            self.t[idx],
            self.priority[idx],
            None if self.s is None else self.s[idx],
        )

    def __len__(self) -> int:
        return int(self.edge.shape[0])


@dataclass
class Eligible:
    """Edges that may be collapsed this round, oriented: ``a`` survives, ``b`` goes. ``snap``:
    ``a`` must stay where it is (it is pinned, or on the boundary and ``b`` is not)."""

    edge: Any
    a: Any
    b: Any
    snap: Any
    boundary_edge: Any


@dataclass
class RoundLog:
    collapses: list[int] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))

    def report(self) -> dict[str, Any]:
        return {
            "rounds": len(self.collapses),
            "collapses": int(sum(self.collapses)),
            "collapses_per_round": list(self.collapses),
            "rejected": dict(self.rejected),
        }


def locked_vertices(xp: ModuleType, topo: Topology, F: Any, n: int) -> Any:
    """(n,) bool: vertices on a non-manifold edge, with several fans of faces (bow-ties), or on a
    face with a repeated vertex. Such vertices never move or merge."""
    locked = topo.vertex_fans() > 1
    locked[topo.EV[topo.non_manifold_edges].ravel()] = True
    bad = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
    locked[F[bad].ravel()] = True
    return locked


def eligible_edges(
    state: CollapseState, topo: Topology, bnd_v: Any, preserve_boundary: bool
) -> Eligible:
    """Edges with one or two faces and no locked end, oriented so that a pinned end, else a
    boundary end, survives. On the GPU without pinned vertices two kernels
    (``kernels/collapse.cu``) give the same arrays."""
    xp = state.xp
    if xp.__name__ == "cupy" and state.pinned is None:
        return _eligible_kernels(state, topo, bnd_v, preserve_boundary)
    EV = topo.EV.astype(xp.int64)
    efc = topo.edge_face_count
    u, v = EV[:, 0], EV[:, 1]
    ok = ((efc == 1) | (efc == 2)) & ~state.locked[u] & ~state.locked[v]
    bu, bv = bnd_v[u], bnd_v[v]
    if preserve_boundary:
        ok &= (efc == 2) & ~(bu & bv)
    pinned = state.pinned
    along = None
    if pinned is not None:
        pu, pv = pinned[u], pinned[v]
        if state.seams is not None and state.seam_lines:
            along = (efc == 2) & ~state.locked[u] & ~state.locked[v]
            along &= seam_line_edges(xp, state.seams, EV, bnd_v)
        ok &= ~(pu & pv)
        if preserve_boundary:
            ok &= ~((pu & bv) | (pv & bu))
    e = xp.nonzero(ok)[0]
    u, v, bu, bv = u[e], v[e], bu[e], bv[e]
    swap = bv & ~bu  # the boundary end survives
    snap = bu ^ bv
    if pinned is not None:
        pu, pv = pinned[u], pinned[v]
        swap = pv | (swap & ~pu)  # a pinned end survives before a boundary one
        snap |= pu | pv
    a = xp.where(swap, v, u)
    b = xp.where(swap, u, v)
    el = Eligible(e, a, b, snap, efc[e] == 1)
    if along is None:
        return el
    # along a seam line: either end may go onto the other (two candidates per edge)
    s = xp.nonzero(along)[0]
    sa, sb = EV[s, 0], EV[s, 1]
    on = xp.ones(2 * int(s.shape[0]), dtype=bool)
    return Eligible(
        xp.concatenate([el.edge, s, s]),
        xp.concatenate([el.a, sa, sb]),
        xp.concatenate([el.b, sb, sa]),
        xp.concatenate([el.snap, on]),
        xp.concatenate([el.boundary_edge, ~on]),
    )


def _eligible_kernels(
    state: CollapseState, topo: Topology, bnd_v: Any, preserve_boundary: bool
) -> Eligible:
    from ..kernels.loader import launch, load_kernel

    xp = state.xp
    EV = xp.ascontiguousarray(topo.EV, dtype=xp.int32)
    efc = xp.ascontiguousarray(topo.edge_face_count, dtype=xp.int64)
    bnd = xp.ascontiguousarray(bnd_v, dtype=bool)
    n_e = int(EV.shape[0])
    ok = xp.empty(n_e, dtype=bool)
    locked = xp.ascontiguousarray(state.locked, dtype=bool)
    flags = (EV, efc, locked, bnd, xp.int32(preserve_boundary), xp.int64(n_e), ok)
    launch(load_kernel("collapse", "eligible_edges"), n_e, flags, op="collapse")
    e = xp.nonzero(ok)[0]
    k = int(e.shape[0])
    a, b = xp.empty(k, dtype=xp.int64), xp.empty(k, dtype=xp.int64)
    snap, bedge = xp.empty(k, dtype=bool), xp.empty(k, dtype=bool)
    orient = (e, EV, efc, bnd, xp.int64(k), a, b, snap, bedge)
    launch(load_kernel("collapse", "orient_edges"), k, orient, op="collapse")
    return Eligible(e, a, b, snap, bedge)


def seam_line_edges(xp: ModuleType, seams: Any, EV: Any, bnd_v: Any) -> Any:
    """(E,) bool: the edges ``EV`` along which a collapse keeps the seams ``seams`` (sorted int64
    keys) a set of lines through the same junctions: the edge is a seam edge, both ends are on
    exactly two seam edges (inside one seam line: no junction, no end of a line) and off the
    boundary, and the ends' other seam neighbours differ (the line is not a loop of three edges,
    which a collapse would close into two coincident edges). Collapsing ``b`` onto ``a`` then
    turns the seam ``a-b-c`` into ``a-c``."""
    n = int(bnd_v.shape[0])
    if seams.shape[0] == 0:
        return xp.zeros(EV.shape[0], dtype=bool)
    lo, hi = seams >> SHIFT, seams & ((1 << SHIFT) - 1)
    ends = xp.concatenate([lo, hi])
    degree = counts(xp, ends, n)
    # the sum of each vertex's seam neighbours: at a vertex on two seam edges, the one that is
    # not ``x`` is the sum less ``x`` (float64 sums of ids below 2^31 are exact)
    other = xp.concatenate([hi, lo]).astype(xp.float64)
    nsum = xp.rint(sums(xp, ends, other, n))
    nsum = nsum.astype(xp.int64)
    u, v = EV[:, 0], EV[:, 1]
    is_seam = edge_lookup(xp, seams, (u << SHIFT) | v)[0]
    inner = (degree[u] == 2) & (degree[v] == 2) & ~bnd_v[u] & ~bnd_v[v]
    return is_seam & inner & (nsum[u] - v != nsum[v] - u)


def check_candidates(
    state: CollapseState,
    topo: Topology,
    bnd_v: Any,
    c: Candidates,
    max_edge_length: float | None,
) -> Any:
    """Check every candidate's preconditions on the current mesh (:mod:`.collapse_check`, with
    this module's thresholds). Returns ``reason (k,) int8``: 0 for a valid candidate, else
    ``1 + REASONS.index(why)``."""
    xp = state.xp
    rules = Rules(MIN_NORMAL_DOT, max_edge_length, min_quality=MIN_QUALITY)
    vf = vertex_faces(xp, state.F, state.n_vertices)
    checked = collapse_setup(state, topo, bnd_v, c)
    return check_collapses(xp, state.X, state.F, vf, checked, rules)


def collapse_setup(state: CollapseState, topo: Topology, bnd_v: Any, c: Candidates) -> Collapses:
    """The candidates as the check takes them: the common neighbours the link condition wants,
    the edges' opposite vertices and whether a boundary edge's face is an isolated triangle.
    On the GPU one kernel (:func:`_setup_kernel`) gives the same arrays."""
    xp = state.xp
    if xp.__name__ == "cupy":
        return _setup_kernel(state, topo, bnd_v, c)
    F = state.F
    a, b = c.a, c.b
    efc = topo.edge_face_count[c.edge].astype(xp.int64)
    is_bnd = efc == 1
    # the link condition's count: the opposite vertices, the virtual one on a boundary edge, less
    # the virtual one any two boundary vertices share
    expected = efc + is_bnd - (bnd_v[a] & bnd_v[b])
    # a boundary edge whose face has only boundary edges is an isolated triangle
    first = topo.ef_offsets[c.edge]
    fe = topo.FE[topo.ef_sides[first] // 3] // 2
    isolated = is_bnd & (topo.edge_face_count[fe] == 1).all(axis=1)
    second = xp.minimum(first + 1, topo.ef_sides.shape[0] - 1)
    fs = xp.stack([topo.ef_sides[first], topo.ef_sides[second]], axis=1)
    opp = F[fs // 3, (fs % 3 + 2) % 3]
    opp[:, 1] = xp.where(is_bnd, -1, opp[:, 1])  # a boundary edge has one opposite vertex
    return Collapses(a, b, c.p, expected, opp, isolated)


def _setup_kernel(state: CollapseState, topo: Topology, bnd_v: Any, c: Candidates) -> Collapses:
    from ..kernels.loader import launch, load_kernel

    xp = state.xp
    i64 = xp.int64
    k = len(c)
    expected, opp = xp.empty(k, dtype=i64), xp.empty((k, 2), dtype=i64)
    isolated = xp.empty(k, dtype=bool)
    args = (
        xp.ascontiguousarray(c.edge, dtype=i64),
        xp.ascontiguousarray(c.a, dtype=i64),
        xp.ascontiguousarray(c.b, dtype=i64),
        xp.ascontiguousarray(topo.edge_face_count, dtype=i64),
        xp.ascontiguousarray(bnd_v, dtype=bool),
        xp.ascontiguousarray(topo.ef_offsets, dtype=i64),
        xp.ascontiguousarray(topo.ef_sides, dtype=i64),
        xp.ascontiguousarray(topo.FE, dtype=xp.int32),
        xp.ascontiguousarray(state.F, dtype=i64),
        i64(topo.ef_sides.shape[0]),
        i64(k),
        expected,
        opp,
        isolated,
    )
    launch(load_kernel("collapse", "collapse_setup"), k, args, op="collapse")
    return Collapses(c.a, c.b, c.p, expected, opp, isolated)


def apply_collapses(state: CollapseState, topo: Topology, c: Candidates) -> CollapseState:
    """Apply collapses whose cavities are disjoint, all at once."""
    xp = state.xp
    n = state.n_vertices
    a, b = c.a, c.b
    X = state.X.copy()
    X[a] = c.p
    A = state.A
    if A is not None:
        A = A.copy()
        t = c.t[:, None]
        A[a] = (1.0 - t) * state.A[a] + t * state.A[b]
    Q = state.Q
    if Q is not None:
        Q = Q.copy()
        Q[a] = state.Q[a] + state.Q[b]
    U = state.U
    if U is not None:  # a pinned survivor keeps its zero row
        U = U.copy()
        merged = state.U[a] + state.U[b]
        U[a] = merged if state.pinned is None else xp.where(state.pinned[a][:, None], 0.0, merged)
    # faces of the collapsed edges go; the others are renamed b -> a
    gone = edge_faces_mask(topo, c.edge, state.n_faces)
    keep = xp.nonzero(~gone)[0]
    remap = xp.arange(n, dtype=xp.int64)
    remap[b] = a
    F = remap[state.F[keep]]
    C = None if state.C is None else merged_corners(state, topo, c, keep)
    seams = state.seams
    if seams is not None and seams.shape[0]:
        # b -> a in the seam keys: a-b goes, b-c becomes a-c
        lo, hi = remap[seams >> SHIFT], remap[seams & ((1 << SHIFT) - 1)]
        seams = unique(xp, edge_keys(xp, lo[lo != hi], hi[lo != hi]))
    return CollapseState(
        X, F, A, state.origin[keep], state.locked, Q, state.pinned, seams, state.seam_lines, U, C,
        made_by=(topo, keep, c.edge, c.b),
    )  # fmt: skip


def edge_faces_mask(topo: Topology, edge: Any, n_faces: int) -> Any:
    """``(n_faces,) bool``: the faces of the edges ``edge`` (one kernel thread per edge on the
    GPU)."""
    xp = topo.xp
    gone = xp.zeros(n_faces, dtype=bool)
    if xp.__name__ != "cupy":
        _, side = gather_rows(xp, topo.ef_offsets, topo.ef_sides, edge)
        gone[side // 3] = True
        return gone
    from ..kernels.loader import launch, load_kernel

    k = int(edge.shape[0])
    args = (
        xp.ascontiguousarray(edge, dtype=xp.int64),
        xp.ascontiguousarray(topo.ef_offsets, dtype=xp.int64),
        xp.ascontiguousarray(topo.ef_sides, dtype=xp.int64),
        xp.int64(k),
        gone,
    )
    launch(load_kernel("collapse", "mark_edge_faces"), k, args, op="collapse")
    return gone


def edge_end_values(state: CollapseState, topo: Topology, edge: Any, a: Any, b: Any) -> Any:
    """``(k, 4, 2)``: the corner texture coordinates (``state.C``) of ``a`` and ``b`` in the
    first face of each edge, then of ``a`` and ``b`` in its second face (the first again for a
    boundary edge). Across a seam the two faces lie in two charts."""
    xp = state.xp
    first = topo.ef_offsets[edge]
    second = xp.where(topo.edge_face_count[edge] > 1, first + 1, first)
    out = []
    for h in (topo.ef_sides[first], topo.ef_sides[second]):
        f = h // 3
        ca = xp.argmax(state.F[f] == a[:, None], axis=1)
        cb = xp.argmax(state.F[f] == b[:, None], axis=1)
        out += [state.C[f, ca], state.C[f, cb]]
    return xp.stack(out, axis=1)


def merged_corners(state: CollapseState, topo: Topology, c: Candidates, keep: Any) -> Any:
    """The surviving faces' corner texture coordinates after the collapses ``c``: a corner of
    ``b`` in the first face's chart (its value is ``b``'s there) and a corner of ``a`` in that
    chart take ``c.s``; a corner of ``b`` in another chart (across a seam line ``b`` goes along)
    takes ``a``'s value in the second face's chart; every other corner keeps its value. Charts
    are told apart by the values (exactly equal within a chart)."""
    xp = state.xp
    ends = edge_end_values(state, topo, c.edge, c.a, c.b)
    which = xp.full(state.n_vertices, -1, dtype=xp.int64)
    k = xp.arange(len(c), dtype=xp.int64)
    which[c.a] = k
    which[c.b] = k
    C = state.C[keep]
    near = xp.nonzero((which[state.F[keep]] >= 0).any(axis=1))[0]  # faces in the cavities
    Fk, Ck = state.F[keep[near]], C[near]
    i = which[Fk]
    at = i >= 0
    i = xp.where(at, i, 0)
    at_a = (at & (Fk == c.a[i]))[:, :, None]
    at_b = (at & (Fk == c.b[i]))[:, :, None]
    s = c.s[i]
    in_first_a = (Ck == ends[i, 0]).all(axis=2)[:, :, None]
    in_first_b = (Ck == ends[i, 1]).all(axis=2)[:, :, None]
    out = xp.where(at_a & in_first_a, s, Ck)
    C[near] = xp.where(at_b, xp.where(in_first_b, s, ends[i, 2]), out)
    return C


Planner = Callable[[CollapseState, Topology, Eligible], Candidates]


def plan_round(
    state: CollapseState, plan: Planner, preserve_boundary: bool, topo: Topology | None = None
) -> tuple[Topology, Any, Candidates] | None:
    """A round's start: ``(topology, boundary vertex mask, planned candidates)``, or None when no
    edge is eligible or the plan offers none."""
    if topo is None:
        topo = Topology.build(state.F, state.n_vertices)
    bnd_v = topo.boundary_vertices
    elig = eligible_edges(state, topo, bnd_v, preserve_boundary)
    if elig.edge.shape[0] == 0:
        return None
    cands = plan(state, topo, elig)
    if len(cands) == 0:
        return None
    return topo, bnd_v, cands


def within_budget(topo: Topology, cands: Candidates, key: Any, idx: Any, budget: int | None) -> Any:
    """The accepted candidates ``idx`` (increasing) cut, smallest key first, to those removing at
    most ``budget`` faces (all of them when that is more than they remove)."""
    xp = topo.xp
    if budget is None or budget >= 2 * int(idx.shape[0]):
        return idx
    if not cands.ranked:  # ranked: the keys increase with the index already
        idx = idx[xp.argsort(key[idx])]
    removes = topo.edge_face_count[cands.edge[idx]].astype(xp.int64)
    return idx[xp.cumsum(removes) <= budget]


def collapse_round(
    state: CollapseState,
    plan: Planner,
    log: RoundLog,
    *,
    preserve_boundary: bool,
    max_edge_length: float | None = None,
    budget: int | None = None,
    topo: Topology | None = None,
    passes: int = PASSES,
    focus: float | None = None,
) -> tuple[CollapseState, int, int]:
    """One round: plan, check every candidate, resolve conflicts in ``passes`` passes, apply.
    ``budget``: at most this many faces removed (the accepted collapses are taken in priority
    order until it is spent). ``focus`` (with a budget): only the ``focus * budget / 2``
    cheapest valid candidates take part in the resolution, so that the last rounds before the
    target run nearly in the sequential order instead of taking every local minimum among
    candidates far costlier than the few collapses still wanted.

    Each pass accepts the valid candidates left that hold the smallest key in their
    neighbourhood (:func:`.cavity.edge_local_minima`) and drops every candidate next to an
    accepted one (:func:`.cavity.blocked_by`); the passes are scatter-mins over the edge list
    and need no host synchronisation. Candidates are checked before the resolution, not after:
    the cheapest edges include many that stay invalid round after round (fold-overs and slivers
    on flat parts), and winners checked afterwards would block their neighbourhoods for nothing.

    Returns ``(state, collapses, valid candidates)``; rejections are added to ``log``."""
    xp = state.xp
    planned = plan_round(state, plan, preserve_boundary, topo)
    if planned is None:
        return state, 0, 0
    topo, bnd_v, cands = planned
    n = state.n_vertices
    EV = topo.EV.astype(xp.int64)
    reason = check_candidates(state, topo, bnd_v, cands, max_edge_length)
    counts_h = counts(xp, reason.astype(xp.int64), len(REASONS) + 1).tolist()
    for i, name in enumerate(REASONS):
        log.rejected[name] += int(counts_h[i + 1])
    n_valid = int(counts_h[0])
    if n_valid == 0:
        return state, 0, 0
    if cands.ranked:
        key = xp.arange(len(cands), dtype=xp.int64)
    else:
        key = priority_keys(xp, cands.priority)
    valid = reason == 0
    if focus is not None and budget is not None:
        # near the target: only the cheapest valid candidates, a few times the collapses left
        cap = max(1, math.ceil(focus * budget / 2))
        if n_valid > cap:
            kv = key[valid] if cands.ranked else xp.sort(key[valid])
            valid &= key <= kv[cap - 1]
    accepted = independent_collapses(xp, n, EV, cands.a, cands.b, key, valid, passes)
    idx = within_budget(topo, cands, key, xp.nonzero(accepted)[0], budget)
    n_acc = int(idx.shape[0])
    if n_acc == 0:
        return state, 0, n_valid
    return apply_collapses(state, topo, cands.take(idx)), n_acc, n_valid


def finish(state: CollapseState) -> tuple[Any, Any, Any, Any]:
    """Drop vertices no face uses: ``(X, F int32, A, vertex_take)``."""
    xp = state.xp
    used = xp.zeros(state.n_vertices, dtype=bool)
    used[state.F.ravel()] = True
    take = xp.nonzero(used)[0]
    renum = xp.cumsum(used) - 1
    F = renum[state.F].astype(xp.int32)
    A = None if state.A is None else state.A[take]
    return state.X[take], F, A, take
