"""``subdivide``: Loop, midpoint (1 to 4 split) and Catmull-Clark subdivision, ``levels`` times."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, Literal

from pydantic import Field

from .. import progress
from ..errors import OpParamsError
from ..mesh import TriMesh
from ._refine import poly_edges, stack_vertex_attrs, unstack_vertex_attrs
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance

#: the largest face count a subdivision may produce (triangles; quads count as two)
MAX_OUTPUT_FACES = 2**28


class Params(OpParams):
    scheme: Literal["loop", "midpoint", "catmull_clark"] = Field(
        "loop",
        description="'loop': Loop's approximating scheme (smooth limit surface); 'midpoint': the "
        "same 1-to-4 split with new vertices at edge midpoints and no vertex moved (the surface "
        "is unchanged); 'catmull_clark': Catmull-Clark, each triangle becomes three quads, each "
        "quad four; the mesh holds each quad as two triangles (face attribute 'quad_id'); OBJ, PLY "
        "and OFF write them as quads unless the output asks for triangles.",
    )
    levels: int = Field(
        1,
        ge=1,
        le=8,
        description="Number of subdivision steps. Each multiplies the face count by 4 (Catmull-"
        "Clark: the first by 3 quads = 6 triangles); the output may hold at most 2^28 faces.",
    )


def output_faces(n_faces: int, scheme: str, levels: int) -> int:
    """Triangles the subdivision of ``n_faces`` triangles produces."""
    if scheme == "catmull_clark":
        return n_faces * 3 * 4 ** (levels - 1) * 2
    return n_faces * 4**levels


# ------------------------------------------------------------------------------ one step
def _vertex_sums(xp: ModuleType, X: Any, EV: Any, crease: Any, n: int) -> tuple[Any, ...]:
    """Per vertex: number of edges, sum of neighbour positions, number of crease edges and sum of
    neighbour positions across crease edges (scatter-adds over both edge directions)."""
    src = xp.concatenate([EV[:, 0], EV[:, 1]])
    dst = xp.concatenate([EV[:, 1], EV[:, 0]])
    c2 = xp.concatenate([crease, crease]).astype(xp.float64)
    deg = xp.bincount(src, minlength=n)
    nbsum = _scatter(xp, src, X[dst], n)
    ccount = xp.bincount(src, weights=c2, minlength=n)
    csum = _scatter(xp, src, X[dst] * c2[:, None], n)
    return deg, nbsum, xp.rint(ccount).astype(xp.int64), csum


def _scatter(xp: ModuleType, idx: Any, W: Any, n: int) -> Any:
    return xp.stack(
        [xp.bincount(idx, weights=W[:, k], minlength=n) for k in range(W.shape[1])], axis=1
    )


def _vertex_rule(
    xp: ModuleType, X: Any, smooth: Any, ccount: Any, csum: Any, corner: Any, deg: Any
) -> Any:
    """New positions of the old vertices: ``smooth`` where every incident edge is interior, the
    boundary B-spline mask 1/8-3/4-1/8 where exactly two incident edges are creases, fixed
    elsewhere (corners: one or more than two crease edges, non-manifold or isolated vertices)."""
    crease_pos = 0.75 * X + 0.125 * csum
    out = xp.where((ccount == 0)[:, None], smooth, crease_pos)
    fixed = corner | (deg == 0) | ((ccount != 0) & (ccount != 2))
    return xp.where(fixed[:, None], X, out)


def _split4(xp: ModuleType, P: Any, eos: Any, n: int) -> Any:
    """The 1-to-4 split of triangles ``P``: corner triangles then the middle one, face ``4 f + i``
    from face ``f``; edge ``e``'s new vertex is ``n + e``."""
    a, b, c = P[:, 0], P[:, 1], P[:, 2]
    M = n + eos.reshape(-1, 3)
    m0, m1, m2 = M[:, 0], M[:, 1], M[:, 2]  # on sides a-b, b-c, c-a
    out = xp.stack(
        [
            xp.stack([a, m0, m2], axis=1),
            xp.stack([m0, b, m1], axis=1),
            xp.stack([m2, m1, c], axis=1),
            xp.stack([m0, m1, m2], axis=1),
        ],
        axis=1,
    )
    return out.reshape(-1, 3)


