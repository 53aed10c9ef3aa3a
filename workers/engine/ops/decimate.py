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
for about 5 % more mean error. The merged vertex's quadric is the sum of the two.
In the last round the accepted collapses are taken cheapest first until the target is met, so
the face count lands on the target (one face above it at most).

Texture seams (:func:`workers.engine.corners.seam_edges`): their vertices are pinned, never
moved; a free neighbour may collapse onto one as onto a preserved boundary end. With
``simplify_seams`` a seam vertex inside one seam line (two seam edges, no junction, no end, off
the boundary) may also go onto its neighbour along the line, which stays (a half-edge collapse:
``a-b-c`` becomes ``a-c``, still a line through the same junctions; a loop keeps three edges at
least, :func:`workers.engine.dynamic.collapse.seam_line_edges`); the seam edges carry the planes
through them perpendicular to their faces, weighted as a boundary's, so bending a line costs
what it moves. Each output face therefore lies in one chart of the input's atlas, and the charts
the seams cut the surface into stay those of the input.

Alternatives: the multiple-choice scheme of Wu and Kobbelt (random edges, best of k) needs no
ranking but no ordering either; vertex clustering (``cluster_coarsen``) is faster but keeps no
error bound. Testing: invariants as for every collapse, the target reached, the sampled distance
to the input against fast-simplification's in ``bench/decimate_quality.py``.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from ..dynamic._edges import edge_keys, edge_lookup
from ..dynamic.collapse import Candidates, CollapseState, Eligible
from ..dynamic.quadrics import (
    boundary_quadrics,
    edge_parameter,
    evaluate,
    optimal_points,
    vertex_quadrics,
)
from ..errors import OpParamsError
from ..mesh import TriMesh
from ..topology import Topology
from ._collapse import initial_state, result_mesh, run_rounds, seam_counts
from .registry import Operation, OpKind, OpParams, OpResult

#: share of the eligible edges (cheapest first) that are candidates in a round
CANDIDATE_FRACTION = 0.2
#: a round considers at least this many candidates (small meshes)
MIN_CANDIDATES = 256
#: weight of the planes that hold an unlocked boundary in place, against one face's plane
BOUNDARY_WEIGHT = 1000.0


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
        "weighted planes perpendicular to their faces.",
    )
    max_error: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Never collapse an edge whose quadric error (the square root: a distance) "
        "exceeds this fraction of the bounding-box diagonal, even if the target is not reached. "
        "None: no bound.",
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


class _Planner:
    """Per round: quadric costs of the eligible edges, the cheapest fraction as candidates."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
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
        Xa, Xb = X[el.a], X[el.b]
        Qe = Q[el.a] + Q[el.b]
        p, cost = optimal_points(xp, Qe, Xa, Xb)
        # a boundary end that must stay put: the collapse goes there
        p = xp.where(el.snap[:, None], Xa, p)
        cost = xp.where(el.snap, evaluate(xp, Qe, Xa), cost)
        keep = xp.arange(cost.shape[0], dtype=xp.int64)
        if self.max_cost is not None:
            keep = xp.nonzero(cost <= self.max_cost)[0]
            self.over_error = keep.shape[0] == 0
        k = int(keep.shape[0])
        n_take = min(k, max(MIN_CANDIDATES, math.ceil(self.fraction * k)))
        if n_take < k:
            keep = keep[xp.argsort(cost[keep], kind="stable")[:n_take]]
        t = edge_parameter(xp, Xa[keep], Xb[keep], p[keep])
        return Candidates(el.edge[keep], el.a[keep], el.b[keep], p[keep], t, cost[keep])


def seam_quadrics(state: CollapseState, topo: Topology) -> Any:
    """(n, 10) quadrics that hold the seam lines in place as :func:`boundary_quadrics` holds a
    boundary: for each seam edge, the planes through it perpendicular to each of its faces,
    weighted :data:`BOUNDARY_WEIGHT`. A collapse along a seam line then costs as much as the
    line bends."""
    xp = state.xp
    EV = topo.EV.astype(xp.int64)
    e = xp.nonzero(edge_lookup(xp, state.seams, edge_keys(xp, EV[:, 0], EV[:, 1]))[0])[0]
    e = e[topo.edge_face_count[e] == 2]
    first = topo.ef_offsets[e]
    sides = xp.concatenate([topo.ef_sides[first], topo.ef_sides[first + 1]])
    return boundary_quadrics(xp, state.X, state.F, sides, state.n_vertices, BOUNDARY_WEIGHT)


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
    max_cost = None if p.max_error is None else (p.max_error * diag) ** 2
    planner = _Planner(max_cost)
    state, log, stopped = run_rounds(
        state,
        planner,
        preserve_boundary=p.preserve_boundary,
        max_rounds=p.max_rounds,
        budget=lambda s: s.n_faces - target,
        widen=planner.widen,
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
    ends and the midpoint. Each round: the cheapest fifth of the eligible edges (one or two
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
    fraction of the bounding-box diagonal.

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
