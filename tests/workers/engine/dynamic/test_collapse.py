"""Preconditions of one edge collapse, checked on hand-made candidates."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import cube, grid, mesh, tetrahedron
from workers.engine.dynamic.collapse import (
    REASONS,
    Candidates,
    CollapseState,
    check_candidates,
    locked_vertices,
)
from workers.engine.mesh import TriMesh


def _check(m: TriMesh, u: int, v: int, p: tuple[float, float, float], max_len=None) -> str:
    topo = m.topology
    X = np.asarray(m.V, dtype=np.float64)
    F = np.asarray(m.F, dtype=np.int64)
    state = CollapseState(
        X, F, None, np.arange(m.n_faces), locked_vertices(np, topo, F, m.n_vertices)
    )
    EV = np.asarray(topo.EV)
    e = np.nonzero((EV[:, 0] == min(u, v)) & (EV[:, 1] == max(u, v)))[0]
    assert e.shape == (1,)
    c = Candidates(
        e, np.array([u]), np.array([v]), np.array([p], dtype=np.float64), np.zeros(1), np.zeros(1)
    )
    reason = check_candidates(state, topo, topo.boundary_vertices, c, max_len)
    return "ok" if reason[0] == 0 else REASONS[reason[0] - 1]


def test_interior_collapse_to_the_midpoint_is_legal() -> None:
    g = grid(4)  # vertex i * 5 + j at (i / 4, j / 4)
    assert _check(g, 6, 7, (0.25, 0.375, 0.0)) == "ok"


@pytest.mark.parametrize(
    ("p", "why"),
    [
        ((2.0, 2.0, 0.0), "fold"),  # far across the ring: faces turn over
        ((0.25, 0.375, 5.0), "fold"),  # straight up: faces stand on edge
        ((0.5, 0.25, 0.0), "degenerate"),  # onto a neighbour: a face with a zero-area corner
    ],
)
def test_positions_that_fold_or_flatten_faces_are_rejected(p, why) -> None:
    assert _check(grid(4), 6, 7, p) == why


def test_link_condition() -> None:
    g = grid(4)
    # the corner square (0, 3)-(1, 4): its diagonal 3-9 is an interior edge between two
    # boundary vertices; collapsing it would pinch the boundary
    assert _check(g, 3, 9, (0.125, 0.875, 0.0)) == "link"
    # the boundary edge 3-4 whose triangle (3, 9, 4) still has the interior edge 3-9: legal
    # once the boundary may move
    assert _check(g, 4, 3, (0.0, 1.0, 0.0)) == "ok"
    # an isolated triangle: all three edges on the boundary
    tri = mesh([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)])
    assert _check(tri, 0, 1, (0.5, 0.0, 0.0)) == "link"
    # every edge of a tetrahedron: the two faces left would coincide
    t = tetrahedron()
    for u, v in [(0, 1), (1, 2), (2, 3)]:
        assert _check(t, u, v, (0.3, 0.3, 0.3)) == "link"
    # a cube's face diagonal 0-3: its ends share only the two opposite corners
    assert _check(cube(), 0, 3, (0.5, 0.5, 0.0)) == "ok"


def test_long_edges_are_rejected_when_limited() -> None:
    g = grid(4)
    assert _check(g, 6, 7, (0.25, 0.375, 0.0), max_len=0.5) == "ok"
    assert _check(g, 6, 7, (0.25, 0.375, 0.0), max_len=0.2) == "long_edge"
