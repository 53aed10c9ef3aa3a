"""Array code shared by the dynamic rounds (flip, split, relax), written once for NumPy and CuPy.

* :class:`EdgeTable`: the edges of a face array by a sort of 64-bit keys ``lo << 32 | hi``, with
  the (up to) two sides of every edge. Edges are numbered in key order, so the table doubles as a
  sorted dictionary: :func:`edge_lookup` finds any vertex pair by binary search.
* :func:`claim`: conflict resolution of cavities. Every candidate claims the elements of its
  cavity by a scatter-min of a unique packed ``(priority, candidate)`` int64 key; a candidate is
  accepted iff it owns everything it claimed. The accepted cavities are pairwise disjoint, at least
  one candidate (the global minimum key) is accepted in every round, and the result does not depend
  on the order in which the scatter runs (Luby-style independent sets; deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..graph import counts, ends_of, scatter_min

#: keys are ``lo << 32 | hi``: vertex ids below 2^31
SHIFT = 32


@dataclass(eq=False)
class EdgeTable:
    """Edges of ``F`` (m, 3) int64.

    ``key (E,)`` sorted int64; ``EV (E, 2)`` int64 min first; ``count (E,)`` faces per edge;
    ``s0, s1 (E,)`` the first two flat sides ``3 f + k`` of the edge in increasing order (``s1 =
    -1`` where the edge has one face); ``of_side (3 m,)`` the edge of every side. Side ``k`` of face
    ``f`` runs from ``F[f, k]`` to ``F[f, (k + 1) % 3]``."""

    key: Any
    EV: Any
    count: Any
    s0: Any
    s1: Any
    of_side: Any

    @property
    def n_edges(self) -> int:
        return int(self.key.shape[0])


def edge_keys(xp: ModuleType, a: Any, b: Any) -> Any:
    a = a.astype(xp.int64)
    b = b.astype(xp.int64)
    return (xp.minimum(a, b) << SHIFT) | xp.maximum(a, b)


def edge_table(xp: ModuleType, F: Any) -> EdgeTable:
    """The edge table of ``F``: one stable sort of the sides' keys; on the GPU
    :func:`_edge_table_hashed`, the same arrays."""
    if xp.__name__ == "cupy" and F.shape[0]:
        return _edge_table_hashed(xp, F)
    a = F.ravel()
    b = F[:, [1, 2, 0]].ravel()
    key = edge_keys(xp, a, b)
    n = int(key.shape[0])
    order = xp.argsort(key, kind="stable")
    sk = key[order]
    head = xp.ones(n, dtype=bool)
    head[1:] = sk[1:] != sk[:-1]
    eid = xp.cumsum(head) - 1
    of_side = xp.empty(n, dtype=xp.int64)
    of_side[order] = eid
    starts = xp.nonzero(head)[0]
    n_e = int(starts.shape[0])
    count = xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=xp.int64)]))
    ukey = sk[starts]
    EV = xp.stack([ukey >> SHIFT, ukey & ((1 << SHIFT) - 1)], axis=1)
    s0 = order[starts]
    s1 = xp.full(n_e, -1, dtype=xp.int64)
    two = count >= 2
    s1[two] = order[starts[two] + 1]
    return EdgeTable(ukey, EV, count, s0, s1, of_side)


def _edge_table_hashed(xp: ModuleType, F: Any) -> EdgeTable:
    """:func:`edge_table` without sorting every side: the sides' keys into a hash table that
    keeps each key's smallest side and side count (``kernels/topology.cu``, as
    :meth:`~workers.engine.topology.Topology.build` does), then a sort of the distinct keys only
    (about half as many, all different) numbers the edges in key order; one more kernel gives
    every side its edge and every edge its second side."""
    from ..topology import hash_sides, topology_kernel

    i64 = xp.int64
    _, table, slot_of_side, head = hash_sides(xp, F, 1 << SHIFT, "edge_table")
    n_sides = int(slot_of_side.shape[0])
    starts = xp.nonzero(head)[0]  # each edge's first side, in side order
    slot = slot_of_side[starts]
    order = xp.argsort(table[slot, 0])  # distinct keys: any sort is the stable one
    slot, s0 = slot[order], starts[order]
    n_e = int(s0.shape[0])
    ukey, count = table[slot, 0], table[slot, 2]
    slot_edge = xp.empty(table.shape[0], dtype=i64)
    slot_edge[slot] = xp.arange(n_e, dtype=i64)
    of_side = xp.empty(n_sides, dtype=i64)
    s1 = xp.full(n_e, 2**62, dtype=i64)
    topology_kernel("edge_table_sides", n_sides, slot_of_side, slot_edge, s0, i64(n_sides), of_side,
                    s1, op="edge_table")  # fmt: skip
    s1 = xp.where(count >= 2, s1, -1)
    EV = xp.stack([ukey >> SHIFT, ukey & ((1 << SHIFT) - 1)], axis=1)
    return EdgeTable(ukey, EV, count, s0, s1, of_side)


#: on the GPU a round's edge table follows the round (:class:`EdgeTables`) from this many faces
#: and is built again below it: a build is some fifteen kernels on a hash table, an update
#: several dozen array operations, so small meshes are bound by launching them. ``python -m
#: bench.delaunay``, rounds only, the two ways interleaved on one H200: 1.1M faces 0.023 and
#: 0.024 s followed against 0.018 and 0.021 s built; 4.4M 0.043 and 0.035 s against 0.043 and
#: 0.044 s; 17.8M 0.141 against 0.195 s (another call). On the CPU tables always follow (the
#: build sorts every side there: ``delaunay_flip`` at 278K faces 2.9 s against 3.3 s).
FOLLOW_MIN_FACES = 4_000_000


def follows(xp: ModuleType, n_faces: int) -> bool:
    """Whether the rounds on a mesh of ``n_faces`` faces should derive each round's edge table
    from the last one's (:data:`FOLLOW_MIN_FACES`)."""
    return xp.__name__ != "cupy" or n_faces >= FOLLOW_MIN_FACES


