"""Polygons from grouped triangles: the quads of Catmull-Clark and the polygons of the dual mesh,
for the formats that hold polygons (OBJ, PLY, OFF).

The engine holds triangles. ``subdivide`` with ``catmull_clark`` tags the two triangles of each
quad with the face attribute ``quad_id``, ``dual_mesh`` the triangles of each dual polygon with
``polygon_id``. :func:`group_polygons` turns such a mesh back into polygons, all on the host
with array code (sorts, searches, pointer jumping; no loop over faces):

1. Half-edges whose twin lies in the same group are inside a polygon; the others (each group's
   *boundary* half-edges) are its sides.
2. The side leaving vertex ``v`` follows the side entering it (one search on ``(group, from)``
   keys), so the sides of a group form cycles. Each group's cycle is cut at its first side (the
   boundary half-edge of the group's earliest triangle that has one, in corner order) and ranked
   by pointer jumping; the polygon's corners are the sides' start vertices in that order. So the
   quad ``(a, b, c), (a, c, d)`` becomes ``a b c d`` and the orientation is kept.

Nothing is guessed. The whole mesh stays triangles (:func:`group_polygons` returns None) unless
every group is a triangulated polygon: its sides form one simple loop (no vertex twice, no second
loop, no edge shared by three of its triangles or traversed twice the same way), it has at most
one vertex off the loop (the centre vertex of ``dual_mesh``'s 'centroid' triangulation) and its
triangle count is what a disc with that many boundary and inner vertices has (``k - 2`` for a
fan of ``k`` corners, ``k`` around a centre). A mesh whose groups were split further by a later
operation (a Loop step after ``dual_mesh``, say) therefore keeps its triangles.

Vertices that the triangles use but no polygon does (the centre vertices) are left out of the
polygon output together with their attributes, and the rest renumbered; unused vertices stay.
Each polygon takes the face attributes of its group's earliest triangle.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..graph import unique

#: face attributes that group triangles into polygons, the first present wins (a Catmull-Clark
#: step after ``dual_mesh`` keeps the inherited ``polygon_id``; its ``quad_id`` is the newer)
GROUP_ATTRIBUTES = ("quad_id", "polygon_id")


class Polygons(NamedTuple):
    """Polygons ``p`` with corners ``corners[offsets[p]:offsets[p + 1]]``.

    offsets : (n_polygons + 1,) int64
    corners : (n_corners,) int64, indices into ``vertices``
    vertices : (n_kept,) int64, the input vertex of each output vertex, ascending
    first_face : (n_polygons,) int64, the triangle whose face attributes the polygon takes
    """

    offsets: np.ndarray
    corners: np.ndarray
    vertices: np.ndarray
    first_face: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """Corner count of every polygon, ``(n_polygons,)`` int64."""
        return np.diff(self.offsets)


def triangles_as_polygons(F: np.ndarray, n_vertices: int) -> Polygons:
    """The triangles ``F (m, 3)`` as :class:`Polygons` of three corners, every vertex kept."""
    m = F.shape[0]
    return Polygons(
        np.arange(0, 3 * m + 1, 3, dtype=np.int64),
        F.astype(np.int64).ravel(),
        np.arange(n_vertices, dtype=np.int64),
        np.arange(m, dtype=np.int64),
    )


def fan(idx: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Triangles of the polygons with ``k (n,)`` corners each, corners flattened in ``idx``:
    ``(c0, c_i, c_i+1)`` for ``i = 1 .. k - 2``, polygon by polygon. Returns ``(m, 3)``."""
    if k.shape[0] == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if bool((k == 3).all()):
        return idx.reshape(-1, 3)
    start = np.cumsum(k) - k
    ntri = k - 2
    line = np.repeat(np.arange(k.shape[0]), ntri)
    i = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    s = start[line]
    return np.stack([idx[s], idx[s + i], idx[s + i + 1]], axis=1)


