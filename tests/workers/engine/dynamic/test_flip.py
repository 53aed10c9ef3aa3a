"""Edge flips on the GPU (``kernels/flip.cu``) against the array code of
:mod:`workers.engine.dynamic.flip`: the same quads, reasons and valence-flip candidates bit for
bit on shared meshes, with and without a feature angle and texture seams; and the edge table
updated after a round of flips against the one built again."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import welded
from workers.engine.dynamic._edges import edge_table, float_priority, sin_min_angle, valence
from workers.engine.dynamic.flip import (
    REASONS,
    _valence_candidates,
    angle_flip_round,
    apply_flips,
    edges_after_flips,
    flip_quads,
    opposite_angle_sums,
    opposite_angle_sums_array,
    select_flips,
)

MESHES = ["spot.obj", "fandisk.obj", "beetle.obj", "rx-cloth.obj", "teapot.obj"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", MESHES)
def test_flip_quads_and_valence_candidates_on_the_gpu_equal_the_twin(name: str) -> None:
    import cupy as cp

    m = welded(name)
    V = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    E = edge_table(np, F)
    Eg = edge_table(cp, cp.asarray(F))
    rng = np.random.default_rng(5)
    seams = np.sort(E.key[rng.random(E.n_edges) < 0.05])
    seen = np.zeros(len(REASONS), dtype=np.int64)
    for angle, sm in ((180.0, None), (45.0, seams), (20.0, None)):
        want = flip_quads(np, V, F, E, angle, sm)
        got = flip_quads(cp, cp.asarray(V), cp.asarray(F), Eg, angle,
                         None if sm is None else cp.asarray(sm))  # fmt: skip
        for field in ("a", "b", "c", "d", "f0", "f1", "reason"):
            np.testing.assert_array_equal(cp.asnumpy(getattr(got, field)), getattr(want, field))
        seen += np.bincount(want.reason, minlength=len(REASONS))
    # allowed flips and at least three kinds of refusal on every mesh
    assert seen[0] > 0 and (seen[1:] > 0).sum() >= 3
    # valence candidates, with the features of the 45-degree quads
    Q = flip_quads(np, V, F, E, 180.0)
    Qg = flip_quads(cp, cp.asarray(V), cp.asarray(F), Eg, 180.0)
    feat = np.sort(E.key[flip_quads(np, V, F, E, 45.0).reason == 2])
    val = valence(np, E, m.n_vertices)
    bnd = np.zeros(m.n_vertices, dtype=bool)
    bnd[E.EV[E.count == 1].ravel()] = True
    for sin_bound in (np.sin(np.radians(10.0)), np.sin(np.radians(35.0))):
        cand, gain = _valence_candidates(np, V, E, Q, feat, val, bnd, sin_bound)
        cg, gg = _valence_candidates(
            cp, cp.asarray(V), Eg, Qg, cp.asarray(feat), cp.asarray(val), cp.asarray(bnd),
            sin_bound,
        )  # fmt: skip
        np.testing.assert_array_equal(cp.asnumpy(gg), gain)
        np.testing.assert_array_equal(cp.asnumpy(cg), cand)
        assert (gain > 0).sum() > 0  # gains to test (the candidates: all but the teapot's)


def _smallest_sine(V: np.ndarray, F: np.ndarray) -> float:
    return float(sin_min_angle(np, V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]).min())


@pytest.mark.parametrize("name", MESHES)
def test_angle_flips_raise_the_smallest_angle_and_keep_valences_and_features(name: str) -> None:
    """Rounds of :func:`angle_flip_round` on a shared mesh: each round's smallest angle at least
    the last's, the valences' summed distance from 6 (4 on the boundary) no larger, no feature
    edge gone, the edges as many (flips only), and on spot, fandisk and beetle some flips."""
    m = welded(name)
    V = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    E = edge_table(np, F)
    feature = np.sort(E.key[flip_quads(np, V, F, E, 45.0).reason == 2])
    total = 0
    for _ in range(3):
        E = edge_table(np, F)
        bnd = np.zeros(m.n_vertices, dtype=bool)
        bnd[E.EV[E.count == 1].ravel()] = True
        dev = np.abs(valence(np, E, m.n_vertices) - np.where(bnd, 4, 6)).sum()
        F2, k = angle_flip_round(np, V, F, feature, 35.0, 30.0)
        E2 = edge_table(np, F2)
        assert E2.n_edges == E.n_edges
        assert np.isin(feature, E2.key).all()
        target = np.where(bnd, 4, 6)
        assert np.abs(valence(np, E2, m.n_vertices) - target).sum() <= dev
        assert _smallest_sine(V, F2) >= _smallest_sine(V, F) - 1e-12
        assert (np.sort(F2, axis=1) != np.sort(F, axis=1)).any(axis=1).sum() == 2 * k
        F, total = F2, total + k
    if name in ("spot.obj", "fandisk.obj", "beetle.obj"):
        assert total > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", MESHES)
def test_angle_flips_on_the_gpu_are_the_twins(name: str) -> None:
    """:func:`angle_flip_round` on CuPy against the twin, two rounds: the same flips, up to a
    few decided by the last bits of an angle (the quads and reasons are bit for bit; the angle
    sines are array code, whose sums CuPy may round otherwise), and the smallest angle kept."""
    import cupy as cp

    m = welded(name)
    V = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    E = edge_table(np, F)
    feature = np.sort(E.key[flip_quads(np, V, F, E, 45.0).reason == 2])
    for _ in range(2):
        want, k = angle_flip_round(np, V, F, feature, 35.0, 30.0)
        Vg, Fg, feat_g = cp.asarray(V), cp.asarray(F), cp.asarray(feature)
        got, kg = angle_flip_round(cp, Vg, Fg, feat_g, 35.0, 30.0)
        got = cp.asnumpy(got)
        assert abs(kg - k) <= 1 + k // 50
        assert (got != want).any(axis=1).sum() <= 2 * (1 + k // 50)
        assert _smallest_sine(V, got) >= _smallest_sine(V, F) - 1e-12
        F = want


@pytest.mark.gpu
@pytest.mark.parametrize("name", [*MESHES, "rx-dragon.obj"])
def test_opposite_angle_sums_kernel_equals_the_array_code(name: str) -> None:
    import cupy as cp

    m = welded(name)
    V = cp.asarray(np.asarray(m.V, dtype=np.float64))
    F = cp.asarray(np.asarray(m.F, dtype=np.int64))
    Q = flip_quads(cp, V, F, edge_table(cp, F), 45.0)
    got = opposite_angle_sums(cp, V, Q)
    want = opposite_angle_sums_array(cp, V, Q)
    # the last bit may differ from CuPy's array code (its norm and cross reduce otherwise): a
    # few parts in 1e16 on 3-5 % of the edges, measured on the H100
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(w), rtol=2e-15, atol=0)
    # and the NumPy twin's within rounding of the arctangent
    Vn, Fn = np.asarray(m.V, np.float64), np.asarray(m.F, np.int64)
    ref = opposite_angle_sums(np, Vn, flip_quads(np, Vn, Fn, edge_table(np, Fn), 45.0))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(cp.asnumpy(g), r, rtol=0, atol=1e-12)


def _flip_rounds(xp, m, rounds: int, criterion: str):
    """Rounds of flips on ``m`` (Delaunay flips, or valence flips claiming vertices), each round's
    edge table updated from the last by :func:`edges_after_flips`; yields per round the table
    before, the quads, the flips, the updated table and the faces it belongs to."""
    import math

    V = xp.asarray(m.V, dtype=xp.float64)
    F = xp.asarray(m.F, dtype=xp.int64)
    E = edge_table(xp, F)
    assert int(E.count.max()) <= 2
    for r in range(rounds):
        Q = flip_quads(xp, V, F, E)
        if criterion == "delaunay":
            old, new = opposite_angle_sums(xp, V, Q)
            cand = (Q.reason == 0) & (old > math.pi + 1e-9) & (new < old)
            prio = float_priority(xp, old - math.pi, larger_first=True)
            acc = select_flips(xp, Q, cand, prio, int(F.shape[0]), int(V.shape[0]))
        else:
            val = valence(xp, E, int(V.shape[0]))
            gain = (val[Q.a] + val[Q.b]) - (val[Q.c] + val[Q.d]) - 2
            cand = (Q.reason == 0) & (gain > 0)
            prio = xp.arange(E.n_edges, dtype=xp.int64)[::-1].copy() % 1000
            acc = select_flips(
                xp, Q, cand, prio, int(F.shape[0]), int(V.shape[0]), claim_vertices=True
            )
        if r == 0:
            assert int(acc.shape[0]) > 0
        after = edges_after_flips(xp, E, Q, acc)
        F = apply_flips(xp, F, Q, acc)
        yield E, Q, acc, after, F
        E = after


def _mesh(name: str):
    from tests.workers.engine.shapes import grid

    # a jittered planar grid: many flips a round, a boundary, quads side by side
    return grid(30, jitter=0.3, seed=1) if name == "grid" else welded(name)


def _shared_outer_edges(E, Q, acc) -> int:
    """Edges around two of the round's flipped quads (each quad's four edges other than its
    own), the case where an edge trades both its sides in one round."""
    f0, f1 = Q.f0[acc], Q.f1[acc]
    sides = np.concatenate([3 * f0 + k for k in range(3)] + [3 * f1 + k for k in range(3)])
    edges = E.of_side[sides]
    outer = edges[~np.isin(edges, acc)]
    _, n = np.unique(outer, return_counts=True)
    return int((n == 2).sum())


FLIPPED = ["grid", "cow.obj", "rx-dragon.obj", "teapot.obj", "rocker-arm.obj"]
FIELDS = ("key", "EV", "count", "s0", "s1", "of_side")


@pytest.mark.parametrize(
    ("name", "criterion"),
    [(name, "delaunay") for name in FLIPPED] + [(name, "valence") for name in FLIPPED[1:]],
)
def test_the_table_after_flips_is_the_rebuilt_one(name: str, criterion: str) -> None:
    """Round after round, the updated table equals the one built from the new faces, every
    array bit for bit (boundary edges around flipped quads on the grid and teapot, edges around
    two flipped quads of one round, the renumbering in key order)."""
    flips, shared = [], 0
    for E, Q, acc, after, F in _flip_rounds(np, _mesh(name), 4, criterion):
        want = edge_table(np, F)
        for field in FIELDS:
            got, exp = getattr(after, field), getattr(want, field)
            assert got.dtype == exp.dtype, field
            np.testing.assert_array_equal(got, exp, err_msg=field)
        flips.append(int(acc.shape[0]))
        shared += _shared_outer_edges(E, Q, acc)
    assert flips[0] > 0
    if name == "grid":  # claims on faces: two flipped quads side by side share an edge
        assert shared > 0, flips


@pytest.mark.gpu
@pytest.mark.parametrize("name", FLIPPED)
def test_the_table_after_flips_on_the_gpu_is_the_rebuilt_one(name: str) -> None:
    import cupy as cp

    flips = []
    for _, _, acc, after, F in _flip_rounds(cp, _mesh(name), 3, "delaunay"):
        want = edge_table(cp, F)
        for field in FIELDS:
            got, exp = getattr(after, field), getattr(want, field)
            assert got.dtype == exp.dtype, field
            np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(exp), err_msg=field)
        flips.append(int(acc.shape[0]))
    assert flips[0] > 0
