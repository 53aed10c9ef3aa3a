"""The one collapse check (:mod:`workers.engine.dynamic.collapse_check`): its rules on hand-made
cases, and on the GPU the kernel against the array code, reason for reason, on every shared mesh."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, grid, welded
from workers.engine.dynamic._edges import edge_table, opposite_corner
from workers.engine.dynamic.collapse_check import (
    REASONS,
    Collapses,
    Rules,
    check_collapses,
    vertex_faces,
)
from workers.engine.graph import csr_from_pairs


def _vf(F: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    faces = np.repeat(np.arange(F.shape[0], dtype=np.int64), 3)
    off, val, _ = csr_from_pairs(np, n, F.ravel(), faces)
    return off, val


def _candidates(X: np.ndarray, F: np.ndarray, rng: np.random.Generator) -> tuple:
    """Every edge with two faces, both ways, placed at the midpoint, at the survivor (no move),
    jittered across the ring or pushed onto a neighbour: ``(a, b, p, expected, opp, pre)``."""
    E = edge_table(np, F)
    two = np.nonzero(E.count == 2)[0]
    u, v = E.EV[two, 0], E.EV[two, 1]
    c, d = opposite_corner(F, E.s0[two]), opposite_corner(F, E.s1[two])
    a = np.concatenate([u, v] * 4)
    b = np.concatenate([v, u] * 4)
    opp = np.tile(np.stack([c, d], axis=1), (8, 1))
    k = two.shape[0]
    length = np.linalg.norm(X[u] - X[v], axis=1)
    mid = 0.5 * (X[u] + X[v])
    jitter = rng.normal(size=(2 * k, 3)) * np.tile(length, 2)[:, None]
    p = np.concatenate([mid, mid, X[u], X[v], np.tile(mid, (2, 1)) + jitter, X[c], X[d]])
    expected = np.full(8 * k, 2, dtype=np.int64)
    pre = rng.random(8 * k) < 0.01
    return a, b, p, expected, opp, pre


def _reason(m, a: int, b: int, p, rules: Rules) -> str:
    X = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    E = edge_table(np, F)
    e = np.nonzero((E.EV[:, 0] == min(a, b)) & (E.EV[:, 1] == max(a, b)))[0][0]
    opp = np.array([[opposite_corner(F, E.s0[e]), opposite_corner(F, E.s1[e])]])
    c = Collapses(
        np.array([a]), np.array([b]), np.array([p], np.float64), np.array([2]), opp,
        np.zeros(1, bool),
    )  # fmt: skip
    r = check_collapses(np, X, F, _vf(F, len(X)), c, rules)
    return "ok" if r[0] == 0 else REASONS[r[0] - 1]


def test_only_new_edges_count_as_long() -> None:
    g = grid(4)  # vertex i * 5 + j at (i / 4, j / 4)
    X = np.asarray(g.V)
    # 7 onto 6, which stays: the new edges run from 6 to 7's neighbours, the farthest (13)
    # 0.559 away
    assert _reason(g, 6, 7, X[6], Rules(0.2, max_edge_length=0.56)) == "ok"
    assert _reason(g, 6, 7, X[6], Rules(0.2, max_edge_length=0.55)) == "long_edge"


def test_the_smallest_angle_floor() -> None:
    g = grid(4)
    X = np.asarray(g.V)
    # towards a neighbour: thin faces that still turn the right way
    p = X[6] + 0.9 * (X[11] - X[6])
    assert _reason(g, 6, 7, p, Rules(0.2)) == "ok"
    assert _reason(g, 6, 7, p, Rules(0.2, min_angle=10.0)) == "degenerate"
    # the midpoint keeps every angle above 10 degrees
    assert _reason(g, 6, 7, 0.5 * (X[6] + X[7]), Rules(0.2, min_angle=10.0)) == "ok"


def test_a_sharper_turn_limit_rejects_more() -> None:
    g = grid(4)
    X = np.asarray(g.V)
    p = 0.5 * (X[6] + X[7]) + [0, 0, 0.3]  # turns the steepest face by 45 to 60 degrees
    assert _reason(g, 6, 7, p, Rules(math.cos(math.radians(60)))) == "ok"
    assert _reason(g, 6, 7, p, Rules(math.cos(math.radians(45)))) == "fold"


def _bipyramid(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Two apexes of valence ``k`` over a ring of ``k`` vertices: rings longer than the kernel's
    list of neighbours (``LINK_LIST`` 32 in ``kernels/collapse.cu``) at the apexes."""
    t = 2 * np.pi * np.arange(k) / k
    ring = np.stack([np.cos(t), np.sin(t), 0.1 * np.sin(3 * t)], axis=1)
    X = np.concatenate([[[0.0, 0.0, 0.7], [0.0, 0.0, -0.6]], ring])
    i = np.arange(k)
    j = (i + 1) % k
    F = np.concatenate([np.stack([np.zeros(k, int), 2 + i, 2 + j], 1),
                        np.stack([np.ones(k, int), 2 + j, 2 + i], 1)])  # fmt: skip
    return X, F.astype(np.int64)


BIPYRAMIDS = {f"bipyramid {k}": k for k in (31, 33, 34, 70)}


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED + list(BIPYRAMIDS))
def test_the_kernel_gives_the_array_codes_reasons(name: str) -> None:
    import cupy as cp

    if name in BIPYRAMIDS:
        X, F = _bipyramid(BIPYRAMIDS[name])
    else:
        m = welded(name)
        X = np.asarray(m.V, np.float64)
        F = np.asarray(m.F, np.int64)
    rng = np.random.default_rng(7)
    a, b, p, expected, opp, pre = _candidates(X, F, rng)
    vf = _vf(F, len(X))
    seen = np.zeros(len(REASONS) + 1, dtype=np.int64)
    for rules in (
        Rules(0.2, min_quality=1e-3),
        Rules(0.5, max_edge_length=3.0 * float(np.median(np.linalg.norm(p - X[a], axis=1))),
              min_angle=10.0),
    ):  # fmt: skip
        cands = Collapses(a, b, p, expected, opp, pre)
        want = check_collapses(np, X, F, vf, cands, rules)
        # the GPU's rows come from its own vertex_faces, in another order within each row
        on_gpu = Collapses(*(cp.asarray(x) for x in (a, b, p, expected, opp, pre)))
        got = check_collapses(
            cp, cp.asarray(X), cp.asarray(F), vertex_faces(cp, cp.asarray(F), len(X)), on_gpu, rules
        )
        np.testing.assert_array_equal(cp.asnumpy(got), want)
        seen += np.bincount(want, minlength=len(REASONS) + 1)
    # the candidates exercise the checks: legal ones and rejected ones everywhere, and on every
    # mesh of a thousand faces or more the link, fold and degenerate reasons
    assert seen[0] > 0 and seen[1:].sum() > 0
    if F.shape[0] >= 1000:
        assert seen[1] > 0 and seen[3] > 0 and seen[4] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["spot.obj", "beetle.obj", "teapot.obj"])
def test_the_gpu_vertex_face_rows_hold_the_same_faces(name: str) -> None:
    import cupy as cp

    m = welded(name)
    F = np.asarray(m.F, np.int64)
    off, vf = _vf(F, m.n_vertices)
    goff, gvf = (cp.asnumpy(x) for x in vertex_faces(cp, cp.asarray(F), m.n_vertices))
    np.testing.assert_array_equal(goff, off)
    rows = np.repeat(np.arange(m.n_vertices), np.diff(off))
    key = rows * F.shape[0]
    np.testing.assert_array_equal(np.sort(key + gvf), np.sort(key + vf))
