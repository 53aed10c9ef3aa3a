"""``mean_curvature``: signed mean curvature from the cotangent Laplacian with mixed areas."""

from __future__ import annotations

import numpy as np

from ..geometry import face_cross64, scatter_rows
from ..kernels.loader import launch, load_kernel
from ..laplacian import corner_cotangents64, mixed_areas64, side_weights
from ..mesh import TriMesh
from . import _device
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


class Params(OpParams):
    pass


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    topo = mesh.topology
    n = mesh.n_vertices
    X = mesh.V.astype(xp.float64)
    F = mesh.F
    cot = corner_cotangents64(xp, X, F)
    # L X without the matrix: side k of a face (corner k to k+1) adds w (x_i - x_j) to i and
    # its negative to j
    w = side_weights(xp, cot).ravel()
    i = F.ravel()
    j = F[:, [1, 2, 0]].ravel()
    d = w[:, None] * (X[i] - X[j])
    LX = scatter_rows(xp, i, d, n) - scatter_rows(xp, j, d, n)
    A = mixed_areas64(xp, X, F, n, cot)
    N = scatter_rows(xp, i, xp.repeat(face_cross64(xp, X, F), 3, axis=0), n)
    boundary = topo.boundary_vertices
    ok = topo.used_vertices & ~boundary & (A > 0)
    K = LX / xp.where(ok, A, 1.0)[:, None]
    H = 0.5 * xp.linalg.norm(K, axis=1) * xp.sign((K * N).sum(axis=1))
    H = xp.where(ok, H, 0.0)
    return OpResult(mesh.with_attrs(vertex={"mean_curvature": H.astype(xp.float32)}))


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/mean_curvature.cu``: one thread per face adds its sides' cotangent-weighted
    differences (``L X`` as the mesh-matrix product, without forming ``L``), its corners' mixed
    areas and its area-weighted normal to per-vertex sums (double atomics); then one thread per
    vertex forms ``H``. Boundary vertices come from the cached topology."""
    cp = mesh.xp
    topo = mesh.topology
    n, m = mesh.n_vertices, mesh.n_faces
    LX = cp.zeros((n, 3), dtype=cp.float64)
    A = cp.zeros(n, dtype=cp.float64)
    N = cp.zeros((n, 3), dtype=cp.float64)
    launch(
        load_kernel("mean_curvature", "mean_curvature_accumulate"),
        m,
        (_device.positions64(mesh), _device.faces(mesh), np.int64(m), LX, A, N),
        op="mean_curvature",
    )
    boundary = cp.ascontiguousarray(topo.boundary_vertices)
    H = cp.zeros(n, dtype=cp.float32)
    launch(
        load_kernel("mean_curvature", "mean_curvature_finish"),
        n,
        (LX, A, N, boundary, cp.ascontiguousarray(topo.used_vertices), np.int64(n), H),
        op="mean_curvature",
    )
    return OpResult(mesh.with_attrs(vertex={"mean_curvature": H}))


OP = Operation(
    name="mean_curvature",
    summary="Signed mean curvature at every vertex (cotangent Laplacian, mixed areas).",
    description="""
    Mean curvature ``H`` at every vertex by the discrete operator of Meyer, Desbrun, Schröder
    and Barr, "Discrete differential-geometry operators for triangulated 2-manifolds" (2003):
    the mean-curvature normal ``K = (L X) / A_mixed = 2 H n``, with ``L`` the cotangent Laplacian
    (``(L X)_i = sum_j (cot a_ij + cot b_ij) / 2 (x_i - x_j)``) and ``A_mixed`` the mixed Voronoi
    area (Voronoi region for non-obtuse faces, half or a quarter of the face otherwise). ``H =
    |K| / 2``, signed by ``K . n`` with ``n`` the area-weighted vertex normal, so a sphere with
    outward-facing triangles has ``H = +1/r`` and one with inward-facing triangles ``-1/r``.

    Boundary vertices (on an edge with one face) get 0: the cotangent formula needs a closed
    one-ring there and would report the boundary's geodesic curvature instead. Unused vertices,
    vertices whose faces are all degenerate, and vertices where ``K . n`` is exactly 0 also get
    0. Vertices on non-manifold edges or bow-ties are computed from all their triangles.
    Computed in float64, stored as float32.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "mean_curvature": Output(
            Element.vertex,
            "(n_vertices,)",
            "float32",
            "Mean curvature H (1/r on a sphere of radius r with outward normals); 0 on boundary "
            "vertices.",
        )
    },
    test_variants=({},),
    tolerances={"mean_curvature": Tolerance(atol=1e-5, rtol=1e-5)},
)
