"""Texture error quadrics (Hoppe 1999) in :mod:`workers.engine.dynamic.quadrics`: each face's
texture coordinates as a linear function on its plane, the error of a vertex's coordinates
against the functions of its faces, and the position and coordinates that make it smallest."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import grid, random_rotation
from workers.engine.dynamic.quadrics import (
    attribute_best,
    attribute_error,
    attribute_quadrics,
    attribute_reduced,
    evaluate,
    face_gradients,
    tip_quadrics,
    vertex_quadrics,
)


def _tilted_grid(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A jittered flat grid turned and moved off the origin: ``(X, F, R)``, ``R`` the rotation
    (its first two columns span the plane)."""
    rng = np.random.default_rng(seed)
    g = grid(6, jitter=0.2, seed=seed)
    R = random_rotation(rng)
    X = np.asarray(g.V, np.float64) @ R.T + [3.0, -2.0, 5.0]
    return X, np.asarray(g.F, np.int64), R


def test_face_gradients_interpolate_the_corners() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    F = rng.permutation(30).reshape(10, 3)
    S = rng.normal(size=(10, 3, 2))
    g, d, area, ok = face_gradients(np, X, F, S)
    assert ok.all()
    at = np.einsum("fjk,fck->fcj", g, X[F]) + d[:, None, :]  # value j at corner c
    np.testing.assert_allclose(at, S, atol=1e-12)
    n = np.cross(X[F[:, 1]] - X[F[:, 0]], X[F[:, 2]] - X[F[:, 0]])
    np.testing.assert_allclose(np.einsum("fjk,fk->fj", g, n), 0.0, atol=1e-12)  # in the plane
    np.testing.assert_allclose(area, 0.5 * np.linalg.norm(n, axis=1))


def test_a_linear_map_costs_nothing_and_is_recovered() -> None:
    """Coordinates linear over the surface (an affine map of the plane): every face has the
    same function, so the reduced quadric is 0 everywhere on the plane, the best coordinates at
    a point are the map's, and coordinates off the map by ``e`` cost ``W |e|^2``."""
    X, F, R = _tilted_grid()
    M = np.array([[1.5, -0.4], [0.3, 0.8]])
    c = np.array([0.2, -0.1])

    def uv(P: np.ndarray) -> np.ndarray:
        return ((P - [3.0, -2.0, 5.0]) @ R)[..., :2] @ M.T + c

    U = attribute_quadrics(np, X, F, uv(X[F]), X.shape[0])
    rng = np.random.default_rng(2)
    P = np.concatenate([rng.random((X.shape[0], 2)), np.zeros((X.shape[0], 1))], 1) @ R.T
    P += [3.0, -2.0, 5.0]
    scale = float(np.abs(U[:, :10]).max())
    assert np.abs(evaluate(np, attribute_reduced(np, U), P)).max() < 1e-12 * scale
    np.testing.assert_allclose(attribute_best(np, U, P), uv(P), atol=1e-10)
    e = rng.normal(size=(X.shape[0], 2)) * 0.1
    want = U[:, 18] * (e * e).sum(1)
    np.testing.assert_allclose(attribute_error(np, U, P, uv(P) + e), want, atol=1e-10 * scale)


def test_a_curved_map_costs_off_the_vertices() -> None:
    """``u = x^2`` is linear on no two faces of different x-extent: at a vertex every face's
    function gives the vertex's value (no error), between vertices they disagree."""
    g = grid(6)
    X, F = np.asarray(g.V, np.float64), np.asarray(g.F, np.int64)
    S = np.stack([X[:, 0] ** 2, X[:, 1]], 1)[F]
    U = attribute_quadrics(np, X, F, S, X.shape[0])
    Qr = attribute_reduced(np, U)
    inner = (X[:, 0] > 0) & (X[:, 0] < 1) & (X[:, 1] > 0) & (X[:, 1] < 1)
    assert np.abs(evaluate(np, Qr, X)).max() < 1e-14
    off = X + [0.5 / 6, 0.0, 0.0]
    assert (evaluate(np, Qr, off)[inner] > 1e-6).all()