def triangulate(V: np.ndarray, idx: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Triangles of the polygons with ``k (n,)`` corners each, corners flattened in ``idx``, on
    the positions ``V``: ``k - 2`` triangles per polygon, polygon by polygon, as :func:`fan`
    lays them out. Convex polygons are fanned (:func:`fan`); the others (concave, or turning
    more than once around) are triangulated by ear clipping (``mapbox-earcut``) in the plane of
    their Newell normal, each triangle oriented like the polygon. A fan of a concave polygon
    covers area outside it and overlaps itself (a 66-pointed star came out with 15 times its
    area). A polygon ear clipping cannot split into ``k - 2`` triangles (collinear or repeated
    corners) keeps its fan."""
    F = fan(idx, k)
    if k.shape[0] == 0 or bool((k == 3).all()):
        return F
    bad = nonconvex(V, idx, k)
    if not bool(bad.any()):
        return F
    return np.asarray(idx, dtype=np.int64)[_clipped(V, idx, k, bad)]


def triangulate_corners(V: np.ndarray, idx: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The triangles of :func:`triangulate` as positions in the flat corner array ``idx``
    (``idx[triangulate_corners(V, idx, k)]`` is ``triangulate(V, idx, k)``), so that whatever
    a file gives per polygon corner (texture coordinates, normals) follows each triangle's
    corners."""
    corners = np.arange(int(np.asarray(k).sum()), dtype=np.int64)
    C = fan(corners, k)
    if k.shape[0] == 0 or bool((k == 3).all()):
        return C
    bad = nonconvex(V, idx, k)
    if not bool(bad.any()):
        return C
    return _clipped(V, idx, k, bad)


def _clipped(V: np.ndarray, idx: np.ndarray, k: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Corner positions of the triangles: fans, the polygons ``bad`` ear-clipped."""
    C = np.array(fan(np.arange(int(k.sum()), dtype=np.int64), k), dtype=np.int64)
    start = np.cumsum(k) - k
    tri_start = np.cumsum(k - 2) - (k - 2)
    for p in np.flatnonzero(bad).tolist():
        ring = np.arange(start[p], start[p] + k[p], dtype=np.int64)
        local = ear_clip(np.asarray(V, dtype=np.float64)[np.asarray(idx, dtype=np.int64)[ring]])
        if local is not None:
            C[tri_start[p] : tri_start[p] + k[p] - 2] = ring[local]
    return C


def nonconvex(V: np.ndarray, idx: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: the polygons (corners ``idx`` flat, ``k`` each) that a fan would not
    cover exactly: some corner turns against the polygon's Newell normal, or the turns add up
    to more than one full turn (a star). Triangles and polygons with no area are False."""
    n = k.shape[0]
    k = np.asarray(k, dtype=np.int64)
    idx = np.asarray(idx)
    if idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= V.shape[0]):
        return np.zeros(n, dtype=bool)  # the mesh's own checks refuse such corners
    start = np.cumsum(k) - k
    poly = np.repeat(np.arange(n), k)
    pos = np.arange(int(k.sum())) - np.repeat(start, k)
    nxt = np.repeat(start, k) + (pos + 1) % np.repeat(k, k)
    prv = np.repeat(start, k) + (pos - 1) % np.repeat(k, k)
    P = np.asarray(V, dtype=np.float64)[np.asarray(idx, dtype=np.int64)]
    P = P - np.repeat(P[start], k, axis=0)  # relative to the polygon's first corner
    normal = np.zeros((n, 3))
    np.add.at(normal, poly, np.cross(P, P[nxt]))
    length = np.linalg.norm(normal, axis=1)
    unit = np.divide(normal, length[:, None], out=np.zeros_like(normal), where=length[:, None] > 0)
    # edges in the polygon's plane (a non-planar polygon is judged by its projection)
    u = unit[poly]
    e_out = P[nxt] - P
    e_out -= np.einsum("ij,ij->i", e_out, u)[:, None] * u
    e_in = e_out[prv]
    turn = np.einsum("ij,ij->i", np.cross(e_in, e_out), u)
    angle = np.arctan2(turn, np.einsum("ij,ij->i", e_in, e_out))
    scale = np.linalg.norm(e_in, axis=1) * np.linalg.norm(e_out, axis=1)
    against = turn < -1e-9 * scale
    total = np.bincount(poly, weights=angle, minlength=n)
    bad = np.bincount(poly, weights=against, minlength=n) > 0
    bad |= np.abs(total - 2 * np.pi) > 1e-3
    # a corner repeated or on a zero-length side: ear clipping has nothing better than the fan
    flat = np.bincount(poly, weights=scale == 0, minlength=n) > 0
    return bad & (k > 3) & (length > 0) & ~flat


def ear_clip(P: np.ndarray) -> np.ndarray | None:
    """Triangles ``(k - 2, 3)`` (indices into ``P``) of the polygon with corners ``P (k, 3)``,
    by ear clipping in the plane of its Newell normal, oriented like the polygon; None when
    ear clipping does not give ``k - 2`` triangles."""
    import mapbox_earcut

    k = P.shape[0]
    Q = P - P[0]
    normal = np.cross(Q, np.roll(Q, -1, axis=0)).sum(axis=0)
    length = float(np.linalg.norm(normal))
    if length == 0.0:
        return None
    normal /= length
    a = np.cross(normal, np.eye(3)[int(np.argmin(np.abs(normal)))])
    a /= np.linalg.norm(a)
    b = np.cross(normal, a)
    flat = np.stack([Q @ a, Q @ b], axis=1)
    tri = np.asarray(
        mapbox_earcut.triangulate_float64(flat, np.array([k], dtype=np.uint32)), dtype=np.int64
    ).reshape(-1, 3)
    if tri.shape[0] != k - 2:
        return None
    t = Q[tri]
    facing = np.einsum("ij,j->i", np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), normal)
    tri[facing < 0] = tri[facing < 0][:, [0, 2, 1]]
    return tri


