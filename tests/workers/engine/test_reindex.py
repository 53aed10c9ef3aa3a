"""Re-indexing primitives: the close-pair grid search against brute force, weld, compaction and
degenerate-face removal called directly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform

from tests.workers.engine.shapes import mesh, soup, tetrahedron
from workers.engine import OpParamsError, reindex
from workers.engine.reindex import (
    close_pairs,
    face_areas64,
    remove_degenerate,
    remove_unused,
    weld,
)


def _brute_pairs(P: np.ndarray, tol: float) -> set[tuple[int, int]]:
    D = squareform(pdist(P)) if P.shape[0] > 1 else np.zeros((1, 1))
    i, j = np.nonzero(np.triu(tol >= D, k=1))
    return set(zip(i.tolist(), j.tolist(), strict=True))


def _pairs(P: np.ndarray, tol: float) -> set[tuple[int, int]]:
    i, j = close_pairs(np, P, tol)
    assert i.shape == j.shape
    got = [(min(a, b), max(a, b)) for a, b in zip(i.tolist(), j.tolist(), strict=True)]
    assert len(got) == len(set(got)), "a pair was reported twice"
    assert all(a != b for a, b in got)
    return set(got)


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    n=st.integers(0, 120),
    clusters=st.integers(1, 10),
    spread=st.sampled_from([1e-3, 0.05, 0.3]),
    tol=st.sampled_from([1e-4, 0.01, 0.05, 0.2, 2.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_close_pairs_matches_brute_force(
    n: int, clusters: int, spread: float, tol: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1, 1, (clusters, 3))
    P = centres[rng.integers(0, clusters, n)] + rng.normal(0, spread, (n, 3))
    if n > 3:
        P[: n // 4] = P[n // 4 : 2 * (n // 4)]  # exact duplicates too
    assert _pairs(P, tol) == _brute_pairs(P, tol)


def test_close_pairs_on_a_grid_at_exactly_the_cell_size() -> None:
    # points on an integer lattice: each has 6 neighbours at distance exactly tol
    g = np.arange(4, dtype=np.float64)
    P = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) * 0.5
    assert _pairs(P, 0.5) == _brute_pairs(P, 0.5)
    assert len(_brute_pairs(P, 0.5)) == 3 * 4 * 4 * 3


def test_close_pairs_with_a_tolerance_far_below_the_extent() -> None:
    # the grid is capped at 2**20 cells per axis, so cells are wider than tol here
    rng = np.random.default_rng(1)
    P = rng.uniform(0, 1e6, (500, 3))
    P[250:] = P[:250] + rng.normal(0, 1e-4, (250, 3))
    tol = 1e-3
    got = _pairs(P, tol)
    assert got == _brute_pairs(P, tol)
    assert len(got) >= 240


def test_close_pairs_tiny_inputs() -> None:
    for n in (0, 1):
        i, j = close_pairs(np, np.zeros((n, 3)), 1.0)
        assert i.shape == j.shape == (0,)
    assert _pairs(np.zeros((2, 3)), 0.1) == {(0, 1)}


def test_candidate_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reindex, "MAX_CANDIDATE_PAIRS", 10)
    P = np.random.default_rng(0).uniform(0, 1, (50, 3))
    with pytest.raises(OpParamsError) as ei:
        close_pairs(np, P, 1.0)
    assert ei.value.code == "op.tolerance_too_large"
    assert ei.value.detail["candidate_pairs"] > 10


def test_weld_function_report_and_dtypes() -> None:
    s = soup(tetrahedron())
    out, rep = weld(s)
    assert rep == {
        "vertices_before": 12,
        "vertices_after": 4,
        "merged": 8,
        "unused_removed": 0,
        "degenerate_faces": 0,
    }
    assert out.F.dtype == np.int32 and out.V.dtype == s.V.dtype
    out32, _ = weld(soup(mesh(tetrahedron().V, tetrahedron().F, dtype="float32")))
    assert out32.V.dtype == np.float32


def test_weld_keeps_face_attributes() -> None:
    s = soup(tetrahedron()).with_attrs(face={"fid": np.arange(4)})
    out, _ = weld(s, tolerance=1e-9)
    np.testing.assert_array_equal(out.face_attrs["fid"], np.arange(4))


def test_remove_unused_function() -> None:
    t = tetrahedron()
    m = mesh(np.concatenate([[[3.0, 3, 3]], np.asarray(t.V)]), np.asarray(t.F) + 1)
    out, rep = remove_unused(m)
    assert rep == {"vertices_before": 5, "removed": 1}
    np.testing.assert_array_equal(out.F, t.F)
    np.testing.assert_array_equal(out.V, t.V)


def test_remove_degenerate_function_and_face_areas() -> None:
    V = [(0, 0, 0), (2, 0, 0), (0, 3, 0), (4, 0, 0)]
    m = mesh(V, [(0, 1, 2), (0, 1, 3), (1, 1, 2)])
    np.testing.assert_allclose(face_areas64(np, m.V, m.F), [3.0, 0.0, 0.0])
    out, rep = remove_degenerate(m, geometric=True, area_threshold=0.0)
    assert out.n_faces == 1 and rep["removed"] == 2
    out, rep = remove_degenerate(m, geometric=False, area_threshold=0.0)
    assert out.n_faces == 2 and rep["removed_repeated_index"] == 1
    out, rep = remove_degenerate(m, geometric=True, area_threshold=3.0)
    assert out.n_faces == 0 and rep["removed_small_area"] == 2
