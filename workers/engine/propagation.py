"""Geodesic distance by parallel front propagation: Jacobi iteration of the triangle update.

Every vertex's distance is relaxed, all at once from the previous iterate, by every face around
it: the face's other two corners ``A`` and ``B`` (distances ``dA``, ``dB``) are unfolded into the
plane with a virtual source ``S`` at distance ``dA`` from ``A`` and ``dB`` from ``B`` on the far
side of edge ``AB``; when the straight line from ``S`` to the vertex crosses ``AB`` the candidate
is ``|S C|`` (the planar wave front through the triangle, as in fast marching on triangulated
domains), otherwise the better of the two edge paths ``dA + |AC|``, ``dB + |BC|``. Sources are 0,
everything else starts at infinity; the iteration stops when no value changes. This is the
iterative scheme of the parallel geodesic methods (fast iterative method, the toplesets
propagation that RXMesh's geodesic application runs): a fixed point of the update, reached from
above, the same on any backend and in any schedule.

Three implementations that give the same numbers (every operation is written in double in the
same order, and the CUDA kernels are compiled without FMA contraction):

- :func:`propagate_numpy`: array code, one vectorized pass over all face corners per iteration
  and a segmented minimum per vertex.
- :func:`propagate_global`: one GPU thread per vertex gathering over the vertex→face CSR in global
  memory, every vertex every iteration (the unpatched baseline).
- :func:`propagate_patched`: the same body on the patched path (one block per patch, the VF query
  in shared memory) with RXMesh's active-set filter: a patch runs only when one of its vertices
  (owned or ribbon) changed in the previous iteration, so the work follows the front.

Accuracy is that of first-order fast marching (error O(h)); the test suite measures it against
exact great-circle distances on spheres and Euclidean distances on flat meshes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import progress
from .errors import MeshError
from .mesh import TriMesh

#: iterations beyond which propagation gives up (a multiple of the vertex count, see _cap)
CAP_PER_VERTEX = 4


def _cap(n: int) -> int:
    return CAP_PER_VERTEX * n + 100


def _report(it: int, n: int) -> None:
    """Progress after ``it`` iterations. How many a mesh needs is not known in advance (on the
    shared meshes one to three times sqrt(n): the front crosses the surface, then the values
    settle), so the estimate is ``1 - exp(-2 it / sqrt(n))``, the same on every path. Worked
    out only when a report is due (this runs every iteration on the CPU)."""
    if progress.due():
        progress.report(1.0 - math.exp(-2.0 * it / math.sqrt(max(n, 1))), f"iteration {it}")


def _not_converged(iterations: int) -> MeshError:
    return MeshError(
        "geodesic propagation did not converge",
        code="op.not_converged",
        iterations=iterations,
    )


def initial(xp: Any, n: int, sources: Any) -> Any:
    d = xp.full(n, xp.inf, dtype=xp.float64)
    d[sources] = 0.0
    return d


def _length(P: Any, Q: Any) -> Any:
    d = P - Q
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


def candidate(dA: Any, dB: Any, a: Any, b: Any, c: Any) -> Any:
    """Distance at ``C`` from the triangle ``A B C`` given ``dA``, ``dB`` and the side lengths
    ``a = |BC|``, ``b = |AC|``, ``c = |AB|`` (NumPy arrays; mirrors ``tri_candidate`` in
    ``kernels/propagation.cu`` operation for operation)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        edge = np.minimum(dA + b, dB + a)
        two_c = 2.0 * c
        Sx = ((dA - dB) * (dA + dB) + c * c) / two_c
        Sy2 = (dA - Sx) * (dA + Sx)
        Cx = ((b - a) * (b + a) + c * c) / two_c
        Cy2 = (b - Cx) * (b + Cx)
        Sy = -np.sqrt(np.maximum(Sy2, 0.0))
        Cy = np.sqrt(np.maximum(Cy2, 0.0))
        x = Sx + (Cx - Sx) * (-Sy / (Cy - Sy))
        dx = Cx - Sx
        dy = Cy - Sy
        tri = np.sqrt(dx * dx + dy * dy)
        ok = (
            np.isfinite(dA)
            & np.isfinite(dB)
            & (c > 0.0)
            & (Sy2 >= 0.0)
            & (Cy2 > 0.0)
            & (x >= 0.0)
            & (x <= c)
        )
    return np.where(ok, np.minimum(edge, tri), edge)


