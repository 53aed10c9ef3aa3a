"""Edge split rounds: every long edge split, topology and orientation kept, boundary splits make
two faces from one, attributes interpolated and inherited."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import assert_same_edge_table, grid, mesh, stats, welded
from workers.engine.dynamic._edges import EdgeTables, Surface, edge_keys, edge_table
from workers.engine.dynamic.split import split_long_edges, split_round


def surface(m, feature=()) -> Surface:
    V = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F, dtype=np.int64)
    f = np.array(sorted(int(edge_keys(np, np.array([a]), np.array([b]))[0]) for a, b in feature))
    return Surface(
        V, F, V[:, :1].copy(), np.arange(len(F)), np.zeros(len(V), bool), f.astype(np.int64)
    )


def lengths(S: Surface) -> np.ndarray:
    F = S.F
    s = np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]), axis=1)
    e = np.unique(s, axis=0)
    return np.linalg.norm(S.V[e[:, 0]] - S.V[e[:, 1]], axis=1)


def test_boundary_split_makes_two_faces_from_one() -> None:
    S = surface(mesh([(0, 0, 0), (4, 0, 0), (2, 1, 0)], [(0, 1, 2)]))
    S2, k = split_round(np, S, 3.0)
    assert k == 1 and S2.F.shape[0] == 2 and S2.V.shape[0] == 4
    np.testing.assert_array_equal(S2.V[3], [2, 0, 0])
    np.testing.assert_array_equal(S2.F, [(0, 3, 2), (3, 1, 2)])
    np.testing.assert_array_equal(S2.face_src, [0, 0])
    assert S2.locked[3]  # a new boundary vertex is locked like the boundary


def test_one_round_cuts_each_face_at_most_once() -> None:
    S = surface(grid(6))
    S2, k = split_round(np, S, 0.0)  # every edge is a candidate
    # a face is cut once: m + (boundary splits) + 2 (interior splits) faces, all cut faces distinct
    assert 0 < k < len(lengths(S))
    assert S2.F.shape[0] - S.F.shape[0] <= S.F.shape[0]


def test_split_until_short_keeps_topology_and_interpolates() -> None:
    for m in (grid(5, jitter=0.2), welded("rx-cloth.obj"), welded("rx-sphere3.obj")):
        S = surface(m)
        L = lengths(S).mean() * 0.6
        S2, rep = split_long_edges(np, S, L)
        assert rep["splits"] > 0 and lengths(S2).max() <= L
        s0 = stats(m)
        s1 = stats(mesh(S2.V, S2.F))
        for k in ("euler_characteristic", "boundary_loops", "non_manifold_edges"):
            assert s1[k] == s0[k], k
        assert s1["consistently_oriented"] and s1["degenerate_faces"] == 0
        # the attribute is the x coordinate: linear, so midpoint interpolation is exact
        np.testing.assert_allclose(S2.A[:, 0], S2.V[:, 0], atol=1e-12)
        # area kept: every new face lies in its parent
        a0 = stats(m)["area"]
        assert s1["area"] == np.float64(a0) or abs(s1["area"] - a0) < 1e-9 * a0


def test_feature_keys_follow_the_split() -> None:
    S = surface(mesh([(0, 0, 0), (4, 0, 0), (2, 1, 0)], [(0, 1, 2)]), feature=[(0, 1)])
    S2, _ = split_round(np, S, 3.0)
    want = sorted(int(edge_keys(np, np.array([a]), np.array([b]))[0]) for a, b in [(0, 3), (3, 1)])
    np.testing.assert_array_equal(S2.feature, want)


def _split_rounds_with_tables(xp, name: str, rounds: int):
    """Split rounds on a shared mesh (a jittered grid for ``grid``) at half its mean edge
    length, the edge table handed from round to round; yields per round the surface, the
    splits and the tables."""
    m = grid(30, jitter=0.3, seed=1) if name == "grid" else welded(name)
    S = Surface(
        xp.asarray(m.V, dtype=xp.float64),
        xp.asarray(m.F, dtype=xp.int64),
        None,
        xp.arange(m.n_faces, dtype=xp.int64),
        xp.zeros(m.n_vertices, dtype=bool),
        xp.zeros(0, dtype=xp.int64),
    )
    E = edge_table(xp, S.F)
    if int(E.count.max()) > 2:
        pytest.fail(f"{name} has an edge of three faces")
    L = float(xp.linalg.norm(S.V[E.EV[:, 0]] - S.V[E.EV[:, 1]], axis=1).mean())
    tables = EdgeTables(xp, follow=True)
    for _ in range(rounds):
        S, k = split_round(xp, S, 0.5 * L, tables)
        yield S, k, tables
        if k == 0:
            return


@pytest.mark.parametrize(
    ("name", "device"),
    [(name, "cpu") for name in ("grid", "spot.obj", "teapot.obj", "rx-dragon.obj")]
    + [
        pytest.param(name, "gpu", marks=pytest.mark.gpu)
        for name in ("grid", "teapot.obj", "rx-dragon.obj")
    ],
)
def test_the_table_after_splits_is_the_rebuilt_one(name: str, device: str) -> None:
    """Round after round the table handed on (``edges_after_splits``: the split edge's two
    halves, an edge to each face's opposite corner, the sides moved to the appended faces and
    the cut faces' new rows, the new keys merged in) equals the one built from the new faces,
    every array bit for bit; one build in all. The grid and teapot have a boundary (splits of
    edges of one face)."""
    xp = np
    if device == "gpu":
        import cupy as xp
    splits = 0
    for S, k, tables in _split_rounds_with_tables(xp, name, 4):
        if k:
            assert tables.F is S.F
            assert_same_edge_table(tables.E, edge_table(xp, S.F))
        splits += k
    assert splits > 1000 and tables.builds == 1


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("seed", range(6))
def test_merged_numbering_is_the_order_of_the_merged_keys(device: str, seed: int) -> None:
    """``merged_numbering`` (the numbering every derived table uses) gives each kept row and each
    new key its place in the sorted union, with or without removed rows, none of either, and
    new keys before, between and after all the old ones."""
    from workers.engine.dynamic._edges import merged_numbering

    xp = np
    if device == "gpu":
        import cupy as xp
    rng = np.random.default_rng(seed)
    pool = rng.choice(10_000, size=rng.integers(2, 400), replace=False)
    n_old = int(rng.integers(0, len(pool) + 1)) if seed else len(pool)  # seed 0: no new key
    key = np.sort(pool[:n_old]).astype(np.int64)
    new = pool[n_old:].astype(np.int64)  # any order, none equal to an old key
    removed = np.sort(rng.choice(n_old, size=rng.integers(0, n_old + 1), replace=False))
    for gone in (None, removed.astype(np.int64)):
        of_old, of_new = merged_numbering(
            xp, xp.asarray(key), xp.asarray(new), None if gone is None else xp.asarray(gone)
        )
        if device == "gpu":
            of_old, of_new = of_old.get(), of_new.get()
        kept = np.setdiff1d(np.arange(n_old), [] if gone is None else gone)
        merged = np.sort(np.concatenate([key[kept], new]))
        np.testing.assert_array_equal(merged[of_old[kept]], key[kept])
        np.testing.assert_array_equal(merged[of_new], new)
        assert len(np.unique(np.concatenate([of_old[kept], of_new]))) == len(merged)
