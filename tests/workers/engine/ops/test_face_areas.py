"""``face_areas``: the areas add up to the surface area ``stats`` reports, match Heron's formula,
and move with the mesh as areas must (rigid motions keep them, scaling by s multiplies by s^2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine.shapes import cube, load, mesh, random_rotation, run, stats, tetrahedron
from workers.engine import OpParamsError, TriMesh


def _areas(m: TriMesh) -> tuple[np.ndarray, dict]:
    res = run(m, "face_areas")
    a = res.mesh.face_attrs["face_areas"]
    assert a.dtype == np.float32 and a.shape == (m.n_faces,)
    assert res.mesh.F is m.F and res.mesh.V is m.V
    return a.astype(np.float64), res.reports["face_areas"]


@pytest.mark.parametrize("name", all_meshes())
def test_areas_sum_to_the_stats_area(name: str) -> None:
    m = load(name)
    a, rep = _areas(m)
    total = stats(m)["area"]
    assert rep["total_area"] == pytest.approx(total, rel=1e-12)
    # each float32 store is within 2^-24 (relative) of the float64 area
    assert abs(a.sum() - total) <= 2.0**-23 * total
    assert (a >= 0).all()


def test_matches_herons_formula_on_random_triangles() -> None:
    rng = np.random.default_rng(11)
    V = rng.normal(size=(300, 3))
    F = np.arange(300).reshape(-1, 3)
    a, _ = _areas(mesh(V, F))
    x, y, z = (np.linalg.norm(V[F[:, (k + 1) % 3]] - V[F[:, k]], axis=1) for k in range(3))
    s = (x + y + z) / 2
    heron = np.sqrt(np.maximum(s * (s - x) * (s - y) * (s - z), 0.0))
    np.testing.assert_allclose(a, heron, rtol=1e-5, atol=1e-7)


def test_known_values() -> None:
    a, rep = _areas(cube())
    np.testing.assert_array_equal(a, 0.5)
    assert rep["total_area"] == 6.0
    a, _ = _areas(tetrahedron())
    np.testing.assert_allclose(a, [0.5, 0.5, 0.5, math.sqrt(3) / 2], rtol=1e-7)


def test_degenerate_faces_have_zero_area() -> None:
    V = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)]
    a, rep = _areas(mesh(V, [(0, 1, 2), (0, 0, 3), (0, 1, 3)]))
    np.testing.assert_array_equal(a, [0.0, 0.0, 0.5])
    assert rep["total_area"] == 0.5


def test_invariant_under_rigid_motions_and_quadratic_in_scale() -> None:
    rng = np.random.default_rng(5)
    m = load("spot.obj")
    V = np.asarray(m.V, dtype=np.float64)
    a0, _ = _areas(mesh(V, m.F))
    R = random_rotation(rng)
    a1, _ = _areas(mesh(V @ R.T + rng.uniform(-10, 10, 3), m.F))
    np.testing.assert_allclose(a1, a0, rtol=1e-5, atol=1e-9)
    a2, _ = _areas(mesh(V * 3.0, m.F))
    np.testing.assert_allclose(a2, 9.0 * a0, rtol=1e-6)


def test_float32_mesh_matches_float64_mesh() -> None:
    m = load("rx-torus.obj")
    a32, _ = _areas(m)
    a64, _ = _areas(mesh(np.asarray(m.V, dtype=np.float64), m.F))
    np.testing.assert_array_equal(a32, a64)


@pytest.mark.parametrize(
    "params",
    [
        {"per_vertex": True},  # unknown key: face_areas takes no parameters
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        run(cube(), ("face_areas", params))
    assert ei.value.code == "op.params_invalid"
