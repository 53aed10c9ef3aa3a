"""``laplacian_smooth``: smoothing reduces roughness, shrinks a sphere monotonically, keeps the
boundary with ``fix_boundary``, keeps connectivity, commutes with rigid motions, keeps planar
meshes planar; bad parameters are refused."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    boundary_mask,
    cube,
    grid,
    load,
    mean_radius,
    mesh,
    radial_deviation,
    random_rotation,
    roughness,
    run,
    unit_sphere,
    welded,
    with_normal_noise,
)
from workers.engine import OpParamsError, TriMesh

WEIGHTS = ["uniform", "cotangent"]


def _smooth(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("laplacian_smooth", params))
    out = res.mesh
    assert out.F is m.F  # connectivity kept (and the topology cache with it)
    assert out.V.dtype == m.V.dtype and out.V.shape == m.V.shape
    return out, res.reports["laplacian_smooth"]


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("name", ["teapot.obj", "beetle.obj", "stanford-bunny.obj"])
def test_fix_boundary_keeps_boundary_vertices_in_place(name: str, weights: str) -> None:
    m = welded(name)
    on_b = boundary_mask(m)
    assert on_b.any()
    out, rep = _smooth(m, weights=weights, iterations=5)
    np.testing.assert_array_equal(np.asarray(out.V)[on_b], np.asarray(m.V)[on_b])
    assert rep["max_displacement"] > 0
    free, _ = _smooth(m, weights=weights, iterations=5, fix_boundary=False)
    assert not np.array_equal(np.asarray(free.V)[on_b], np.asarray(m.V)[on_b])


@pytest.mark.parametrize("weights", WEIGHTS)
def test_reduces_roughness_of_a_noisy_plane(weights: str) -> None:
    # a flat 20 x 20 grid with every interior vertex lifted off the plane by up to 0.2 cells:
    # the distance to the clean surface is |z|, and smoothing must cut it
    m = grid(20)
    rng = np.random.default_rng(3)
    V = np.asarray(m.V).copy()
    inner = ~boundary_mask(m)
    V[inner, 2] = rng.uniform(-0.01, 0.01, int(inner.sum()))
    noisy = mesh(V, m.F)
    out, _ = _smooth(noisy, weights=weights, iterations=5)
    z0, z1 = np.abs(V[:, 2]).mean(), np.abs(np.asarray(out.V)[:, 2]).mean()
    assert z1 < z0 / 3.5  # measured: 5.3 (uniform) and 4.9 (cotangent) times smaller
    assert roughness(out) < roughness(noisy)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_noise_on_a_sphere_is_removed_before_the_sphere_shrinks(weights: str) -> None:
    noisy = with_normal_noise(unit_sphere("rx-sphere3.obj"), 0.2, seed=3)
    out, _ = _smooth(noisy, weights=weights, iterations=3)
    # measured: 0.0229 before, 0.0077 (uniform) and 0.0081 (cotangent) after three steps
    assert radial_deviation(out) < radial_deviation(noisy) / 2.5


def test_cotangent_weights_keep_an_undistorted_planar_mesh() -> None:
    # linear precision: on a planar mesh with positive weights every interior vertex already is
    # the weighted mean of its neighbours, so mean-curvature flow does not move it
    for m in (grid(6), welded("alligator.obj")):
        out, rep = _smooth(m, weights="cotangent", iterations=3)
        np.testing.assert_allclose(np.asarray(out.V), np.asarray(m.V), atol=1e-12)
        moved, _ = _smooth(m, weights="uniform", iterations=3)
        assert not np.allclose(np.asarray(moved.V), np.asarray(m.V)) or m.n_vertices < 50


@pytest.mark.parametrize("weights", WEIGHTS)
def test_shrinks_a_sphere_every_step(weights: str) -> None:
    m = unit_sphere("rx-sphere3.obj")
    radii = [mean_radius(_smooth(m, weights=weights, iterations=k)[0]) for k in (1, 2, 4, 8)]
    assert 1.0 > radii[0] > radii[1] > radii[2] > radii[3]


@pytest.mark.parametrize("weights", WEIGHTS)
def test_commutes_with_rigid_motions(weights: str) -> None:
    rng = np.random.default_rng(12)
    m = welded("spot.obj")
    V = np.asarray(m.V, dtype=np.float64)
    R, t = random_rotation(rng), rng.uniform(-10, 10, 3)
    a, _ = _smooth(mesh(V, m.F), weights=weights, iterations=3)
    b, _ = _smooth(mesh(V @ R.T + t, m.F), weights=weights, iterations=3)
    np.testing.assert_allclose(np.asarray(b.V), np.asarray(a.V) @ R.T + t, atol=1e-9)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_planar_mesh_stays_planar(weights: str) -> None:
    m = grid(6, jitter=0.2, seed=2)
    out, _ = _smooth(m, weights=weights, iterations=20, fix_boundary=False)
    np.testing.assert_array_equal(np.asarray(out.V)[:, 2], 0.0)


def test_full_step_moves_a_vertex_to_the_centroid_of_its_neighbours() -> None:
    # a pyramid apex over a square: uniform lambda = 1 puts it at the base's centre
    V = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0.5, 0.5, 1.0)]
    F = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)]
    out, rep = _smooth(mesh(V, F), iterations=1, **{"lambda": 1.0})
    np.testing.assert_allclose(np.asarray(out.V)[4], [0.5, 0.5, 0.0], atol=1e-15)
    np.testing.assert_array_equal(np.asarray(out.V)[:4], np.asarray(V, dtype=float)[:4])
    assert rep == {"iterations": 1, "max_displacement": 1.0}


def test_unused_vertices_and_float32_meshes() -> None:
    m = load("rx-torus.obj")  # float32 as loaded
    V = np.concatenate([np.asarray(m.V), [[9.0, 9.0, 9.0]]]).astype(np.float32)
    m2 = mesh(V, m.F, dtype="float32")
    out, _ = _smooth(m2, weights="cotangent", iterations=2)
    assert out.V.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out.V)[-1], [9.0, 9.0, 9.0])


def test_default_params() -> None:
    a, _ = _smooth(cube())
    b, _ = _smooth(cube(), weights="uniform", iterations=10, fix_boundary=True, **{"lambda": 0.5})
    np.testing.assert_array_equal(np.asarray(a.V), np.asarray(b.V))


@pytest.mark.parametrize(
    "params",
    [
        {"lambda": 0.0},  # the step must be positive
        {"lambda": 1.5},  # and at most 1
        {"iterations": 0},  # at least one step
        {"iterations": 1001},  # at most 1000
        {"weights": "mean"},  # not a weighting
        {"lamda": 0.5},  # unknown key
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _smooth(cube(), **params)
    assert ei.value.code == "op.params_invalid"
