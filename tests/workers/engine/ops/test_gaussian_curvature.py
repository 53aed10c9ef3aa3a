"""``gaussian_curvature``: discrete Gauss-Bonnet on every manifold shared mesh, invariances, values
on hand-made meshes, and the per-area variant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    MANIFOLD,
    cube,
    load,
    mesh,
    open_square,
    random_rotation,
    run,
    tetrahedron,
    welded,
    welded_stats,
)
from workers.engine import OpParamsError, TriMesh

F32_EPS = 2.0**-24  # relative rounding of a float32 store


def _curvature(m: TriMesh, **params: object) -> tuple[np.ndarray, dict]:
    res = run(m, ("gaussian_curvature", params))
    k = res.mesh.vertex_attrs["gaussian_curvature"]
    assert k.dtype == np.float32 and k.shape == (m.n_vertices,)
    return k, res.reports["gaussian_curvature"]


def _vertex_areas(m: TriMesh) -> np.ndarray:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F)
    a = 0.5 * np.linalg.norm(np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]]), axis=1)
    return np.bincount(F.ravel(), np.repeat(a / 3, 3), minlength=m.n_vertices)


def _as64(m: TriMesh) -> TriMesh:
    return mesh(np.asarray(m.V, dtype=np.float64), m.F)


@pytest.mark.parametrize("name", MANIFOLD)
def test_gauss_bonnet_on_manifold_shared_meshes(name: str) -> None:
    s = welded_stats(name)
    assert s["non_manifold_edges"] == 0 and s["non_manifold_vertices"] == 0
    target = 2 * math.pi * s["euler_characteristic"]
    k, rep = _curvature(welded(name))
    k64 = k.astype(np.float64)
    # each stored value is within F32_EPS (relative) of the float64 defect
    assert abs(k64.sum() - target) <= 2 * F32_EPS * np.abs(k64).sum() + 1e-9
    assert rep["total_curvature"] == pytest.approx(target, abs=1e-8)


@pytest.mark.parametrize("name", ["spot.obj", "rx-torus.obj", "alligator.obj"])
def test_invariant_under_rigid_motions_and_scaling(name: str) -> None:
    rng = np.random.default_rng(2024)
    m = _as64(welded(name))
    k0, _ = _curvature(m)
    V = np.asarray(m.V)
    for _ in range(3):
        R = random_rotation(rng)
        t = rng.uniform(-100, 100, 3)
        k1, _ = _curvature(mesh(V @ R.T + t, m.F))
        np.testing.assert_allclose(k1, k0, rtol=1e-5, atol=1e-6)
    mirrored, _ = _curvature(mesh(V * [-1.0, 1.0, 1.0], m.F))
    np.testing.assert_allclose(mirrored, k0, rtol=1e-5, atol=1e-6)
    scaled, _ = _curvature(mesh(V * 37.0, m.F))
    np.testing.assert_allclose(scaled, k0, rtol=1e-5, atol=1e-6)


def test_corner_values_of_tetrahedron_and_cube() -> None:
    k, rep = _curvature(tetrahedron())
    # vertex 0: three right angles; the others: 45 + 45 + 60 degrees
    np.testing.assert_allclose(k, [math.pi / 2] + [7 * math.pi / 6] * 3, rtol=1e-6)
    assert rep["total_curvature"] == pytest.approx(4 * math.pi)
    k, _ = _curvature(cube())
    np.testing.assert_allclose(k, np.full(8, math.pi / 2), rtol=1e-6)


def test_boundary_vertices_use_pi() -> None:
    k, rep = _curvature(open_square())
    np.testing.assert_allclose(k, np.full(4, math.pi / 2), rtol=1e-6)
    assert rep["total_curvature"] == pytest.approx(2 * math.pi)


def test_flat_grid_has_zero_interior_curvature() -> None:
    m = welded("rx-plane_5.obj")
    assert float(np.ptp(np.asarray(m.V)[:, 2])) == 0.0
    k, _ = _curvature(m)
    on_boundary = np.zeros(m.n_vertices, dtype=bool)
    topo = m.topology
    on_boundary[np.asarray(topo.EV)[np.asarray(topo.boundary_edges)].ravel()] = True
    assert on_boundary.sum() == 16 and (~on_boundary).sum() == 9
    np.testing.assert_allclose(k[~on_boundary], 0.0, atol=1e-6)


def test_unused_vertices_get_zero() -> None:
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), [[3.0, 3.0, 3.0]]])
    k, rep = _curvature(mesh(V, t.F))
    assert k[4] == 0.0
    assert rep["total_curvature"] == pytest.approx(4 * math.pi)


def test_per_area_is_defect_over_barycentric_area() -> None:
    m = _as64(welded("spot.obj"))
    k, _ = _curvature(m)
    ka, rep = _curvature(m, per_area=True)
    assert "total_curvature" not in rep
    np.testing.assert_allclose(ka.astype(np.float64) * _vertex_areas(m), k, rtol=1e-5, atol=1e-6)


def test_per_area_on_a_sphere_is_one_over_r_squared() -> None:
    m = welded("rx-sphere3.obj")  # centred at (0.5, 0.5, 0.5), radius sqrt(3)/2
    ka, _ = _curvature(m, per_area=True)
    assert np.median(ka) == pytest.approx(4 / 3, rel=0.05)
    assert float((ka.astype(np.float64) * _vertex_areas(m)).sum()) == pytest.approx(4 * math.pi)
    # per unit area scales as 1 / s^2
    ks, _ = _curvature(mesh(np.asarray(m.V, dtype=np.float64) * 3.0, m.F), per_area=True)
    np.testing.assert_allclose(ks, ka / 9.0, rtol=1e-5)


def test_per_area_of_a_vertex_without_area_is_zero() -> None:
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), [[2.0, 0, 0], [3.0, 0, 0], [4.0, 0, 0]]])
    F = np.concatenate([np.asarray(t.F), [[4, 5, 6]]])  # a zero-area sliver
    ka, _ = _curvature(mesh(V, F), per_area=True)
    assert np.isfinite(ka).all()
    np.testing.assert_array_equal(ka[4:], 0.0)


def test_float32_mesh_matches_float64_mesh() -> None:
    m = load("rx-torus.obj")
    k32, _ = _curvature(m)
    k64, _ = _curvature(_as64(m))
    np.testing.assert_allclose(k32, k64, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "params",
    [
        {"per_area": [1]},  # not a boolean
        {"area": True},  # unknown key
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _curvature(tetrahedron(), **params)
    assert ei.value.code == "op.params_invalid"
