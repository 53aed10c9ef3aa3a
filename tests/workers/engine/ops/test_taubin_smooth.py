"""``taubin_smooth``: removes noise like Laplacian smoothing but keeps a sphere's size where
Laplacian smoothing shrinks it; derived mu; fixed boundary; unstable parameters refused."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    boundary_mask,
    cube,
    grid,
    mean_radius,
    mesh,
    run,
    unit_sphere,
    welded,
)
from workers.engine import OpParamsError, TriMesh

WEIGHTS = ["uniform", "cotangent"]


def _taubin(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("taubin_smooth", params))
    assert res.mesh.F is m.F
    return res.mesh, res.reports["taubin_smooth"]


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("iterations", [5, 20, 50])
def test_shrinks_a_sphere_less_than_laplacian_smoothing(weights: str, iterations: int) -> None:
    m = unit_sphere("rx-el_topo_sphere_1280.obj")
    taubin, _ = _taubin(m, weights=weights, iterations=iterations)
    laplace = run(m, ("laplacian_smooth", {"weights": weights, "iterations": iterations})).mesh
    lost_taubin = abs(1.0 - mean_radius(taubin))
    lost_laplace = 1.0 - mean_radius(laplace)
    # the radius drifts by 1.3 % at most (Taubin's filter is slightly above 1 in the pass band)
    assert lost_taubin < 0.1 * lost_laplace
    assert lost_taubin < 0.015


@pytest.mark.parametrize("weights", WEIGHTS)
def test_reduces_roughness_of_a_noisy_plane(weights: str) -> None:
    m = grid(20)
    rng = np.random.default_rng(4)
    V = np.asarray(m.V).copy()
    inner = ~boundary_mask(m)
    V[inner, 2] = rng.uniform(-0.01, 0.01, int(inner.sum()))
    out, _ = _taubin(mesh(V, m.F), weights=weights, iterations=10)
    # measured: 2.8 (uniform) and 2.7 (cotangent) times smaller; Taubin keeps low frequencies
    assert np.abs(np.asarray(out.V)[:, 2]).mean() < np.abs(V[:, 2]).mean() / 2


def test_mu_follows_from_the_pass_band() -> None:
    _, rep = _taubin(cube(), iterations=1, pass_band=0.1, **{"lambda": 0.5})
    assert rep["mu"] == pytest.approx(1.0 / (0.1 - 2.0))
    assert rep["mu"] < -0.5


def test_fix_boundary_keeps_boundary_vertices_in_place() -> None:
    m = welded("rx-cloth.obj")
    on_b = boundary_mask(m)
    out, _ = _taubin(m, iterations=5)
    np.testing.assert_array_equal(np.asarray(out.V)[on_b], np.asarray(m.V)[on_b])
    assert not np.array_equal(np.asarray(out.V), np.asarray(m.V))


def test_unstable_parameters_are_refused() -> None:
    # lambda = 0.9, k_PB = 0.1: mu = -0.989 and the gain at k = 2 is |(1 - 1.8)(1 + 1.98)| = 2.4
    with pytest.raises(OpParamsError) as ei:
        _taubin(cube(), pass_band=0.1, **{"lambda": 0.9})
    assert ei.value.code == "op.taubin_unstable"
    assert ei.value.detail["gain_at_k2"] > 1
    # lambda = 0.6 with the same pass band is stable
    _taubin(cube(), pass_band=0.1, **{"lambda": 0.6})


@pytest.mark.parametrize(
    "params",
    [
        {"pass_band": 0.0},  # must be positive
        {"pass_band": 0.6},  # at most 0.5
        {"lambda": -0.5},  # lambda is the positive factor
        {"iterations": 1001},  # at most 1000
        {"mu": -0.53},  # mu is derived, not given
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _taubin(cube(), **params)
    assert ei.value.code == "op.params_invalid"
