"""The cotangent Laplacian and vertex areas (``workers/engine/laplacian.py``): constants are in
the null space, linear functions are harmonic at interior vertices of any planar triangulation,
L is symmetric positive semidefinite, mixed areas tile the surface, and the GPU's per-face terms
equal the twin's (libigl, gpytoolbox and potpourri3d on every shared mesh: test_references.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine.shapes import MANIFOLD, boundary_mask, grid, load, mesh, stats, welded
from workers.engine.laplacian import cotan_laplacian, face_terms, mixed_areas64


@pytest.mark.parametrize("name", all_meshes())
def test_constants_are_in_the_null_space(name: str) -> None:
    m = load(name)
    L = cotan_laplacian(m)
    scale = float(abs(L).sum(axis=1).max())
    np.testing.assert_allclose(L @ np.ones(m.n_vertices), 0.0, atol=1e-12 * scale)
    assert abs(L - L.T).max() <= 1e-12 * scale


@pytest.mark.parametrize("jitter", [0.0, 0.2])
def test_linear_functions_are_harmonic_inside_a_planar_mesh(jitter: float) -> None:
    m = grid(8, jitter=jitter, seed=4)
    L = cotan_laplacian(m)
    rng = np.random.default_rng(9)
    inner = ~boundary_mask(m)
    V = np.asarray(m.V)
    for _ in range(3):
        a, b, c = rng.normal(size=3)
        f = a * V[:, 0] + b * V[:, 1] + c
        lf = L @ f
        np.testing.assert_allclose(lf[inner], 0.0, atol=1e-12)
        assert np.abs(lf[~inner]).max() > 1e-3  # the boundary rows are not zero: it can fail


def test_positive_semidefinite_with_nonnegative_energy() -> None:
    m = welded("rx-el_topo_sphere_1280.obj")
    L = cotan_laplacian(m).toarray()
    assert np.linalg.eigvalsh(L).min() > -1e-10
    # the Dirichlet energy of the x coordinate is twice the area-weighted |grad x|^2: positive
    x = np.asarray(m.V, dtype=np.float64)[:, 0]
    assert x @ L @ x > 0


@pytest.mark.parametrize("name", all_meshes())
def test_mixed_and_barycentric_areas_tile_the_surface(name: str) -> None:
    m = load(name)
    area = stats(m)["area"]
    A = mixed_areas64(np, m.V, m.F, m.n_vertices)
    assert A.sum() == pytest.approx(area, rel=1e-9)
    terms = face_terms(m, with_mass=True)
    assert terms.mass.sum() == pytest.approx(area, rel=1e-9)
    assert terms.area.sum() == pytest.approx(area, rel=1e-12)


@pytest.mark.parametrize("name", MANIFOLD)
def test_mixed_areas_are_positive_on_used_vertices(name: str) -> None:
    m = welded(name)
    A = mixed_areas64(np, m.V, m.F, m.n_vertices)
    # a vertex whose every face is degenerate has no area; none of these meshes has one
    assert (A > 0).all()


def test_degenerate_faces_add_nothing() -> None:
    V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (2, 0, 0)]
    t = face_terms(mesh(V, [(0, 1, 2), (0, 1, 3)]))
    np.testing.assert_array_equal(t.cot[1], 0.0)
    assert t.area[1] == 0.0
    L = cotan_laplacian(mesh(V, [(0, 1, 2), (0, 1, 3)])).toarray()
    assert (L[3] == 0).all() and (L[:, 3] == 0).all()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["stanford-bunny.obj", "rx-plane_5.obj", "beetle.obj"])
def test_gpu_face_terms_and_matrix_match_the_twin(name: str) -> None:
    m = load(name)
    ref = face_terms(m, with_mass=True)
    g = m.to("cupy")
    got = face_terms(g, with_mass=True)
    np.testing.assert_allclose(got.cot.get(), ref.cot, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.area.get(), ref.area, rtol=1e-12)
    np.testing.assert_allclose(got.mass.get(), ref.mass, rtol=1e-12)
    Lg = cotan_laplacian(g).get()
    L = cotan_laplacian(m)
    assert abs(Lg - L).max() <= 1e-12 * float(abs(L).max())
