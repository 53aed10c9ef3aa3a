"""``slice_plane``: cut a mesh by a plane, keep one side or both, optionally cap the cut.

The cut is exact and topological: every mesh edge whose ends lie strictly on opposite sides gets
one new vertex, keyed by the edge's id (so the two faces sharing the edge use the same vertex: no
duplicates, no cracks, KEY-WELD's principle); vertices exactly on the plane are reused. Every
crossed face is split by a fixed template chosen by its corner signs. Written once for NumPy and
CuPy (flags, prefix sums, gathers, one sort).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ..backend import to_numpy
from ..graph import compact_groups, connected_components, scatter_min
from ..mesh import TriMesh, segment_mean
from ..reindex import remove_unused
from ..topology import Topology
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance

#: at most this many section points are listed in the report (all of them are in the artifact)
REPORT_POINTS = 1000


class Params(OpParams):
    point: list[float] = Field(
        default_factory=lambda: [0.0, 0.0, 0.0],
        min_length=3,
        max_length=3,
        description="A point on the plane (x, y, z).",
    )
    normal: list[float] = Field(
        default_factory=lambda: [0.0, 0.0, 1.0],
        min_length=3,
        max_length=3,
        description="The plane's normal (need not be unit length); 'above' is the side it points "
        "to.",
    )
    keep: Literal["above", "below", "both"] = Field(
        "above",
        description="Which side to keep. 'both' keeps the two parts as separate components (cut "
        "vertices duplicated), each face tagged in `slice_side`.",
    )
    cap: bool = Field(
        False,
        description="Close each closed section loop with a fan of triangles from the loop's "
        "centroid (exact for convex sections; a non-convex or nested section, e.g. a ring, "
        "gets overlapping caps).",
    )
    tolerance: float = Field(
        0.0,
        ge=0.0,
        le=1e6,
        description="Vertices closer to the plane than this count as on it (not moved), so that "
        "no sliver faces are made next to them.",
    )
    snap: bool = Field(
        True,
        description="Also count as on the plane the vertices whose distance to it is below the "
        "storage precision (4 ulps of the largest coordinate offset): a crossing that close to a "
        "vertex would round onto it and duplicate it.",
    )

    @field_validator("normal")
    @classmethod
    def _nonzero(cls, v: list[float]) -> list[float]:
        if sum(x * x for x in v) == 0.0:
            raise ValueError("normal must not be zero")
        return v


def _interp_attr(xp: ModuleType, A: Any, a: Any, b: Any, t: Any) -> Any:
    if xp.issubdtype(A.dtype, xp.floating):
        tt = t.reshape((-1,) + (1,) * (A.ndim - 1))
        return ((1.0 - tt) * A[a].astype(xp.float64) + tt * A[b].astype(xp.float64)).astype(A.dtype)
    return xp.where((t < 0.5).reshape((-1,) + (1,) * (A.ndim - 1)), A[a], A[b])


def _section(xp: ModuleType, F: Any, on_plane: Any, n_all: int) -> tuple[Any, Any, Any, Any, Any]:
    """Directed section edges ``(u, v, owner)``: boundary half-edges of the faces ``F`` (the
    part above the plane) with both ends on the plane, and the face owning each. Also the loop
    of each edge and, per loop, whether it is a simple closed loop."""
    z = xp.zeros(0, dtype=xp.int64)
    if F.shape[0] == 0:
        return z, z, z, z, xp.zeros(0, dtype=bool)
    topo = Topology.build(F, n_all)
    be = topo.boundary_edges
    ss = topo.ef_sides[topo.ef_offsets[be]]
    Fr = F.ravel().astype(xp.int64)
    u = Fr[ss]
    v = Fr[3 * (ss // 3) + (ss % 3 + 1) % 3]
    sel = on_plane[u] & on_plane[v]
    u, v, ss = u[sel], v[sel], ss[sel]
    if u.shape[0] == 0:
        return z, z, z, z, xp.zeros(0, dtype=bool)
    lab = connected_components(xp, n_all, u, v)
    loop, _ = compact_groups(xp, lab[u])  # loops numbered by their first edge
    n_loops = int(loop.max()) + 1
    outdeg = xp.bincount(u, minlength=n_all)
    indeg = xp.bincount(v, minlength=n_all)
    bad_edge = (outdeg[u] != 1) | (indeg[u] != 1) | (outdeg[v] != 1) | (indeg[v] != 1)
    closed = xp.bincount(loop, weights=bad_edge.astype(xp.float64), minlength=n_loops) == 0
    return u, v, ss // 3, loop, closed


def _order_loops(xp: ModuleType, u: Any, v: Any, loop: Any, closed: Any, n_all: int) -> Any:
    """The section's vertices in walking order per loop (list ranking by pointer jumping) and the
    loop of each. A closed loop starts at its lowest vertex and is not closed by a repeat; an
    open chain ends with its last vertex."""
    k = int(u.shape[0])
    succ_edge = xp.full(n_all, k, dtype=xp.int64)  # the edge leaving each vertex (lowest id)
    scatter_min(xp, succ_edge, u, xp.arange(k, dtype=xp.int64))
    nxt = succ_edge[v]  # edge after edge i (k: none)
    # cut each closed loop before its edge leaving the lowest vertex
    n_loops = int(loop.max()) + 1
    start_v = xp.full(n_loops, n_all, dtype=xp.int64)
    scatter_min(xp, start_v, loop, u)
    nxt = xp.where(nxt < k, nxt, k)
    cut = closed[loop] & (u[xp.minimum(nxt, k - 1)] == start_v[loop])
    nxt = xp.where((nxt < k) & cut, k, nxt)
    end = xp.nonzero(nxt >= k)[0]  # last edge of each chain (a closed loop's too, after the cut)
    dist = (nxt < k).astype(xp.int64)
    for _ in range(64):
        if not bool((nxt < k).any()):
            break
        has = nxt < k
        j = xp.minimum(nxt, k - 1)
        dist = dist + xp.where(has, dist[j], 0)
        nxt = xp.where(has, nxt[j], k)
    # the points: every edge's start, then the end vertex of each open chain
    open_end = end[~closed[loop[end]]]
    pts = xp.concatenate([u, v[open_end]])
    key = xp.concatenate([loop * (k + 2) + (k - dist), loop[open_end] * (k + 2) + k + 1])
    perm = xp.argsort(key, kind="stable")
    return pts[perm], xp.concatenate([loop, loop[open_end]])[perm]


def slice_mesh(mesh: TriMesh, p: Params) -> tuple[TriMesh, dict[str, Any], dict[str, Any]]:
    xp = mesh.xp
    n, m = mesh.n_vertices, mesh.n_faces
    V64 = mesh.V.astype(xp.float64)
    nv = [float(x) for x in p.normal]
    norm = sum(x * x for x in nv) ** 0.5
    nv = [x / norm for x in nv]
    P0 = [float(x) for x in p.point]
    d = (V64[:, 0] - P0[0]) * nv[0] + (V64[:, 1] - P0[1]) * nv[1] + (V64[:, 2] - P0[2]) * nv[2]
    tol = float(p.tolerance)
    if p.snap and n:
        eps = float(np.finfo(mesh.V.dtype).eps) if mesh.V.dtype.kind == "f" else 2.0**-52
        scale = float(xp.abs(V64 - xp.asarray(P0, dtype=xp.float64)).max())
        tol = max(tol, 4.0 * eps * scale)
    if tol > 0:
        d = xp.where(xp.abs(d) <= tol, 0.0, d)
    s = xp.sign(d).astype(xp.int64)
    topo = mesh.topology
    EV = topo.EV.astype(xp.int64)
    crossing = (s[EV[:, 0]] * s[EV[:, 1]]) < 0
    ce = xp.nonzero(crossing)[0]
    n_x = int(ce.shape[0])
    a, b = EV[ce, 0], EV[ce, 1]
    t = d[a] / (d[a] - d[b])
    X = V64[a] + t[:, None] * (V64[b] - V64[a])
    edge_vertex = xp.full(topo.n_edges, -1, dtype=xp.int64)
    edge_vertex[ce] = n + xp.arange(n_x, dtype=xp.int64)
    n_all = n + n_x
    on_plane = xp.concatenate([s == 0, xp.ones(n_x, dtype=bool)])

    F = mesh.F.astype(xp.int64)
    sF = s[F]
    npos = (sF > 0).sum(axis=1)
    nneg = (sF < 0).sum(axis=1)
    split = (npos > 0) & (nneg > 0)
    # whole faces: by their corners; faces lying in the plane go with the side they face away from
    # (the normal of a closed part's bottom faces down), so that a slice along a face keeps it
    cr = xp.cross(V64[F[:, 1]] - V64[F[:, 0]], V64[F[:, 2]] - V64[F[:, 0]])
    facing = cr[:, 0] * nv[0] + cr[:, 1] * nv[1] + cr[:, 2] * nv[2]
    whole_side = xp.where(npos > 0, 1, xp.where(nneg > 0, -1, xp.where(facing < 0, 1, -1)))
    whole = xp.nonzero(~split)[0]

    sp = xp.nonzero(split)[0]
    ns = int(sp.shape[0])
    Fs, Ss, FEs = F[sp], sF[sp], topo.FE[sp].astype(xp.int64) // 2
    has_zero = (npos[sp] + nneg[sp]) < 3
    lone_sign = xp.where(npos[sp] == 1, 1, -1)
    k = xp.where(
        has_zero,
        xp.argmax((Ss == 0).astype(xp.int8), axis=1),
        xp.argmax((Ss == lone_sign[:, None]).astype(xp.int8), axis=1),
    )
    rows = xp.arange(ns, dtype=xp.int64)
    ca, cb, cc = Fs[rows, k], Fs[rows, (k + 1) % 3], Fs[rows, (k + 2) % 3]
    sa, sb, sc = Ss[rows, k], Ss[rows, (k + 1) % 3], Ss[rows, (k + 2) % 3]
    x_ab = edge_vertex[FEs[rows, k]]
    x_bc = edge_vertex[FEs[rows, (k + 1) % 3]]
    x_ca = edge_vertex[FEs[rows, (k + 2) % 3]]
    # template A (no corner on the plane, a alone): (a, xab, xca) | (xab, b, c), (xab, c, xca)
    # template B (a on the plane, b and c apart): (a, b, xbc) | (a, xbc, c)
    T0 = xp.where(has_zero[:, None], xp.stack([ca, cb, x_bc], 1), xp.stack([ca, x_ab, x_ca], 1))
    T1 = xp.where(has_zero[:, None], xp.stack([ca, x_bc, cc], 1), xp.stack([x_ab, cb, cc], 1))
    T2 = xp.stack([x_ab, cc, x_ca], 1)
    side0 = xp.where(has_zero, sb, sa)
    side1 = xp.where(has_zero, sc, sb)
    tri = xp.concatenate([F[whole], T0, T1, T2[~has_zero]])
    parent = xp.concatenate([whole, sp, sp, sp[~has_zero]])
    slot = xp.concatenate(
        [
            xp.zeros(whole.shape[0], dtype=xp.int64),
            xp.zeros(ns, dtype=xp.int64),
            xp.ones(ns, dtype=xp.int64),
            xp.full(int((~has_zero).sum()), 2, dtype=xp.int64),
        ]
    )
    side = xp.concatenate([whole_side[whole], side0, side1, sb[~has_zero]])
    order = xp.argsort(parent * 3 + slot)
    tri, parent, side = tri[order], parent[order], side[order]

    # section: the boundary of the part above on the plane
    above = xp.nonzero(side > 0)[0]
    u, v, owner, loop, closed = _section(xp, tri[above], on_plane, n_all)
    owner = above[owner] if owner.shape[0] else owner
    n_loops = int(closed.shape[0])

    # positions and vertex attributes of the new vertices
    Vall = xp.concatenate([V64, X])
    vattrs = {
        name: xp.concatenate([A, _interp_attr(xp, A, a, b, t)])
        for name, A in mesh.vertex_attrs.items()
    }
    cap_faces = 0
    if p.cap and n_loops and bool(closed.any()):
        cl = xp.nonzero(closed)[0]
        n_cl = int(cl.shape[0])
        cid = xp.full(n_loops, -1, dtype=xp.int64)
        cid[cl] = xp.arange(n_cl, dtype=xp.int64)
        e_in = xp.nonzero(closed[loop])[0]
        ue, ve, oe, ce_id = u[e_in], v[e_in], parent[owner[e_in]], cid[loop[e_in]]
        # centroids summed on the host in one order (a section is small beside the mesh), so
        # that both backends produce the same bits
        ce_h = to_numpy(ce_id)
        C = xp.asarray(segment_mean(np, to_numpy(Vall[ue]), ce_h, n_cl))
        centre = n_all + ce_id
        vattrs = {
            name: xp.concatenate([A, xp.asarray(segment_mean(np, to_numpy(A[ue]), ce_h, n_cl))])
            for name, A in vattrs.items()
        }
        Vall = xp.concatenate([Vall, C])
        n_all += n_cl
        on_plane = xp.concatenate([on_plane, xp.ones(n_cl, dtype=bool)])
        caps, cparent, cside = [], [], []
        if p.keep in ("above", "both"):
            caps.append(xp.stack([ve, ue, centre], 1))
            cparent.append(oe)
            cside.append(xp.ones(ue.shape[0], dtype=xp.int64))
        if p.keep in ("below", "both"):
            caps.append(xp.stack([ue, ve, centre], 1))
            cparent.append(oe)
            cside.append(-xp.ones(ue.shape[0], dtype=xp.int64))
        cap_faces = sum(int(c.shape[0]) for c in caps)
        tri = xp.concatenate([tri] + caps)
        parent = xp.concatenate([parent] + cparent)
        side = xp.concatenate([side] + cside)

    # the section polylines, walked in order
    if u.shape[0]:
        pv, pl = _order_loops(xp, u, v, loop, closed, n_all)
        pts = xp.concatenate([Vall[pv], pl.astype(xp.float64)[:, None]], axis=1)
    else:
        pts = xp.zeros((0, 4), dtype=xp.float64)

    # keep a side; for both, the part below gets its own copies of the vertices on the plane
    take = xp.arange(n_all, dtype=xp.int64)
    if p.keep == "above":
        kf = xp.nonzero(side > 0)[0]
    elif p.keep == "below":
        kf = xp.nonzero(side < 0)[0]
    else:
        kf = xp.arange(int(tri.shape[0]), dtype=xp.int64)
        used_up = xp.zeros(n_all, dtype=bool)
        used_up[tri[side > 0].ravel()] = True
        used_dn = xp.zeros(n_all, dtype=bool)
        used_dn[tri[side < 0].ravel()] = True
        dup = xp.nonzero(on_plane & used_up & used_dn)[0]
        copy_of = xp.arange(n_all, dtype=xp.int64)
        copy_of[dup] = n_all + xp.arange(dup.shape[0], dtype=xp.int64)
        tri = xp.where((side < 0)[:, None], copy_of[tri], tri)
        take = xp.concatenate([take, dup])
    tri, parent, side = tri[kf], parent[kf], side[kf]
    out = TriMesh(
        Vall[take].astype(mesh.V.dtype),
        tri.astype(xp.int32),
        {name: A[take] for name, A in vattrs.items()},
        {
            **{name: A[parent] for name, A in mesh.face_attrs.items()},
            "slice_side": side.astype(xp.int32),
        },
        source=mesh.source,
    )
    out, _ = remove_unused(out)

    k_pts = int(pts.shape[0])
    loops_pts = None
    if k_pts <= REPORT_POINTS:
        host = pts.tolist()
        loops_pts = [[r[:3] for r in host if int(r[3]) == i] for i in range(n_loops)]
    report: dict[str, Any] = {
        "faces_before": m,
        "snap_distance": tol,
        "faces_split": ns,
        "faces_above": int((side > 0).sum()),
        "faces_below": int((side < 0).sum()),
        "vertices_created": n_x,
        "vertices_on_plane": int(((s == 0) & mesh.used_vertices()).sum()),
        "section_loops": n_loops,
        "closed_loops": int(closed.sum()),
        "section_points": k_pts,
        "cap_faces": cap_faces,
        "section": loops_pts,
    }
    artifacts = {"section": pts} if k_pts else {}
    return out, report, artifacts


def _array(mesh: TriMesh, p: Params) -> OpResult:
    out, report, artifacts = slice_mesh(mesh, p)
    return OpResult(out, report, artifacts)


OP = Operation(
    name="slice_plane",
    summary="Cut by a plane; keep one side or both, optionally cap the cut.",
    description="""
    Cut by the plane through ``point`` with normal ``normal``. Signed distances in float64
    (within ``tolerance`` of 0: on the plane). Every edge with ends strictly on opposite sides
    gets one new vertex at the linear crossing, numbered by the edge's id (computed once per
    edge: the faces on both sides share it); vertex attributes are interpolated there (nearest
    end for integer ones). Crossed faces are split by template (one corner alone: a triangle and
    a quad made of two triangles; a corner on the plane: two triangles); faces take their
    parent's attributes. ``slice_side`` tells each face's side (1 above, -1 below); faces lying
    in the plane go with the side they face away from. The section is the boundary of the part
    above that lies on the plane: loops found by connected components, walked in order by list
    ranking, returned as the ``section`` artifact (rows x, y, z, loop) and, up to 1000 points,
    in the report; a closed loop is listed once around (the first point is not repeated). With
    ``cap``, each simple closed loop is fanned from its centroid (correct for convex, and
    star-shaped around the centroid, sections only; nested loops are not matched as holes).
    """,
    kind=OpKind.remesh,  # new vertices on the cut, new faces
    params=Params,
    numpy=_array,
    cupy=_array,  # flags, scans, gathers, one sort: the same array code on CuPy
    outputs={
        "slice_side": Output(
            Element.face, "(n_faces,)", "int32", "Side of the plane: 1 above, -1 below."
        )
    },
    reports="faces_before, snap_distance, faces_split, faces_above, faces_below, vertices_created, "
    "vertices_on_plane, section_loops, closed_loops, section_points, cap_faces, section (loops of "
    "points, when at most 1000 points)",
    artifacts={"section": "The section polylines: rows (x, y, z, loop), walked in order per loop."},
    test_variants=(
        {},
        {"keep": "both", "cap": True, "normal": [0.3, 1.0, -0.2], "point": [0.1, 0.2, 0.05]},
        {"keep": "below", "snap": False, "point": [0.1, 0.2, 0.3], "cap": True},
    ),
    tolerances={"slice_side": Tolerance(atol=0.0)},
)
