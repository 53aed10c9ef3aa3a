"""Tangential relaxation stays in the tangent plane; the projector finds the exact nearest point
on the input triangles (checked against brute force)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, grid, unit_sphere, welded
from workers.engine.dynamic.relax import SurfaceProjector, closest_points, tangential_relax


def test_relaxation_on_a_plane_stays_in_it_and_locked_vertices_stay() -> None:
    m = grid(8, jitter=0.2, seed=1)
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F, dtype=np.int64)
    locked = (V[:, 0] == 0) | (V[:, 0] == 1) | (V[:, 1] == 0) | (V[:, 1] == 1)
    for weighting in ("area", "uniform"):
        V2 = tangential_relax(np, V, F, ~locked, weighting)
        assert np.abs(V2[:, 2]).max() == 0
        np.testing.assert_array_equal(V2[locked], V[locked])
        assert np.abs(V2[~locked] - V[~locked]).max() > 0
    # uniform: an interior vertex goes to the mean of its neighbours
    V2 = tangential_relax(np, V, F, ~locked, "uniform")
    i = int(np.nonzero(~locked)[0][0])
    nb = np.unique(F[(i == F).any(axis=1)])
    nb = nb[nb != i]
    np.testing.assert_allclose(V2[i], V[nb].mean(axis=0), atol=1e-12)


def test_relaxation_on_a_sphere_is_tangential() -> None:
    m = unit_sphere("rx-sphere3.obj")
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F, dtype=np.int64)
    V2 = tangential_relax(np, V, F, np.ones(len(V), bool))
    step = np.linalg.norm(V2 - V, axis=1)
    radial = np.abs(np.linalg.norm(V2, axis=1) - 1.0)
    assert step.max() > 1e-3 and (radial <= step**2 + 1e-6).all()  # second order only


def test_projection_is_exact_within_reach() -> None:
    m = welded("spot.obj")
    V, F = np.asarray(m.V, dtype=np.float64), np.asarray(m.F, dtype=np.int64)
    h = 2 * np.linalg.norm(V[F[:, 0]] - V[F[:, 1]], axis=1).mean()
    rng = np.random.default_rng(0)
    P = V[rng.integers(0, len(V), 300)] + rng.normal(scale=0.15 * h, size=(300, 3))
    Q, face, bary, found = SurfaceProjector(np, V, F, h).nearest(P)
    best = np.empty(len(P))
    for i, p in enumerate(P):
        q, _ = closest_points(np, np.repeat(p[None], len(F), 0), V[F[:, 0]], V[F[:, 1]], V[F[:, 2]])
        best[i] = np.linalg.norm(q - p, axis=1).min()
    reach = best <= h / 2
    assert (found == reach).all() and found.mean() > 0.95
    np.testing.assert_allclose(np.linalg.norm(Q - P, axis=1)[found], best[found], atol=1e-12)
    np.testing.assert_allclose(
        (bary[found, :, None] * V[F[face[found]]]).sum(1), Q[found], atol=1e-12
    )
    np.testing.assert_array_equal(Q[~found], P[~found])


def test_closest_point_regions() -> None:
    a, b, c = (np.array([[0.0, 0, 0]]), np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]]))
    cases = {
        (0.2, 0.2, 1.0): (0.2, 0.2, 0.0),  # face
        (-1.0, -1.0, 0.0): (0.0, 0.0, 0.0),  # vertex a
        (2.0, -0.5, 0.0): (1.0, 0.0, 0.0),  # vertex b
        (0.5, -1.0, 0.3): (0.5, 0.0, 0.0),  # edge ab
        (1.0, 1.0, 0.0): (0.5, 0.5, 0.0),  # edge bc
        (-1.0, 0.5, 0.0): (0.0, 0.5, 0.0),  # edge ca
    }
    for p, q in cases.items():
        got, _ = closest_points(np, np.array([p]), a, b, c)
        np.testing.assert_allclose(got[0], q, atol=1e-15)


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED)
def test_the_gpu_nearest_points_are_the_array_codes(name: str) -> None:
    """SurfaceProjector.nearest on the GPU (one kernel thread per point over its grid cell)
    against the array code on NumPy, bit for bit: points near the surface, points out of
    reach, and the vertices themselves (ties between the faces around them)."""
    import cupy as cp

    m = welded(name)
    V0, F0 = np.asarray(m.V, np.float64), np.asarray(m.F, np.int64)
    L = float(np.linalg.norm(V0[F0[:, 0]] - V0[F0[:, 1]], axis=1).mean())
    rng = np.random.default_rng(9)
    near = V0[rng.integers(0, len(V0), 2000)] + rng.normal(size=(2000, 3)) * 0.3 * L
    far = V0[rng.integers(0, len(V0), 200)] + rng.normal(size=(200, 3)) * 5.0 * L
    P = np.concatenate([near, far, V0[: min(len(V0), 500)]])
    want = SurfaceProjector(np, V0, F0, L).nearest(P)
    got = SurfaceProjector(cp, cp.asarray(V0), cp.asarray(F0), L).nearest(cp.asarray(P))
    for w, g, what in zip(want, got, ("Q", "face", "bary", "found"), strict=True):
        np.testing.assert_array_equal(cp.asnumpy(g), w, err_msg=what)
    assert want[3].sum() > len(near) // 2 and not want[3].all()  # found and not found both
