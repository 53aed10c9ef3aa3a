"""``edge_lengths``: the side convention (side k from corner k to k+1), the report over unique
edges, and invariance under rigid motions (libigl on every shared mesh: tests/workers/engine/
test_references.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine.shapes import cube, load, mesh, random_rotation, run, welded
from workers.engine import OpParamsError, TriMesh


def _lengths(m: TriMesh) -> tuple[np.ndarray, dict]:
    res = run(m, "edge_lengths")
    L = res.mesh.face_attrs["edge_lengths"]
    assert L.dtype == np.float32 and L.shape == (m.n_faces, 3)
    return L.astype(np.float64), res.reports["edge_lengths"]


def test_side_k_runs_from_corner_k_to_corner_k_plus_1() -> None:
    # a 3-4-5 right triangle: corner 0 at the right angle
    L, rep = _lengths(mesh([(0, 0, 0), (3, 0, 0), (0, 4, 0)], [(0, 1, 2)]))
    np.testing.assert_array_equal(L, [[3.0, 5.0, 4.0]])
    assert rep == {
        "edges": 3,
        "mean_edge_length": 4.0,
        "min_edge_length": 3.0,
        "max_edge_length": 5.0,
    }


@pytest.mark.parametrize("name", all_meshes())
def test_report_is_over_unique_edges(name: str) -> None:
    m = load(name)
    L, rep = _lengths(m)
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F)
    pairs = np.unique(np.sort(np.stack([F.ravel(), F[:, [1, 2, 0]].ravel()], 1), axis=1), axis=0)
    ref = np.linalg.norm(V[pairs[:, 0]] - V[pairs[:, 1]], axis=1)
    assert rep["edges"] == pairs.shape[0]
    assert rep["mean_edge_length"] == pytest.approx(ref.mean(), rel=1e-12)
    assert rep["min_edge_length"] == ref.min()
    assert rep["max_edge_length"] == ref.max()
    # every side is one of the unique edges
    assert L.min() == pytest.approx(ref.min(), rel=1e-7)
    assert L.max() == pytest.approx(ref.max(), rel=1e-7)


def test_closed_mesh_counts_every_edge_twice() -> None:
    m = welded("rx-torus.obj")
    L, rep = _lengths(m)
    assert L.sum() == pytest.approx(2 * rep["edges"] * rep["mean_edge_length"], rel=1e-6)


def test_invariant_under_rigid_motions() -> None:
    rng = np.random.default_rng(8)
    m = load("alligator.obj")
    V = np.asarray(m.V, dtype=np.float64)
    L0, r0 = _lengths(mesh(V, m.F))
    R = random_rotation(rng)
    L1, r1 = _lengths(mesh(V @ R.T + rng.uniform(-10, 10, 3), m.F))
    np.testing.assert_allclose(L1, L0, rtol=1e-5)
    assert r1["mean_edge_length"] == pytest.approx(r0["mean_edge_length"], rel=1e-9)


def test_bad_params() -> None:
    with pytest.raises(OpParamsError) as ei:
        run(cube(), ("edge_lengths", {"unique": True}))  # unknown key
    assert ei.value.code == "op.params_invalid"
