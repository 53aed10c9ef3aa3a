"""``gaussian_curvature``: discrete Gaussian curvature as the angle defect at each vertex."""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from ..geometry import corner_angles64, face_cross64, scatter_rows
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


class Params(OpParams):
    per_area: bool = Field(
        False,
        description="Divide the angle defect by the vertex's barycentric area (one third of the "
        "incident face areas), giving curvature per unit area instead of integrated curvature.",
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    topo = mesh.topology
    n = mesh.n_vertices
    ang = scatter_rows(xp, mesh.F.ravel(), corner_angles64(xp, mesh.V, mesh.F).ravel(), n)
    full = xp.where(topo.boundary_vertices, math.pi, 2 * math.pi)
    k = xp.where(topo.used_vertices, full - ang, 0.0)
    if p.per_area:
        area = xp.linalg.norm(face_cross64(xp, mesh.V, mesh.F), axis=1) / 6.0
        va = scatter_rows(xp, mesh.F.ravel(), xp.repeat(area, 3), n)
        k = xp.where(va > 0, k / xp.where(va > 0, va, 1.0), 0.0)
    total = float(k.sum()) if not p.per_area else None
    out = mesh.with_attrs(vertex={"gaussian_curvature": k.astype(xp.float32)})
    return OpResult(out, {"total_curvature": total} if total is not None else {})


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/gaussian_curvature.cu``: corner angles summed per vertex by one thread per face
    (atomic adds in double precision), then the defect by one thread per vertex. Boundary
    vertices come from the topology's boundary edges (built once per mesh by key-sort on the GPU
    and cached)."""
    cp = mesh.xp
    topo = mesh.topology
    n, m = mesh.n_vertices, mesh.n_faces
    V = cp.ascontiguousarray(mesh.V, dtype=cp.float32)
    angle_sum = cp.zeros(n, dtype=cp.float64)
    area_sum = cp.zeros(n if p.per_area else 1, dtype=cp.float64)
    with_area = np.int32(p.per_area)
    boundary = cp.ascontiguousarray(topo.boundary_vertices)
    used = cp.ascontiguousarray(topo.used_vertices)
    K = cp.zeros(n, dtype=cp.float32)
    launch(
        load_kernel("gaussian_curvature", "gaussian_curvature_angles"),
        m,
        (
            V,
            cp.ascontiguousarray(mesh.F, dtype=cp.int32),
            np.int64(m),
            with_area,
            angle_sum,
            area_sum,
        ),
        op="gaussian_curvature",
    )
    launch(
        load_kernel("gaussian_curvature", "gaussian_curvature_defect"),
        n,
        (with_area, angle_sum, area_sum, boundary, used, np.int64(n), K),
        op="gaussian_curvature",
    )
    out = mesh.with_attrs(vertex={"gaussian_curvature": K})
    report = {} if p.per_area else {"total_curvature": float(K.sum(dtype=cp.float64))}
    return OpResult(out, report)


OP = Operation(
    name="gaussian_curvature",
    summary="Gaussian curvature (angle defect) at every vertex.",
    description="""
    Angle defect ``2*pi - sum(theta)`` at interior vertices and ``pi - sum(theta)`` at boundary
    vertices (the halfedge Gaussian-curvature paper; boundary term from discrete Gauss-Bonnet), so
    that the defects of a manifold mesh sum to ``2*pi*chi``. Unused vertices get 0.

    The corner angles come from ``atan2(|u x w|, u . w)`` rather than the paper's law of cosines,
    which loses accuracy for very small and very large angles.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "gaussian_curvature": Output(
            Element.vertex,
            "(n_vertices,)",
            "float32",
            "Angle defect in radians (or per unit area).",
        )
    },
    reports="total_curvature: the sum of the defects (2*pi*chi on a manifold mesh)",
    test_variants=(
        {},
        {"per_area": True},
    ),
    tolerances={"gaussian_curvature": Tolerance(atol=2e-4, rtol=1e-4)},
)
