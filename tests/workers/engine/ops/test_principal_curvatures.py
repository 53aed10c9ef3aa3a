"""``principal_curvatures``: exact values on analytic surfaces (sphere, cylinder, torus) within
the discretisation error, which falls as h^2 where it should; the sign convention shared with
``mean_curvature``; orthonormal frames; invariance under rigid motions and 1/s scaling; flat,
unused and degenerate cases. The comparison with libigl on every shared mesh is in
tests/workers/engine/test_references.py."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine.shapes import (
    boundary_mask,
    grid,
    load,
    mesh,
    random_rotation,
    run,
    unit_sphere,
    welded,
)
from workers.engine import OpParamsError, TriMesh

NAMES = (
    "principal_curvature_max",
    "principal_curvature_min",
    "principal_direction_max",
    "principal_direction_min",
)


def _pc(m: TriMesh) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    res = run(m, "principal_curvatures")
    attrs = res.mesh.vertex_attrs
    assert res.mesh.V is m.V and res.mesh.F is m.F
    out = []
    for k, shape in zip(NAMES, [(m.n_vertices,)] * 2 + [(m.n_vertices, 3)] * 2, strict=True):
        a = attrs[k]
        assert a.dtype == np.float32 and a.shape == shape, k
        out.append(a.astype(np.float64))
    return out[0], out[1], out[2], out[3]


def torus(R: float, r: float, nu: int, nv: int) -> tuple[TriMesh, np.ndarray]:
    """A torus of radii ``R > r`` around z sampled on an ``nu x nv`` grid of its angles (u
    around the axis, v around the tube, v = 0 on the outer equator), with outward normals;
    also the angle v of every vertex."""
    u, v = np.meshgrid(
        np.arange(nu) * 2 * np.pi / nu, np.arange(nv) * 2 * np.pi / nv, indexing="ij"
    )
    V = np.stack(
        [(R + r * np.cos(v)) * np.cos(u), (R + r * np.cos(v)) * np.sin(u), r * np.sin(v)], -1
    ).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    i, j = i.ravel(), j.ravel()

    def idx(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a % nu) * nv + (b % nv)

    F = np.concatenate(
        [
            np.stack([idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)], 1),
            np.stack([idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)], 1),
        ]
    )
    return mesh(V, F), v.ravel()


def tube(r: float, n_around: int, n_along: int, length: float) -> TriMesh:
    """An open cylinder of radius ``r`` around z, ``n_around`` x ``n_along`` quads cut into
    triangles, outward normals."""
    t = np.arange(n_around) * 2 * np.pi / n_around
    z = np.linspace(0.0, length, n_along + 1)
    T, Z = np.meshgrid(t, z, indexing="ij")
    V = np.stack([r * np.cos(T), r * np.sin(T), Z], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n_around), np.arange(n_along), indexing="ij")
    i, j = i.ravel(), j.ravel()

    def idx(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a % n_around) * (n_along + 1) + b

    F = np.concatenate(
        [
            np.stack([idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)], 1),
            np.stack([idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)], 1),
        ]
    )
    return mesh(V, F)


# ------------------------------------------------------------------------------ analytic surfaces
@pytest.mark.parametrize("r", [1.0, 0.25, 40.0])
def test_sphere_has_both_curvatures_one_over_r(r: float) -> None:
    """rx-sphere3's vertices lie on the unit sphere to 3e-8: Max's normals are then exact and so
    is the estimate (measured: 5e-6 relative, float32 storage included)."""
    m = unit_sphere("rx-sphere3.obj")
    k1, k2, _, _ = _pc(mesh(np.asarray(m.V) * r, m.F))
    np.testing.assert_allclose(k1 * r, 1.0, atol=2e-5)
    np.testing.assert_allclose(k2 * r, 1.0, atol=2e-5)
    assert (k1 >= k2).all()


def test_irregular_sphere_within_its_radius_spread() -> None:
    """el_topo's vertices lie on the sphere only to 0.15 %: the estimate is off by that much at
    single vertices and exact in the median (measured: 4e-4 and 9e-4 at worst, 2e-5 median)."""
    k1, k2, _, _ = _pc(unit_sphere("rx-el_topo_sphere_1280.obj"))
    assert np.abs(k1 - 1).max() < 2e-3 and np.abs(k2 - 1).max() < 3e-3
    assert abs(np.median(k1) - 1) < 1e-4 and abs(np.median(k2) - 1) < 1e-4


def test_inward_facing_triangles_flip_the_sign() -> None:
    m = unit_sphere("rx-sphere3.obj")
    k1, k2, _, _ = _pc(mesh(m.V, np.asarray(m.F)[:, ::-1]))
    np.testing.assert_allclose(k1, -1.0, atol=2e-5)
    np.testing.assert_allclose(k2, -1.0, atol=2e-5)


@pytest.mark.parametrize("r", [1.0, 3.0])
def test_cylinder_curvatures_and_directions(r: float) -> None:
    """Interior vertices of a tube: k1 = 1/r around the axis, k2 = 0 along it (boundary vertices
    see only one side and are estimated less well: not checked here)."""
    m = tube(r, 48, 12, 4.0 * r)
    k1, k2, d1, d2 = _pc(m)
    inner = ~boundary_mask(m)
    assert inner.sum() == 48 * 11
    np.testing.assert_allclose(k1[inner] * r, 1.0, atol=2e-3)
    np.testing.assert_allclose(k2[inner] * r, 0.0, atol=2e-3)
    axis = np.array([0.0, 0.0, 1.0])
    assert np.abs(d1[inner] @ axis).max() < 1e-3  # around the axis
    assert np.abs(d2[inner] @ axis).min() > 1 - 1e-6  # along the axis


def test_torus_matches_the_formulas_and_converges_quadratically() -> None:
    """On a torus of radii R, r: k1 = 1/r (around the tube), k2 = cos v / (R + r cos v) (around
    the axis), the directions along the tube's meridian and along the parallel. Halving the grid
    step divides the largest error by about 4 (measured: 2.4e-3 -> 6.0e-4 for k1, 4.5e-3 ->
    1.1e-3 for k2)."""
    R, r = 3.0, 1.0
    errors = []
    for nu, nv in ((64, 32), (128, 64)):
        m, v = torus(R, r, nu, nv)
        k1, k2, d1, d2 = _pc(m)
        e1 = np.abs(k1 - 1 / r).max()
        e2 = np.abs(k2 - np.cos(v) / (R + r * np.cos(v))).max()
        errors.append((e1, e2))
        V = np.asarray(m.V, dtype=np.float64)
        parallel = np.stack([-V[:, 1], V[:, 0], np.zeros(len(V))], 1)
        parallel /= np.linalg.norm(parallel, axis=1, keepdims=True)
        assert np.abs((d2 * parallel).sum(1)).min() > 1 - 1e-5
        assert np.abs((d1 * parallel).sum(1)).max() < 5e-3
    (a1, a2), (b1, b2) = errors
    assert a1 < 3e-3 and a2 < 6e-3
    assert b1 < a1 / 3.5 and b2 < a2 / 3.5


# ------------------------------------------------------------------------------ conventions
@pytest.mark.parametrize("name", all_meshes())
def test_orthonormal_frames_and_order(name: str) -> None:
    m = load(name)
    k1, k2, d1, d2 = _pc(m)
    assert np.isfinite(k1).all() and np.isfinite(k2).all()
    assert (k1 >= k2).all()
    nonzero = np.linalg.norm(d1, axis=1) > 0
    np.testing.assert_allclose(np.linalg.norm(d1[nonzero], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(d2[nonzero], axis=1), 1.0, atol=1e-6)
    assert np.abs((d1 * d2).sum(1)).max() < 1e-6
    # no direction without curvature values: the zero rows are the unused vertices (the bunny's
    # 1113) and those with no usable face
    unused = ~np.asarray(m.topology.used_vertices)
    assert not nonzero[unused].any()
    assert (k1[~nonzero] == 0).all() and (k2[~nonzero] == 0).all()


@pytest.mark.parametrize("name", ["spot.obj", "rocker-arm.obj", "rx-bumpy-cube.obj"])
def test_half_the_sum_is_the_mean_curvature(name: str) -> None:
    """(k1 + k2) / 2 estimates the same H as ``mean_curvature`` (another operator: the cotangent
    Laplacian over mixed areas), with the same sign. Measured: Spearman 0.975, 0.951, 0.998;
    median difference 11 %, 23 %, 3 % of the median |H|; signs agree at 99.6-100 % of the
    vertices where |H| is above its median. (Not on rx-torus, whose anisotropic triangles throw
    the cotangent operator off by more than H itself, nor on the scans with noise.)"""
    from scipy.stats import spearmanr

    m = welded(name)
    k1, k2, _, _ = _pc(m)
    H = run(m, "mean_curvature").mesh.vertex_attrs["mean_curvature"].astype(np.float64)
    half = 0.5 * (k1 + k2)
    assert spearmanr(half, H)[0] > 0.94
    assert np.median(np.abs(half - H)) < 0.3 * np.median(np.abs(H))
    clear = np.abs(H) > np.median(np.abs(H))
    assert (np.sign(half[clear]) == np.sign(H[clear])).mean() > 0.99


def test_flat_surfaces_have_zero_curvature() -> None:
    for m in (grid(6), grid(6, jitter=0.2, seed=3), welded("alligator.obj")):
        k1, k2, d1, _ = _pc(m)
        scale = float(np.ptp(np.asarray(m.V), axis=0).max())
        assert np.abs(k1).max() * scale < 1e-6 and np.abs(k2).max() * scale < 1e-6
        assert np.abs(d1[:, 2]).max() < 1e-6  # directions in the plane


def test_invariant_under_rigid_motions_and_one_over_scale() -> None:
    rng = np.random.default_rng(5)
    m = welded("spot.obj")
    V = np.asarray(m.V, dtype=np.float64)
    k1, k2, d1, _ = _pc(mesh(V, m.F))
    R = random_rotation(rng)
    r1, r2, e1, _ = _pc(mesh(V @ R.T + rng.uniform(-50, 50, 3), m.F))
    tol = 1e-4 * np.abs(k1).max()
    np.testing.assert_allclose(r1, k1, rtol=1e-4, atol=tol)
    np.testing.assert_allclose(r2, k2, rtol=1e-4, atol=tol)
    # directions rotate with the surface (up to sign) where k1 and k2 are well apart
    apart = (k1 - k2) > 0.1 * (np.abs(k1) + np.abs(k2)) + 1e-3 * np.abs(k1).max()
    cos = np.abs(((d1 @ R.T) * e1).sum(1))
    assert apart.sum() > 1000 and np.median(cos[apart]) > 1 - 1e-6 and cos[apart].min() > 0.99
    s1, s2, _, _ = _pc(mesh(V * 5.0, m.F))
    np.testing.assert_allclose(s1, k1 / 5.0, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(s2, k2 / 5.0, rtol=1e-5, atol=1e-9)


def test_unused_vertices_and_zero_area_faces_add_nothing() -> None:
    """A face repeating an index and one with a corner exactly on another (zero area) change
    nothing; a vertex with only such faces gets zeros like an unused one. (Slivers of tiny but
    nonzero area are not excluded: their shape operator is ill-conditioned across the sliver
    and they weigh in by their small area, as in the paper; ``remove_degenerate_faces`` with an
    area threshold drops them first.)"""
    m = unit_sphere("rx-sphere3.obj")
    n = m.n_vertices
    F = np.asarray(m.F)
    a, b, _ = F[0]
    V = np.asarray(m.V)
    V = np.concatenate([V, [[5.0, 5.0, 5.0]], V[a : a + 1]])  # unused; a copy of a's position
    F2 = np.concatenate([F, [(a, a, b), (a, b, n + 1)]])
    k1, k2, d1, _ = _pc(mesh(V, F2))
    assert k1[n] == 0 and k2[n] == 0 and not d1[n].any()
    assert k1[n + 1] == 0 and k2[n + 1] == 0 and not d1[n + 1].any()
    ref1, ref2, _, _ = _pc(m)
    np.testing.assert_array_equal(k1[:n], ref1)
    np.testing.assert_array_equal(k2[:n], ref2)


def test_bad_params() -> None:
    with pytest.raises(OpParamsError) as ei:
        run(unit_sphere("rx-sphere3.obj"), ("principal_curvatures", {"radius": 2}))
    assert ei.value.code == "op.params_invalid"