def _tri_step(
    xp: ModuleType, X: Any, A: Any, P: Any, corner: Any, loop: bool
) -> tuple[Any, Any, Any]:
    n = int(X.shape[0])
    eos, EV, efc = poly_edges(xp, P, n)
    a, b = EV[:, 0], EV[:, 1]
    mid = 0.5 * (X[a] + X[b])
    if loop:
        crease = efc != 2
        opp = P[:, [2, 0, 1]].ravel()  # the corner facing side k
        opp_sum = _scatter(xp, eos, X[opp], int(EV.shape[0]))
        interior = 0.375 * (X[a] + X[b]) + 0.125 * opp_sum
        epos = xp.where(crease[:, None], mid, interior)
        deg, nbsum, ccount, csum = _vertex_sums(xp, X, EV, crease, n)
        k = xp.maximum(deg, 1).astype(xp.float64)
        beta = (0.625 - (0.375 + 0.25 * xp.cos(2 * math.pi / k)) ** 2) / k
        smooth = (1.0 - k * beta)[:, None] * X + beta[:, None] * nbsum
        vpos = _vertex_rule(xp, X, smooth, ccount, csum, corner, deg)
    else:
        epos, vpos = mid, X
    X2 = xp.concatenate([vpos, epos])
    A2 = None if A is None else xp.concatenate([A, 0.5 * (A[a] + A[b])])
    return X2, A2, _split4(xp, P, eos, n)


def _cc_step(xp: ModuleType, X: Any, A: Any, P: Any, corner: Any) -> tuple[Any, Any, Any]:
    """One Catmull-Clark step on polygons of one degree: ``n`` old vertices, then one face point
    per face, then one edge point per edge; corner ``k`` of face ``f`` becomes quad ``d f + k``
    (old vertex, edge point of side k, face point, edge point of side k-1)."""
    n, m, d = int(X.shape[0]), int(P.shape[0]), int(P.shape[1])
    eos, EV, efc = poly_edges(xp, P, n)
    n_e = int(EV.shape[0])
    a, b = EV[:, 0], EV[:, 1]
    crease = efc != 2
    fp = X[P].mean(axis=1)
    face_of_side = _repeat(xp, xp.arange(m, dtype=xp.int64), d)
    fp_sum = _scatter(xp, eos, fp[face_of_side], n_e)
    mid = 0.5 * (X[a] + X[b])
    interior = 0.25 * (X[a] + X[b] + fp_sum)
    epos = xp.where(crease[:, None], mid, interior)
    deg, nbsum, ccount, csum = _vertex_sums(xp, X, EV, crease, n)
    k = xp.maximum(deg, 1).astype(xp.float64)[:, None]
    nf = xp.maximum(xp.bincount(P.ravel(), minlength=n), 1).astype(xp.float64)[:, None]
    Q = _scatter(xp, P.ravel(), fp[face_of_side], n) / nf
    R = 0.5 * (X + nbsum / k)
    smooth = (Q + 2.0 * R + (k - 3.0) * X) / k
    vpos = _vertex_rule(xp, X, smooth, ccount, csum, corner, deg)
    X2 = xp.concatenate([vpos, fp, epos])
    A2 = None
    if A is not None:
        A2 = xp.concatenate([A, A[P].mean(axis=1), 0.5 * (A[a] + A[b])])
    E = n + m + eos.reshape(m, d)
    Fp = (n + xp.arange(m, dtype=xp.int64))[:, None] + xp.zeros((1, d), dtype=xp.int64)
    prev = E[:, [(j - 1) % d for j in range(d)]]
    Q4 = xp.stack([P, E, Fp, prev], axis=2).reshape(-1, 4)
    return X2, A2, Q4