def group_polygons(F: np.ndarray, group: np.ndarray, n_vertices: int) -> Polygons | None:
    """The polygons the triangles ``F (m, 3)`` form, grouped by ``group (m,)`` (integers, one
    polygon per distinct value, in ascending order of the values), or None when some group is
    not a triangulated simple polygon (see the module docstring). Polygons keep the triangles'
    orientation."""
    m = int(F.shape[0])
    group = np.asarray(group)
    if m == 0 or group.shape != (m,) or group.dtype.kind not in "iu":
        return None
    F = np.asarray(F, dtype=np.int64)
    n = int(n_vertices)
    ids, first_face, gi = np.unique(group, return_index=True, return_inverse=True)
    gi = gi.reshape(-1).astype(np.int64)
    n_groups = int(ids.shape[0])
    # half-edge 3f + k runs from corner k to corner k + 1 of face f
    u = F.ravel()
    v = F[:, [1, 2, 0]].ravel()
    hg = np.repeat(gi, 3)
    if bool((u == v).any()):
        return None  # a degenerate triangle has no place in a polygon
    boundary = _group_boundary(u, v, hg)
    if boundary is None:
        return None
    b = np.flatnonzero(boundary)  # ascending: a group's first side comes first
    bg, bu, bv = hg[b], u[b], v[b]
    size = np.bincount(bg, minlength=n_groups)
    if bool((size < 3).any()):
        return None  # a closed group (no sides), or a fold
    # the side that follows each side: the one of the same group leaving its end vertex
    leave = bg * n + bu
    by_leave = np.argsort(leave, kind="stable")
    sorted_leave = leave[by_leave]
    if bool((sorted_leave[1:] == sorted_leave[:-1]).any()):
        return None  # a vertex twice on one polygon
    at = np.minimum(np.searchsorted(sorted_leave, bg * n + bv), b.shape[0] - 1)
    if bool((sorted_leave[at] != bg * n + bv).any()):
        return None
    succ = by_leave[at]
    # per group: inner vertices (off the loop) and the triangle count of a disc
    group_vertices = np.bincount(unique(np, hg * n + u) // n, minlength=n_groups)
    inner = group_vertices - size
    tris = np.bincount(gi, minlength=n_groups)
    if bool((inner > 1).any()) or bool((tris != size + 2 * inner - 2).any()):
        return None
    rank = _rank_on_loops(succ, bg, size)
    if rank is None:
        return None
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(size, out=offsets[1:])
    corners = np.zeros(b.shape[0], dtype=np.int64)
    corners[offsets[bg] + rank] = bu
    used = np.zeros(n, dtype=bool)
    used[u] = True
    keep = ~used
    keep[bu] = True
    new_index = np.cumsum(keep) - 1
    return Polygons(offsets, new_index[corners], np.flatnonzero(keep), first_face.astype(np.int64))


def _group_boundary(u: np.ndarray, v: np.ndarray, hg: np.ndarray) -> np.ndarray | None:
    """Mask of the half-edges ``u -> v`` of group ``hg`` whose twin ``v -> u`` is not in the
    group; None when an edge is used more than twice in a group, or twice the same way."""
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    order = np.lexsort((hi, lo, hg))
    sg, sl, sh = hg[order], lo[order], hi[order]
    new = np.ones(order.shape[0], dtype=bool)
    new[1:] = (sg[1:] != sg[:-1]) | (sl[1:] != sl[:-1]) | (sh[1:] != sh[:-1])
    run = np.cumsum(new) - 1
    length = np.bincount(run)[run]
    if bool((length > 2).any()):
        return None
    pair = np.flatnonzero(new & (length == 2))
    if bool((u[order[pair]] == u[order[pair + 1]]).any()):
        return None  # both triangles walk the edge the same way: orientation flips inside
    boundary = np.zeros(order.shape[0], dtype=bool)
    boundary[order[length == 1]] = True
    return boundary


def _rank_on_loops(succ: np.ndarray, bg: np.ndarray, size: np.ndarray) -> np.ndarray | None:
    """Position of every side on its group's loop, counted from the group's first side, by
    pointer jumping (log2 of the longest loop rounds of gathers); None when some side is not on
    the loop through its group's first side (the group has several loops)."""
    nb = int(succ.shape[0])
    idx = np.arange(nb, dtype=np.int64)
    first = np.full(size.shape[0], nb, dtype=np.int64)
    np.minimum.at(first, bg, idx)
    is_first = np.zeros(nb, dtype=bool)
    is_first[first] = True
    nxt = np.where(is_first[succ], -1, succ)
    dist = (nxt >= 0).astype(np.int64)
    for _ in range(nb.bit_length() + 1):
        live = nxt >= 0
        if not bool(live.any()):
            break
        j = np.where(live, nxt, 0)
        dist = dist + np.where(live, dist[j], 0)
        nxt = np.where(live, nxt[j], -1)
    if bool((nxt >= 0).any()):
        return None
    rank = size[bg] - 1 - dist
    if bool((rank < 0).any()):
        return None
    return np.asarray(rank, dtype=np.int64)
