"""The collapse round's setup on the GPU (``kernels/collapse.cu``, ``kernels/graph.cu``) against
the array code it replaces, array for array, on every shared mesh; and the ranked candidates
(sorted once by the planner) against the round that ranks them itself."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, welded
from workers.engine.dynamic.collapse import (
    Candidates,
    CollapseState,
    RoundLog,
    collapse_round,
    collapse_setup,
    edge_faces_mask,
    eligible_edges,
    locked_vertices,
)
from workers.engine.graph import counts, sums
from workers.engine.topology import Topology


def _state(xp, m) -> tuple[CollapseState, Topology]:
    X = xp.asarray(np.asarray(m.V, np.float64))
    F = xp.asarray(np.asarray(m.F, np.int64))
    topo = Topology.build(F, int(X.shape[0]))
    locked = locked_vertices(xp, topo, F, int(X.shape[0]))
    return CollapseState(X, F, None, xp.arange(F.shape[0]), locked), topo


def _midpoints(xp, state: CollapseState, el) -> Candidates:
    p = 0.5 * (state.X[el.a] + state.X[el.b])
    p = xp.where(el.snap[:, None], state.X[el.a], p)
    k = int(el.edge.shape[0])
    return Candidates(el.edge, el.a, el.b, p, xp.full(k, 0.5), xp.zeros(k))


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED)
def test_the_round_setup_kernels_give_the_array_codes_arrays(name: str) -> None:
    import cupy as cp

    from workers.engine.dynamic.collapse import _setup_kernel

    m = welded(name)
    cpu, topo = _state(np, m)
    gpu, gtopo = _state(cp, m)
    bnd, gbnd = topo.boundary_vertices, gtopo.boundary_vertices
    np.testing.assert_array_equal(cp.asnumpy(gbnd), bnd)
    seen_bnd = seen_isolated = 0
    for preserve in (True, False):
        el = eligible_edges(cpu, topo, bnd, preserve)
        gel = eligible_edges(gpu, gtopo, gbnd, preserve)
        for f in ("edge", "a", "b", "snap", "boundary_edge"):
            np.testing.assert_array_equal(cp.asnumpy(getattr(gel, f)), getattr(el, f), err_msg=f)
        c = collapse_setup(cpu, topo, bnd, _midpoints(np, cpu, el))
        g = _setup_kernel(gpu, gtopo, gbnd, _midpoints(cp, gpu, gel))
        for f in ("expected", "opp", "pre"):
            np.testing.assert_array_equal(cp.asnumpy(getattr(g, f)), getattr(c, f), err_msg=f)
        seen_bnd += int(el.boundary_edge.sum())
        seen_isolated += int(c.pre.sum())
        # the faces of every third eligible edge
        pick = el.edge[::3]
        want = edge_faces_mask(topo, pick, m.n_faces)
        got = edge_faces_mask(gtopo, cp.asarray(pick), m.n_faces)
        np.testing.assert_array_equal(cp.asnumpy(got), want)
        assert want.sum() >= pick.shape[0] - seen_bnd  # one or two faces per edge
    assert el.edge.shape[0] > 0
    if int(topo.boundary_edges.shape[0]):
        assert seen_bnd > 0  # boundary edges are eligible when the boundary may move


@pytest.mark.gpu
def test_gpu_counts_and_sums_equal_bincount() -> None:
    import cupy as cp

    rng = np.random.default_rng(3)
    x = rng.integers(0, 1000, 200_000)
    w = rng.random(200_000)
    got = cp.asnumpy(counts(cp, cp.asarray(x), 1200))
    np.testing.assert_array_equal(got, np.bincount(x, minlength=1200))
    assert got.dtype == np.int64 and got[1000:].sum() == 0
    s = cp.asnumpy(sums(cp, cp.asarray(x), cp.asarray(w), 1200))
    np.testing.assert_allclose(s, np.bincount(x, weights=w, minlength=1200), rtol=1e-12)


@pytest.mark.parametrize("name", ["spot.obj", "fandisk.obj", "rx-cloth.obj"])
def test_ranked_candidates_give_the_round_that_ranks_them_itself(name: str) -> None:
    """The planner hands its candidates sorted by cost and marked ranked; the round then takes
    each one's index as its rank (no sort of its own for the keys, the focus and the budget).
    Shuffled and unranked, the same candidates (distinct costs) must give the same round: the
    same collapses accepted, so the same mesh."""
    m = welded(name)
    state, topo = _state(np, m)
    bnd = topo.boundary_vertices
    el = eligible_edges(state, topo, bnd, True)
    c = _midpoints(np, state, el)
    rng = np.random.default_rng(5)
    c.priority = rng.permutation(len(c)).astype(np.float64)
    ranked = c.take(np.argsort(c.priority, kind="stable"))
    ranked.ranked = True
    shuffled = c.take(rng.permutation(len(c)))
    for budget, focus in ((None, None), (m.n_faces // 50, 2.0)):
        out = []
        for cands in (ranked, shuffled):
            s, n_acc, n_valid = collapse_round(
                state, lambda *_, c=cands: c, RoundLog(), preserve_boundary=True, budget=budget,
                topo=topo, focus=focus,
            )  # fmt: skip
            out.append((s, n_acc, n_valid))
        (s1, n1, v1), (s2, n2, v2) = out
        assert n1 == n2 > 0 and v1 == v2
        if budget is not None:
            assert 2 * n1 <= budget < v1  # the budget and the focus cut the round
        np.testing.assert_array_equal(s1.F, s2.F)
        np.testing.assert_array_equal(s1.X, s2.X)


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED)
def test_the_topology_derived_after_a_round_is_the_one_built(name: str) -> None:
    """Rounds of midpoint collapses in a random order, with the boundary kept and without: the
    topology each round derives from the last (Topology.after_collapses: merged edges, rows
    renumbered, no hash) against Topology.build of the new faces, array for array."""
    import cupy as cp

    m = welded(name)
    rng = np.random.default_rng(2)
    checked = 0
    for preserve in (True, False):
        state, topo = _state(cp, m)

        def plan(st, tp, el):
            c = _midpoints(cp, st, el)
            c.priority = cp.asarray(rng.random(len(c)))
            return c

        for _ in range(5):
            state, n_acc, _ = collapse_round(
                state, plan, RoundLog(), preserve_boundary=preserve, topo=topo
            )
            if n_acc == 0:
                break
            assert state.made_by is not None
            topo = state.topology()
            want = Topology.build(state.F, state.n_vertices)
            for f in ("EV", "FE", "ef_offsets", "ef_sides"):
                g, w = getattr(topo, f), getattr(want, f)
                assert g.dtype == w.dtype, f
                np.testing.assert_array_equal(cp.asnumpy(g), cp.asnumpy(w), err_msg=f)
            np.testing.assert_array_equal(
                cp.asnumpy(topo.edge_face_count), cp.asnumpy(want.edge_face_count)
            )
            checked += 1
    assert checked >= 1  # rx-diamond (two faces) has one round in it