class EdgeTables:
    """The edge table of the face array the rounds work on, handed from round to round.

    ``tables(F)`` is the table of ``F``: the one held when ``F`` is the array it was made for
    (compared by identity: the rounds make new face arrays and never write into one that has a
    table), else built (:func:`edge_table`). With ``follow`` a round that made a new face array
    from the held table's hands over that array's table, derived from the old one
    (:meth:`derive`, e.g. :func:`~.flip.edges_after_flips`), so the next round finds it without a
    build. A table holds two sides an edge: on a mesh with an edge of three faces or more
    nothing is derived (the rounds never make such an edge, so the check runs once a build)."""

    def __init__(self, xp: ModuleType, follow: bool = False) -> None:
        self.xp = xp
        self.follow = follow
        self.F: Any = None
        self.E: Any = None
        self.builds = 0
        self._two: bool | None = None  # every edge of the held table has at most two faces

    def __call__(self, F: Any) -> EdgeTable:
        if F is not self.F:
            # let the old table go before the build (at 17.8M faces a table is about 1.5 GB)
            self.F = self.E = self._two = None
            self.E, self.F = edge_table(self.xp, F), F
            self.builds += 1
        return self.E

    def derive(self, E: EdgeTable, F: Any, make: Any) -> None:
        """Hold ``make()``, the table of the new face array ``F`` derived from ``E`` (the table
        the round read, held here), when following and every edge of ``E`` has at most two
        faces; ``make`` may return None (not derivable: the next call builds)."""
        if not self.follow or E is not self.E or F is self.F:
            return
        if self._two is None:
            self._two = E.n_edges == 0 or int(E.count.max()) <= 2
        if not self._two:
            return
        derived = make()
        if derived is not None:
            self.F, self.E = F, derived


