"""``collapse_short_edges``: collapse every edge shorter than a threshold, shortest first, in
parallel rounds of independent cavities.

Design: each round takes the eligible edges shorter than the threshold as candidates, ranked by
length; the candidates that pass the preconditions (link condition, no fold-over, no
near-degenerate face, optionally no edge longer than ``max_edge_length`` created) and are the
shortest among those with an end in the one-rings of their ends are collapsed at once
(:mod:`workers.engine.dynamic.collapse`). A collapse moves the survivor to the edge's midpoint, or
keeps the boundary end where it is when only one end is on the boundary. Rounds repeat until no
candidate is accepted. The sequential alternative (a priority queue, one collapse at a time) gives
a slightly different result: here an edge waits for the next round when a shorter edge with an
end at or next to one of its ends is collapsed first, and is then re-measured.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..dynamic.collapse import Candidates, CollapseState, Eligible
from ..errors import OpParamsError
from ..mesh import TriMesh
from ..topology import Topology
from ._collapse import initial_state, mean_edge_length, result_mesh, run_rounds, seam_counts
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    threshold: float = Field(
        0.5,
        gt=0.0,
        le=1e6,
        description="Edges shorter than this are collapsed. With relative (the default) a "
        "fraction of the input's mean edge length, otherwise an absolute length.",
    )
    relative: bool = Field(
        True,
        description="Read threshold and max_edge_length as fractions of the input's mean edge "
        "length (otherwise absolute lengths).",
    )
    max_edge_length: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description="Refuse a collapse that would create an edge longer than this (same units "
        "as threshold; must exceed it). None: no limit.",
    )
    preserve_boundary: bool = Field(
        True,
        description="Keep boundary edges and boundary vertices as they are: no boundary edge is "
        "collapsed and no boundary vertex moves.",
    )
    max_rounds: int = Field(
        100, ge=1, le=10_000, description="Stop after this many rounds of parallel collapses."
    )


def _planner(threshold: float) -> Any:
    def plan(state: CollapseState, topo: Topology, el: Eligible) -> Candidates:
        xp = state.xp
        X = state.X
        d = X[el.a] - X[el.b]
        length = xp.sqrt((d * d).sum(axis=1))
        short = xp.nonzero(length < threshold)[0]
        a, b, snap = el.a[short], el.b[short], el.snap[short]
        mid = 0.5 * (X[a] + X[b])
        p = xp.where(snap[:, None], X[a], mid)
        t = xp.where(snap, 0.0, 0.5)
        return Candidates(el.edge[short], a, b, p, t, length[short])

    return plan


def check_lengths(p: Params) -> None:
    """``max_edge_length`` above ``threshold`` (both in the same unit; checked when the step is
    parsed)."""
    if p.max_edge_length is not None and p.max_edge_length <= p.threshold:
        raise OpParamsError(
            "max_edge_length must exceed threshold",
            code="op.max_edge_length_too_small",
            threshold=p.threshold,
            max_edge_length=p.max_edge_length,
        )


def collapse_short_edges(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    scale = mean_edge_length(mesh) if p.relative else 1.0
    threshold = p.threshold * scale
    max_len = None if p.max_edge_length is None else p.max_edge_length * scale
    state, shift, layout = initial_state(mesh)
    state, log, stopped = run_rounds(
        state,
        _planner(threshold),
        preserve_boundary=p.preserve_boundary,
        max_rounds=p.max_rounds,
        max_edge_length=max_len,
    )
    out = result_mesh(mesh, state, shift, layout)
    topo = out.topology
    EV = topo.EV
    d = out.V[EV[:, 0]].astype(xp.float64) - out.V[EV[:, 1]].astype(xp.float64)
    left = int((xp.sqrt((d * d).sum(axis=1)) < threshold).sum())
    report: dict[str, Any] = {
        "threshold": threshold,
        "vertices_before": mesh.n_vertices,
        "faces_before": mesh.n_faces,
        "vertices_after": out.n_vertices,
        "faces_after": out.n_faces,
        **log.report(),
        "short_edges_left": left,
        "locked_vertices": int(state.locked.sum()),
        "seam_vertices_locked": seam_counts(state)[0],
        "stopped": "goal" if stopped == "blocked" and left == 0 else stopped,
    }
    return OpResult(out, report)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return collapse_short_edges(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy (sorts, scans, gathers, scatter-min): the same rounds; the
    result has the same invariants, not necessarily the same bits (float sums differ)."""
    return collapse_short_edges(mesh, p)


OP = Operation(
    name="collapse_short_edges",
    summary="Collapse edges shorter than a threshold, in parallel rounds.",
    description="""
    Collapse edges shorter than ``threshold`` (by default relative to the input's mean edge
    length), shortest first, in parallel rounds until none can be collapsed.

    Each round: candidates are the eligible edges (one or two faces, no non-manifold end, with
    ``preserve_boundary`` not on the boundary) shorter than the threshold; each is checked on the
    current mesh (link condition, no face normal turned by more than acos(0.2), no
    near-degenerate face created, no edge longer than ``max_edge_length`` created); a valid one
    whose length rank is the smallest among the valid ones with an end in the one-rings of its
    ends (scatter-min over the edges, a few passes) collapses with the others so chosen. The
    survivor moves to the midpoint (a boundary end stays where it is); vertex attributes are
    interpolated linearly, faces keep their face attributes and orientation; unused vertices are
    dropped.

    Manifold input stays manifold, the Euler characteristic of every component is kept, and with
    ``preserve_boundary`` the boundary is unchanged. Non-manifold parts are left alone: only
    edges whose ends are manifold vertices are collapsed. The vertices of texture seams (edges
    where the corner attributes, such as UVs, or the material differ) are locked like a preserved
    boundary: they never move and are never removed (a neighbour may collapse onto them), so
    every seam edge stays. Edges that stay short are those whose collapse fails a precondition or
    joins two locked vertices: ``short_edges_left`` counts them.

    Refused with ``op.max_edge_length_too_small`` when ``max_edge_length`` does not exceed
    ``threshold``. Reports the threshold used (absolute), counts before and after, rounds,
    collapses (per round), rejections per reason (a candidate failing in several rounds counts
    in each), ``short_edges_left``, ``locked_vertices`` (non-manifold), ``seam_vertices_locked``
    and why it stopped (``goal``: no short edge left; ``blocked``: the short edges left cannot
    be collapsed; ``max_rounds``).
    """,
    kind=OpKind.dynamic,
    params=Params,
    check=check_lengths,
    numpy=_numpy,
    cupy=_cupy,
    reports="threshold, vertices_before, faces_before, vertices_after, faces_after, rounds, "
    "collapses, collapses_per_round, rejected (per reason: link, long_edge, fold, degenerate), "
    "short_edges_left, locked_vertices, seam_vertices_locked, stopped (goal, blocked, max_rounds)",
    test_variants=(
        {},
        {"threshold": 0.9, "preserve_boundary": False},
        {"threshold": 1.2, "max_edge_length": 2.0},
    ),
)