def propagate_numpy(mesh: TriMesh, sources: np.ndarray) -> tuple[np.ndarray, int]:
    """``(distance (n,) float64, iterations)`` on the host."""
    n = mesh.n_vertices
    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    d = initial(np, n, sources)
    if F.shape[0] == 0:
        return d, 0
    # corner k of face f: target C = F[f, k], A = F[f, k+1], B = F[f, k+2]
    C = F.ravel()
    A = F[:, [1, 2, 0]].ravel()
    B = F[:, [2, 0, 1]].ravel()
    a, b, c = _length(V[C], V[B]), _length(V[C], V[A]), _length(V[A], V[B])
    order = np.argsort(C, kind="stable")
    C_sorted = C[order]
    starts = np.flatnonzero(np.r_[True, C_sorted[1:] != C_sorted[:-1]])
    targets = C_sorted[starts]
    A, B, a, b, c = A[order], B[order], a[order], b[order], c[order]
    for it in range(1, _cap(n) + 1):
        _report(it - 1, n)
        cand = np.minimum.reduceat(candidate(d[A], d[B], a, b, c), starts)
        new = d.copy()
        new[targets] = np.minimum(d[targets], cand)
        if np.array_equal(new, d):
            return d, it
        d = new
    raise _not_converged(_cap(n))


# ----------------------------------------------------------------------------- GPU
CHECK_EVERY = 8  # iterations between convergence checks (each costs a device→host sync)


def propagate_global(mesh: TriMesh, sources: Any) -> tuple[Any, int]:
    """One thread per vertex over the global VF CSR, all vertices every iteration."""
    from .kernels.loader import launch, load_kernel
    from .ops import _device

    cp = mesh.xp
    n = mesh.n_vertices
    off, val = mesh.topology.vf()
    off = cp.ascontiguousarray(off, dtype=cp.int64)
    val = cp.ascontiguousarray(val, dtype=cp.int32)
    V = _device.positions64(mesh)
    F = _device.faces(mesh)
    kernel = load_kernel("propagation", "propagate_global")
    cur = initial(cp, n, cp.asarray(sources))
    nxt = cur.copy()
    changed = cp.zeros(1, dtype=cp.int32)
    for it in range(1, _cap(n) + 1):
        launch(kernel, n, (V, F, off, val, cur, nxt, changed, np.int64(n)), op="geodesic_distance")
        cur, nxt = nxt, cur
        if it % CHECK_EVERY == 0 or it == 1:
            if not int(changed[0]):
                return cur, it
            changed.fill(0)
            _report(it, n)  # after the read: the device has run ``it`` iterations
    raise _not_converged(_cap(n))


def vertex_patches(patches: Any) -> tuple[Any, Any]:
    """Vertex → patches holding it (owned or ribbon) as a device CSR (cached on the patches)."""
    dev = patches.device
    if "vp_offsets" not in dev:
        from .graph import csr_from_pairs, expand_counts

        cp = patches.xp
        voff = cp.asarray(patches.vertex_offsets)
        owner = expand_counts(cp, voff[1:] - voff[:-1])
        n = int(patches.vertex_owner.shape[0])
        o, v, _ = csr_from_pairs(cp, n, cp.asarray(patches.vertices).astype(cp.int64), owner)
        dev["vp_offsets"] = cp.ascontiguousarray(o, dtype=cp.int32)
        dev["vp_values"] = cp.ascontiguousarray(v, dtype=cp.int32)
    return dev["vp_offsets"], dev["vp_values"]


def propagate_patched(mesh: TriMesh, patches: Any, sources: Any) -> tuple[Any, int, int]:
    """``(distance, iterations, patch launches that ran)`` on the patched path with the active
    set: iteration ``t + 1`` runs only the patches in which a vertex changed at ``t``. A skipped
    patch's owned vertices keep their value in both buffers (nothing they depend on changed)."""
    from .kernels.loader import load_kernel
    from .ops import _device
    from .queries import launch_patched

    cp = mesh.xp
    n = mesh.n_vertices
    vp_off, vp_val = vertex_patches(patches)
    V = _device.positions64(mesh)
    kernel = load_kernel("propagation", "propagate_patched")
    cur = initial(cp, n, cp.asarray(sources))
    nxt = cur.copy()
    active = cp.ones(patches.n_patches, dtype=cp.uint8)
    next_active = cp.zeros_like(active)
    ran = cp.zeros((), dtype=cp.int64)  # patch runs, counted on the device (no sync)
    for it in range(1, _cap(n) + 1):
        ran += cp.count_nonzero(active)
        launch_patched(
            kernel,
            patches,
            (V, cur, nxt, vp_off, vp_val, next_active),
            op="geodesic_distance",
            active=active,
        )
        cur, nxt = nxt, cur
        active, next_active = next_active, active
        next_active.fill(0)
        if it % CHECK_EVERY == 0 or it == 1:
            if not bool(active.any()):
                return cur, it, int(ran)
            _report(it, n)  # after the read: the device has run ``it`` iterations
    raise _not_converged(_cap(n))
