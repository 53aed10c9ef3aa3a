"""What the collapse operations share: the working state made from a mesh, the round loop, and
the mesh made back from the state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import progress
from ..dynamic.collapse import (
    CollapseState,
    Planner,
    RoundLog,
    collapse_round,
    finish,
    locked_vertices,
)
from ..dynamic.seams import key_vertices, record_kept, seam_keys
from ..mesh import TriMesh
from ..topology import Topology
from ._refine import stack_vertex_attrs, unstack_vertex_attrs


def initial_state(
    mesh: TriMesh, *, seam_lines: bool = False
) -> tuple[CollapseState, Any, list[Any]]:
    """``(state, shift, layout)``: positions in float64 moved by ``-shift`` (the bounding-box
    centre of the used vertices, so quadrics and cross products lose no digits far from the
    origin), vertex attributes stacked, non-manifold vertices locked, the vertices of the seam
    edges being kept (:func:`~workers.engine.dynamic.seams.seam_keys`) pinned. ``seam_lines``:
    collapses may also run along the seam lines (the state carries the seam keys)."""
    xp = mesh.xp
    used = mesh.used_vertices()
    X = mesh.V.astype(xp.float64)
    Xu = X[used]
    shift = 0.5 * (Xu.min(axis=0) + Xu.max(axis=0)) if Xu.shape[0] else xp.zeros(3)
    A, layout = stack_vertex_attrs(mesh)
    F = mesh.F.astype(xp.int64)
    locked = locked_vertices(xp, mesh.topology, F, mesh.n_vertices)
    origin = xp.arange(mesh.n_faces, dtype=xp.int64)
    seams = seam_keys(xp, F, mesh.n_vertices)
    pinned = key_vertices(xp, seams, mesh.n_vertices) if seams.shape[0] else None
    state = CollapseState(
        X - shift,
        F,
        A,
        origin,
        locked,
        pinned=pinned,
        seams=seams if pinned is not None else None,
        seam_lines=seam_lines,
    )
    return state, shift, layout


def seam_counts(state: CollapseState) -> tuple[int, int]:
    """``(kept, removed)``: the seam vertices still in the mesh (where they were) and those
    collapsed along a seam line; ``(0, 0)`` without seams."""
    if state.pinned is None:
        return 0, 0
    xp = state.xp
    used = xp.zeros(state.n_vertices, dtype=bool)
    used[state.F.ravel()] = True
    kept = int((state.pinned & used).sum())
    return kept, int(state.pinned.sum()) - kept


def run_rounds(
    state: CollapseState,
    plan: Planner,
    *,
    preserve_boundary: bool,
    max_rounds: int,
    max_edge_length: float | None = None,
    budget: Callable[[CollapseState], int | None] | None = None,
    widen: Callable[[], bool] | None = None,
    focus: float | None = None,
    topology: Topology | None = None,
) -> tuple[CollapseState, RoundLog, str]:
    """Rounds until none is accepted, the budget is spent or ``max_rounds``. ``topology``: the
    topology of ``state.F`` as it is (the input mesh's, already built), taken by the first round
    instead of building it again. ``widen``: called
    when a round accepts nothing; if it returns True (the planner now offers more candidates)
    the round is tried again. ``focus``: as for
    :func:`~workers.engine.dynamic.collapse.collapse_round`. Returns the state, the log and why
    it stopped: ``"goal"`` (budget spent), ``"blocked"`` (no collapse accepted) or
    ``"max_rounds"``.

    Reports progress per round: with a budget, the share of it spent; without, the rounds'
    valid candidates shrinking (:func:`~workers.engine.progress.rounds_done`), each round
    leaving about its valid candidates less its collapses."""
    log = RoundLog()
    stopped = "max_rounds"
    first_budget: int | None = None
    first, rest = 0, 0
    for r in range(max_rounds):
        left = budget(state) if budget is not None else None
        if left is not None and left <= 0:
            stopped = "goal"
            break
        if left is not None:
            first_budget = first_budget or left
            done = max(r / max_rounds, 1.0 - left / first_budget)
        else:
            done = progress.rounds_done(r, max_rounds, first, rest)
        progress.report(done, f"round {r + 1}, {state.n_faces} faces")
        topo = topology if r == 0 and topology is not None else state.topology()
        state, n_acc, n_valid = collapse_round(
            state,
            plan,
            log,
            preserve_boundary=preserve_boundary,
            max_edge_length=max_edge_length,
            budget=left,
            topo=topo,
            focus=focus,
        )
        if n_acc == 0 and widen is not None and widen():
            state, n_acc, n_valid = collapse_round(
                state,
                plan,
                log,
                preserve_boundary=preserve_boundary,
                max_edge_length=max_edge_length,
                budget=left,
                topo=topo,
                focus=focus,
            )
        if n_acc == 0:
            stopped = "blocked"
            break
        log.collapses.append(n_acc)
        first = first or n_valid
        rest = max(n_valid - n_acc, 0)
    else:
        left = budget(state) if budget is not None else None
        if left is not None and left <= 0:
            stopped = "goal"
    return state, log, stopped


def result_mesh(mesh: TriMesh, state: CollapseState, shift: Any, layout: list[Any]) -> TriMesh:
    """The output mesh: unused vertices dropped, positions in the input's dtype, interpolated
    vertex attributes, face attributes of the surviving faces. Pinned vertices keep the input's
    positions bit for bit (not the working copy's ``X + shift``, which may differ in the last
    bit); the result's seams are recorded (:func:`~workers.engine.dynamic.seams.record_kept`)."""
    xp = mesh.xp
    X, F, A, take = finish(state)
    V = (X + shift).astype(mesh.V.dtype)
    if state.pinned is not None:
        pin = state.pinned[take]
        V[pin] = mesh.V[take[pin]]
    renum = xp.full(state.n_vertices, -1, dtype=xp.int64)
    renum[take] = xp.arange(int(take.shape[0]), dtype=xp.int64)
    seams = xp.zeros(0, dtype=xp.int64) if state.seams is None else state.seams
    record_kept(xp, seams, renum)
    out = mesh.reindexed(V, F, face_take=state.origin)
    out.vertex_attrs = {} if A is None else unstack_vertex_attrs(xp, A, layout)
    return out


def mean_edge_length(mesh: TriMesh) -> float:
    """Mean length of the input's edges (host float: both backends use the same number)."""
    xp = mesh.xp
    EV = mesh.topology.EV
    d = mesh.V[EV[:, 0]].astype(xp.float64) - mesh.V[EV[:, 1]].astype(xp.float64)
    return float(xp.sqrt((d * d).sum(axis=1)).mean()) if EV.shape[0] else 0.0
