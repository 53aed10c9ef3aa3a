"""Edge flip rounds: the cavity of a flip is the two faces of an interior manifold edge.

A flip replaces the faces ``(a, b, c)`` and ``(b, a, d)`` of the edge ``a-b`` by ``(a, d, c)`` and
``(b, c, d)``: the edge ``c-d`` takes the place of ``a-b``, the face ids stay (the first face keeps
the attributes of ``(a, b, c)``, the second those of ``(b, a, d)``) and both new faces keep the
orientation of the pair. The vertex set and the Euler characteristic do not change.

A round: (1) every edge gets its quad and a reason code (:data:`REASONS`) from the
preconditions below; (2) the caller picks candidates and priorities; (3) :func:`~._edges.claim`
keeps disjoint cavities (two faces, or the four vertices where a criterion reads valences);
(4) accepted flips that would create the same new edge keep only the first; (5) all flips are
written at once.

Preconditions, per edge (checked here, never assumed):

* ``boundary``: the edge has one face or three or more (boundary and non-manifold edges are never
  flipped), or its two faces walk it the same way (inconsistent orientation), or ``c == d``;
* ``feature``: the dihedral angle between the two faces exceeds ``feature_angle``;
* ``exists``: ``c-d`` is already an edge (the flip would make a duplicate, non-manifold edge);
* ``fold``: a new face would be degenerate (area below ``1e-10`` of its longest side squared) or its
  normal would point against either old face's normal (a fold-over, or a non-convex quad);
* ``seam``: the edge is one of the caller's ``seams`` (texture seams: a flip would make two faces
  that straddle two charts of the atlas).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ._edges import (
    SHIFT,
    EdgeTable,
    EdgeTables,
    angle_at,
    boundary_vertices,
    bucket_priority,
    claim,
    edge_keys,
    edge_lookup,
    float_priority,
    merged_numbering,
    opposite_corner,
    side_ends,
    sin_min_angle,
    valence,
)

#: reason codes of :func:`flip_quads`; 0 means the flip is allowed
REASONS = ("ok", "boundary", "feature", "exists", "fold", "seam")
OK, BOUNDARY, FEATURE, EXISTS, FOLD, SEAM = range(6)

#: degrees: a valence flip may lower the smallest angle of its quad only while it stays above this
MIN_ANGLE = 10.0


@dataclass(eq=False)
class Quads:
    """Per edge (E,) int64: the faces ``f0 = (a, b, c)`` and ``f1 = (b, a, d)`` (``-1`` where the
    edge is not an interior manifold edge) and the reason code of its flip."""

    a: Any
    b: Any
    c: Any
    d: Any
    f0: Any
    f1: Any
    reason: Any


def flip_quads(
    xp: ModuleType,
    V: Any,
    F: Any,
    E: EdgeTable,
    feature_angle: float = 180.0,
    seams: Any | None = None,
) -> Quads:
    """The quad around every edge and whether it may be flipped (``V`` float64, ``F`` int64).

    ``feature_angle`` in degrees; 180 turns the feature test off. ``seams``: sorted int64 keys of
    edges never flipped (reason ``seam``, before any other but ``boundary``), or None. On the GPU
    one kernel thread per edge (``kernels/flip.cu``), the same quads and reasons bit for bit."""
    if xp.__name__ == "cupy":
        return _flip_quads_kernel(xp, V, F, E, feature_angle, seams)
    m2 = E.count == 2
    s0 = E.s0
    s1 = xp.where(m2, E.s1, E.s0)
    a, b = side_ends(F, s0)
    c = opposite_corner(F, s0)
    p, q = side_ends(F, s1)
    d = opposite_corner(F, s1)
    interior = m2 & (p == b) & (q == a) & (c != d)
    reason = xp.where(interior, OK, BOUNDARY)
    if seams is not None and seams.shape[0]:
        reason = xp.where((reason == OK) & edge_lookup(xp, seams, E.key)[0], SEAM, reason)
    Pa, Pb, Pc, Pd = V[a], V[b], V[c], V[d]
    n0 = xp.cross(Pb - Pa, Pc - Pa)
    n1 = xp.cross(Pa - Pb, Pd - Pb)
    if feature_angle < 180.0:
        cosang = (n0 * n1).sum(axis=1)
        lim = math.cos(math.radians(feature_angle))
        norms = xp.linalg.norm(n0, axis=1) * xp.linalg.norm(n1, axis=1)
        feature = cosang < lim * norms
        reason = xp.where((reason == OK) & feature, FEATURE, reason)
    found, _ = edge_lookup(xp, E.key, edge_keys(xp, c, d))
    reason = xp.where((reason == OK) & found, EXISTS, reason)
    reason = xp.where((reason == OK) & quad_folds(xp, Pa, Pb, Pc, Pd, n0, n1), FOLD, reason)
    f0 = xp.where(interior, s0 // 3, -1)
    f1 = xp.where(interior, s1 // 3, -1)
    return Quads(a, b, c, d, f0, f1, reason)


def quad_folds(xp: ModuleType, Pa: Any, Pb: Any, Pc: Any, Pd: Any, n0: Any, n1: Any) -> Any:
    """(k,) bool: the flip's new faces ``(a, d, c)``, ``(b, c, d)`` are degenerate (area below
    ``1e-10`` of the longest side squared) or turned against either old normal ``n0``, ``n1``
    (``kernels/flip.cu``: ``quad_folds``, the same expressions)."""
    m0 = xp.cross(Pd - Pa, Pc - Pa)  # (a, d, c)
    m1 = xp.cross(Pc - Pb, Pd - Pb)  # (b, c, d)
    cd2 = ((Pc - Pd) ** 2).sum(axis=1)
    longest0 = xp.maximum(
        xp.maximum(((Pd - Pa) ** 2).sum(axis=1), ((Pc - Pa) ** 2).sum(axis=1)), cd2
    )
    longest1 = xp.maximum(
        xp.maximum(((Pc - Pb) ** 2).sum(axis=1), ((Pd - Pb) ** 2).sum(axis=1)), cd2
    )
    degenerate = (xp.linalg.norm(m0, axis=1) <= 1e-10 * longest0) | (
        xp.linalg.norm(m1, axis=1) <= 1e-10 * longest1
    )
    against = (
        ((m0 * n0).sum(axis=1) <= 0)
        | ((m0 * n1).sum(axis=1) <= 0)
        | ((m1 * n0).sum(axis=1) <= 0)
        | ((m1 * n1).sum(axis=1) <= 0)
    )
    return degenerate | against


def _flip_quads_kernel(
    xp: ModuleType, V: Any, F: Any, E: EdgeTable, feature_angle: float, seams: Any | None
) -> Quads:
    from ..kernels.loader import launch, load_kernel

    n_e = E.n_edges
    i64 = xp.int64
    out = [xp.empty(n_e, dtype=i64) for _ in range(7)]
    no_seams = seams is None or seams.shape[0] == 0
    seam_keys = xp.zeros(1, dtype=i64) if no_seams else xp.ascontiguousarray(seams, dtype=i64)
    use_feature = feature_angle < 180.0
    lim = math.cos(math.radians(feature_angle)) if use_feature else 0.0
    args = (
        xp.ascontiguousarray(V, dtype=xp.float64),
        xp.ascontiguousarray(F, dtype=i64),
        xp.ascontiguousarray(E.key, dtype=i64),
        xp.ascontiguousarray(E.count, dtype=i64),
        xp.ascontiguousarray(E.s0, dtype=i64),
        xp.ascontiguousarray(E.s1, dtype=i64),
        i64(n_e),
        xp.int32(use_feature),
        xp.float64(lim),
        seam_keys,
        i64(0 if no_seams else seam_keys.shape[0]),
        *out,
    )
    launch(load_kernel("flip", "flip_quads"), n_e, args, op="flip")
    return Quads(*out)


def opposite_angle_sums(xp: ModuleType, V: Any, Q: Quads) -> tuple[Any, Any]:
    """``(old, new)`` (E,): the angles facing the edge now (at ``c`` and ``d``) and after a flip
    (at ``a`` and ``b``); an edge is locally Delaunay when ``old <= pi``. On the GPU one kernel
    thread per edge (``kernels/flip.cu``), equal to the array code but in the last bit (3-5 % of
    the edges differ by an ulp: CuPy's norm and cross round otherwise): the array code's eight
    cross products, norms and arctangents over every edge took 44 ms a round at 17.8M faces, the
    kernel 1-2 ms (``python -m bench.delaunay --profile``, H100)."""
    if xp.__name__ == "cupy":
        from ..kernels.loader import launch, load_kernel

        n_e = int(Q.a.shape[0])
        old, new = xp.empty(n_e, dtype=xp.float64), xp.empty(n_e, dtype=xp.float64)
        args = (
            xp.ascontiguousarray(V, dtype=xp.float64),
            *(xp.ascontiguousarray(x, dtype=xp.int64) for x in (Q.a, Q.b, Q.c, Q.d)),
            xp.int64(n_e),
            old,
            new,
        )
        launch(load_kernel("flip", "opposite_angle_sums"), n_e, args, op="flip")
        return old, new
    return opposite_angle_sums_array(xp, V, Q)


def opposite_angle_sums_array(xp: ModuleType, V: Any, Q: Quads) -> tuple[Any, Any]:
    """:func:`opposite_angle_sums` as array code (the NumPy twin, and on CuPy the kernel's
    reference)."""
    Pa, Pb, Pc, Pd = V[Q.a], V[Q.b], V[Q.c], V[Q.d]
    old = angle_at(xp, Pc, Pa, Pb) + angle_at(xp, Pd, Pa, Pb)
    new = angle_at(xp, Pa, Pc, Pd) + angle_at(xp, Pb, Pc, Pd)
    return old, new


def select_flips(
    xp: ModuleType,
    Q: Quads,
    candidate: Any,
    priority: Any,
    n_faces: int,
    n_vertices: int,
    *,
    claim_vertices: bool = False,
) -> Any:
    """Edge ids (k,) int64 of an accepted, pairwise disjoint set of flips among ``candidate``
    (E,) bool; ``priority`` (E,) int64 in ``[0, 2^31)``, smaller first. Claims the two faces, or
    with ``claim_vertices`` the four vertices (for criteria that read valences). Two accepted
    flips never create the same edge."""
    cand = xp.nonzero(candidate)[0]
    if cand.shape[0] == 0:
        return cand
    if claim_vertices:
        elements = xp.stack([Q.a[cand], Q.b[cand], Q.c[cand], Q.d[cand]], axis=1)
        won = claim(xp, elements, priority[cand], n_vertices)
    else:
        elements = xp.stack([Q.f0[cand], Q.f1[cand]], axis=1)
        won = claim(xp, elements, priority[cand], n_faces)
    acc = cand[won]
    if claim_vertices or acc.shape[0] < 2:
        return acc  # disjoint vertex sets cannot make the same edge
    # two quads with the same opposite corners: keep the first by priority (then edge id)
    new_key = edge_keys(xp, Q.c[acc], Q.d[acc])
    order = xp.lexsort(xp.stack([acc, priority[acc], new_key]))
    sk = new_key[order]
    head = xp.ones(int(acc.shape[0]), dtype=bool)
    head[1:] = sk[1:] != sk[:-1]
    return xp.sort(acc[order[head]])


def apply_flips(xp: ModuleType, F: Any, Q: Quads, edges: Any) -> Any:
    """``F`` with the flips of ``edges`` applied (a copy; face ids and orientation kept)."""
    F = F.copy()
    a, b, c, d = Q.a[edges], Q.b[edges], Q.c[edges], Q.d[edges]
    F[Q.f0[edges]] = xp.stack([a, d, c], axis=1)
    F[Q.f1[edges]] = xp.stack([b, c, d], axis=1)
    return F


def edges_after_flips(xp: ModuleType, E: EdgeTable, Q: Quads, edges: Any) -> EdgeTable:
    """The edge table of ``apply_flips(xp, F, Q, edges)`` from ``E``, ``F``'s, without building
    it again: the same arrays as :func:`~._edges.edge_table` of the new faces, bit for bit
    (``E`` itself for no flips). ``Q`` is :func:`flip_quads` of ``E``. The caller makes sure
    every edge of ``F`` has at most two faces (the table holds two sides an edge; with an edge
    of three or more, build the table again; the flips never make one).

    A flip keeps the number of edges and changes six sides: the edge ``a-b`` becomes ``c-d``,
    and each of the four edges around the quad moves its side in one old face to a side of a
    new face. Edges stay numbered in key order: the flipped edges' new keys, sorted, are merged
    with the others (already in order) by binary searches, and a permutation renumbers the rows
    and the sides; no hash table and no sort of every edge (``delaunay_flip`` at 17.8M faces,
    rounds only: 0.141 s against 0.195 s with a table built each round, H200)."""
    k = int(edges.shape[0])
    if k == 0:
        return E
    i64 = xp.int64
    n_e = E.n_edges
    edges = xp.sort(edges)
    c, d = Q.c[edges], Q.d[edges]
    f0, f1 = Q.f0[edges], Q.f1[edges]
    i, j = E.s0[edges] % 3, E.s1[edges] % 3  # a -> b is side i of f0, b -> a side j of f1
    side = E.of_side
    e_bc, e_ca = side[3 * f0 + (i + 1) % 3], side[3 * f0 + (i + 2) % 3]
    e_ad, e_db = side[3 * f1 + (j + 1) % 3], side[3 * f1 + (j + 2) % 3]
    # the new faces (a, d, c) and (b, c, d): their sides' edges, in the old numbering
    of_side = side.copy()
    for f, row in ((f0, (e_ad, edges, e_ca)), (f1, (e_bc, edges, e_db))):
        for r, edge in enumerate(row):
            of_side[3 * f + r] = edge
    # each edge around the quad trades its old side for the new one (an edge with its two
    # faces in two flips trades both: one in s0, the other in s1)
    moved = xp.concatenate([e_bc, e_ca, e_ad, e_db])
    old = xp.concatenate([3 * f0 + (i + 1) % 3, 3 * f0 + (i + 2) % 3,
                          3 * f1 + (j + 1) % 3, 3 * f1 + (j + 2) % 3])  # fmt: skip
    new = xp.concatenate([3 * f1, 3 * f0 + 2, 3 * f0, 3 * f1 + 2])
    in_s0 = E.s0[moved] == old
    # no boolean index (each waits for the device): the other field's writes go to a spare row
    spare = xp.full(1, -1, dtype=i64)
    s0, s1 = xp.concatenate([E.s0, spare]), xp.concatenate([E.s1, spare])
    s0[xp.where(in_s0, moved, n_e)] = new
    s1[xp.where(in_s0, n_e, moved)] = new
    s0, s1 = s0[:n_e], s1[:n_e]
    s0[edges], s1[edges] = 3 * f0 + 1, 3 * f1 + 1
    touched = xp.concatenate([moved, edges])
    two = E.count[touched] == 2
    lo = xp.where(two, xp.minimum(s0[touched], s1[touched]), s0[touched])
    hi = xp.where(two, xp.maximum(s0[touched], s1[touched]), s1[touched])
    s0[touched], s1[touched] = lo, hi
    # renumber in key order: the kept keys keep their order, the new ones (distinct: flip_quads
    # refuses an edge c-d that exists, select_flips two flips that make the same) go between
    new_key = edge_keys(xp, c, d)
    new_id, of_new = merged_numbering(xp, E.key, new_key, edges)
    new_id[edges] = of_new
    key = E.key.copy()
    key[edges] = new_key
    old_of_new = xp.empty(n_e, dtype=i64)
    old_of_new[new_id] = xp.arange(n_e, dtype=i64)
    key = key[old_of_new]
    EV = xp.stack([key >> SHIFT, key & ((1 << SHIFT) - 1)], axis=1)
    return EdgeTable(key, EV, E.count[old_of_new], s0[old_of_new], s1[old_of_new], new_id[of_side])


def quad_min_sines(xp: ModuleType, V: Any, Q: Quads) -> tuple[Any, Any]:
    """``(old, new)`` (E,): the sine of the quad's smallest angle now and after a flip."""
    Pa, Pb, Pc, Pd = V[Q.a], V[Q.b], V[Q.c], V[Q.d]
    old = xp.minimum(sin_min_angle(xp, Pa, Pb, Pc), sin_min_angle(xp, Pb, Pa, Pd))
    new = xp.minimum(sin_min_angle(xp, Pa, Pd, Pc), sin_min_angle(xp, Pb, Pc, Pd))
    return old, new


def keeps_angles(xp: ModuleType, V: Any, Q: Quads, sin_bound: float) -> Any:
    """(E,) bool: the flip leaves the quad's smallest angle at least ``min(before, bound)``
    (``sin_bound``: the sine of the bound), so a flip never makes a sliver out of a good quad
    nor a worse sliver out of a bad one."""
    old, new = quad_min_sines(xp, V, Q)
    return new >= xp.minimum(old, sin_bound)


def valence_deviations(xp: ModuleType, Q: Quads, val: Any, on_boundary: Any) -> tuple[Any, Any]:
    """``(before, after)`` (E,): the summed distance of the quad's four valences from their
    targets (6 inside, 4 on the boundary) now and after a flip (``a``, ``b`` lose an edge,
    ``c``, ``d`` gain one)."""
    target = xp.where(on_boundary, 4, 6)

    def dev(v: Any, delta: int) -> Any:
        return xp.abs(val[v] + delta - target[v])

    before = dev(Q.a, 0) + dev(Q.b, 0) + dev(Q.c, 0) + dev(Q.d, 0)
    after = dev(Q.a, -1) + dev(Q.b, -1) + dev(Q.c, 1) + dev(Q.d, 1)
    return before, after


def valence_flip_round(
    xp: ModuleType,
    V: Any,
    F: Any,
    feature: Any,
    min_angle: float = MIN_ANGLE,
    tables: EdgeTables | None = None,
) -> tuple[Any, int]:
    """One round of flips toward valence 6 inside and 4 on the boundary (Botsch and Kobbelt
    2004): an allowed flip of a non-feature edge (``feature``: sorted edge keys) is a candidate
    when it lowers the summed deviation of its four vertices from their targets and keeps the
    quad's smallest angle at least ``min(before, min_angle)`` degrees (:func:`keeps_angles`);
    candidates claim their four vertices (valences are read), largest gain first. Returns
    ``(F, flips)``. ``tables``: the edge tables handed from round to round
    (:class:`~._edges.EdgeTables`: they get the new faces' table, :func:`edges_after_flips`)."""
    tables = tables or EdgeTables(xp)
    E = tables(F)
    n = int(V.shape[0])
    Q = flip_quads(xp, V, F, E)
    val = valence(xp, E, n)
    on_boundary = boundary_vertices(xp, E, n)
    sin_bound = math.sin(math.radians(min_angle))
    cand, gain = _valence_candidates(xp, V, E, Q, feature, val, on_boundary, sin_bound)
    # largest gain first, hashed ties (:func:`~._edges.bucket_priority`)
    priority = bucket_priority(xp, 8 - gain, xp.arange(int(gain.shape[0]), dtype=xp.int64))
    acc = select_flips(xp, Q, cand, priority, int(F.shape[0]), n, claim_vertices=True)
    return _flipped(xp, tables, E, F, Q, acc), int(acc.shape[0])


def _flipped(xp: ModuleType, tables: EdgeTables, E: EdgeTable, F: Any, Q: Quads, acc: Any) -> Any:
    """``F`` with the flips ``acc`` applied; ``tables`` get the new faces' table."""
    if acc.shape[0] == 0:
        return F
    out = apply_flips(xp, F, Q, acc)
    tables.derive(E, out, lambda: edges_after_flips(xp, E, Q, acc))
    return out


def _valence_candidates(
    xp: ModuleType,
    V: Any,
    E: EdgeTable,
    Q: Quads,
    feature: Any,
    val: Any,
    on_boundary: Any,
    sin_bound: float,
) -> tuple[Any, Any]:
    """``(candidate (E,) bool, gain (E,) int64)`` of :func:`valence_flip_round`; on the GPU one
    kernel thread per edge (``kernels/flip.cu``), the same candidates and gains."""
    if xp.__name__ == "cupy":
        return _valence_candidates_kernel(xp, V, E, Q, feature, val, on_boundary, sin_bound)
    before, after = valence_deviations(xp, Q, val, on_boundary)
    gain = before - after
    is_feature = edge_lookup(xp, feature, E.key)[0]
    cand = (Q.reason == OK) & ~is_feature & (gain > 0)
    idx = xp.nonzero(cand)[0]
    sub = Quads(Q.a[idx], Q.b[idx], Q.c[idx], Q.d[idx], Q.f0[idx], Q.f1[idx], Q.reason[idx])
    cand[idx] = keeps_angles(xp, V, sub, sin_bound)
    return cand, gain


def _valence_candidates_kernel(
    xp: ModuleType, V: Any, E: EdgeTable, Q: Quads, feature: Any, val: Any, bnd: Any, sin: float
) -> tuple[Any, Any]:
    from ..kernels.loader import launch, load_kernel

    n_e = E.n_edges
    i64 = xp.int64
    cand = xp.empty(n_e, dtype=xp.uint8)
    gain = xp.empty(n_e, dtype=i64)
    n_feat = int(feature.shape[0])
    args = (
        xp.ascontiguousarray(V, dtype=xp.float64),
        *(xp.ascontiguousarray(x, dtype=i64) for x in (Q.a, Q.b, Q.c, Q.d, Q.reason, E.key)),
        i64(n_e),
        xp.ascontiguousarray(feature, dtype=i64) if n_feat else xp.zeros(1, dtype=i64),
        i64(n_feat),
        xp.ascontiguousarray(val, dtype=i64),
        bnd.astype(xp.uint8),
        xp.float64(sin),
        cand,
        gain,
    )
    launch(load_kernel("flip", "valence_flip_candidates"), n_e, args, op="flip")
    return cand.astype(bool), gain


def angle_flip_round(
    xp: ModuleType,
    V: Any,
    F: Any,
    feature: Any,
    bound: float,
    max_dihedral: float,
    tables: EdgeTables | None = None,
) -> tuple[Any, int]:
    """One round of flips that raise the smallest angle of a quad whose smallest angle is below
    ``bound`` degrees: an allowed flip of an edge that is not in ``feature`` (sorted edge keys)
    and whose dihedral angle is at most ``max_dihedral`` degrees (a flip across a fold changes
    the surface) is a candidate when the quad's smallest angle after it is larger and its four
    vertices stay as near their valence targets as before (:func:`valence_flip_round`'s
    deviation, boundary vertices aiming at 4, does not grow); candidates claim their four
    vertices, worst quad first. Returns ``(F, flips)``. ``tables``: as in
    :func:`valence_flip_round`."""
    tables = tables or EdgeTables(xp)
    E = tables(F)
    n = int(V.shape[0])
    Q = flip_quads(xp, V, F, E, max_dihedral, feature)
    old, new = quad_min_sines(xp, V, Q)
    before, after = valence_deviations(xp, Q, valence(xp, E, n), boundary_vertices(xp, E, n))
    cand = (Q.reason == OK) & (old < math.sin(math.radians(bound))) & (new > old)
    cand &= after <= before
    priority = float_priority(xp, old, larger_first=False)
    acc = select_flips(xp, Q, cand, priority, int(F.shape[0]), n, claim_vertices=True)
    return _flipped(xp, tables, E, F, Q, acc), int(acc.shape[0])
