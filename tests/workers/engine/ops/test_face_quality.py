"""``face_quality``: Q of KEY-WELD eq. 1 is 1 for equilateral triangles, in [0, 1] everywhere
(Weitzenböck's inequality), 0 for degenerate faces, and invariant under similarities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine.shapes import cube, load, mesh, random_rotation, run
from workers.engine import OpParamsError, TriMesh


def _quality(m: TriMesh) -> tuple[np.ndarray, dict]:
    res = run(m, "face_quality")
    q = res.mesh.face_attrs["face_quality"]
    assert q.dtype == np.float32 and q.shape == (m.n_faces,)
    return q.astype(np.float64), res.reports["face_quality"]


def test_known_triangles() -> None:
    V = [
        (0, 0, 0),
        (1, 0, 0),
        (0.5, math.sqrt(3) / 2, 0),  # 0-1-2 equilateral
        (0, 1, 0),  # 0-1-3 right isosceles: sides 1, 1, sqrt 2, area 1/2
        (2, 0, 0),  # 0-1-4 collinear
        (0, 0, 0),
    ]
    F = [(0, 1, 2), (0, 1, 3), (0, 1, 4), (0, 0, 5)]
    q, rep = _quality(mesh(V, F))
    np.testing.assert_allclose(q, [1.0, math.sqrt(3) / 2, 0.0, 0.0], atol=1e-7)
    assert rep["poor_faces"] == 2  # the two degenerate ones
    assert rep["min_quality"] == 0.0


@pytest.mark.parametrize("name", all_meshes())
def test_quality_lies_in_zero_one(name: str) -> None:
    q, rep = _quality(load(name))
    assert q.min() >= 0.0 and q.max() <= 1.0 + 1e-6
    # counted on the float64 values: only faces within float32 rounding of 0.6 may differ
    assert abs(rep["poor_faces"] - int((q < 0.6).sum())) <= int((np.abs(q - 0.6) < 1e-7).sum())
    assert rep["mean_quality"] == pytest.approx(q.mean(), rel=1e-6)


def test_invariant_under_similarities() -> None:
    rng = np.random.default_rng(3)
    m = load("rx-bumpy-cube.obj")
    V = np.asarray(m.V, dtype=np.float64)
    q0, _ = _quality(mesh(V, m.F))
    R = random_rotation(rng)
    q1, _ = _quality(mesh(7.5 * V @ R.T + rng.uniform(-5, 5, 3), m.F))
    np.testing.assert_allclose(q1, q0, rtol=1e-5, atol=1e-7)
    q2, _ = _quality(mesh(V * [-1.0, 1.0, 1.0], m.F))
    np.testing.assert_allclose(q2, q0, rtol=1e-6)


def test_stretching_lowers_quality() -> None:
    V = np.array([(0, 0, 0), (1, 0, 0), (0.5, math.sqrt(3) / 2, 0)])
    qs = [_quality(mesh(V * [1.0, s, 1.0], [(0, 1, 2)]))[0][0] for s in (1.0, 0.5, 0.1, 0.01)]
    assert qs[0] == pytest.approx(1.0) and all(a > b for a, b in zip(qs, qs[1:], strict=False))


def test_bad_params() -> None:
    with pytest.raises(OpParamsError) as ei:
        run(cube(), ("face_quality", {"threshold": 0.6}))  # unknown key
    assert ei.value.code == "op.params_invalid"
