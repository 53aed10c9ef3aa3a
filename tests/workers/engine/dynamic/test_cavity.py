"""Conflict resolution of cavities: accepted claims are disjoint, and priority decides
(:func:`~workers.engine.dynamic._edges.claim_pairs` for claimed elements,
:func:`~workers.engine.dynamic.cavity.independent_collapses` for edge collapses)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import grid
from workers.engine.dynamic._edges import claim_pairs
from workers.engine.dynamic.cavity import (
    blocked_by,
    edge_local_minima,
    gather_rows,
    priority_keys,
)


def _claims(rng: np.random.Generator, n_vertices: int, n_cand: int, size: int):
    owner = np.repeat(np.arange(n_cand), size)
    vertex = rng.integers(0, n_vertices, owner.shape[0])
    return owner.astype(np.int64), vertex.astype(np.int64)


def test_accepted_claims_are_disjoint_and_the_best_wins() -> None:
    rng = np.random.default_rng(3)
    for trial in range(20):
        n, k = 200, 60
        owner, vertex = _claims(rng, n, k, 1 + trial % 5)
        pri = rng.random(k)
        key = priority_keys(np, pri)
        acc = claim_pairs(np, owner, vertex, key, n)
        held = vertex[acc[owner]]
        # a candidate's repeated claims count once
        pairs = np.unique(np.stack([owner[acc[owner]], held], 1), axis=0)
        assert len(np.unique(pairs[:, 1])) == len(pairs)
        assert acc[np.argmin(pri)]
        # after the passes no rejected candidate is free: each meets an accepted one's vertex
        taken = np.zeros(n, dtype=bool)
        taken[held] = True
        hit = np.zeros(k, dtype=bool)
        hit[owner[taken[vertex]]] = True
        free = ~acc & ~hit
        assert free.sum() <= 0.1 * k


def test_ties_go_to_the_lower_index_and_are_deterministic() -> None:
    owner = np.array([0, 0, 1, 1, 2, 2], dtype=np.int64)
    vertex = np.array([0, 1, 1, 2, 2, 3], dtype=np.int64)
    key = priority_keys(np, np.zeros(3))
    acc = claim_pairs(np, owner, vertex, key, 4)
    assert acc.tolist() == [True, False, True]


def test_gather_rows_concatenates_csr_rows() -> None:
    off = np.array([0, 2, 2, 5], dtype=np.int64)
    val = np.array([10, 11, 20, 21, 22])
    owner, got = gather_rows(np, off, val, np.array([2, 1, 0]))
    assert owner.tolist() == [0, 0, 0, 2, 2]
    assert got.tolist() == [20, 21, 22, 10, 11]


def test_edge_local_minima_keep_accepted_ends_a_ring_apart() -> None:
    g = grid(12)
    EV = np.asarray(g.topology.EV, dtype=np.int64)
    n = g.n_vertices
    adj = np.zeros((n, n), dtype=bool)
    adj[EV[:, 0], EV[:, 1]] = adj[EV[:, 1], EV[:, 0]] = True
    np.fill_diagonal(adj, True)  # closed one-rings
    rng = np.random.default_rng(5)
    a, b = EV[:, 0], EV[:, 1]
    pri = rng.random(EV.shape[0])
    key = priority_keys(np, pri)
    alive = rng.random(EV.shape[0]) < 0.7
    best = np.argmin(np.where(alive, pri, np.inf))
    accepted = np.zeros(EV.shape[0], dtype=bool)
    for _ in range(4):
        won = edge_local_minima(np, n, EV, a, b, key, alive)
        assert not (won & accepted).any() and not (won & ~alive).any()
        accepted |= won
        alive &= ~won & ~blocked_by(np, n, EV, a, b, accepted)
    assert accepted[best]
    acc = np.nonzero(accepted)[0]
    ends = np.stack([a[acc], b[acc]], 1)
    for i in range(acc.shape[0]):
        for j in range(i + 1, acc.shape[0]):
            # no end of one is an end or a neighbour of an end of the other
            assert not adj[np.ix_(ends[i], ends[j])].any()
    # maximal after the passes: every candidate left out meets an accepted one
    assert not alive.any()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["spot.obj", "rx-torus.obj", "beetle.obj", "fandisk.obj"])
def test_independent_collapses_on_the_gpu_accept_the_twins_set(name: str) -> None:
    import cupy as cp

    from tests.workers.engine.shapes import welded
    from workers.engine.dynamic._edges import edge_table
    from workers.engine.dynamic.cavity import independent_collapses, priority_keys

    m = welded(name)
    F = np.asarray(m.F, np.int64)
    EV = edge_table(np, F).EV
    rng = np.random.default_rng(3)
    pick = rng.random(EV.shape[0]) < 0.4
    a, b = EV[pick, 0], EV[pick, 1]
    key = priority_keys(np, rng.random(a.shape[0]))
    alive = rng.random(a.shape[0]) < 0.9
    for passes, reach in ((1, 1), (4, 1), (6, 2)):
        want = independent_collapses(np, m.n_vertices, EV, a, b, key, alive, passes, reach)
        got = independent_collapses(
            cp, m.n_vertices, *(cp.asarray(x) for x in (EV, a, b, key, alive)), passes, reach
        )
        np.testing.assert_array_equal(cp.asnumpy(got), want)
        assert 0 < want.sum() < alive.sum()


@pytest.mark.gpu
def test_claim_pairs_on_the_gpu_accept_the_twins_set() -> None:
    import cupy as cp

    from workers.engine.dynamic._edges import claim_pairs

    rng = np.random.default_rng(11)
    for _ in range(30):
        k, n_el, size = int(rng.integers(1, 3000)), int(rng.integers(1, 2000)), 4
        owner = np.repeat(np.arange(k, dtype=np.int64), size)
        elements = rng.integers(0, n_el, owner.shape[0]).astype(np.int64)
        keep = rng.random(owner.shape[0]) < 0.9
        owner, elements = owner[keep], elements[keep]
        priority = rng.integers(0, 64, k)
        for passes in (1, 6):
            want = claim_pairs(np, owner, elements, priority, n_el, passes)
            got = claim_pairs(cp, cp.asarray(owner), cp.asarray(elements),
                              cp.asarray(priority), n_el, passes)  # fmt: skip
            np.testing.assert_array_equal(cp.asnumpy(got), want)
            assert want.any()
