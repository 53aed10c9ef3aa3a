"""Short-edge collapse rounds: link condition, fold-over and locks respected; topology kept."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import grid, mesh, stats, tetrahedron, welded
from workers.engine.dynamic._edges import Surface
from workers.engine.dynamic.remesh_collapse import collapse_round, collapse_short_edges_rounds


def surface(m, locked=None) -> Surface:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F, dtype=np.int64)
    lk = np.zeros(len(V), bool) if locked is None else locked
    return Surface(V, F, None, np.arange(len(F)), lk, np.zeros(0, np.int64))


def assert_tiles_unit_square(S: Surface) -> None:
    """Every face of a surface in z = 0 is counter-clockwise and together they tile [0, 1]^2."""
    V, F = S.V, S.F
    z = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])[:, 2]
    assert (z > 0).all()
    assert abs(0.5 * z.sum() - 1.0) < 1e-12


def test_tetrahedron_is_not_collapsed_flat() -> None:
    S = surface(tetrahedron())
    S2, k = collapse_round(np, S, 10.0, 10.0)
    assert k == 0 and S2 is S


def test_locked_vertices_stay_and_topology_is_kept() -> None:
    for m in (welded("rx-sphere3.obj"), welded("rx-torus.obj"), welded("rx-cloth.obj")):
        topo = m.topology
        locked = np.asarray(topo.boundary_vertices).copy()
        S = surface(m, locked)
        V = S.V
        L = np.linalg.norm(V[np.asarray(topo.EV)[:, 0]] - V[np.asarray(topo.EV)[:, 1]], axis=1)
        S2, rep = collapse_short_edges_rounds(np, S, 1.2 * L.mean(), 3 * L.mean())
        assert rep["collapses"] > 0
        s0, s1 = stats(m), stats(mesh(S2.V, S2.F))
        for k in ("euler_characteristic", "boundary_loops", "boundary_edges", "components"):
            assert s1[k] == s0[k], k
        assert s1["manifold"] and s1["consistently_oriented"] and s1["degenerate_faces"] == 0
        assert s1["duplicate_faces"] == 0
        # every locked (boundary) vertex is still there, where it was
        kept = {tuple(p) for p in S2.V}
        assert all(tuple(p) in kept for p in V[locked])
        assert S2.locked.sum() == locked.sum()


def test_no_fold_over_on_a_plane() -> None:
    m = grid(10, jitter=0.2, seed=5)
    S = surface(m, np.asarray(m.topology.boundary_vertices).copy())
    S2, rep = collapse_short_edges_rounds(np, S, 0.15, 0.3)
    assert rep["collapses"] > 0
    assert_tiles_unit_square(S2)


def _one_short_edge() -> tuple[Surface, int, int]:
    """An 8 x 8 grid whose interior vertex (3, 3) moved 0.4 cells toward (4, 3): that edge is the
    only one shorter than 0.09."""
    m = grid(8)
    V = np.asarray(m.V, dtype=np.float64).copy()
    u, w = 3 * 9 + 3, 4 * 9 + 3
    V[u, 0] += 0.4 / 8
    S = surface(mesh(V, m.F), np.asarray(m.topology.boundary_vertices).copy())
    return S, u, w


def test_both_ends_free_merge_at_the_midpoint() -> None:
    S, u, w = _one_short_edge()
    mid = 0.5 * (S.V[u] + S.V[w])
    S2, k = collapse_round(np, S, 0.09, 1.0)
    assert k == 1 and S2.n_vertices == S.n_vertices - 1
    moved = [p for p in S2.V if not any(np.array_equal(p, q) for q in S.V)]
    assert len(moved) == 1 and np.allclose(moved[0], mid, atol=1e-15)
    assert_tiles_unit_square(S2)


def test_a_locked_end_keeps_its_place() -> None:
    S, u, w = _one_short_edge()
    S.locked[w] = True
    S2, k = collapse_round(np, S, 0.09, 1.0)
    assert k == 1 and S2.n_vertices == S.n_vertices - 1
    # nothing moved: the free end went into the locked one
    assert all(any(np.array_equal(p, q) for q in S.V) for p in S2.V)
    assert not any(np.array_equal(p, S.V[u]) for p in S2.V)


@pytest.mark.parametrize("seed", range(8))
def test_midpoint_collapses_keep_a_jittered_plane_tiled(seed: int) -> None:
    """Merged vertices sit at midpoints (both ends free here except on the boundary): on a
    strongly jittered plane many collapses happen, every face stays counter-clockwise and the
    square stays tiled."""
    m = grid(16, jitter=0.24, seed=seed)
    S = surface(m, np.asarray(m.topology.boundary_vertices).copy())
    S2, rep = collapse_short_edges_rounds(np, S, 0.06, 0.2)
    assert rep["collapses"] > 10
    assert_tiles_unit_square(S2)


def test_checking_in_slices_gives_the_same_round(monkeypatch: pytest.MonkeyPatch) -> None:
    import workers.engine.dynamic.collapse_check as cc

    m = welded("rx-torus.obj")
    S = surface(m)
    L = float(np.linalg.norm(S.V[S.F[:, 0]] - S.V[S.F[:, 1]], axis=1).mean())
    whole, k = collapse_round(np, S, 1.1 * L, 3 * L)
    monkeypatch.setattr(cc, "CHECK_SLICE", 7)
    sliced, k7 = collapse_round(np, S, 1.1 * L, 3 * L)
    assert k > 10 and k7 == k
    assert np.array_equal(whole.F, sliced.F) and np.array_equal(whole.V, sliced.V)