def merged_numbering(
    xp: ModuleType, key: Any, new_key: Any, removed: Any = None
) -> tuple[Any, Any]:
    """Edge numbers in key order after new keys join the rows of ``key`` and the rows
    ``removed`` leave, without a sort of every key: the new keys (any order, none equal to a
    kept one) are sorted and placed among the old ones by binary search, and each old row moves
    up by the new keys before it (a prefix sum of their counts) and down by the rows removed
    before it. ``key`` (E,) sorted; ``removed`` sorted row numbers, or None.

    Returns ``(new_of_old (E,), new_of_new (K,))``, the numbers of the old rows (meaningless for
    a removed one) and of the new keys, in ``new_key``'s order. The tables that follow a round
    (:func:`~.flip.edges_after_flips`, :func:`~.split.edges_after_splits`,
    :func:`~.remesh_collapse.edges_after_collapses`) number their edges with it."""
    i64 = xp.int64
    n_e, k = int(key.shape[0]), int(new_key.shape[0])
    ids = xp.arange(n_e, dtype=i64)
    gone = removed is not None and int(removed.shape[0]) > 0
    new_of_old, new_of_new = ids, xp.empty(k, dtype=i64)
    if k:
        order = xp.argsort(new_key)
        new_sorted = new_key[order]
        at = xp.searchsorted(key, new_sorted)  # the old rows before each new key
        new_of_old = ids + xp.cumsum(xp.bincount(at, minlength=n_e + 1))[:n_e]
        pos = xp.arange(k, dtype=i64) + at
        if gone:
            pos -= xp.searchsorted(key[removed], new_sorted)
        new_of_new[order] = pos
    if gone:
        new_of_old = new_of_old - xp.searchsorted(removed, ids)
    return new_of_old, new_of_new


def edge_lookup(xp: ModuleType, table_keys: Any, q: Any) -> tuple[Any, Any]:
    """``(found (k,) bool, index (k,) int64)`` of the keys ``q`` in the sorted ``table_keys``."""
    n = int(table_keys.shape[0])
    if n == 0:
        return xp.zeros(q.shape[0], dtype=bool), xp.zeros(q.shape[0], dtype=xp.int64)
    idx = xp.minimum(xp.searchsorted(table_keys, q), n - 1)
    return table_keys[idx] == q, idx


def valence(xp: ModuleType, E: EdgeTable, n: int) -> Any:
    """(n,) int64 number of edges at every vertex."""
    return counts(xp, E.EV.ravel(), n)


def boundary_vertices(xp: ModuleType, E: EdgeTable, n: int) -> Any:
    """(n,) bool: the vertices on an edge with one face."""
    return ends_of(xp, E.EV, E.count == 1, n)


#: Luby passes per claim: later passes fill in around the earlier winners without a rebuild
CLAIM_PASSES = 6


def claim(xp: ModuleType, elements: Any, priority: Any, n_elements: int, passes: int = 1) -> Any:
    """Accepted mask (k,) of ``k`` candidates each claiming the elements ``elements (k, j)`` int64
    (``-1``: no element). ``priority (k,)`` int64 in ``[0, 2^31)``: smaller wins; ties go to the
    smaller candidate index. Accepted candidates never share an element. ``passes``: as in
    :func:`claim_pairs` (one: only the scatter-min winners)."""
    k, j = int(elements.shape[0]), int(elements.shape[1])
    owner = xp.repeat(xp.arange(k, dtype=xp.int64), j)
    flat = elements.ravel()
    valid = flat >= 0
    return claim_pairs(xp, owner[valid], flat[valid], priority, n_elements, passes)


