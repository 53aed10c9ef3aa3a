"""Short-edge collapse rounds: link condition, fold-over and locks respected; topology kept."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    assert_same_edge_table,
    grid,
    mesh,
    stats,
    tetrahedron,
    welded,
)
from workers.engine.dynamic._edges import EdgeTables, Surface, edge_keys, edge_lookup, edge_table
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


FOLLOWED = ["grid", "spot.obj", "cow.obj", "teapot.obj", "rx-dragon.obj", "fandisk.obj"]


def _collapse_rounds_with_tables(xp, name: str, rounds: int):
    """Collapse rounds on a shared mesh (a jittered grid for ``grid``), its boundary locked, at
    1.5 times its mean edge length, the edge table handed from round to round; yields per
    round the surface, the collapses and the tables."""
    m = grid(30, jitter=0.3, seed=1) if name == "grid" else welded(name)
    locked = np.asarray(m.topology.boundary_vertices).copy()
    S = Surface(
        xp.asarray(m.V, dtype=xp.float64),
        xp.asarray(m.F, dtype=xp.int64),
        None,
        xp.arange(m.n_faces, dtype=xp.int64),
        xp.asarray(locked),
        xp.zeros(0, dtype=xp.int64),
    )
    E = edge_table(xp, S.F)
    L = float(xp.linalg.norm(S.V[E.EV[:, 0]] - S.V[E.EV[:, 1]], axis=1).mean())
    tables = EdgeTables(xp, follow=True)
    for _ in range(rounds):
        S, k = collapse_round(xp, S, 1.5 * L, 4 * L, tables=tables)
        yield S, k, tables
        if k == 0:
            return


@pytest.mark.parametrize(
    ("name", "device"),
    [(name, "cpu") for name in FOLLOWED]
    + [
        pytest.param(name, "gpu", marks=pytest.mark.gpu)
        for name in ("grid", "teapot.obj", "rx-dragon.obj")
    ],
)
def test_the_table_after_collapses_is_the_rebuilt_one(name: str, device: str) -> None:
    """Round after round the table handed on (``edges_after_collapses``: merged edges, edges
    re-keyed at the surviving end, faces and vertices renumbered) equals the one built from
    the new faces, every array bit for bit; one build in all. The grid and teapot have a
    boundary: collapses onto a locked boundary vertex merge an edge of one face."""
    xp = np
    if device == "gpu":
        import cupy as xp
    collapses = 0
    for S, k, tables in _collapse_rounds_with_tables(xp, name, 6):
        if k:
            assert tables.F is S.F  # derived, not built
            assert_same_edge_table(tables.E, edge_table(xp, S.F))
        collapses += k
    assert collapses > 100 and tables.builds == 1


def test_a_collapse_onto_the_boundary_merges_an_edge_of_one_face() -> None:
    """The case where the merged edge ``w-c`` lies on the boundary (its one side replaced by the
    side of ``u-c`` beyond the removed face) happens in the grid's rounds, and the tables
    still equal the rebuilt ones there (the test above)."""
    import workers.engine.dynamic.remesh_collapse as rc

    seen = []
    follow = rc.edges_after_collapses

    def spy(xp, E, F, n, u, w, edge):
        for s in (E.s0[edge], E.s1[edge]):
            c = F[s // 3].sum(axis=1) - u - w  # the face's opposite corner
            found, at = edge_lookup(np, E.key, edge_keys(np, w, c))
            assert found.all()
            seen.append(int((E.count[at] == 1).sum()))
        return follow(xp, E, F, n, u, w, edge)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rc, "edges_after_collapses", spy)
        for _ in _collapse_rounds_with_tables(np, "grid", 6):
            pass
    assert sum(seen) > 0


def test_a_mesh_with_an_edge_of_three_faces_builds_its_table_every_round() -> None:
    m = welded("beetle.obj")
    assert stats(m)["non_manifold_edges"] > 0
    S = surface(m, np.asarray(m.topology.boundary_vertices).copy())
    L = float(np.linalg.norm(S.V[S.F[:, 0]] - S.V[S.F[:, 1]], axis=1).mean())
    tables = EdgeTables(np, follow=True)
    plain = S
    for r in range(3):
        S, k = collapse_round(np, S, 1.5 * L, 4 * L, tables=tables)
        plain, k2 = collapse_round(np, plain, 1.5 * L, 4 * L)
        assert k == k2 > 0 and tables.builds == r + 1
        assert np.array_equal(S.F, plain.F) and np.array_equal(S.V, plain.V)
