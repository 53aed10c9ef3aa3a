"""``decimate``: quadric error decimation (Garland-Heckbert) in parallel rounds of collapses.

Motivation: a sequential QEM decimator pops one edge at a time from a priority queue; the GPU
needs thousands of collapses per step. Design: every round ranks the eligible edges by their
quadric cost, keeps the cheapest ``CANDIDATE_FRACTION`` of them as candidates (so a round does
not collapse expensive edges where cheap ones exist elsewhere: the closer to the sequential
order, the better the quality), checks each candidate's preconditions (link condition, no
fold-over, no near-degenerate face) and collapses at once the valid candidates that are the
cheapest among those touching their ends' one-rings (:mod:`workers.engine.dynamic.collapse`).
A fifth of the edges as candidates takes about 23 rounds to 10 % of a 278K-face bunny, with the
same sampled distance to the input as a tenth (32 rounds); two fifths saves five more rounds
for about 5 % more mean error. The merged vertex's quadric is the sum of the two. Without
``preserve_boundary`` a boundary edge's merged vertex stays on the edge, where its quadric is
smallest along it (:func:`on_boundary_edges`): the free optimum of the weighted boundary planes
put one of beetle's vertices 0.13 of the diagonal off the surface.
A convex vertex also carries a plane through it across its axis (the sum of its faces'
normals), weighted ``TIP_WEIGHT`` times its faces times ``f (2 - f)``, ``f`` its angle deficit
over 2 pi (:func:`workers.engine.dynamic.quadrics.tip_quadrics`): the faces of a sharp tip lie
nearly along its axis, so their planes barely charge for shortening it (cow's horns).
In the last round the accepted collapses are taken cheapest first until the target is met, so
the face count lands on the target (one face above it at most). Near the target only the
cheapest valid candidates, ``FOCUS`` times the collapses still wanted, take part in a round (the
fifth of the edges, at least ``MIN_CANDIDATES``, is then far more than the collapses left, and
every local minimum among them went, however costly: on fandisk at 1 % a sharp corner went at
rank 199 of 256 candidates with 60 collapses to go); the last rounds run nearly in the
sequential order. Measured on the shared meshes at 10 and 1 % (three vertex orders each), the
closed ones' Hausdorff error over fast-simplification's fell by a tenth (geometric mean), its
worst case from 2.8x to 1.75x, for at most two more rounds on the small meshes but fandisk at
10 % (67 to 82: many flat edges of equal cost) and one more (21 to 22) on the 1.1M-face bunny
to 10 %. Not with texture error (``uv_weight``): on the swirled grid of the
tests it moved the texture 40 % more (1.35e-3 to 1.94e-3 mean shift), not yet understood.

Texture seams (:func:`workers.engine.corners.seam_edges`): their vertices are pinned, never
moved; a free neighbour may collapse onto one as onto a preserved boundary end. With
``simplify_seams`` a seam vertex inside one seam line (two seam edges, no junction, no end, off
the boundary) may also go onto its neighbour along the line, which stays (a half-edge collapse:
``a-b-c`` becomes ``a-c``, still a line through the same junctions; a loop keeps three edges at
least, :func:`workers.engine.dynamic.collapse.seam_line_edges`); the seam edges carry the planes
through them perpendicular to their faces, weighted ``SEAM_WEIGHT`` faces each, so bending a line
costs what it moves. Each output face therefore lies in one chart of the input's atlas, and the
charts the seams cut the surface into stay those of the input.

Texture (``uv_weight``, when the mesh has the corner attribute ``uv`` and runs with its seams
known, as the pipeline runs it): the result's corners are found again on the input surface
within each face's chart (:mod:`workers.engine.corners`), so what decimation can spoil is the
texture's placement: a merged triangle whose linear texture coordinates no longer follow the
input's. Each face's coordinates make a linear function on its plane; a vertex carries, besides
its plane quadric, the error of its coordinates against the functions of the faces merged into it
(Hoppe 1999, "New quadric metric for simplifying meshes with appearance attributes", in its
memory-efficient form: 19 floats, :func:`workers.engine.dynamic.quadrics.attribute_quadrics`),
faces weighted by area as in Garland and Heckbert 1998. The coordinates are scaled to surface
units, times the square root of ``uv_weight``. A free merged vertex takes the coordinates that
make the error smallest at each position (the Schur complement leaves a 3x3 solve); one that
stays where it is (a seam or boundary end) keeps its own, in the chart of the edge's face, which
the rounds track per corner (:func:`workers.engine.dynamic.collapse.merged_corners`). Seam
vertices carry no texture error of their own: their faces lie in several charts. Measured with
``python -m bench.decimate_uv`` (texture shift: the coordinates at 16 points a face against those
of the input's closest point): spot at 50/20/10 %, 0.01 moves the texture 12/12/11 % less (95th
percentile 18/18/21 %) for +4/+5/-1 % mean geometric error; Loop-subdivided spot (23K faces) at
20/5/2 % 12/4/7 % less for +2/-1/-5 %; 1.0 moves it 22 to 52 % less on both, for 25 to 46 %
more mean geometric error, hence the small default. On a flat grid with a swirled texture (no
geometric error at all) it moves 1.9 times less (2.6 times when equal costs went in edge order,
before :func:`rank_keys`). On the shared assets (small meshes, many
vertices on seams) colour error and texture shift change within their noise. Without texture
coordinates the result is the same bit for bit.

Alternatives: the multiple-choice scheme of Wu and Kobbelt (random edges, best of k) needs no
ranking but no ordering either; vertex clustering (``cluster_coarsen``) is faster but keeps no
error bound. Testing: invariants as for every collapse, the target reached, the sampled distance
to the input against fast-simplification's in ``bench/decimate_quality.py``.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from pydantic import Field

from .. import corners
from ..dynamic._edges import edge_keys, edge_lookup
from ..dynamic.collapse import Candidates, CollapseState, Eligible, edge_end_values
from ..dynamic.quadrics import (
    attribute_best,
    attribute_error,
    attribute_quadrics,
    attribute_reduced,
    boundary_quadrics,
    collapse_points,
    edge_parameter,
    evaluate,
    optimal_points,
    segment_points,
    tip_quadrics,
    vertex_quadrics,
)
from ..errors import OpParamsError
from ..graph import smallest
from ..mesh import TriMesh
from ..topology import Topology
from ._collapse import initial_state, result_mesh, run_rounds, seam_counts
from .registry import Operation, OpKind, OpParams, OpResult

#: share of the eligible edges (cheapest first) that are candidates in a round
CANDIDATE_FRACTION = 0.2
#: a round considers at least this many candidates (small meshes)
MIN_CANDIDATES = 256
#: weight of the planes that hold an unlocked boundary in place, against one face's plane. On
#: the shared meshes with a boundary (at 10 and 1 %, three vertex orders) 100 left the smallest
#: errors against fast-simplification's of 1000, 100, 10 and 1 (geometric mean 3 to 9 % below
#: 1000's; suzanne at 10 %: 1.42-1.96 times fast-simplification's error at 1000, its open eyes
#: kept at 10 faces each and the head left 74, within 1.2 times at 100)
BOUNDARY_WEIGHT = 100.0
#: weight of the planes that hold a convex vertex along its axis
#: (:func:`~workers.engine.dynamic.quadrics.tip_quadrics`), times its faces and a share from its
#: angle deficit; 0: none. Not with texture error (``uv_weight``), whose balance was tuned
#: without. On the shared meshes (three vertex orders, medians) cow at 10 % went from 1.22 to
#: 0.52 times fast-simplification's Hausdorff error (a horn tip); at 1 % (100 to 200 faces left)
#: the rows change with any change of the costs, down to the last bits of the sums (fandisk at
#: 1 %, nine orders: median 1.77 to 1.13 times). 2 and 12 put more rows over 1.2 times than
#: 3 to 8 did in a first trial
TIP_WEIGHT = 6.0
#: weight of the planes that hold a texture seam line in place: the weight the texture balance
#: (``uv_weight``) was measured with
SEAM_WEIGHT = 1000.0
#: near the target a round resolves conflicts among the cheapest valid candidates only, this
#: many times the collapses still wanted (:func:`~workers.engine.dynamic.collapse.collapse_round`)
FOCUS = 2.0
#: the low bits of a cost's float64 pattern replaced by a hash of its edge id when the candidates
#: are ranked (:func:`rank_keys`): costs within 2^-40 of each other count as ties
TIE_BITS = 12
_GOLDEN = 0x9E3779B97F4A7C15


def rank_keys(xp: ModuleType, cost: Any, edge: Any) -> Any:
    """``(k,) int64`` keys that order the float64 ``cost`` (NaN last) as their values do, but
    for costs equal to within their last ``TIE_BITS`` bits (exact ties in particular), which
    they order by a multiplicative hash of ``edge`` (then by index): ties spread over the
    surface. In edge order the cheapest ties lie side by side, where few of them are
    independent: flat parts cost exactly 0, and on the 17.8M-face bunny (midpoint-subdivided,
    flat within each input face) the last 0.9 % of the budget took sixteen rounds of a few
    hundred collapses each (12 rounds fewer, 0.81 -> 0.71 s on an H100, with the ties hashed).
    On the GPU one kernel (``kernels/quadrics.cu``), the same keys."""
    if xp.__name__ == "cupy":
        from ..kernels.loader import launch, load_kernel

        k = int(cost.shape[0])
        key = xp.empty(k, dtype=xp.int64)
        args = (
            xp.ascontiguousarray(cost, dtype=xp.float64),
            xp.ascontiguousarray(edge, dtype=xp.int64),
            xp.int32(TIE_BITS),
            xp.int64(k),
            key,
        )
        launch(load_kernel("quadrics", "rank_keys"), k, args, op="decimate")
        return key
    c = xp.where(xp.isnan(cost), xp.inf, cost).astype(xp.float64)
    bits = c.view(xp.int64)
    bits = xp.where(bits < 0, bits ^ xp.int64(0x7FFFFFFFFFFFFFFF), bits)  # negative ones in order
    h = (edge.astype(xp.uint64) * xp.uint64(_GOLDEN)) >> xp.uint64(64 - TIE_BITS)
    return (bits & xp.int64(~((1 << TIE_BITS) - 1))) | h.astype(xp.int64)


class Params(OpParams):
    target_faces: int | None = Field(
        None,
        ge=1,
        le=2**31 - 2,
        description="Stop when the mesh has this many faces (or fewer cannot be reached). Give "
        "target_faces or target_ratio, not both.",
    )
    target_ratio: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Stop at this fraction of the input's face count (rounded down). Default "
        "0.5 when neither target is given.",
    )
    preserve_boundary: bool = Field(
        True,
        description="Lock the boundary: no boundary edge is collapsed and no boundary vertex "
        "moves. When false, boundary edges may collapse, held near their place by heavily "
        "weighted planes perpendicular to their faces; a collapsed boundary edge's vertex "
        "stays on the edge.",
    )
    max_error: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Never collapse an edge whose quadric error (the square root: a distance) "
        "exceeds this fraction of the bounding-box diagonal, even if the target is not reached. "
        "The error counts the planes that hold sharp tips too, so near them it stops earlier "
        "than the distance alone would. None: no bound.",
    )
    max_rounds: int = Field(
        500, ge=1, le=100_000, description="Stop after this many rounds of parallel collapses."
    )
    simplify_seams: bool = Field(
        True,
        description="Let collapses run along texture seam lines (edges where the corner "
        "attributes, such as UVs, or the material differ): a seam vertex between two seam edges "
        "of one line, off the boundary, may go onto its neighbour on the line, which stays "
        "where it is; bending the line costs like moving a boundary. Junctions and ends of seam "
        "lines never move or go. When false, no seam vertex moves or goes.",
    )
    uv_weight: float = Field(
        0.01,
        ge=0.0,
        le=1e6,
        description="Weight of the texture error in the collapse cost, when the mesh has texture "
        "coordinates (the corner attribute 'uv'): the merged vertex's coordinates against the "
        "linear texture function of each face it replaces (Hoppe 1999), texture distances in "
        "surface units (the texture scaled to the surface's area), each face weighted by its "
        "area; 1 weighs a texture shift like the same distance off the surface. Spot at 20 %: "
        "0.01 moves the texture 12 % less for 5 % more mean geometric error, 1 moves it 28 % "
        "less for 46 % more. 0: geometric error only. Costs 19 more floats per vertex and up to "
        "a fifth more time.",
    )


class _Planner:
    """Per round: quadric costs of the eligible edges, the cheapest fraction as candidates."""

    def __init__(self, max_cost: float | None, free_boundary: bool = False) -> None:
        self.max_cost = max_cost
        #: boundary edges are eligible (``preserve_boundary`` off): their merged vertex stays on
        #: the edge (:func:`on_boundary_edges`)
        self.free_boundary = free_boundary
        self.fraction = CANDIDATE_FRACTION
        self.over_error = False

    def widen(self) -> bool:
        """Consider every eligible edge from now on; False when that was already so."""
        if self.fraction >= 1.0:
            return False
        self.fraction = 1.0
        return True

    def __call__(self, state: CollapseState, topo: Topology, el: Eligible) -> Candidates:
        xp = state.xp
        X, Q = state.X, state.Q
        if state.U is None:
            p, cost = collapse_points(xp, Q, X, el.a, el.b, el.snap)
        else:  # the texture coordinates at their best for each position (Schur complement)
            Xa, Xb = X[el.a], X[el.b]
            Qe = Q[el.a] + Q[el.b]
            at_a = evaluate(xp, Qe, Xa)
            Ue = state.U[el.a] + state.U[el.b]
            p, cost = optimal_points(xp, Qe + attribute_reduced(xp, Ue), Xa, Xb)
            # an end that stays where it is keeps its texture coordinates (in the edge's chart)
            sn = xp.nonzero(el.snap)[0]
            s_sn = edge_end_values(state, topo, el.edge[sn], el.a[sn], el.b[sn])[:, 0]
            at_a[sn] += attribute_error(xp, Ue[sn], Xa[sn], s_sn)
            # a boundary end that must stay put: the collapse goes there
            p = xp.where(el.snap[:, None], Xa, p)
            cost = xp.where(el.snap, at_a, cost)
        if self.free_boundary:
            p, cost = on_boundary_edges(state, el, p, cost, None if state.U is None else Ue)
        ok = None  # the edges within max_cost (None: all of them)
        if self.max_cost is not None:
            ok = xp.nonzero(cost <= self.max_cost)[0]
            self.over_error = ok.shape[0] == 0
        k = int((cost if ok is None else ok).shape[0])
        n_take = min(k, max(MIN_CANDIDATES, math.ceil(self.fraction * k)))
        # cheapest first, ties spread (rank_keys): the ranks the round's resolution takes
        keys = rank_keys(xp, cost, el.edge)
        keep = smallest(xp, keys, n_take) if ok is None else ok[smallest(xp, keys[ok], n_take)]
        t = edge_parameter(xp, X[el.a[keep]], X[el.b[keep]], p[keep])
        c = Candidates(el.edge[keep], el.a[keep], el.b[keep], p[keep], t, cost[keep], ranked=True)
        if state.U is not None:
            c.s = merged_texture(state, topo, c, Ue[keep], el.snap[keep])
        return c


def on_boundary_edges(
    state: CollapseState, el: Eligible, p: Any, cost: Any, Ue: Any = None
) -> tuple[Any, Any]:
    """``(p, cost)`` with each boundary edge's merged vertex (both ends on the boundary, neither
    pinned) at the point of the edge where the ends' summed quadric (with the texture's, ``Ue``
    summed per edge, when there is one) is smallest
    (:func:`~workers.engine.dynamic.quadrics.segment_points`). The planes that hold a boundary
    in place weigh :data:`BOUNDARY_WEIGHT` faces each, and their free optimum can lie far off
    the boundary: on beetle at 10 % (weight 1000) a vertex went 0.13 of the diagonal off the
    surface, the Hausdorff error 1.35 to 1.5 times fast-simplification's in three vertex orders
    (it puts a boundary collapse at an end or the midpoint); on the edge 0.85 to 1.0 times."""
    xp, X, Q = state.xp, state.X, state.Q
    i = xp.nonzero(el.boundary_edge & ~el.snap)[0]
    if i.shape[0] == 0:
        return p, cost
    a, b = el.a[i], el.b[i]
    Qe = Q[a] + Q[b] if Ue is None else Q[a] + Q[b] + attribute_reduced(xp, Ue[i])
    p[i], cost[i] = segment_points(xp, Qe, X[a], X[b])  # the round's own arrays
    return p, cost


def merged_texture(state: CollapseState, topo: Topology, c: Candidates, Ue: Any, snap: Any) -> Any:
    """(k, 2) the merged vertex's texture coordinates for the candidates ``c`` (summed texture
    quadrics ``Ue``), in the chart of each edge's first face: an end that stays where it is
    (``snap``) keeps its own; else the best for the new position
    (:func:`~workers.engine.dynamic.quadrics.attribute_best`), or where no face weighs in (the
    ends' faces have no area) the ends' interpolated at ``t``."""
    xp = state.xp
    ends = edge_end_values(state, topo, c.edge, c.a, c.b)
    t = c.t[:, None]
    lerp = (1.0 - t) * ends[:, 0] + t * ends[:, 1]
    s = xp.where(Ue[:, 18:19] > 0, attribute_best(xp, Ue, c.p), lerp)
    return xp.where(snap[:, None], ends[:, 0], s)


def seam_quadrics(state: CollapseState, topo: Topology) -> Any:
    """(n, 10) quadrics that hold the seam lines in place as :func:`boundary_quadrics` holds a
    boundary: for each seam edge, the planes through it perpendicular to each of its faces,
    weighted :data:`SEAM_WEIGHT`. A collapse along a seam line then costs as much as the
    line bends."""
    xp = state.xp
    EV = topo.EV.astype(xp.int64)
    e = xp.nonzero(edge_lookup(xp, state.seams, edge_keys(xp, EV[:, 0], EV[:, 1]))[0])[0]
    e = e[topo.edge_face_count[e] == 2]
    first = topo.ef_offsets[e]
    sides = xp.concatenate([topo.ef_sides[first], topo.ef_sides[first + 1]])
    return boundary_quadrics(xp, state.X, state.F, sides, state.n_vertices, SEAM_WEIGHT)


def texture_quadrics(mesh: TriMesh, state: CollapseState, weight: float) -> None:
    """Give ``state`` texture error quadrics and corner texture coordinates (``U``, ``C``) when
    ``mesh`` has the corner attribute ``uv`` and the operation runs with its seams known
    (:func:`workers.engine.corners.seam_edges`: then a vertex that is not pinned lies in one
    chart and has one value). The coordinates are scaled by ``sqrt(weight * area / uv area)``
    (sums over the faces), so that a texture shift is measured in surface units."""
    xp = state.xp
    uv = mesh.corner_attrs.get("uv")
    if uv is None or corners.seam_edges(xp) is None or uv.shape[1:] != (3, 2):
        return
    S = xp.asarray(uv).astype(xp.float64)
    X, F = state.X, state.F
    ok = xp.isfinite(S).all(axis=(1, 2))
    S = xp.where(ok[:, None, None], S, 0.0)
    area = float(
        xp.linalg.norm(xp.cross(X[F[:, 1]] - X[F[:, 0]], X[F[:, 2]] - X[F[:, 0]]), axis=1)[ok].sum()
    )
    e1, e2 = S[:, 1] - S[:, 0], S[:, 2] - S[:, 0]
    uv_area = float(xp.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).sum())
    if not (area > 0 and uv_area > 0):
        return
    C = S * math.sqrt(weight * area / uv_area)
    C = xp.where(ok[:, None, None], C, xp.nan)
    state.U = attribute_quadrics(xp, X, F, C, state.n_vertices, state.pinned)
    state.C = xp.where(ok[:, None, None], C, 0.0)


def check_targets(p: Params) -> None:
    """One target at most (checked when the step is parsed)."""
    if p.target_faces is not None and p.target_ratio is not None:
        raise OpParamsError(
            "give target_faces or target_ratio, not both",
            code="op.target_ambiguous",
            target_faces=p.target_faces,
            target_ratio=p.target_ratio,
        )


def target_of(mesh: TriMesh, p: Params) -> int:
    if p.target_faces is not None:
        return int(p.target_faces)
    ratio = 0.5 if p.target_ratio is None else float(p.target_ratio)
    return max(1, int(math.floor(ratio * mesh.n_faces)))


def decimate(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    target = target_of(mesh, p)
    state, shift, layout = initial_state(mesh, seam_lines=p.simplify_seams)
    used = mesh.used_vertices()
    Xu = state.X[used]
    diag = float(xp.linalg.norm(Xu.max(axis=0) - Xu.min(axis=0))) if Xu.shape[0] else 0.0
    Q = vertex_quadrics(xp, state.X, state.F, state.n_vertices)
    topo = mesh.topology
    if not p.preserve_boundary and topo.boundary_edges.shape[0]:
        sides = topo.ef_sides[topo.ef_offsets[topo.boundary_edges]]
        Q = Q + boundary_quadrics(xp, state.X, state.F, sides, state.n_vertices, BOUNDARY_WEIGHT)
    if state.seams is not None and state.seam_lines:
        Q = Q + seam_quadrics(state, topo)
    state.Q = Q
    if p.uv_weight > 0:
        texture_quadrics(mesh, state, p.uv_weight)
    if TIP_WEIGHT > 0 and state.U is None:  # the texture balance was tuned without
        bnd = topo.boundary_vertices
        state.Q = state.Q + tip_quadrics(xp, state.X, state.F, state.n_vertices, TIP_WEIGHT, bnd)
    max_cost = None if p.max_error is None else (p.max_error * diag) ** 2
    planner = _Planner(max_cost, free_boundary=not p.preserve_boundary)

    def budget(s: CollapseState) -> int:
        # with the boundary kept every collapse removes two faces: one face to go is the target
        left = s.n_faces - target
        return 0 if left == 1 and p.preserve_boundary else left

    state, log, stopped = run_rounds(
        state,
        planner,
        preserve_boundary=p.preserve_boundary,
        max_rounds=p.max_rounds,
        budget=budget,
        widen=planner.widen,
        focus=FOCUS if state.U is None else None,  # the texture balance was tuned without
        topology=topo,
    )
    out = result_mesh(mesh, state, shift, layout)
    seams_kept, seams_removed = seam_counts(state)
    if out.n_faces <= target + 1:
        stopped = "target"
    elif stopped == "blocked" and planner.over_error:
        stopped = "max_error"
    report: dict[str, Any] = {
        "target_faces": target,
        "vertices_before": mesh.n_vertices,
        "faces_before": mesh.n_faces,
        "vertices_after": out.n_vertices,
        "faces_after": out.n_faces,
        **log.report(),
        "locked_vertices": int(state.locked.sum()),
        "seam_vertices_locked": seams_kept,
        "seam_vertices_removed": seams_removed,
        "stopped": stopped,
    }
    return OpResult(out, report)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return decimate(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy: the same rounds; the result has the same invariants and a
    comparable error, not necessarily the same bits (float sums differ)."""
    return decimate(mesh, p)


OP = Operation(
    name="decimate",
    summary="Quadric error decimation to a target face count, in parallel rounds.",
    description="""
    Quadric error decimation (Garland and Heckbert 1997) to ``target_faces`` or
    ``target_ratio`` of the input's faces, in parallel rounds of edge collapses.

    Every vertex carries the sum of the plane quadrics of its faces (unweighted, unit normals);
    an edge's cost is the smallest value of its two ends' summed quadric, at the point that
    solves the 3x3 system, or, where that system is ill-conditioned (flat or cylindrical
    neighbourhoods) or the optimum lies more than two edge lengths away, at the best of the two
    ends and the midpoint; a boundary edge (with ``preserve_boundary`` off) at the point of the edge
    where the quadric is smallest. Each round: the cheapest fifth of the eligible edges (one or two
    faces, manifold ends; with ``preserve_boundary`` no boundary edge, and a boundary end stays
    where it is) are candidates; each is checked on the current mesh (link condition, no face
    normal turned by more than acos(0.2), no near-degenerate face created); a valid one whose
    cost rank is the smallest among the valid ones with an end in the one-rings of its ends
    (scatter-min over the edges, a few passes) collapses with the others so chosen, cheapest
    first until the target is met. The merged vertex carries
    both quadrics. Vertex attributes are interpolated linearly by where the new position projects
    onto the edge; faces keep their face attributes and orientation; unused vertices are dropped.

    Manifold input stays manifold, the Euler characteristic of every component is kept, and with
    ``preserve_boundary`` the boundary is unchanged; the target may therefore be out of reach
    (a closed mesh keeps at least a tetrahedron per component). Non-manifold parts are left
    alone. ``max_error`` stops collapses whose error (square root of the cost) exceeds that
    fraction of the bounding-box diagonal (with texture error, of the summed cost; the tip
    planes count, so the bound is conservative beside sharp tips).

    With texture coordinates (the corner attribute ``uv``) and ``uv_weight`` above 0, the cost
    also counts how far the merged vertex's texture coordinates fall from the linear texture
    function of each face it replaces (Hoppe 1999; faces weighted by area as in Garland and
    Heckbert 1998), texture distances scaled to surface units and weighted by ``uv_weight``; a
    free merged vertex takes the position and coordinates that make the sum smallest. This
    keeps the texture where it was: on spot at 20 %, the default 0.01 moves the texture 12 %
    less for 5 % more mean geometric error. It costs 19 floats per vertex and up to a fifth
    more time.

    Texture seams (edges where the corner attributes, such as UVs, or the material differ) are
    kept: their vertices never move, a neighbour may collapse onto them, and with
    ``simplify_seams`` a vertex inside a seam line may go onto its neighbour along the line
    (junctions and ends of seam lines never go; bending a line costs like moving a boundary), so
    the seams stay lines through the same junctions and no face spans two charts of the atlas.
    Without ``simplify_seams`` every seam edge stays as it is, and the target may be out of
    reach.

    Refused with ``op.target_ambiguous`` when both targets are given. Reports the target,
    counts before and after, rounds, collapses (per round), rejections per reason (a candidate
    failing in several rounds counts in each), ``locked_vertices`` (non-manifold),
    ``seam_vertices_locked`` (seam vertices kept where they were), ``seam_vertices_removed``
    (collapsed along seam lines) and why it stopped
    (``target``, ``max_error``, ``blocked``: no legal collapse left, ``max_rounds``).
    """,
    kind=OpKind.dynamic,
    params=Params,
    check=check_targets,
    numpy=_numpy,
    cupy=_cupy,
    reports="target_faces, vertices_before, faces_before, vertices_after, faces_after, rounds, "
    "collapses, collapses_per_round, rejected (per reason: link, long_edge, fold, degenerate), "
    "locked_vertices, seam_vertices_locked, seam_vertices_removed, stopped (target, max_error, "
    "blocked, max_rounds)",
    test_variants=(
        {},
        {"target_ratio": 0.1, "preserve_boundary": False},
        {"target_faces": 500, "max_error": 0.01},
    ),
)