def claim_pairs(
    xp: ModuleType,
    owner: Any,
    elements: Any,
    priority: Any,
    n_elements: int,
    passes: int = CLAIM_PASSES,
) -> Any:
    """:func:`claim` for ragged cavities: candidate ``owner[i]`` claims ``elements[i]`` (pairs,
    (p,) int64); ``priority (k,)`` as in :func:`claim`. Returns the accepted mask (k,).

    Pass one accepts every candidate that owns all it claimed (the scatter-min winners; the
    global minimum always wins). Each further pass drops the candidates that touch an element
    of an accepted one and lets the rest claim again, so a round accepts close to a maximal
    disjoint set (Luby) instead of only the first pass's local minima; a fixed number of passes,
    so no host round trip decides when to stop."""
    k = int(priority.shape[0])
    key = (priority.astype(xp.int64) << SHIFT) | xp.arange(k, dtype=xp.int64)
    if xp.__name__ == "cupy":
        return _claim_pairs_kernels(xp, owner, elements, key, n_elements, passes)
    big = xp.iinfo(xp.int64).max
    accepted = xp.zeros(k, dtype=bool)
    live = xp.ones(k, dtype=bool)
    pair_key = key[owner]
    # scatter-mins of 0/1 flags instead of bincounts and boolean masks: no device-to-host sync
    # (int32 flags: CuPy's minimum.at takes 32/64-bit types only)
    for _ in range(passes):
        in_play = live[owner]
        best = xp.full(n_elements, big, dtype=xp.int64)
        scatter_min(xp, best, elements, xp.where(in_play, pair_key, big))
        kept_all = xp.ones(k, dtype=xp.int32)
        scatter_min(xp, kept_all, owner, (~in_play | (best[elements] == pair_key)).astype(xp.int32))
        won = live & (kept_all == 1)
        accepted |= won
        free = xp.ones(n_elements, dtype=xp.int32)
        scatter_min(xp, free, elements, (~won[owner]).astype(xp.int32))
        untouched = xp.ones(k, dtype=xp.int32)
        scatter_min(xp, untouched, owner, free[elements])
        live &= ~won & (untouched == 1)
    return accepted


def _claim_pairs_kernels(
    xp: ModuleType, owner: Any, elements: Any, key: Any, n_elements: int, passes: int
) -> Any:
    """:func:`claim_pairs` on the GPU: five small kernels a pass (``kernels/collapse.cu``), the
    same scatter-mins, the same accepted set."""
    from ..kernels.loader import launch, load_kernel

    i64 = xp.int64
    k, n_p = int(key.shape[0]), int(owner.shape[0])
    owner = xp.ascontiguousarray(owner, dtype=i64)
    elements = xp.ascontiguousarray(elements, dtype=i64)
    live = xp.ones(k, dtype=xp.uint8)
    lost = xp.zeros(k, dtype=xp.uint8)
    won = xp.empty(k, dtype=xp.uint8)
    accepted = xp.zeros(k, dtype=xp.uint8)
    best = xp.empty(n_elements, dtype=i64)
    taken = xp.empty(n_elements, dtype=xp.uint8)
    big = xp.iinfo(xp.int64).max

    def run(name: str, n: int, *args: Any) -> None:
        launch(load_kernel("collapse", name), n, args, op="claim")

    for _ in range(passes):
        best.fill(big)
        taken.fill(0)
        run("claim_min", n_p, owner, elements, i64(n_p), key, live, best)
        run("claim_lost", n_p, owner, elements, i64(n_p), key, live, best, lost)
        run("claim_win", k, i64(k), live, lost, won, accepted)
        run("claim_take", n_p, owner, elements, i64(n_p), won, taken)
        run("claim_drop", n_p, owner, elements, i64(n_p), taken, live)
    return accepted.astype(bool)


def float_priority(xp: ModuleType, x: Any, *, larger_first: bool) -> Any:
    """int64 priorities in ``[0, 2^31)`` ordered like the non-negative float32 values ``x`` (the
    bit pattern of a non-negative float is monotone in its value)."""
    bits = xp.maximum(x, 0.0).astype(xp.float32).view(xp.int32).astype(xp.int64)
    return ((1 << 31) - 1 - bits) if larger_first else bits


#: bits of :func:`bucket_priority`'s hashed tie-break
HASH_BITS = 20


