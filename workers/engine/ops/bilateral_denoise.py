"""``bilateral_denoise``: bilateral mesh denoising (Fleishman et al. 2003), as in RXMesh.

Design
------
Each iteration (all vertices at once, from the previous positions):

1. unit vertex normals ``n`` (area-weighted, from the current positions);
2. ``sigma_c`` per vertex: the given value, or RXMesh's adaptive choice, the length of the
   vertex's shortest edge;
3. the neighbourhood of ``v``: the vertices reached from ``v`` by a breadth-first search over
   edges that never leaves the ball of radius ``2 sigma_c`` around ``v`` (RXMesh's
   ``getAdaptiveVertexNeighbor``), ``v`` itself included, and at most ``max_rings`` edges deep:
   the depth bound keeps the work per vertex bounded for any ``sigma_c``;
4. the heights ``h = (x_u - x_v) . n_v`` of the neighbours over ``v``'s tangent plane, the width
   ``sigma_s`` (given, or the standard deviation of ``|h|`` over the neighbourhood, RXMesh's
   ``computeSigma_s``), and the move ``x_v += n_v sum(w h) / sum(w)`` with the bilateral weight
   ``w = exp(-|x_u - x_v|^2 / 2 sigma_c^2) exp(-h^2 / 2 sigma_s^2)``: the closeness term smooths,
   the similarity term stops a vertex from being pulled across a sharp feature.

The neighbourhoods are found level by level with array operations on either backend (expand the
frontier through the VV CSR, keep the candidates inside the ball, drop those already seen by a
sorted-key lookup), so CPU and GPU build the same sets; the weighted step is a CUDA kernel with
one thread per vertex gathering over its neighbourhood (``kernels/bilateral_denoise.cu``).

Alternatives: Fleishman's paper gathers neighbours by Euclidean distance alone (a k-d tree), which
can reach across thin parts of a surface; the connected ball avoids that and needs no spatial
index. A fixed number of rings without the radius would ignore ``sigma_c``.

Testing: a noised sphere gets closer to the sphere; a flat mesh and an unused vertex do not
move; every displacement is along the vertex normal; the result moves with rigid motions and
scales with the mesh; boundaries stay with ``fix_boundary``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from .. import progress
from ..backend import cupy_module
from ..errors import OpParamsError
from ..geometry import face_cross64, scatter_rows, unitize
from ..graph import expand_counts, unique
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from ._smoothing import fixed_vertices
from .average_attribute import one_ring
from .registry import Operation, OpKind, OpParams, OpResult

#: candidates examined per vertex and ring beyond which the neighbourhoods are refused
MAX_CANDIDATES_PER_VERTEX = 512


#: the smallest width accepted: its square (the weights divide by it) stays far above float64's
#: underflow, so a vertex's own weight is 1 and no weight is 0/0
MIN_SIGMA = 1e-100


class Params(OpParams):
    iterations: int = Field(1, ge=1, le=100, description="Number of denoising steps.")
    sigma_c: float | None = Field(
        None,
        ge=MIN_SIGMA,
        allow_inf_nan=False,
        description="Closeness (spatial) Gaussian width in mesh units; the neighbourhood radius "
        "is 2 sigma_c. Default: per vertex, the length of its shortest edge (RXMesh).",
    )
    sigma_s: float | None = Field(
        None,
        ge=MIN_SIGMA,
        allow_inf_nan=False,
        description="Similarity (height) Gaussian width in mesh units. Default: per vertex, the "
        "standard deviation of the neighbours' heights over its tangent plane (RXMesh).",
    )
    max_rings: int = Field(
        3,
        ge=1,
        le=8,
        description="Deepest edge distance the neighbourhood search goes from a vertex, within "
        "the 2 sigma_c ball.",
    )
    fix_boundary: bool = Field(False, description="Keep vertices on boundary edges in place.")


#: a vertex normal is undefined where the sum of its faces' area vectors is shorter than this
#: fraction of the sum of their lengths (they cancel, as along a Moebius strip's seam)
UNDEFINED_NORMAL = 1e-3


def vertex_normals64(xp: Any, X: Any, F: Any, n: int) -> Any:
    """(n, 3) float64 unit area-weighted vertex normals of positions ``X``; zero where the
    normal is undefined (``UNDEFINED_NORMAL``): its direction there would be rounding noise, a
    different one on each backend, so such a vertex does not move."""
    cross = face_cross64(xp, X, F)
    idx = F.ravel()
    acc = scatter_rows(xp, idx, xp.repeat(cross, 3, axis=0), n)
    total = scatter_rows(xp, idx, xp.repeat(xp.sqrt((cross * cross).sum(axis=1)), 3), n)
    N = unitize(xp, acc)
    defined = xp.sqrt((acc * acc).sum(axis=1)) > UNDEFINED_NORMAL * total
    return xp.where(defined[:, None], N, 0.0)


def squared_distances(X: Any, a: Any, b: Any) -> Any:
    """``|X[a] - X[b]|^2`` written out as separate array operations, so that NumPy and CuPy
    round every step the same way (a reduction over the last axis may add in another order, and
    on regular meshes many neighbours lie exactly on the ball's rim: 2 sigma_c is twice the
    shortest edge)."""
    d = X[a] - X[b]
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    return dx * dx + dy * dy + dz * dz


def sigma_c_per_vertex(mesh: TriMesh, X: Any, ring: tuple[Any, Any, Any], p: Params) -> Any:
    """(n,) float64 closeness width: the given value, or the shortest edge at each vertex (0 for
    a vertex without edges)."""
    xp = mesh.xp
    n = mesh.n_vertices
    if p.sigma_c is not None:
        return xp.full(n, p.sigma_c, dtype=xp.float64)
    off, nbr, row = ring
    lengths = xp.sqrt(squared_distances(X, nbr, row))
    # the smallest length of each CSR row: sort by length, then stably by row, and take each
    # row's first entry (exact on both backends; a floating-point scatter-min on CuPy measured
    # 2e-8 off, enough to move neighbours across the ball's rim)
    by_length = xp.argsort(lengths, kind="stable")
    order = by_length[xp.argsort(row[by_length], kind="stable")]
    sc = xp.zeros(n, dtype=xp.float64)
    has = off[1:] > off[:-1]
    sc[has] = lengths[order[off[:-1][has]]]
    return sc


def neighbourhoods(
    mesh: TriMesh, X: Any, ring: tuple[Any, Any, Any], radius: Any, max_rings: int
) -> tuple[Any, Any]:
    """CSR ``(offsets (n+1,), members)`` int64 of every vertex's neighbourhood (itself included,
    members in increasing order): breadth-first over the one-ring CSR, at most ``max_rings``
    levels, keeping only vertices within ``radius[v]`` of ``v``."""
    xp = mesh.xp
    n = mesh.n_vertices
    off, nbr, _ = ring
    deg = xp.diff(off)
    src = xp.arange(n, dtype=xp.int64)
    cur = src
    seen = src * n + src  # sorted keys src * n + member
    cap = MAX_CANDIDATES_PER_VERTEX * n
    for _ in range(max_rings):
        counts = deg[cur]
        total = int(counts.sum()) if counts.shape[0] else 0
        if total == 0:
            break
        if total > cap:
            raise OpParamsError(
                "bilateral neighbourhoods too large",
                code="op.neighbourhood_too_large",
                candidates=total,
                limit=cap,
                hint="use a smaller sigma_c or max_rings",
            )
        owner = expand_counts(xp, counts)
        start = xp.cumsum(counts) - counts
        pos = off[cur][owner] + (xp.arange(total, dtype=xp.int64) - start[owner])
        cand_v = nbr[pos]
        cand_s = src[owner]
        r = radius[cand_s]
        inside = squared_distances(X, cand_v, cand_s) <= r * r
        keys = unique(xp, cand_s[inside] * n + cand_v[inside])
        idx = xp.minimum(xp.searchsorted(seen, keys), seen.shape[0] - 1)
        new = keys[seen[idx] != keys]
        if new.shape[0] == 0:
            break
        seen = xp.sort(xp.concatenate([seen, new]))
        src, cur = new // n, new % n
    owner_all = seen // n
    offsets = xp.zeros(n + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(xp.bincount(owner_all, minlength=n))
    return offsets, seen % n


def _step(X: Any, N: Any, off: Any, members: Any, sc: Any, p: Params, fixed: Any) -> Any:
    """The twin of ``bilateral_denoise_step``: one Jacobi step, vectorized over (vertex,
    member) pairs with bincount sums in CSR order."""
    xp = np
    n = X.shape[0]
    count = xp.diff(off)
    row = expand_counts(xp, count)
    d = X[members] - X[row]
    h = (d * N[row]).sum(axis=1)
    c = xp.maximum(count, 1).astype(xp.float64)
    if p.sigma_s is not None:
        ss = xp.full(n, p.sigma_s)
    else:
        mean_abs = xp.bincount(row, weights=xp.abs(h), minlength=n) / c
        mean_sq = xp.bincount(row, weights=h * h, minlength=n) / c
        ss = xp.sqrt(xp.maximum(mean_sq - mean_abs * mean_abs, 0.0))
        ss = xp.where(ss < 1e-12, ss + 1e-12, ss)
    move = ~fixed & (sc > 0) & (count > 1)
    scr = xp.where(move, sc, 1.0)[row]
    ssr = ss[row]
    w = xp.exp(-0.5 * (d * d).sum(axis=1) / (scr * scr)) * xp.exp(-0.5 * h * h / (ssr * ssr))
    acc = xp.bincount(row, weights=w * h, minlength=n)
    norm = xp.bincount(row, weights=w, minlength=n)
    shift = xp.where(move, acc / xp.where(move, norm, 1.0), 0.0)
    return X + N * shift[:, None]


def _run(mesh: TriMesh, p: Params, step: Any) -> OpResult:
    xp = mesh.xp
    n = mesh.n_vertices
    X0 = mesh.V.astype(xp.float64)
    X = X0
    ring = one_ring(mesh)
    fixed = fixed_vertices(mesh, p.fix_boundary)
    sizes = xp.zeros(n, dtype=xp.int64)
    for it in range(p.iterations):
        progress.report(it / p.iterations, f"iteration {it + 1}/{p.iterations}")
        N = vertex_normals64(xp, X, mesh.F, n)
        sc = sigma_c_per_vertex(mesh, X, ring, p)
        off, members = neighbourhoods(mesh, X, ring, 2.0 * sc, p.max_rings)
        sizes = xp.diff(off)
        X = step(X, N, off, members, sc, p, fixed)
    used = mesh.topology.used_vertices
    report = {
        "iterations": p.iterations,
        "mean_neighbourhood": float(sizes[used].mean()) if bool(used.any()) else 0.0,
        "max_neighbourhood": int(sizes.max()),
        "max_displacement": float(xp.linalg.norm(X - X0, axis=1).max()),
    }
    out = mesh.with_geometry(xp.ascontiguousarray(X.astype(mesh.V.dtype)))
    return OpResult(out, report)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return _run(mesh, p, _step)


def _cupy_step(X: Any, N: Any, off: Any, members: Any, sc: Any, p: Params, fixed: Any) -> Any:
    cp = cupy_module()
    n = X.shape[0]
    out = cp.zeros_like(X)
    launch(
        load_kernel("bilateral_denoise", "bilateral_denoise_step"),
        n,
        (
            cp.ascontiguousarray(X),
            cp.ascontiguousarray(N),
            cp.ascontiguousarray(off, dtype=cp.int64),
            cp.ascontiguousarray(members, dtype=cp.int64),
            cp.ascontiguousarray(sc, dtype=cp.float64),
            np.float64(p.sigma_s if p.sigma_s is not None else 0.0),
            cp.ascontiguousarray(fixed, dtype=cp.bool_),
            np.int64(n),
            out,
        ),
        op="bilateral_denoise",
    )
    return out


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """Normals, widths and neighbourhoods with the same array code on the GPU (CuPy); the
    weighted step in ``kernels/bilateral_denoise.cu``, one thread per vertex gathering over its
    neighbourhood CSR (no atomics). With ``max_rings=1`` the neighbourhood is the one-ring within
    the ball, found on the fly by one kernel per step (``patched_ops.bilateral_step``): on the
    patched path when the engine picks it for this op, else over the global VV CSR. That kernel
    adds in another order than the twin: positions agree to about 1e-12, and from the second
    step on a neighbour lying exactly on the ball's rim (regular meshes) may be counted by one
    and not the other."""
    if p.max_rings == 1:
        return _ring_cupy(mesh, p)
    return _run(mesh, p, _cupy_step)


def _ring_cupy(mesh: TriMesh, p: Params) -> OpResult:
    from ..patched_ops import bilateral_step
    from ..paths import patches_for

    xp = mesh.xp
    n = mesh.n_vertices
    X0 = mesh.V.astype(xp.float64)
    X = X0
    fixed = fixed_vertices(mesh, p.fix_boundary)
    patches = patches_for(mesh, "bilateral_denoise")
    sizes = xp.ones(n, dtype=xp.int32)
    for it in range(p.iterations):
        progress.report(it / p.iterations, f"iteration {it + 1}/{p.iterations}")
        N = vertex_normals64(xp, X, mesh.F, n)
        X, sizes = bilateral_step(mesh, X, N, fixed, p.sigma_c, p.sigma_s, patches)
    used = mesh.topology.used_vertices
    report = {
        "iterations": p.iterations,
        "mean_neighbourhood": float(sizes[used].mean()) if bool(used.any()) else 0.0,
        "max_neighbourhood": int(sizes.max()),
        "max_displacement": float(xp.linalg.norm(X - X0, axis=1).max()),
        "execution": {"path": "patched" if patches is not None else "global"},
    }
    out = mesh.with_geometry(xp.ascontiguousarray(X.astype(mesh.V.dtype)))
    return OpResult(out, report)


OP = Operation(
    name="bilateral_denoise",
    summary="Bilateral mesh denoising (Fleishman et al. 2003, RXMesh); moves vertices.",
    description="""
    Bilateral mesh denoising: Fleishman, Drori and Cohen-Or, "Bilateral mesh denoising"
    (SIGGRAPH 2003), with the neighbourhoods and adaptive widths of RXMesh's filtering
    application (Mahmoud et al., "RXMesh", 2021, section 4.5): every vertex moves along its unit
    area-weighted normal by the bilateral-weighted mean height of the vertices within ``2
    sigma_c`` of it (connected through that ball, at most ``max_rings`` edges deep, itself
    included): ``x_v += n_v sum(w h) / sum(w)`` with ``h = (x_u - x_v) . n_v`` and the weight
    ``w = exp(-|x_u - x_v|^2 / 2 sigma_c^2) exp(-h^2 / 2 sigma_s^2)``. ``sigma_c`` defaults to
    the vertex's shortest edge and ``sigma_s`` to the standard deviation of ``|h|`` over the
    neighbourhood; the closeness term smooths, the similarity term keeps sharp features.

    A vertex does not move when it is fixed (``fix_boundary``), has no edge, has no defined
    normal (its faces' area vectors cancel, as along a Moebius strip's seam), or its
    neighbourhood is only itself; flat regions do not move at all. Connectivity, attributes
    and the cached topology are kept. Float64 throughout, stored in the mesh's dtype. A search
    that would examine more than 512 candidates per vertex in one ring is refused
    (``op.neighbourhood_too_large``). Reports ``iterations``, the mean and maximum neighbourhood
    size (last iteration) and ``max_displacement``.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    reports="iterations; mean_neighbourhood, max_neighbourhood (vertices, last iteration); "
    "max_displacement",
    # max_rings=1 runs the one-ring kernel (patched or global): its sums run in another order
    # than the twin's, so after the first step a neighbour exactly on the ball's rim may fall on
    # either side; one step compares exactly (test_queries checks the one-ring step too)
    test_variants=(
        {},
        {"iterations": 2},
        {"max_rings": 1, "fix_boundary": True},
    ),
)