def test_weights_follow_the_area_and_skip_rows() -> None:
    """A face weighs its area over the mean face area (a grid of equal faces: 1 each, so the
    weight column counts a vertex's faces); rows marked ``skip`` are zero; faces of zero area
    or with a non-finite value add nothing."""
    g = grid(4)
    X, F = np.asarray(g.V, np.float64), np.asarray(g.F, np.int64)
    S = X[F][:, :, :2].copy()
    U = attribute_quadrics(np, X, F, S, X.shape[0])
    np.testing.assert_allclose(U[:, 18], np.bincount(F.ravel(), minlength=X.shape[0]))
    skip = np.zeros(X.shape[0], bool)
    skip[[0, 7]] = True
    S[3, 1, 0] = np.nan
    V = attribute_quadrics(np, X, F, S, X.shape[0], skip)
    assert (V[skip] == 0).all()
    counts = np.bincount(np.delete(F, 3, axis=0).ravel(), minlength=X.shape[0])
    # the remaining faces are still of one area: the mean over the faces that count
    np.testing.assert_allclose(V[~skip, 18], counts[~skip])


@pytest.mark.gpu
def test_texture_quadrics_on_the_gpu_equal_the_twin() -> None:
    import cupy as cp

    from tests.conftest import mesh_path
    from workers.engine.mesh import TriMesh

    m = TriMesh.load(mesh_path("spot.obj"))
    X = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    S = np.asarray(m.corner_attrs["uv"], np.float64)
    skip = np.zeros(X.shape[0], bool)
    skip[::7] = True
    U = attribute_quadrics(np, X, F, S, X.shape[0], skip)
    Ug = attribute_quadrics(cp, cp.asarray(X), cp.asarray(F), cp.asarray(S), X.shape[0],
                            cp.asarray(skip))  # fmt: skip
    np.testing.assert_allclose(cp.asnumpy(Ug), U, rtol=1e-12, atol=1e-12)
    P = X + 0.01
    s = np.random.default_rng(0).random((X.shape[0], 2))
    for fn, args in (
        (attribute_reduced, ()),
        (attribute_best, (P,)),
        (attribute_error, (P, s)),
    ):
        want = fn(np, U, *args)
        got = fn(cp, Ug, *(cp.asarray(a) for a in args))
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-10, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["spot.obj", "fandisk.obj", "rx-torus.obj", "teapot.obj"])
def test_collapse_points_on_the_gpu_equal_the_twin(name: str) -> None:
    """The plan kernel against the array code: the same positions and costs bit for bit, over
    every edge, with some ends that must stay put and the quadrics of a half-decimated state
    (summed over several faces' planes, some ill-conditioned)."""
    import cupy as cp

    from tests.workers.engine.shapes import welded
    from workers.engine.dynamic._edges import edge_table
    from workers.engine.dynamic.quadrics import collapse_points, vertex_quadrics

    m = welded(name)
    X = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    Q = vertex_quadrics(np, X, F, X.shape[0])
    E = edge_table(np, F)
    a = np.concatenate([E.EV[:, 0], E.EV[:, 1]])
    b = np.concatenate([E.EV[:, 1], E.EV[:, 0]])
    Qs = Q + Q[np.random.default_rng(1).permutation(X.shape[0])]  # wider sums
    snap = np.random.default_rng(0).random(a.shape[0]) < 0.1
    off_ends = fallbacks = 0
    for QQ in (Q, Qs):
        p, cost = collapse_points(np, QQ, X, a, b, snap)
        pg, cg = collapse_points(cp, *(cp.asarray(x) for x in (QQ, X, a, b, snap)))
        np.testing.assert_array_equal(cp.asnumpy(pg), p)
        np.testing.assert_array_equal(cp.asnumpy(cg), cost)
        assert (p[snap] == X[a[snap]]).all() and (cost > 0).any()  # kept ends stay
        at_end = (p == X[a]).all(axis=1) | (p == X[b]).all(axis=1)
        off_ends += int((~at_end).sum())
        fallbacks += int((at_end & ~snap).sum())
    # both branches occur: optima off the edge's ends (a few % of the edges with one vertex's
    # planes, most with the wider sums) and fallbacks to an end
    assert off_ends > 100 and fallbacks > 100


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["spot.obj", "fandisk.obj", "rx-torus.obj", "teapot.obj"])
def test_vertex_quadrics_on_the_gpu_equal_the_twin(name: str) -> None:
    """The per-vertex kernel against the array code on a shared mesh with two faces of zero
    area added (they add nothing): the same sums in the same order, bit for bit."""
    import cupy as cp

    from tests.workers.engine.shapes import welded
    from workers.engine.dynamic.quadrics import vertex_quadrics

    m = welded(name)
    X = np.asarray(m.V, np.float64) - 0.5
    F = np.asarray(m.F, np.int64)
    F = np.concatenate([F, [[0, 0, 1], [F[0, 0], F[0, 1], F[0, 1]]]])  # no area
    want = vertex_quadrics(np, X, F, X.shape[0])
    got = cp.asnumpy(vertex_quadrics(cp, cp.asarray(X), cp.asarray(F), X.shape[0]))
    assert got.shape == want.shape == (X.shape[0], 10)
    np.testing.assert_array_equal(got, want)
    assert (np.abs(want).max(axis=1) > 0).sum() > 0.9 * X.shape[0]  # not trivially zero rows


