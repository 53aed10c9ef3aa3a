"""How operations carry corner attributes (texture coordinates, hard normals, colours) and
materials.

Operations work on positions and faces; most know nothing of corners. The pipeline wraps every
step of a mesh that has corner attributes or materials (:func:`carry`):

- An operation that keeps the faces (same ``F``: smoothing, normals, curvature, ...) keeps the
  corners as they are, exactly.
- An operation that changes the faces: a face it kept as it was (a weld, a repair: found by its
  corner positions, :func:`match_faces`) gets its own values back; each corner of a rebuilt face
  takes its value from the input surface within the same *chart* (faces joined across edges
  where the corner values and the material agree: one piece of the texture atlas), at the
  closest point of that chart's faces (barycentric interpolation of the input corners). The
  chart is that of the input face the result face was made from, which rebuilding operations
  carry as a face attribute (:data:`ORIGIN`); failing that, of the input face nearest to the
  face's centroid. A new vertex inside a chart (a split, a subdivision, a collapse) gets the
  interpolated value; a face never mixes two charts, so no triangle spans the atlas.
- Rebuilt faces also take the ``material`` (and any face attribute the operation dropped,
  unless its attribute flow says it removed it on purpose) of the face they came from.
- Tangents (``tangent``, ``(m, 3, 4)``) are derived from positions, normals and texture
  coordinates: they make no seam of their own, kept faces keep theirs exactly, and the
  corners of rebuilt faces get tangents computed anew (:mod:`.tangents`), never the
  interpolated, stale ones; without texture coordinates they are left out. The report's
  ``texture.tangents`` says which.
- A non-finite corner value (NaN, inf) reaches only the corners interpolated from it: where
  another face is as close (a shared vertex or edge), its finite values are taken, and a
  corner of weight 0 takes no part.
- While the operation runs, :func:`seam_edges` gives it the seam edges of its input (edges where
  the two faces' corner values or materials differ, and the mesh's boundary is not among them).
  Dynamic operations keep them: ``collapse_short_edges`` locks their vertices, ``decimate``
  too except along a seam line (a seam vertex between two seam edges may go onto its neighbour
  on the line: ``simplify_seams``), ``isotropic_remesh`` treats them as feature edges (split at
  midpoints, never collapsed or flipped), ``delaunay_flip`` never flips them. So seams stay
  where the texture has them. Each also tells the seams of its result
  (:func:`workers.engine.dynamic.seams.recording_kept`): where an operation gives no origin,
  each of the result's own charts then takes its input chart by a vote of its faces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from .backend import to_numpy
from .mesh import TriMesh

_SEAMS: ContextVar[Any | None] = ContextVar("tessera_seam_edges", default=None)


def seam_edges(xp: Any) -> Any | None:
    """The seam edges of the mesh the running operation was given, as ``(k, 2)`` int64 vertex
    pairs (smaller index first, on ``xp``), or None when its mesh has no corner attributes or
    materials (then there is nothing to keep)."""
    seams = _SEAMS.get()
    if seams is None:
        return None
    return xp.asarray(seams)


@contextmanager
def keeping_seams(edges: Any | None) -> Iterator[None]:
    """Operations run inside see ``edges`` as :func:`seam_edges`."""
    token = _SEAMS.set(edges)
    try:
        yield
    finally:
        _SEAMS.reset(token)


# ---------------------------------------------------------------------------- carrying
def carries(mesh: TriMesh) -> bool:
    """Whether ``mesh`` has anything the pipeline must carry across operations."""
    return bool(mesh.corner_attrs) or mesh.materials is not None


#: corner attributes computed from the others (tangents: from positions, normals and
#: texture coordinates): no seam or chart of their own, and recomputed where faces are rebuilt
DERIVED = ("tangent",)


def _host(a: Any) -> np.ndarray:
    return np.asarray(to_numpy(a))


def charts(
    F: np.ndarray,
    corners: dict[str, np.ndarray],
    material: np.ndarray | None,
    seams: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each face's chart (faces joined across edges shared by exactly two faces whose corner
    values at both ends, and whose materials, agree; or, given ``seams`` as vertex pairs, across
    every such edge that is not one of them) and the seam edges (edges shared by two faces that
    disagree), as ``(chart per face, (k, 2) int64 vertex pairs, smaller first)``."""
    from .topology import Topology

    m = F.shape[0]
    if m == 0:
        return np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    F = F.astype(np.int64)
    n = int(F.max()) + 1
    topo = Topology.build(F, n)
    EV = np.asarray(topo.EV, np.int64)
    counts = np.asarray(topo.edge_face_count)
    # edges of exactly two faces, not a degenerate face's repeated corner
    e = np.flatnonzero((counts == 2) & (EV[:, 0] != EV[:, 1]))
    first = np.asarray(topo.ef_offsets)[e]
    sides = np.asarray(topo.ef_sides)
    h0, h1 = sides[first], sides[first + 1]  # face = h // 3, side = h % 3
    lo, hi = EV[e, 0], EV[e, 1]
    f0, c0 = h0 // 3, h0 % 3
    f1, c1 = h1 // 3, h1 % 3
    # the corner of each face at the edge's smaller-index end and at its other end (side k
    # runs from corner k to corner k + 1)
    n0 = (c0 + 1) % 3
    n1 = (c1 + 1) % 3
    s0 = np.where(F[f0, c0] == lo, c0, n0)
    e0 = np.where(F[f0, c0] == lo, n0, c0)
    s1 = np.where(F[f1, c1] == lo, c1, n1)
    e1 = np.where(F[f1, c1] == lo, n1, c1)
    same = np.ones(e.size, dtype=bool)
    for values in corners.values():
        v = values.reshape(m, 3, -1)
        same &= (v[f0, s0] == v[f1, s1]).all(axis=1) & (v[f0, e0] == v[f1, e1]).all(axis=1)
    if material is not None:
        same &= material[f0] == material[f1]
    if seams is not None and seams.size:
        seams = seams.astype(np.int64)
        marked = np.isin(lo * n + hi, seams.min(axis=1) * n + seams.max(axis=1))
        same &= ~marked
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(int(same.sum())), (f0[same], f1[same])), shape=(m, m))
    _, label = connected_components(g, directed=False)
    seams = np.stack([lo[~same], hi[~same]], axis=1)
    return label.astype(np.int64), seams[np.lexsort((seams[:, 1], seams[:, 0]))]


