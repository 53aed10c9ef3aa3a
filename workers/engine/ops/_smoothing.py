"""Explicit Laplacian smoothing steps, shared by ``laplacian_smooth`` and ``taubin_smooth``.

One step moves every free vertex towards the weighted mean of its edge neighbours::

    x_i <- x_i + s * sum_j w_ij (x_j - x_i) / sum_j w_ij

with ``s`` the step factor (Taubin's lambda, or his negative mu) and ``w_ij`` either 1 (the
umbrella operator) or the cotangent weight ``(cot a_ij + cot b_ij) / 2`` of the current
positions, clamped at 0. Cotangent weights are recomputed before every step (mean-curvature flow
in the normalized form of Desbrun, Meyer, Schröder and Barr 1999). Clamping keeps each step a
convex combination for ``0 < s <= 1``: a negative weight (an edge opposite two obtuse angles)
would pull a vertex away from that neighbour, and a weight sum near 0 would blow the step up.
Edges are the unique edges of the topology, so a neighbour counts once however many faces share
the edge; self-loops (from faces that repeat a vertex) are skipped.

A vertex stays where it is when it is fixed (on the boundary, with ``fix_boundary``) or has no
neighbour with positive weight (an unused vertex, say). Positions are float64 throughout and
stored back in the mesh's dtype at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .. import progress
from ..geometry import scatter_rows
from ..kernels.loader import launch, load_kernel
from ..laplacian import corner_cotangents64, side_weights
from ..mesh import TriMesh
from . import _device

Weights = Literal["uniform", "cotangent"]


def fixed_vertices(mesh: TriMesh, fix_boundary: bool) -> Any:
    """(n_vertices,) bool: the vertices that must not move."""
    xp = mesh.xp
    if fix_boundary:
        return mesh.topology.boundary_vertices.copy()
    return xp.zeros(mesh.n_vertices, dtype=bool)


def smooth_numpy(
    mesh: TriMesh, factors: Sequence[float], iterations: int, weights: Weights, fixed: Any
) -> Any:
    """Float64 positions after ``iterations`` rounds of one step per factor in ``factors``."""
    xp = mesh.xp
    topo = mesh.topology
    n = mesh.n_vertices
    EV = topo.EV.astype(xp.int64)
    edge_of_side = (topo.FE // 2).ravel()
    i, j = EV[:, 0], EV[:, 1]
    X = mesh.V.astype(xp.float64)
    for it in range(iterations):
        progress.report(it / iterations, f"iteration {it + 1}/{iterations}")
        for s in factors:
            if weights == "uniform":
                w = xp.ones(EV.shape[0])
            else:
                cot = corner_cotangents64(xp, X, mesh.F)
                w = xp.bincount(
                    edge_of_side,
                    weights=side_weights(xp, cot).ravel(),
                    minlength=EV.shape[0],
                )
                w = xp.maximum(w, 0.0)
            w = xp.where(i == j, 0.0, w)
            d = w[:, None] * (X[j] - X[i])
            acc = scatter_rows(xp, i, d, n) - scatter_rows(xp, j, d, n)
            wsum = xp.bincount(i, weights=w, minlength=n) + xp.bincount(j, weights=w, minlength=n)
            move = (wsum > 0) & ~fixed
            X = X + xp.where(move[:, None], acc * (s / xp.where(move, wsum, 1.0))[:, None], 0.0)
    return X


def smooth_cupy(
    mesh: TriMesh,
    factors: Sequence[float],
    iterations: int,
    weights: Weights,
    fixed: Any,
    *,
    op: str,
) -> Any:
    """The same on the GPU (``kernels/laplacian_smooth.cu``): per step, one thread per face adds
    its half-cotangents to its edges' weights (cotangent weights only), one thread per edge
    scatters the weighted differences to both ends, one thread per vertex moves it. Double
    atomics; the positions ping-pong between two float64 buffers. Progress counts the
    iterations queued (nothing here reads the device back)."""
    cp = mesh.xp
    topo = mesh.topology
    n, m = mesh.n_vertices, mesh.n_faces
    EV = cp.ascontiguousarray(topo.EV, dtype=cp.int32)
    FE = cp.ascontiguousarray(topo.FE, dtype=cp.int32)
    F = _device.faces(mesh)
    ne = int(EV.shape[0])
    X = _device.positions64(mesh).copy()
    Y = cp.zeros_like(X)
    W = cp.zeros(ne if weights == "cotangent" else 1, dtype=cp.float64)
    acc = cp.zeros((n, 3), dtype=cp.float64)
    wsum = cp.zeros(n, dtype=cp.float64)
    fixed = cp.ascontiguousarray(fixed, dtype=cp.bool_)
    k_cot = load_kernel("laplacian_smooth", "laplacian_smooth_edge_cotan")
    k_scatter = load_kernel("laplacian_smooth", "laplacian_smooth_scatter")
    k_update = load_kernel("laplacian_smooth", "laplacian_smooth_update")
    uniform = np.int32(weights == "uniform")
    for it in range(iterations):
        progress.report(it / iterations, f"iteration {it + 1}/{iterations}")
        for s in factors:
            if weights == "cotangent":
                W.fill(0)
                launch(k_cot, m, (X, F, FE, np.int64(m), W), op=op)
            acc.fill(0)
            wsum.fill(0)
            launch(k_scatter, ne, (X, EV, W, uniform, np.int64(ne), acc, wsum), op=op)
            launch(k_update, n, (X, acc, wsum, fixed, np.float64(s), np.int64(n), Y), op=op)
            X, Y = Y, X
    return X


def finish(mesh: TriMesh, X: Any, iterations: int) -> tuple[TriMesh, dict[str, Any]]:
    """The mesh with the new positions (its dtype kept; connectivity, topology cache and
    attributes kept) and the report."""
    xp = mesh.xp
    moved = xp.linalg.norm(X - mesh.V.astype(xp.float64), axis=1)
    out = mesh.with_geometry(xp.ascontiguousarray(X.astype(mesh.V.dtype)))
    return out, {"iterations": iterations, "max_displacement": float(moved.max())}
