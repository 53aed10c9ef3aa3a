"""``face_normals``: unit, right-handed in the corner order, outward on closed meshes, zero for
faces without area."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    CLOSED,
    SHARED,
    load,
    mesh,
    random_rotation,
    run,
    tetrahedron,
    welded,
    welded_stats,
)
from workers.engine import OpParamsError, TriMesh


def _normals(m: TriMesh) -> np.ndarray:
    out = run(m, "face_normals").mesh
    assert out.F is m.F  # connectivity (and with it the topology cache) is kept
    n = out.face_attrs["face_normals"]
    assert n.dtype == np.float32 and n.shape == (m.n_faces, 3)
    return n


def _cross64(m: TriMesh) -> np.ndarray:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F)
    return np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])


@pytest.mark.parametrize("name", SHARED)
def test_unit_length_and_right_handed(name: str) -> None:
    m = load(name)
    n = _normals(m).astype(np.float64)
    c = _cross64(m)
    length = np.linalg.norm(c, axis=1)
    ok = length > 0
    np.testing.assert_allclose(np.linalg.norm(n[ok], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(n[ok], c[ok] / length[ok, None], atol=1e-6)
    np.testing.assert_array_equal(n[~ok], 0.0)


def test_tetrahedron_normals() -> None:
    s = 1 / math.sqrt(3)
    np.testing.assert_allclose(
        _normals(tetrahedron()), [(0, 0, -1), (0, -1, 0), (-1, 0, 0), (s, s, s)], atol=1e-7
    )


@pytest.mark.parametrize("name", CLOSED)
def test_closed_meshes_point_outward(name: str) -> None:
    m = welded(name)
    n = _normals(m).astype(np.float64)
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F)
    area = 0.5 * np.linalg.norm(_cross64(m), axis=1)
    centre = V[F].mean(axis=1) - V.mean(axis=0)
    # divergence theorem: sum of area * n . (x - o) over a closed surface is 3 * volume
    flux = float((area * (n * centre).sum(axis=1)).sum())
    assert flux > 0
    assert flux == pytest.approx(3 * welded_stats(name)["volume"], rel=1e-4)


def test_zero_area_faces_get_zero_normals() -> None:
    V = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)]
    n = _normals(mesh(V, [(0, 1, 3), (0, 1, 2), (0, 0, 3), (3, 3, 3)]))
    np.testing.assert_allclose(n[0], (0, 0, 1), atol=1e-7)
    np.testing.assert_array_equal(n[1:], 0.0)


def test_tiny_faces_are_still_unit() -> None:
    # float32 positions, but |cross|^2 = 1e-80 underflows in float32: computed in float64
    V = np.array([(0, 0, 0), (1e-20, 0, 0), (0, 1e-20, 0)])
    n = _normals(mesh(V, [(0, 1, 2)], dtype="float32"))
    np.testing.assert_allclose(n, [(0, 0, 1)], atol=1e-7)


def test_normals_rotate_with_the_mesh() -> None:
    rng = np.random.default_rng(5)
    m = welded("spot.obj")
    V = np.asarray(m.V, dtype=np.float64)
    n0 = _normals(mesh(V, m.F)).astype(np.float64)
    R = random_rotation(rng)
    n1 = _normals(mesh(V @ R.T + [3.0, -2.0, 1.0], m.F))
    np.testing.assert_allclose(n1, n0 @ R.T, atol=2e-6)


def test_reversed_faces_flip_normals() -> None:
    t = tetrahedron()
    n0 = _normals(t)
    n1 = _normals(mesh(t.V, np.asarray(t.F)[:, ::-1]))
    np.testing.assert_array_equal(n1, -n0)


def test_no_params() -> None:
    with pytest.raises(OpParamsError) as ei:
        run(tetrahedron(), ("face_normals", {"weighting": "area"}))
    assert ei.value.code == "op.params_invalid"