def closest_on_triangles(
    p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of triangles ``(a, b, c)`` to points ``p`` (rows paired), as squared
    distances and barycentric coordinates (Ericson, Real-Time Collision Detection 5.1.5, by
    Voronoi region: a point at a triangle's vertex gets exactly that vertex's coordinates)."""
    ab, ac, ap = b - a, c - a, p - a
    d1 = (ab * ap).sum(1)
    d2 = (ac * ap).sum(1)
    bp = p - b
    d3 = (ab * bp).sum(1)
    d4 = (ac * bp).sum(1)
    cp = p - c
    d5 = (ab * cp).sum(1)
    d6 = (ac * cp).sum(1)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    n = p.shape[0]
    w = np.zeros((n, 3))
    done = np.zeros(n, dtype=bool)

    def put(mask: np.ndarray, u: Any, v: Any, t: Any) -> None:
        nonlocal done
        mask = mask & ~done
        w[mask, 0] = u[mask] if np.ndim(u) else u
        w[mask, 1] = v[mask] if np.ndim(v) else v
        w[mask, 2] = t[mask] if np.ndim(t) else t
        done |= mask

    with np.errstate(divide="ignore", invalid="ignore"):
        put((d1 <= 0) & (d2 <= 0), 1.0, 0.0, 0.0)
        put((d3 >= 0) & (d4 <= d3), 0.0, 1.0, 0.0)
        put((d6 >= 0) & (d5 <= d6), 0.0, 0.0, 1.0)
        t = d1 / (d1 - d3)
        put((vc <= 0) & (d1 >= 0) & (d3 <= 0), 1 - t, t, 0.0)
        t = d2 / (d2 - d6)
        put((vb <= 0) & (d2 >= 0) & (d6 <= 0), 1 - t, 0.0, t)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        put((va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0), 0.0, 1 - t, t)
        den = va + vb + vc
        v = vb / den
        t = vc / den
        put(np.ones(n, dtype=bool), 1 - v - t, v, t)
    bad = ~np.isfinite(w).all(axis=1)  # a degenerate triangle: its first vertex
    w[bad] = (1.0, 0.0, 0.0)
    q = w[:, :1] * a + w[:, 1:2] * b + w[:, 2:] * c
    return ((p - q) ** 2).sum(1), w


#: input faces tried for each output corner and centroid (nearest by centroid)
CANDIDATES = 16
#: output corners handled at once (bounds the memory of the candidate arrays)
CHUNK = 1 << 16


def _nearest(
    tree: Any,
    points: np.ndarray,
    tri: tuple[np.ndarray, np.ndarray, np.ndarray],
    chart: np.ndarray,
    want: np.ndarray | None,
    avoid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each point, the input face (among its nearest by centroid, of chart ``want`` when
    given) closest to it, and the point's barycentric coordinates on it; -1 where none of
    the candidates is of that chart. Of faces equally close (a point at a vertex or on an edge
    they share), one not marked in ``avoid`` (per input face) is taken when there is one."""
    A, B, C = tri
    k = min(CANDIDATES, A.shape[0])
    face = np.full(points.shape[0], -1, dtype=np.int64)
    bary = np.zeros((points.shape[0], 3))
    if avoid is not None:  # as close: within rounding of the input's size
        near = 1e-6 * float(np.ptp(np.concatenate([A, B, C]), axis=0).max(initial=0.0))
    for s in range(0, points.shape[0], CHUNK):
        p = points[s : s + CHUNK]
        _, cand = tree.query(p, k=k)
        cand = cand.reshape(p.shape[0], k)
        rows = np.repeat(p, k, axis=0)
        flat = cand.ravel()
        d2, w = closest_on_triangles(rows, A[flat], B[flat], C[flat])
        d2 = d2.reshape(p.shape[0], k)
        if want is not None:
            d2 = np.where(chart[cand] == want[s : s + CHUNK, None], d2, np.inf)
        best = np.argmin(d2, axis=1)
        if avoid is not None:
            rows_ = np.arange(p.shape[0])
            other = np.argmin(np.where(avoid[cand], np.inf, d2), axis=1)
            tie = np.sqrt(d2[rows_, other]) <= np.sqrt(d2[rows_, best]) + near
            best = np.where(tie, other, best)
        ok = np.isfinite(d2[np.arange(p.shape[0]), best])
        pick = np.arange(p.shape[0]) * k + best
        face[s : s + CHUNK] = np.where(ok, cand[np.arange(p.shape[0]), best], -1)
        bary[s : s + CHUNK] = w.reshape(-1, 3)[pick]
    return face, bary


def rows_kept(before: TriMesh, after: TriMesh) -> bool:
    """Whether every face of ``after`` has, in order, the corner positions of the face of
    ``before`` in its row (an exact weld: vertices joined, faces and positions kept): then
    :func:`match_faces` would match each face to its own row with no turn. One comparison on
    the meshes' backend."""
    if after.F.shape != before.F.shape:
        return False
    return bool(after.xp.array_equal(after.V[after.F], before.V[before.F]))


def _carried_by_op(before: TriMesh, after: TriMesh) -> bool:
    """Whether the operation carried ``before``'s corner attributes and materials itself."""
    return after.corner_attrs.keys() >= before.corner_attrs.keys() and (
        after.materials is not None or before.materials is None
    )


def _same_faces(before: TriMesh, after: TriMesh) -> bool:
    return after.F is before.F or (
        after.F.shape == before.F.shape and bool(after.xp.array_equal(after.F, before.F))
    )


def carried_in_place(before: TriMesh, after: TriMesh) -> bool:
    """Whether :func:`carry` keeps ``before``'s corners as they are, with no search of the
    surface: the operation carried them, left the faces as they were, or kept every face in
    its row (:func:`rows_kept`)."""
    return _carried_by_op(before, after) or _same_faces(before, after) or rows_kept(before, after)


def match_faces(
    V0: np.ndarray, F0: np.ndarray, V1: np.ndarray, F1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each face of ``(V1, F1)``, a face of ``(V0, F0)`` with the same three corner
    positions in the same turning order (-1 where none), and the turn: output corner ``c`` is
    input corner ``(c + turn) % 3``. Faces a re-indexing kept (a weld, a repair, a component
    taken) are found, so they keep their values exactly; where several input faces match (a
    face and its twin), the one at the same row is taken when it matches, else the twin of the
    same rank (the i-th such output face takes the i-th input one; the first when there are
    more outputs), so that twins an operation reordered each keep their own values."""
    m0, m1 = F0.shape[0], F1.shape[0]
    if m0 == 0 or m1 == 0:
        return np.full(m1, -1, np.int64), np.zeros(m1, np.int64)
    rows = np.ascontiguousarray(np.concatenate([V0, V1]).astype(np.float64))
    _, pid = np.unique(rows.view(np.dtype((np.void, 24))).ravel(), return_inverse=True)
    pid = pid.ravel()
    P0 = pid[F0]
    P1 = pid[F1 + V0.shape[0]]

    def turned(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        turn = np.argmin(P, axis=1)
        idx = (turn[:, None] + np.arange(3)[None, :]) % 3
        return np.take_along_axis(P, idx, axis=1), turn

    K0, t0 = turned(P0)
    K1, t1 = turned(P1)
    keys = np.concatenate([K0, K1]).astype(np.int64)
    _, kid = np.unique(keys, axis=0, return_inverse=True)
    kid = kid.ravel()
    k0, k1 = kid[:m0], kid[m0:]
    src = np.full(m1, -1, np.int64)
    order = np.argsort(k0, kind="stable")
    pos = np.searchsorted(k0[order], k1)
    pos = np.minimum(pos, m0 - 1)
    hit = k0[order][pos] == k1
    src[hit] = order[pos[hit]]
    # twins (faces on the same corners) in order: the i-th of a key's output faces takes the
    # i-th of its input faces (so twins that moved keep their own values), the first when the
    # output has more of them
    count0 = np.bincount(k0, minlength=int(kid.max()) + 1)
    rank1 = _rank(k1)
    more = hit & (rank1 > 0) & (rank1 < count0[k1])
    src[more] = order[pos[more] + rank1[more]]
    rows_same = np.arange(min(m0, m1))
    same = k0[rows_same] == k1[rows_same]
    src[rows_same[same]] = rows_same[same]
    turn = np.zeros(m1, np.int64)
    ok = src >= 0
    # output corner c sits at turned position c - t1; the input corner there is t0 + (c - t1)
    turn[ok] = (t0[src[ok]] - t1[ok]) % 3
    return src, turn


def _rank(k: np.ndarray) -> np.ndarray:
    """Each element's rank among the elements of equal value before it (0 for the first)."""
    order = np.argsort(k, kind="stable")
    ks = k[order]
    start = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    first = np.repeat(start, np.diff(np.r_[start, ks.size]))
    rank = np.empty(k.size, np.int64)
    rank[order] = np.arange(k.size) - first
    return rank


def transfer(
    before: TriMesh,
    after: TriMesh,
    seams: np.ndarray | None = None,
    origin: np.ndarray | None = None,
    chart: np.ndarray | None = None,
) -> tuple[TriMesh, np.ndarray, bool]:
    """``after`` (the result of an operation on ``before`` that rebuilt the faces) with corner
    attributes, materials and the face attributes it dropped taken from ``before``'s surface,
    chart by chart (see the module docstring), and the face of ``before`` each of its faces
    came from. That face is given as ``origin`` (carried by the operation: see
    :data:`ORIGIN`); without it, it is the face nearest the centroid, and given the result's
    ``seams`` (what a dynamic operation kept), each of the result's own charts (its faces
    joined across every other edge) takes the input chart most of its faces' centroids lie on,
    so that a thin face beside a seam whose centroid falls just across it still takes its own
    side's values. Faces the operation kept as they were (:func:`match_faces`) keep their
    values exactly. ``chart``: ``before``'s charts when the caller has them. The last value marks
    the faces that were rebuilt (not kept as they were).

    Where every face kept its row and its corner positions in order (:func:`rows_kept`: an
    exact weld), that match is the identity: the values stay as they are, on the mesh's
    backend, without the search."""
    if rows_kept(before, after):
        m = after.n_faces
        face_attrs = dict(after.face_attrs)
        face_attrs.update({k: v for k, v in before.face_attrs.items() if k not in face_attrs})
        kept = carried(before, after, face_attrs, dict(before.corner_attrs))
        return kept, np.arange(m, dtype=np.int64), np.zeros(m, dtype=bool)
    V0 = _host(before.V).astype(np.float64)
    F0 = _host(before.F).astype(np.int64)
    V1 = _host(after.V).astype(np.float64)
    F1 = _host(after.F).astype(np.int64)
    corners = {k: _host(v) for k, v in before.corner_attrs.items()}
    src, turn = match_faces(V0, F0, V1, F1)
    rebuilt = src < 0
    if not rebuilt.any():  # nothing rebuilt (no texture report: see carry)
        face = np.repeat(src, 3)
        corner = ((np.arange(3)[None, :] + turn[:, None]) % 3).ravel()
        bary = np.zeros((F1.shape[0] * 3, 3))
        bary[np.arange(bary.shape[0]), corner] = 1.0
        return _assemble(before, after, corners, face, bary, src), src, rebuilt
    if chart is None:
        chart, _ = _charts_of(before)
    found = {k: v for k, v in corners.items() if k not in DERIVED}
    home, face, bary = _find(V0, F0, V1, F1, found, chart, seams, origin)
    kept = np.flatnonzero(src >= 0)
    if kept.size:
        corner = (np.arange(3)[None, :] + turn[kept, None]) % 3
        at = (kept[:, None] * 3 + np.arange(3)[None, :]).ravel()
        face[at] = np.repeat(src[kept], 3)
        bary[at] = 0.0
        bary[at, corner.ravel()] = 1.0
        home[kept] = src[kept]
    return _assemble(before, after, corners, face, bary, home), home, rebuilt


def _find(
    V0: np.ndarray,
    F0: np.ndarray,
    V1: np.ndarray,
    F1: np.ndarray,
    corners: dict[str, np.ndarray],
    chart: np.ndarray,
    seams: np.ndarray | None,
    origin: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each output face's home (the input face it was made from, else the one nearest its
    centroid), and each output corner's input face and barycentric coordinates there, within
    the chart (see :func:`transfer`). Corners at one vertex in one chart are found once."""
    from scipy.spatial import cKDTree

    # faces with a non-finite corner value: where a face without one is as close, it is taken
    # (so a NaN corner does not reach every corner at its vertex)
    bad = np.zeros(F0.shape[0], dtype=bool)
    for values in corners.values():
        bad |= ~np.isfinite(values.reshape(F0.shape[0], -1)).all(axis=1)
    avoid = bad if bad.any() else None
    tri = (V0[F0[:, 0]], V0[F0[:, 1]], V0[F0[:, 2]])
    tree = cKDTree((tri[0] + tri[1] + tri[2]) / 3.0)
    if origin is not None:  # the operation said where each face came from
        home = origin
        side = chart[home]
    else:
        home, _ = _nearest(tree, V1[F1].mean(axis=1), tri, chart, None)
        side = chart[home]
    if origin is None and seams is not None:
        own, _ = charts(F1, {}, None, seams)
        # the input chart under most of each output chart's faces (by count, ties to the lower)
        pairs = own * (int(chart.max()) + 1) + side
        uniq, count = np.unique(pairs, return_counts=True)
        o, c = uniq // (int(chart.max()) + 1), uniq % (int(chart.max()) + 1)
        best = np.lexsort((c, -count, o))
        first = best[np.r_[True, o[best][1:] != o[best][:-1]]]
        vote = np.zeros(int(own.max()) + 1, dtype=np.int64)
        vote[o[first]] = c[first]
        side = vote[own]
    # one query per (vertex, chart) pair: the corners of a vertex inside one chart agree
    pair = F1.ravel() * (int(chart.max()) + 1) + np.repeat(side, 3)
    uniq, back = np.unique(pair, return_inverse=True)
    back = back.ravel()
    corner_pos = V1[uniq // (int(chart.max()) + 1)]
    want = uniq % (int(chart.max()) + 1)
    face, bary = _nearest(tree, corner_pos, tri, chart, want, avoid)
    miss = np.flatnonzero(face < 0)  # none of the nearest faces is of the chart: its own
    if miss.size:
        by_chart = want[miss]
        order = np.argsort(by_chart, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(by_chart[order]) != 0])
        for first, last in zip(starts, np.r_[starts[1:], order.size], strict=True):
            rows = miss[order[first:last]]
            faces = np.flatnonzero(chart == by_chart[order[first]])
            sub = (tri[0][faces], tri[1][faces], tri[2][faces])
            one = np.zeros(faces.size, dtype=np.int64)
            got, w = _nearest(cKDTree((sub[0] + sub[1] + sub[2]) / 3.0), corner_pos[rows], sub,
                              one, None, None if avoid is None else avoid[faces])  # fmt: skip
            face[rows], bary[rows] = faces[got], w
    return home, face[back], bary[back]


def _assemble(
    before: TriMesh,
    after: TriMesh,
    corners: dict[str, np.ndarray],
    face: np.ndarray,
    bary: np.ndarray,
    attrs_from: np.ndarray,
) -> TriMesh:
    """``after`` with corner values interpolated at ``(face, bary)`` per corner, and the face
    attributes it lacks from ``before``'s faces ``attrs_from``."""
    F1 = after.F
    xp = after.xp
    out_corners: dict[str, Any] = {}
    for name, values in corners.items():
        v = values.reshape(values.shape[0], 3, -1).astype(np.float64)
        exact = bary.max(axis=1) == 1.0  # a kept corner: its value bit for bit
        # a corner of weight 0 takes no part: its value, finite or not, never reaches the result
        # (a NaN or inf corner spreads only to the corners interpolated from it)
        w = bary[:, :, None]
        with np.errstate(invalid="ignore", over="ignore"):
            got = np.where(w != 0.0, v[face] * w, 0.0).sum(axis=1)
        got[exact] = v[face[exact], np.argmax(bary[exact], axis=1)]
        if name == "normal" or name.startswith("normal"):
            norm = np.linalg.norm(got, axis=1, keepdims=True)
            unit = np.where(norm > 0, got / np.where(norm > 0, norm, 1.0), got)
            got = np.where(exact[:, None], got, unit)
        got = got.reshape(F1.shape[0], 3, *values.shape[2:]).astype(values.dtype)
        out_corners[name] = xp.asarray(got)
    face_attrs = dict(after.face_attrs)
    for name, a in before.face_attrs.items():
        if name not in face_attrs:
            face_attrs[name] = xp.asarray(_host(a)[attrs_from])
    return carried(before, after, face_attrs, out_corners)


def carried(
    before: TriMesh, after: TriMesh, face_attrs: dict[str, Any], corners: dict[str, Any]
) -> TriMesh:
    """``after`` (its geometry, vertex attributes, topology and what it dropped) with
    ``face_attrs``, ``corners`` and ``before``'s materials."""
    out = TriMesh(
        after.V,
        after.F,
        after.vertex_attrs,
        face_attrs,
        source=after.source,
        _topology=after._topology,
        corner_attrs=corners,
        materials=before.materials,
    )
    out.dropped = after.dropped
    return out


#: the face attribute that tells a rebuilding operation's result which input face each face
#: was made from: operations carry face attributes from the face each new face was made of (a
#: split's halves, a flip's pair, a collapse's survivors, a subdivision's children)
ORIGIN = "__tessera_origin"


def run_carrying(op: Any, backend: str, mesh: TriMesh, params: Any) -> Any:
    """Run ``op`` (an :class:`~workers.engine.ops.registry.Operation`) on ``mesh``, which has
    corner attributes or materials, and carry them across (see the module docstring); the
    operation's report gains ``texture`` where it rebuilt the faces of a textured mesh."""
    from .dynamic import seams as dynamic_seams
    from .ops.registry import OpKind

    xp = mesh.xp
    seams = None
    work = mesh
    label = None
    rebuilds = op.kind in (OpKind.dynamic, OpKind.remesh)
    if rebuilds:  # the input's charts, found once for the operation and for the carrying
        work = mesh.with_attrs(face={ORIGIN: xp.arange(mesh.n_faces, dtype=xp.int64)})
        label, found = _charts_of(mesh)
        if op.kind is OpKind.dynamic:
            seams = xp.asarray(found)
    with keeping_seams(seams), dynamic_seams.recording_kept() as kept:
        out = op.implementation(backend)(work, params)
    after = out.mesh
    origin = None
    if rebuilds:  # never left on a mesh (an operation may have made it a vertex attribute)
        got = after.face_attrs.get(ORIGIN)
        if got is not None and got.shape == (after.n_faces,):
            origin = _host(got).astype(np.int64)
            if origin.size and (origin.min() < 0 or origin.max() >= mesh.n_faces):
                origin = None
        after = after.with_attrs()
        after.face_attrs.pop(ORIGIN, None)
        after.vertex_attrs.pop(ORIGIN, None)
        after.dropped = out.mesh.dropped
    kept_seams = xp.concatenate(kept) if kept else None
    new_normals = "vertex_normals" in op.outputs
    out.mesh, texture = carry(mesh, after, kept_seams, new_normals, origin, label)
    _drop_undeclared(op, params, mesh, after, out.mesh)
    if texture is not None:
        out.report = {**out.report, "texture": texture}
    return out


def _drop_undeclared(op: Any, params: Any, before: TriMesh, raw: TriMesh, out: TriMesh) -> None:
    """Leave out of ``out`` the face attributes :func:`carry` brought back that the operation
    removed on purpose (its attribute flow says they are gone, or are no longer on the faces:
    ``merge`` without ``keep_parts`` drops ``part``, ``dual_mesh`` turns face attributes into
    vertex ones); ``material`` always stays with the materials."""
    from .errors import OpParamsError

    names = {k: "vertex" for k in before.vertex_attrs}
    names.update({k: "face" for k in before.face_attrs})
    try:
        declared = op.attributes_after(params, names)
    except OpParamsError:  # the flow could not be worked out here: keep what carry made
        return
    for k in list(out.face_attrs):
        if (
            k != "material"
            and k in before.face_attrs
            and k not in raw.face_attrs
            and declared.get(k) != "face"
        ):
            del out.face_attrs[k]


def carry(
    before: TriMesh,
    after: TriMesh,
    seams: Any | None = None,
    new_normals: bool = False,
    origin: np.ndarray | None = None,
    chart: np.ndarray | None = None,
) -> tuple[TriMesh, dict[str, Any] | None]:
    """``after`` with what ``before`` carried: kept as it is where the faces are the same,
    transferred from the surface where they changed; with, when they changed and there are
    texture coordinates, what the change did to the texture (:func:`texture_report`).
    ``seams``: the result's seam edges as the operation kept them, when it says (see
    :func:`transfer`). An operation that computed new vertex normals (``new_normals``: it
    declares ``vertex_normals`` among its outputs) makes the corner normals (the file's hard
    edges) stale: they are left out, and the new normals are written. ``origin``: the face of
    ``before`` each result face was made from, when the operation said (see :data:`ORIGIN`);
    ``chart``: ``before``'s charts when the caller has them (:func:`charts`)."""
    if not carries(before):
        return after, None
    texture = None
    rebuilt = None
    if _carried_by_op(before, after):
        out = after  # carried by the operation itself (same faces)
    elif _same_faces(before, after):
        out = after.with_attrs()
        out.corner_attrs = {**before.corner_attrs, **after.corner_attrs}
        out.materials = after.materials or before.materials
        fa = {k: v for k, v in before.face_attrs.items() if k not in out.face_attrs}
        out.face_attrs.update(fa)
        out.dropped = after.dropped
    else:
        out, home, rebuilt = transfer(
            before, after, None if seams is None else _host(seams), origin, chart
        )
        texture = texture_report(before, out, home) if rebuilt.any() else None
    if "normal" in out.corner_attrs and new_normals:
        if out is after:
            out = after.with_attrs()
            out.dropped = after.dropped
        out.corner_attrs = {k: v for k, v in out.corner_attrs.items() if k != "normal"}
    if rebuilt is not None and rebuilt.any() and "tangent" in out.corner_attrs:
        tangents = _renew_tangents(out, rebuilt)
        texture = {**(texture or {}), "tangents": tangents}
    return out, texture


def _renew_tangents(mesh: TriMesh, rebuilt: np.ndarray) -> dict[str, Any]:
    """Replace in place the tangents of the faces an operation ``rebuilt`` (interpolated from
    the input's, they no longer follow the new triangles' texture gradients) with tangents
    computed from the result (:func:`~.tangents.corner_tangents`: the texture gradients of
    all its faces, summed per vertex and chart, against the normals it will be written with:
    its corner normals, else its vertex normals, else area-weighted ones); kept faces keep
    theirs exactly. Without texture coordinates there is nothing to compute them from: the
    tangents are left out. Returns what was done, for the operation's report."""
    from .tangents import corner_tangents, vertex_normals_of

    n = int(rebuilt.sum())
    uv = mesh.corner_attrs.get("uv")
    if uv is None or uv.shape[2] < 2:
        mesh.corner_attrs = {k: v for k, v in mesh.corner_attrs.items() if k != "tangent"}
        return {"left_out": "no texture coordinates to compute them from", "faces": n}
    V, F = _host(mesh.V), _host(mesh.F)
    if "normal" in mesh.corner_attrs:
        normal = _host(mesh.corner_attrs["normal"])
    elif "vertex_normals" in mesh.vertex_attrs:
        normal = _host(mesh.vertex_attrs["vertex_normals"])[F]
    else:
        normal = vertex_normals_of(V, F)[F]
    new = corner_tangents(V, F, normal, _host(uv)[:, :, :2])
    old = _host(mesh.corner_attrs["tangent"])
    tangent = np.where(rebuilt[:, None, None], new, old).astype(old.dtype)
    mesh.corner_attrs = {**mesh.corner_attrs, "tangent": mesh.xp.asarray(tangent)}
    return {"recomputed_faces": n, "kept_faces": int(rebuilt.size - n)}


def _charts_of(mesh: TriMesh) -> tuple[np.ndarray, np.ndarray]:
    """:func:`charts` of a mesh: by its corner attributes (not the derived ones: a tangent
    differs where its texture coordinates or normal do) and materials, on the host."""
    corners = {k: _host(v) for k, v in mesh.corner_attrs.items() if k not in DERIVED}
    material = mesh.face_attrs.get("material")
    return charts(_host(mesh.F), corners, None if material is None else _host(material))


def seams_of(mesh: TriMesh) -> Any:
    """The seam edges of ``mesh`` on its backend (see :func:`charts`)."""
    return mesh.xp.asarray(_charts_of(mesh)[1])


def _face_stretch(
    V: np.ndarray, F: np.ndarray, uv: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per face: the L2 texture stretch (Sander et al. 2001: the root mean square of the lengths
    on the surface that unit lengths in the texture become), the signed texture area and the 3D
    area."""
    q1, q2, q3 = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    s1, t1 = uv[:, 0, 0], uv[:, 0, 1]
    s2, t2 = uv[:, 1, 0], uv[:, 1, 1]
    s3, t3 = uv[:, 2, 0], uv[:, 2, 1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # non-finite corners
        signed = ((s2 - s1) * (t3 - t1) - (s3 - s1) * (t2 - t1)) / 2.0
        area3 = np.linalg.norm(np.cross(q2 - q1, q3 - q1), axis=1) / 2.0
        two = 2.0 * signed[:, None]
        Ss = (q1 * (t2 - t3)[:, None] + q2 * (t3 - t1)[:, None] + q3 * (t1 - t2)[:, None]) / two
        St = (q1 * (s3 - s2)[:, None] + q2 * (s1 - s3)[:, None] + q3 * (s2 - s1)[:, None]) / two
        l2 = np.sqrt(((Ss * Ss).sum(1) + (St * St).sum(1)) / 2.0)
    return l2, signed, area3


def _weighted_quantile(x: np.ndarray, w: np.ndarray, q: float) -> float:
    order = np.argsort(x)
    c = np.cumsum(w[order])
    return float(x[order][min(np.searchsorted(c, q * c[-1]), x.size - 1)])


def _stretch_of(mesh: TriMesh, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_face_stretch` of ``mesh``'s corner attribute ``name`` (its first two values)."""
    V = _host(mesh.V).astype(np.float64)
    F = _host(mesh.F).astype(np.int64)
    return _face_stretch(V, F, _host(mesh.corner_attrs[name]).astype(np.float64)[:, :, :2])


def uv_measures(mesh: TriMesh, name: str = "uv") -> dict[str, Any] | None:
    """How the texture lies on ``mesh``: the L2 texture stretch of its faces, normalised so that
    a map that only scales gives 1.0 everywhere (the surface's median and 95th percentile by 3D
    area), and the faces with no texture area. None without the corner attribute ``name``."""
    if name not in mesh.corner_attrs:
        return None
    return _measures(*_stretch_of(mesh, name))


def _measures(l2: np.ndarray, signed: np.ndarray, area3: np.ndarray) -> dict[str, Any]:
    ok = (signed != 0) & (area3 > 0) & np.isfinite(l2)
    out: dict[str, Any] = {"faces_without_texture_area": int((~ok).sum())}
    if not ok.any():
        return {**out, "stretch_median": None, "stretch_p95": None}
    norm = l2[ok] * np.sqrt(np.abs(signed[ok]).sum() / area3[ok].sum())
    out["stretch_median"] = round(_weighted_quantile(norm, area3[ok], 0.5), 4)
    out["stretch_p95"] = round(_weighted_quantile(norm, area3[ok], 0.95), 4)
    return out


def texture_report(before: TriMesh, after: TriMesh, home: np.ndarray) -> dict[str, Any] | None:
    """What an operation that rebuilt the faces did to the texture (the first UV set): the
    stretch before and after (:func:`uv_measures`) and the faces whose texture is mirrored
    against the input face they lie on (a fold: the texture seen from behind)."""
    if "uv" not in before.corner_attrs:
        return None
    s0, s1 = _stretch_of(before, "uv"), _stretch_of(after, "uv")
    folded = (np.sign(s1[1]) * np.sign(s0[1][home])) < 0
    return {
        "before": _measures(*s0),
        "after": _measures(*s1),
        "folded_faces": int(folded.sum()),
    }
