"""``gaussian_curvature``: discrete Gaussian curvature as the angle defect at each vertex."""

from __future__ import annotations

import math

from pydantic import Field

from ..geometry import corner_angles64, face_cross64, scatter_rows
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output


class Params(OpParams):
    per_area: bool = Field(
        False,
        description="Divide the angle defect by the vertex's barycentric area (one third of the "
        "incident face areas), giving curvature per unit area instead of integrated curvature.",
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    """Angle defect ``2*pi - sum(theta)`` at interior vertices and ``pi - sum(theta)`` at boundary
    vertices (the halfedge Gaussian-curvature paper; boundary term from discrete Gauss-Bonnet), so
    that the defects of a manifold mesh sum to ``2*pi*chi``. Unused vertices get 0.

    The corner angles come from ``atan2(|u x w|, u . w)`` rather than the paper's law of cosines,
    which loses accuracy for very small and very large angles."""
    xp = mesh.xp
    topo = mesh.topology
    n = mesh.n_vertices
    ang = scatter_rows(xp, mesh.F.ravel(), corner_angles64(xp, mesh.V, mesh.F).ravel(), n)
    on_boundary = xp.zeros(n, dtype=bool)
    on_boundary[topo.EV[topo.boundary_edges].ravel()] = True
    full = xp.where(on_boundary, math.pi, 2 * math.pi)
    k = xp.where(topo.used_vertices, full - ang, 0.0)
    if p.per_area:
        area = xp.linalg.norm(face_cross64(xp, mesh.V, mesh.F), axis=1) / 6.0
        va = scatter_rows(xp, mesh.F.ravel(), xp.repeat(area, 3), n)
        k = xp.where(va > 0, k / xp.where(va > 0, va, 1.0), 0.0)
    total = float(k.sum()) if not p.per_area else None
    out = mesh.with_attrs(vertex={"gaussian_curvature": k.astype(xp.float32)})
    return OpResult(out, {"total_curvature": total} if total is not None else {})


OP = Operation(
    name="gaussian_curvature",
    summary="Gaussian curvature (angle defect) at every vertex.",
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    outputs={
        "gaussian_curvature": Output(
            Element.vertex,
            "(n_vertices,)",
            "float32",
            "Angle defect in radians (or per unit area).",
        )
    },
    reports="total_curvature: the sum of the defects (2*pi*chi on a manifold mesh)",
)
