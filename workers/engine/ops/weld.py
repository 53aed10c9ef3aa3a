"""``weld``: merge duplicate vertices, exactly or within a tolerance."""

from __future__ import annotations

from pydantic import Field

from ..mesh import TriMesh
from ..reindex import weld
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    tolerance: float = Field(
        0.0,
        ge=0.0,
        le=1e6,
        description="Vertices closer than this merge (0: only exactly equal positions). Chains of "
        "close vertices merge transitively.",
    )
    relative: bool = Field(
        False, description="Read the tolerance as a fraction of the bounding-box diagonal."
    )
    remove_unused: bool = Field(True, description="Also drop vertices that no face references.")


def _array(mesh: TriMesh, p: Params) -> OpResult:
    """Merge vertices at equal positions (or within ``tolerance``) by sort, scan and scatter
    (Wald 2021). Faces are re-indexed; per-vertex attributes of merged vertices are averaged.
    Faces that collapse (two equal corners) are kept and counted in the report: chain
    ``remove_degenerate_faces`` to drop them."""
    tol = p.tolerance
    if p.relative and tol > 0 and mesh.n_vertices > 0:
        # the diagonal ``stats`` reports: of the used vertices (all of them if none is used), so
        # that a stray unused vertex cannot inflate the tolerance
        xp = mesh.xp
        used = mesh.used_vertices()
        P = mesh.V[used] if bool(used.any()) else mesh.V
        tol *= float(
            xp.linalg.norm(P.max(axis=0).astype(xp.float64) - P.min(axis=0).astype(xp.float64))
        )
    out, report = weld(mesh, tolerance=tol, remove_unused=p.remove_unused)
    report["tolerance"] = tol
    return OpResult(out, report)


OP = Operation(
    name="weld",
    summary="Merge duplicate vertices (exact or within a tolerance).",
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="vertices_before, vertices_after, merged, unused_removed, degenerate_faces, tolerance",
)