# ------------------------------------------------------------------------------ the op
def subdivide(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    total = output_faces(mesh.n_faces, p.scheme, p.levels)
    if total > MAX_OUTPUT_FACES:
        raise OpParamsError(
            "subdivision would exceed the face limit",
            code="op.output_too_large",
            faces=total,
            limit=MAX_OUTPUT_FACES,
            levels=p.levels,
        )
    topo = mesh.topology
    n0 = mesh.n_vertices
    # vertices whose faces form several fans (bow-ties) stay where they are at every level; the
    # old vertices keep their ids, so the mask only grows by new (regular) vertices
    corner0 = topo.vertex_fans() > 1
    crease = topo.edge_face_count != 2
    ccount = xp.bincount(topo.EV[crease].ravel(), minlength=n0)
    X = mesh.V.astype(xp.float64)
    A, layout = stack_vertex_attrs(mesh)
    P = mesh.F.astype(xp.int64)
    origin = xp.arange(mesh.n_faces, dtype=xp.int64)  # input face of each current face
    # progress by the faces each level makes (its work grows with them)
    made = [output_faces(mesh.n_faces, p.scheme, j) for j in range(1, p.levels + 1)]
    for level in range(p.levels):
        progress.report(sum(made[:level]) / max(sum(made), 1), f"level {level + 1}/{p.levels}")
        corner = xp.zeros(X.shape[0], dtype=bool)
        corner[:n0] = corner0
        d = int(P.shape[1])
        if p.scheme == "catmull_clark":
            X, A, P = _cc_step(xp, X, A, P, corner)
        else:
            X, A, P = _tri_step(xp, X, A, P, corner, p.scheme == "loop")
        origin = _repeat(xp, origin, d if p.scheme == "catmull_clark" else 4)
    face_attrs_extra: dict[str, Any] = {}
    n_quads = None
    if p.scheme == "catmull_clark":
        n_quads = int(P.shape[0])
        T = xp.stack([P[:, [0, 1, 2]], P[:, [0, 2, 3]]], axis=1).reshape(-1, 3)
        origin = _repeat(xp, origin, 2)
        face_attrs_extra["quad_id"] = _repeat(xp, xp.arange(n_quads, dtype=xp.int32), 2).astype(
            xp.int32
        )
        P = T
    F = P.astype(xp.int32)
    out = mesh.reindexed(X.astype(mesh.V.dtype), F, face_take=origin)
    if A is not None:
        out.vertex_attrs.update(unstack_vertex_attrs(xp, A, layout))
    out.face_attrs.update(face_attrs_extra)
    report: dict[str, Any] = {
        "scheme": p.scheme,
        "levels": p.levels,
        "vertices_before": n0,
        "faces_before": mesh.n_faces,
        "vertices_after": out.n_vertices,
        "faces_after": out.n_faces,
        "crease_edges": int(crease.sum()),
        "crease_vertices": int(((ccount == 2) & ~corner0).sum()),
        "corner_vertices": int((corner0 | ((ccount != 0) & (ccount != 2))).sum()),
    }
    if n_quads is not None:
        report["quads"] = n_quads
    return OpResult(out, report)


def _repeat(xp: ModuleType, a: Any, k: int) -> Any:
    """Each element ``k`` times in a row (a scalar count: the same call on both backends)."""
    return xp.repeat(a, k)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return subdivide(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy (sorts, scans, gathers and bincount scatters)."""
    return subdivide(mesh, p)


def _attributes_after(p: Params, before: dict[str, str]) -> dict[str, str]:
    return {**before, "quad_id": "face"} if p.scheme == "catmull_clark" else before


OP = Operation(
    name="subdivide",
    summary="Loop, midpoint or Catmull-Clark subdivision (quads written as quads).",
    description="""
    Subdivide ``levels`` times; every step is array code (edges by key-sort of the sides,
    stencils by gathers and scatter-adds), the same on NumPy and CuPy.

    ``loop`` (Loop 1987): each triangle splits into four; a new edge vertex is 3/8 (a + b) + 1/8
    (c + d) with c, d the opposite corners, an old vertex of valence k moves to (1 - k beta) v +
    beta * sum(neighbours) with Loop's beta = (5/8 - (3/8 + cos(2 pi / k) / 4)^2) / k.
    ``midpoint``: the same split, new vertices at edge midpoints, nothing moves.
    ``catmull_clark`` (Catmull and Clark 1978, for any polygons): face points (centroids), edge
    points (a + b + f1 + f2) / 4, vertex points (Q + 2R + (k - 3) v) / k; the first step turns
    each triangle into three quads, later steps each quad into four. The mesh holds triangles, so
    every quad (v, e1, f, e2) is held as the triangles (v, e1, f) and (v, f, e2), both carrying
    the face attribute ``quad_id`` (the quad's index, int32); OBJ, PLY and OFF output writes the
    quads back unless the job asks for triangles.

    Creases: every edge without exactly two faces (boundary edges, and non-manifold edges with
    three or more) is a crease. A crease edge's new point is its midpoint (the cubic B-spline
    curve mask); an old vertex on exactly two crease edges follows the curve's vertex mask 1/8,
    3/4, 1/8 of its two crease neighbours; a vertex on one or more than two crease edges, a
    non-manifold vertex (several fans of faces) and an unused vertex stay where they are. So an
    open mesh's boundary becomes a cubic B-spline of its boundary polygon, independent of the
    interior.

    Vertex attributes are interpolated linearly (edge points: mean of the two ends; face points:
    mean of the face's corners; old vertices keep theirs; integer attributes rounded); they are
    not smoothed with the positions, and attributes derived from positions, such as normals, are
    not recomputed. Face attributes are inherited by every face a face splits into. The Euler
    characteristic, the boundary loops and the orientation are preserved. Refused with
    ``op.output_too_large`` when the output would exceed 2^28 faces. Reports the counts before
    and after, crease edges, crease and corner vertices (and ``quads`` for Catmull-Clark).
    """,
    kind=OpKind.remesh,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    attribute_flow=_attributes_after,
    outputs={
        "quad_id": Output(
            Element.face,
            "(n_faces,)",
            "int32",
            "Catmull-Clark only: the quad each triangle belongs to (two triangles per quad).",
        )
    },
    reports="scheme, levels, vertices_before, faces_before, vertices_after, faces_after, "
    "crease_edges (edges without exactly two faces), crease_vertices, corner_vertices (kept in "
    "place), quads (Catmull-Clark)",
    test_variants=(
        {},
        {"scheme": "midpoint", "levels": 2},
        {"scheme": "catmull_clark"},
        {"scheme": "loop", "levels": 2},
    ),
    tolerances={"quad_id": Tolerance(atol=0.0)},
)
