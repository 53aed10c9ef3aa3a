"""Conflict resolution of cavities: accepted claims are disjoint, and priority decides."""

from __future__ import annotations

import numpy as np

from tests.workers.engine.shapes import grid
from workers.engine.dynamic.cavity import (
    blocked_by,
    edge_local_minima,
    gather_rows,
    independent_claims,
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
        acc = independent_claims(np, n, k, owner, vertex, key)
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
    acc = independent_claims(np, 4, 3, owner, vertex, key)
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
