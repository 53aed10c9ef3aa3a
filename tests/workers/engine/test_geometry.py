"""Per-face geometry helpers: cross products, corner angles, unitize, scatter."""

from __future__ import annotations

import math

import numpy as np

from tests.workers.engine.shapes import load, mesh, tetrahedron
from workers.engine.geometry import (
    corner_angles64,
    face_corners64,
    face_cross64,
    scatter_rows,
    unitize,
)


def test_face_cross_is_twice_the_area_along_the_normal() -> None:
    t = tetrahedron()
    c = face_cross64(np, t.V, t.F)
    assert c.dtype == np.float64
    np.testing.assert_allclose(c, [(0, 0, -1), (0, -1, 0), (-1, 0, 0), (1, 1, 1)])
    a, b, _ = face_corners64(np, t.V, t.F)
    np.testing.assert_array_equal(a, np.asarray(t.V)[np.asarray(t.F)[:, 0]])
    np.testing.assert_array_equal(b, np.asarray(t.V)[np.asarray(t.F)[:, 1]])


def test_corner_angles_sum_to_pi() -> None:
    m = load("stanford-bunny.obj")
    ang = corner_angles64(np, m.V, m.F)
    assert ang.shape == (m.n_faces, 3) and (ang >= 0).all() and (ang <= math.pi).all()
    ok = np.linalg.norm(face_cross64(np, m.V, m.F), axis=1) > 0
    np.testing.assert_allclose(ang[ok].sum(axis=1), math.pi, atol=1e-9)


def test_corner_angles_of_known_triangles() -> None:
    V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0.5, math.sqrt(3) / 2, 0), (2, 0, 0)]
    m = mesh(V, [(0, 1, 2), (0, 1, 3), (0, 1, 4), (0, 0, 1)])
    ang = corner_angles64(np, m.V, m.F)
    np.testing.assert_allclose(ang[0], [math.pi / 2, math.pi / 4, math.pi / 4])
    np.testing.assert_allclose(ang[1], [math.pi / 3] * 3)
    np.testing.assert_allclose(ang[2], [0, math.pi, 0])  # flat: collinear corners
    np.testing.assert_allclose(ang[3], [0, 0, 0])  # a zero-length side gives 0 angles


def test_corner_angles_stay_accurate_near_zero() -> None:
    eps = 1e-9
    ang = corner_angles64(np, np.array([(0, 0, 0), (1, 0, 0), (1, eps, 0)]), np.array([(0, 1, 2)]))
    np.testing.assert_allclose(ang[0, 0], math.atan(eps), rtol=1e-9)


def test_unitize_leaves_zero_rows_zero() -> None:
    v = np.array([(3.0, 4.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, -2.0)])
    np.testing.assert_allclose(unitize(np, v), [(0.6, 0.8, 0), (0, 0, 0), (0, 0, -1)])


def test_scatter_rows_matches_add_at() -> None:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 50, 1000)
    vals = rng.normal(size=(1000, 3))
    expect = np.zeros((60, 3))
    np.add.at(expect, idx, vals)
    np.testing.assert_allclose(scatter_rows(np, idx, vals, 60), expect)
    expect1 = np.zeros(60)
    np.add.at(expect1, idx, vals[:, 0])
    np.testing.assert_allclose(scatter_rows(np, idx, vals[:, 0], 60), expect1)