def bucket_priority(xp: ModuleType, level: Any, ids: Any) -> Any:
    """int64 priorities in ``[0, 2^31)``: ``level (k,)`` (non-negative ints, smaller first, clipped
    to 2^11 - 1) then a multiplicative hash of ``ids (k,)`` int64 (Knuth's 2654435761).

    A strict order by a smooth quantity (edge length) makes the accepted set of a round the local
    minima of a smooth field: few per round, so many rounds. Coarse levels with hashed ties keep
    the order roughly (short edges still go first) and give Luby's random-priority rounds, which
    accept a constant fraction of the candidates each time. Deterministic on both backends."""
    h = ((ids.astype(xp.int64) * 2654435761) >> 7) & ((1 << HASH_BITS) - 1)
    return (xp.clip(level.astype(xp.int64), 0, (1 << (31 - HASH_BITS)) - 1) << HASH_BITS) | h


def opposite_corner(F: Any, side: Any) -> Any:
    """Vertex facing the flat side ``3 f + k``."""
    return F[side // 3, (side % 3 + 2) % 3]


def side_ends(F: Any, side: Any) -> tuple[Any, Any]:
    f, k = side // 3, side % 3
    return F[f, k], F[f, (k + 1) % 3]


def angle_at(xp: ModuleType, p: Any, q: Any, r: Any) -> Any:
    """Angle (k,) at ``p`` of the triangles ``(p, q, r)``, ``atan2(|u x w|, u . w)``."""
    u, w = q - p, r - p
    return xp.arctan2(xp.linalg.norm(xp.cross(u, w), axis=1), (u * w).sum(axis=1))


def sin_min_angle(xp: ModuleType, p: Any, q: Any, r: Any) -> Any:
    """Sine (k,) of the smallest angle of the triangles ``(p, q, r)`` (k, 3): twice the area over
    the product of the two longest sides (the smallest angle lies between them and is at most 60
    degrees, where the sine is increasing, so comparing sines compares angles); 0 where
    degenerate."""
    l2 = xp.stack(
        [((q - p) ** 2).sum(axis=1), ((r - q) ** 2).sum(axis=1), ((p - r) ** 2).sum(axis=1)]
    )
    two_area = xp.linalg.norm(xp.cross(q - p, r - p), axis=1)
    den = xp.sqrt(l2.max(axis=0) * (l2.sum(axis=0) - l2.max(axis=0) - l2.min(axis=0)))
    return xp.where(den > 0, two_area / xp.where(den > 0, den, 1.0), 0.0)


def normals(xp: ModuleType, V: Any, F: Any) -> Any:
    """(m, 3) float64 ``(b - a) x (c - a)`` (twice the area times the unit normal)."""
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    return xp.cross(b - a, c - a)


def compact_vertices(xp: ModuleType, F: Any, n: int) -> tuple[Any, Any]:
    """``(F renumbered, kept (k,) int64)``: drop vertices no face uses, order kept."""
    used = xp.zeros(n, dtype=bool)
    used[F.ravel()] = True
    kept = xp.nonzero(used)[0]
    renum = xp.cumsum(used) - 1
    return renum[F], kept


@dataclass(eq=False)
class Surface:
    """A mesh between dynamic rounds.

    ``V (n, 3)`` float64; ``F (m, 3)`` int64; ``A (n, k)`` float64 stacked vertex attributes or
    ``None``; ``face_src (m,)`` int64 the input face each face descends from (its attributes);
    ``locked (n,)`` bool vertices that never move nor disappear (boundary, non-manifold, feature);
    ``feature (K,)`` sorted int64 keys of the feature edges; ``seam (S,)`` sorted int64 keys of
    the texture seam edges among them (kept apart so the result can tell where its seams are), or
    None."""

    V: Any
    F: Any
    A: Any
    face_src: Any
    locked: Any
    feature: Any
    seam: Any = None

    @property
    def n_vertices(self) -> int:
        return int(self.V.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.F.shape[0])
