"""``dual_mesh``: face centroids joined around every interior vertex (KEY-WELD, section 5.5)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..graph import scatter_min
from ..mesh import TriMesh, segment_mean
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


class Params(OpParams):
    triangulation: Literal["centroid", "fan"] = Field(
        "centroid",
        description="How the mesh holds each dual polygon as triangles: 'centroid': a new vertex "
        "at the polygon's centroid and one triangle per side (k triangles for k sides); 'fan': "
        "triangles from the polygon's first vertex (k - 2 triangles, no new vertex). OBJ, PLY and "
        "OFF write the polygons themselves (centre vertices left out) unless the output asks "
        "for triangles.",
    )


def dual_polygons(mesh: TriMesh) -> tuple[Any, Any, Any]:
    """``(vertex, faces, eligible)``: the dual polygons as corner lists, sorted by primal vertex
    and, within one, in counter-clockwise order around it seen from outside (``faces[i]`` is the
    primal face of the i-th corner, ``vertex[i]`` its primal vertex), and the mask of primal
    vertices that have a polygon.

    A vertex is eligible when it is used, all its edges have exactly two faces, those two faces
    traverse the edge in opposite directions, its faces form one fan and none of them repeats a
    vertex. Around such a vertex, "the face across the side entering the vertex" is a cyclic
    permutation of its corners; the cycle is cut at its smallest corner and ranked by pointer
    jumping (log2 of the valence rounds of gathers), then corners are sorted by (vertex, rank).
    """
    xp = mesh.xp
    topo = mesh.topology
    n, m = mesh.n_vertices, mesh.n_faces
    F = mesh.F.astype(xp.int64)
    Fr = F.ravel()
    # vertices that cannot have a closed, ordered ring
    bad = ~topo.used_vertices | (topo.vertex_fans() != 1)
    efc = topo.edge_face_count
    bits = topo.FE.ravel() & 1
    s, t = topo.ef_pairs()
    e_s = topo.FE.ravel()[s] // 2
    two = efc[e_s] == 2
    inconsistent = xp.zeros(topo.n_edges, dtype=bool)
    inconsistent[e_s[two & (bits[s] == bits[t])]] = True
    bad_edge = (efc != 2) | inconsistent
    ev_bad = topo.EV[bad_edge].astype(xp.int64).ravel()
    bad[ev_bad] = True
    degenerate = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
    bad[F[degenerate].ravel()] = True
    eligible = ~bad
    # the other side of every side of a two-face edge
    other = xp.full(3 * m, -1, dtype=xp.int64)
    s2, t2 = s[two], t[two]
    other[s2] = t2
    other[t2] = s2
    corners = xp.nonzero(eligible[Fr])[0]
    if corners.shape[0] == 0:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z, eligible
    # corner c = 3f + k at vertex v: side (k + 2) % 3 of f enters v; across it, face g walks
    # the edge out of v, so g's side j starts at v and corner 3g + j is the next one (counter-
    # clockwise seen from outside for a consistently oriented mesh)
    f, k = corners // 3, corners % 3
    across = other[3 * f + (k + 2) % 3]
    succ_global = across  # side 3g + j starts at v: the same flat index is the corner
    v = Fr[corners]
    # local numbering of the eligible corners
    local = xp.full(3 * m, -1, dtype=xp.int64)
    nc = int(corners.shape[0])
    local[corners] = xp.arange(nc, dtype=xp.int64)
    succ = local[succ_global]
    # cut each cycle before its head (the smallest corner of the vertex: corners are sorted, so
    # the first corner of each vertex in corner order is found by a scatter-min on the vertex)
    head = xp.full(n, nc, dtype=xp.int64)
    scatter_min(xp, head, v, xp.arange(nc, dtype=xp.int64))
    is_head = head[v] == xp.arange(nc, dtype=xp.int64)
    nxt = xp.where(is_head[succ], -1, succ)
    # distance to the end of the chain by pointer jumping
    dist = (nxt >= 0).astype(xp.int64)
    rounds = max(int(nc).bit_length(), 1) + 1
    for _ in range(rounds):
        live = nxt >= 0
        if not bool(live.any()):
            break
        j = xp.where(live, nxt, 0)
        dist = dist + xp.where(live, dist[j], 0)
        nxt = xp.where(live, nxt[j], -1)
    valence = xp.bincount(v, minlength=n)
    rank = valence[v] - 1 - dist
    order = xp.argsort(v * (3 * m) + rank)
    return v[order], f[order], eligible


def dual(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    topo = mesh.topology
    m = mesh.n_faces
    pv, pf, eligible = dual_polygons(mesh)
    L = int(pv.shape[0])
    # dual vertices: the centroids of the faces that appear in some polygon, in face order
    used_face = xp.zeros(m, dtype=bool)
    used_face[pf] = True
    faces_kept = xp.nonzero(used_face)[0]
    new_of_face = xp.cumsum(used_face) - 1
    X = mesh.V.astype(xp.float64)
    C = X[mesh.F[faces_kept]].mean(axis=1)
    nd = int(faces_kept.shape[0])
    # polygons: one per eligible vertex, numbered in vertex order
    poly_vertex = xp.nonzero(eligible)[0]
    n_poly = int(poly_vertex.shape[0])
    poly_of_vertex = xp.cumsum(eligible) - 1
    poly = poly_of_vertex[pv]  # polygon of each corner, non-decreasing
    start = xp.zeros(n_poly + 1, dtype=xp.int64)
    start[1:] = xp.cumsum(xp.bincount(poly, minlength=n_poly))
    idx = xp.arange(L, dtype=xp.int64)
    pos = idx - start[poly]
    size = (start[1:] - start[:-1])[poly]
    nxt = xp.where(pos + 1 < size, idx + 1, start[poly])
    cur_v = new_of_face[pf]
    nxt_v = cur_v[nxt] if L else cur_v
    va: dict[str, Any] = {
        name: a[faces_kept] for name, a in mesh.face_attrs.items()
    }  # primal face attributes become the dual's vertex attributes
    if p.triangulation == "centroid":
        centre = _mean(xp, C[cur_v], poly, n_poly)
        Vout = xp.concatenate([C, centre])
        F = xp.stack([nd + poly, cur_v, nxt_v], axis=1)
        tri_poly = poly
        for name, a in list(va.items()):
            va[name] = xp.concatenate(
                [a, segment_mean(xp, mesh.face_attrs[name][pf], poly, n_poly)]
            )
    else:
        inner = (pos >= 1) & (pos + 1 < size)
        sel = xp.nonzero(inner)[0]
        first_v = cur_v[start[poly[sel]]]
        F = xp.stack([first_v, cur_v[sel], nxt_v[sel]], axis=1)
        Vout = C
        tri_poly = poly[sel]
    fa = {name: a[poly_vertex[tri_poly]] for name, a in mesh.vertex_attrs.items()}
    fa["polygon_id"] = tri_poly.astype(xp.int32)
    out = TriMesh(Vout.astype(mesh.V.dtype), F.astype(xp.int32), va, fa, source=mesh.source)
    closed_two = topo.edge_face_count == 2
    ev = topo.EV.astype(xp.int64)
    dual_edges = int((closed_two & (eligible[ev[:, 0]] | eligible[ev[:, 1]])).sum())
    report = {
        "polygons": n_poly,
        "polygon_sides": L,
        "dual_vertices": nd,
        "dual_edges": dual_edges,
        "polygon_euler_characteristic": nd - dual_edges + n_poly,
        "vertices_without_polygon": int(topo.used_vertices.sum()) - n_poly,
        "vertices_after": out.n_vertices,
        "faces_after": out.n_faces,
    }
    return OpResult(out, report)


def _mean(xp: Any, a: Any, seg: Any, n: int) -> Any:
    if a.shape[0] == 0:
        return xp.zeros((n,) + tuple(a.shape[1:]), dtype=a.dtype)
    return segment_mean(xp, a, seg, n)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return dual(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy (sorts, scans, gathers, scatter-min, pointer jumping)."""
    return dual(mesh, p)


