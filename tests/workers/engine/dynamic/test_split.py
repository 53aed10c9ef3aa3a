"""Edge split rounds: every long edge split, topology and orientation kept, boundary splits make
two faces from one, attributes interpolated and inherited."""

from __future__ import annotations

import numpy as np

from tests.workers.engine.shapes import grid, mesh, stats, welded
from workers.engine.dynamic._edges import Surface, edge_keys
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
