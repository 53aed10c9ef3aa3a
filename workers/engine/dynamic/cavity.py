"""Cavity conflict resolution: which of many wanted collapses may run together in one round.

A collapse proposes to rewrite a region (its cavity: the faces around the ends of its edge), with
a priority. Two collapses may run in the same round only if their cavities share no face and
neither moves a vertex the other reads; then they can be filled in parallel without locks.

The resolution (:func:`independent_collapses`) is a Luby-style independent set built from
scatter-mins over the edge list only:

1. every candidate gets a unique integer key, its rank in priority order (:func:`priority_keys`:
   stable sort, so ties go to the lower candidate index and the result is deterministic);
2. every candidate writes its key into its two ends, and the minimum spreads ``reach`` edges
   (:func:`edge_local_minima`);
3. a candidate is accepted iff it holds the minimum at both ends;
4. the candidates near an accepted one drop out (:func:`blocked_by`); the rest repeat from 2 (a
   few passes: each accepts the local minima among the remaining, which is what a sequential
   greedy pass in priority order would accept from the same static priorities).

Splits and flips claim their faces or vertices explicitly instead
(:func:`~workers.engine.dynamic._edges.claim_pairs`, the same scheme over claim pairs).

Everything is array code on ``xp`` (NumPy or CuPy); on the GPU the passes run as a few small
kernels (``kernels/collapse.cu``) that accept the same set.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..graph import expand_counts, scatter_min

#: larger than any key
_NO_CLAIM = 2**62
#: passes of conflict resolution per round of collapses: each accepts the valid local minima
#: among the candidates not yet blocked by an accepted collapse
PASSES = 4


def gather_rows(xp: ModuleType, offsets: Any, values: Any, rows: Any) -> tuple[Any, Any]:
    """The CSR rows ``rows`` concatenated: ``(owner, value)`` where ``owner[k]`` is the position in
    ``rows`` whose row the value ``value[k]`` comes from (rows in order, values in CSR order)."""
    rows = rows.astype(xp.int64)
    start = offsets[rows]
    counts = offsets[rows + 1] - start
    owner = expand_counts(xp, counts)
    if owner.shape[0] == 0:
        return owner, values[:0]
    first = xp.cumsum(counts) - counts  # output slot where each row starts
    pos = xp.arange(owner.shape[0], dtype=xp.int64) - first[owner]
    return owner, values[start[owner] + pos]


def priority_keys(xp: ModuleType, priority: Any) -> Any:
    """(n,) int64 unique keys: the rank of each priority, smallest first, ties by index."""
    order = xp.argsort(priority, kind="stable")
    key = xp.empty(priority.shape[0], dtype=xp.int64)
    key[order] = xp.arange(priority.shape[0], dtype=xp.int64)
    return key


def neighbourhood_min(xp: ModuleType, EV: Any, val: Any) -> Any:
    """(n,) the smallest of ``val (n,)`` over each vertex and its neighbours through the edges
    ``EV (e, 2) int64``: two scatter-mins over the edge list."""
    out = val.copy()
    scatter_min(xp, out, EV[:, 0], val[EV[:, 1]])
    scatter_min(xp, out, EV[:, 1], val[EV[:, 0]])
    return out


def edge_local_minima(
    xp: ModuleType, n_vertices: int, EV: Any, a: Any, b: Any, key: Any, alive: Any, reach: int = 1
) -> Any:
    """(k,) bool: the alive candidate edges ``(a, b)`` whose key is the smallest among the alive
    candidates with an end within ``reach`` edges of ``a`` or ``b``.

    With ``reach=1`` two candidates conflict when an end of one is an end or a neighbour of an
    end of the other (then their cavities, the faces around their ends, share a face). The
    relation is symmetric, so a candidate that holds the minimum of its own ends after one
    scatter-min over the ends and one over the edges (:func:`neighbourhood_min`) conflicts with
    no other such candidate. This is weaker than disjoint closed one-rings (``reach=2``): two
    collapses may share a neighbour, which is still safe (each
    one's faces and the positions they read are untouched by the other), and about twice as many
    collapses fit in a round."""
    k = xp.where(alive, key, _NO_CLAIM)
    best = xp.full(n_vertices, _NO_CLAIM, dtype=xp.int64)
    scatter_min(xp, best, a, k)
    scatter_min(xp, best, b, k)
    for _ in range(reach):
        best = neighbourhood_min(xp, EV, best)
    return alive & (best[a] == key) & (best[b] == key)


def blocked_by(
    xp: ModuleType, n_vertices: int, EV: Any, a: Any, b: Any, accepted: Any, reach: int = 1
) -> Any:
    """(k,) bool: candidates ``(a, b)`` with an end within ``reach`` edges of an accepted
    candidate's end (they conflict with it)."""
    mark = xp.ones(n_vertices, dtype=xp.int32)  # CuPy's minimum.at takes 32/64-bit types only
    z = xp.where(accepted, xp.int32(0), xp.int32(1))
    scatter_min(xp, mark, a, z)
    scatter_min(xp, mark, b, z)
    for _ in range(reach):
        mark = neighbourhood_min(xp, EV, mark)
    return (mark[a] == 0) | (mark[b] == 0)


def independent_collapses(
    xp: ModuleType,
    n_vertices: int,
    EV: Any,
    a: Any,
    b: Any,
    key: Any,
    alive: Any,
    passes: int = PASSES,
    reach: int = 1,
) -> Any:
    """(k,) bool: the collapses of the candidate edges ``(a, b)`` that run together in one round,
    in ``passes`` passes: each accepts the alive candidates that hold the smallest key within
    ``reach`` edges of their ends (:func:`edge_local_minima`) and drops every candidate that is
    near an accepted one (:func:`blocked_by`). Scatter-mins over the edge list ``EV``, no host
    synchronisation; on the GPU the same scatter-mins in a few small kernels a pass
    (``kernels/collapse.cu``), the same accepted set. ``reach=1`` is what the cavities need;
    ``reach=2`` keeps the closed one-rings of the ends apart too, fewer collapses per round but
    each nearer the sequential order (the remesher's: on fandisk with injected slivers the
    remeshed minimum angle is 18.4 degrees with it, 8.5 with ``reach=1``)."""
    if xp.__name__ == "cupy":
        return _independent_collapses_kernels(xp, n_vertices, EV, a, b, key, alive, passes, reach)
    alive = alive.copy()
    accepted = xp.zeros(int(a.shape[0]), dtype=bool)
    for _ in range(passes):
        won = edge_local_minima(xp, n_vertices, EV, a, b, key, alive, reach)
        accepted |= won
        alive &= ~won & ~blocked_by(xp, n_vertices, EV, a, b, accepted, reach)
    return accepted


def _independent_collapses_kernels(
    xp: ModuleType,
    n_vertices: int,
    EV: Any,
    a: Any,
    b: Any,
    key: Any,
    alive: Any,
    passes: int,
    reach: int,
) -> Any:
    from ..kernels.loader import launch, load_kernel

    def kernel(name: str) -> Any:
        return load_kernel("collapse", name)

    k, n_e = int(a.shape[0]), int(EV.shape[0])
    i64 = xp.int64
    a = xp.ascontiguousarray(a, dtype=i64)
    b = xp.ascontiguousarray(b, dtype=i64)
    key = xp.ascontiguousarray(key, dtype=i64)
    EV = xp.ascontiguousarray(EV, dtype=i64)
    live = alive.astype(xp.uint8)
    accepted = xp.zeros(k, dtype=xp.uint8)
    best = xp.empty(n_vertices, dtype=i64)
    mark = xp.ones(n_vertices, dtype=i64)  # 0 at the ends of accepted candidates

    def spread(val: Any) -> Any:
        for _ in range(reach):
            out = val.copy()
            launch(kernel("edge_min"), n_e, (EV, i64(n_e), val, out), op="collapse")
            val = out
        return val

    for _ in range(passes):
        best.fill(_NO_CLAIM)
        launch(kernel("claim_ends"), k, (a, b, key, live, i64(k), best), op="collapse")
        near = spread(best)
        args = (a, b, key, near, i64(k), live, accepted, mark)
        launch(kernel("take_minima"), k, args, op="collapse")
        launch(kernel("drop_blocked"), k, (a, b, spread(mark), i64(k), live), op="collapse")
    return accepted.astype(bool)