def _attributes_after(p: Params, before: dict[str, str]) -> dict[str, str]:
    """Vertex and face attributes swap roles (see :func:`_numpy`); ``polygon_id`` is added."""
    swapped = {"vertex": "face", "face": "vertex"}
    return {**{k: swapped[e] for k, e in before.items()}, "polygon_id": "face"}


OP = Operation(
    name="dual_mesh",
    summary="Dual mesh: face centroids joined around every interior vertex (polygons).",
    description="""
    The dual mesh: one vertex per face (its centroid), one polygon per interior vertex, its
    corners the centroids of the vertex's faces in counter-clockwise order seen from outside
    (found by walking faces across edges: pointer jumping on the ring's successor, no loop over
    vertices), so a consistently oriented mesh gives a consistently oriented dual.

    Boundary rule: only vertices with a closed ring have a polygon: a vertex on a boundary or
    non-manifold edge, on an edge whose two faces disagree in orientation, a non-manifold vertex
    (several fans), a vertex of a degenerate face and an unused vertex produce no polygon, and
    centroids of faces that lie in no polygon are left out. So the dual of a closed, consistently
    oriented manifold has V* = F, E* = E, F* = V and the same Euler characteristic, and the dual
    of an open mesh covers its interior only.

    The polygons are triangulated (the mesh holds triangles): around a new vertex at the
    polygon's centroid (default), or as a fan from the polygon's first corner; each triangle
    carries ``polygon_id`` (the polygon's index; polygons are numbered in primal vertex order).
    OBJ, PLY and OFF output writes the polygons back, first corner first, without the centre
    vertices, unless the job asks for triangles.
    Attributes swap roles: a primal face attribute becomes a vertex attribute of its centroid
    (centroid vertices: mean over the polygon), a primal vertex attribute a face attribute of its
    polygon's triangles. Reports ``polygons``, ``polygon_sides``, ``dual_vertices``,
    ``dual_edges``, ``polygon_euler_characteristic`` (V* - E* + F* of the polygon mesh),
    ``vertices_without_polygon`` and the triangle mesh's counts.
    """,
    kind=OpKind.remesh,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    attribute_flow=_attributes_after,
    outputs={
        "polygon_id": Output(
            Element.face,
            "(n_faces,)",
            "int32",
            "dual_mesh: the dual polygon (primal vertex) each triangle belongs to.",
        )
    },
    reports="polygons, polygon_sides, dual_vertices, dual_edges, polygon_euler_characteristic, "
    "vertices_without_polygon, vertices_after, faces_after",
    test_variants=(
        {},
        {"triangulation": "fan"},
    ),
    tolerances={"polygon_id": Tolerance(atol=0.0)},
)