def _cone(k: int, height: float) -> tuple[np.ndarray, np.ndarray]:
    """A closed cone turned and moved off the origin: apex 0 on the axis ``R[:, 2]``, ``k``
    base vertices on the unit circle, the base's centre last; ``(X, F, R)``."""
    t = 2 * np.pi * np.arange(k) / k
    X = np.concatenate(
        [[[0.0, 0.0, height]], np.stack([np.cos(t), np.sin(t), np.zeros(k)], 1), [[0.0, 0.0, 0.0]]]
    )
    i = np.arange(k)
    side = np.stack([np.zeros(k, int), 1 + i, 1 + (i + 1) % k], 1)
    base = np.stack([np.full(k, k + 1), 1 + (i + 1) % k, 1 + i], 1)
    R = random_rotation(np.random.default_rng(3))
    return X @ R.T + [1.0, -2.0, 0.5], np.concatenate([side, base]), R


@pytest.mark.parametrize("height", [0.5, 4.0])
def test_tip_quadrics_hold_a_cone_apex_along_its_axis(height: float) -> None:
    """The tip plane of a cone's apex lies across the axis, weighted ``weight k f (2 - f)``
    (``k`` faces, ``f`` the apex's angle deficit over 2 pi), so moving the apex along the axis
    costs that times the squared step and moving it across costs nothing. On a smooth cone
    ``f = 1 - sin θ`` (``θ`` the half-angle) while the faces' own planes charge ``k sin^2 θ``
    along the axis: with weight 1 the two make about ``k``, a squared step per face. The flat
    base centre gets no plane, nor a skipped vertex."""
    k, weight, step = 48, 3.0, 0.1
    X, F, R = _cone(k, height)
    n = X.shape[0]
    Q = tip_quadrics(np, X, F, n, weight)
    axis = R[:, 2]
    u, v = X[F[:k, 1]] - X[0], X[F[:k, 2]] - X[0]
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    f = 1.0 - np.arccos(cos).sum() / (2 * np.pi)
    along = evaluate(np, Q[:1], X[:1] + step * axis)[0]
    assert along == pytest.approx(weight * k * f * (2.0 - f) * step**2, rel=1e-9)
    assert evaluate(np, Q[:1], X[:1] + step * R[:, 0])[0] == pytest.approx(0.0, abs=1e-12)
    faces = evaluate(np, vertex_quadrics(np, X, F, n)[:1], X[:1] + step * axis)[0]
    one = evaluate(np, tip_quadrics(np, X, F, n, 1.0)[:1], X[:1] + step * axis)[0]
    assert faces + one == pytest.approx(k * step**2, rel=0.01)
    np.testing.assert_array_equal(Q[n - 1], 0.0)  # the base's centre is flat
    skip = np.zeros(n, bool)
    skip[0] = True
    np.testing.assert_array_equal(tip_quadrics(np, X, F, n, weight, skip)[0], 0.0)
