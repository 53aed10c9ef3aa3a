"""Static operations on the patched path: one block per patch, the query in shared memory, one
thread per owned element running the operation's body (``kernels/queries.cu``). Each has a
global-memory twin among the operations (``ops/vertex_normals.py``, ``ops/gaussian_curvature.py``)
or below (``smooth_step_global``), which is the baseline it is measured against."""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import expand_counts
from .kernels.loader import load_kernel
from .mesh import TriMesh
from .patches import Patches
from .queries import launch_patched


def _f32(mesh: TriMesh) -> Any:
    return mesh.xp.ascontiguousarray(mesh.V, dtype=mesh.xp.float32)


def vertex_normals(mesh: TriMesh, patches: Patches) -> Any:
    """Area-weighted unit vertex normals from each vertex's VF answer (no atomics)."""
    cp = mesh.xp
    N = cp.zeros((mesh.n_vertices, 3), dtype=cp.float32)
    launch_patched(
        load_kernel("queries", "vertex_normals_patched"),
        patches,
        (_f32(mesh), N),
        op="vertex_normals",
    )
    return N


def gaussian_curvature(mesh: TriMesh, patches: Patches) -> Any:
    """Angle defect from each vertex's VF answer, in double, stored as float32."""
    cp = mesh.xp
    boundary = cp.ascontiguousarray(mesh.topology.boundary_vertices)
    K = cp.zeros(mesh.n_vertices, dtype=cp.float32)
    launch_patched(
        load_kernel("queries", "gaussian_curvature_patched"),
        patches,
        (_f32(mesh), boundary, K),
        op="gaussian_curvature",
    )
    return K


#: the uniform Laplacian step as a per-vertex body over VV (kernelgen writes the kernel)
SMOOTH_BODY = """
    const float3 p = load3(V, g);
    const int n = nb.size();
    if (n == 0 || (use_fixed && fixed[g])) {
      out[3 * g] = p.x;
      out[3 * g + 1] = p.y;
      out[3 * g + 2] = p.z;
      return;
    }
    double3 m = make_double3(0.0, 0.0, 0.0);
    for (int j = 0; j < n; ++j) {
      const double3 q = load3d(V, nb[j]);
      m = make_double3(m.x + q.x, m.y + q.y, m.z + q.z);
    }
    out[3 * g] = (float)(p.x + lambda * (m.x / n - p.x));
    out[3 * g + 1] = (float)(p.y + lambda * (m.y / n - p.y));
    out[3 * g + 2] = (float)(p.z + lambda * (m.z / n - p.z));
"""


def smooth_step(mesh: TriMesh, patches: Patches, lam: float, fixed: Any | None = None) -> Any:
    """One uniform Laplacian step ``v + lam * (mean(one-ring) - v)`` from each vertex's VV answer;
    vertices flagged in ``fixed`` stay. The kernel is generated from :data:`SMOOTH_BODY`."""
    from .kernelgen import patched_kernel

    cp = mesh.xp
    out = cp.array(_f32(mesh))  # unused vertices keep their position
    use = fixed is not None
    fixed_arr = fixed if use else cp.zeros(1, dtype=cp.bool_)
    kernel = patched_kernel(
        "laplacian_step_patched",
        "VV",
        params="const float* V, const bool* fixed, int use_fixed, float lambda, float* out",
        body=SMOOTH_BODY,
    )
    launch_patched(
        kernel,
        patches,
        (_f32(mesh), fixed_arr, np.int32(use), np.float32(lam), out),
        op="smooth",
    )
    return out


def smooth_step_global(mesh: TriMesh, lam: float, fixed: Any | None = None) -> Any:
    """The same step from the global VV CSR (array code on either backend): the baseline."""
    xp = mesh.xp
    off, nbr = mesh.topology.vv()
    V = mesh.V.astype(xp.float64)
    deg = xp.diff(off)
    row = expand_counts(xp, deg)
    acc = xp.stack(
        [xp.bincount(row, weights=V[nbr, k], minlength=mesh.n_vertices) for k in range(3)], 1
    )
    mean = acc / xp.maximum(deg, 1)[:, None]
    new = V + lam * (mean - V)
    keep = deg == 0
    if fixed is not None:
        keep = keep | fixed
    return xp.where(keep[:, None], V, new).astype(xp.float32)


def bilateral_step(
    mesh: TriMesh,
    X: Any,
    N: Any,
    fixed: Any,
    sigma_c: float | None,
    sigma_s: float | None,
    patches: Patches | None,
) -> tuple[Any, Any]:
    """``(new positions, neighbourhood sizes)`` after one one-ring bilateral denoising step
    (``bilateral_denoise`` with ``max_rings=1``) from float64 positions ``X`` and unit normals
    ``N``: on the patched path when ``patches`` is given, else one thread per vertex over the
    global VV CSR. Both run ``BilateralBody`` (``kernels/queries.cu``)."""
    cp = mesh.xp
    X = cp.ascontiguousarray(X, dtype=cp.float64)
    out = X.copy()  # unused vertices keep their position
    sizes = cp.ones(mesh.n_vertices, dtype=cp.int32)
    args = (
        X,
        cp.ascontiguousarray(N, dtype=cp.float64),
        np.float64(sigma_c or 0.0),
        np.float64(sigma_s or 0.0),
        cp.ascontiguousarray(fixed, dtype=cp.bool_),
        out,
        sizes,
    )
    if patches is not None:
        launch_patched(
            load_kernel("queries", "bilateral_ring_patched"), patches, args, op="bilateral"
        )
        return out, sizes
    from .kernels.loader import launch

    off, nbr = mesh.topology.vv()
    launch(
        load_kernel("queries", "bilateral_ring_global"),
        mesh.n_vertices,
        (
            cp.ascontiguousarray(off, dtype=cp.int64),
            cp.ascontiguousarray(nbr, dtype=cp.int64),
            *args,
            np.int64(mesh.n_vertices),
        ),
        op="bilateral_denoise",
    )
    return out, sizes
