"""Short-edge collapse rounds: link condition, fold-over and locks respected; topology kept."""

from __future__ import annotations

import numpy as np

from tests.workers.engine.shapes import grid, mesh, stats, tetrahedron, welded
from workers.engine.dynamic._edges import Surface
from workers.engine.dynamic.remesh_collapse import collapse_round, collapse_short_edges_rounds


def surface(m, locked=None) -> Surface:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F, dtype=np.int64)
    lk = np.zeros(len(V), bool) if locked is None else locked
    return Surface(V, F, None, np.arange(len(F)), lk, np.zeros(0, np.int64))


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
    V, F = S2.V, S2.F
    z = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])[:, 2]
    assert (z > 0).all()
    assert abs(0.5 * z.sum() - 1.0) < 1e-12  # still tiles the unit square
