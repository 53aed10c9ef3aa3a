"""``soup_to_mesh``: an indexed mesh from independent triangles (Wald, section 3.3)."""

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
        description="Corners closer than this become one vertex (0: exactly equal positions).",
    )


def _array(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    corners = mesh.F.ravel()
    soup = TriMesh(
        mesh.V[corners],
        xp.arange(corners.shape[0], dtype=xp.int32).reshape(-1, 3),
        {k: v[corners] for k, v in mesh.vertex_attrs.items()},
        mesh.face_attrs,
        source=mesh.source,
    )
    out, report = weld(soup, tolerance=p.tolerance, remove_unused=True)
    report["corners"] = int(corners.shape[0])
    return OpResult(out, report)


OP = Operation(
    name="soup_to_mesh",
    summary="Build an indexed mesh from a triangle soup by merging equal corners.",
    description="""
    Give every face corner its own vertex (the soup: ``V[F]`` with faces ``(0,1,2), (3,4,5),
    ...``), then merge equal positions by sort, scan and scatter. Whatever the input's indexing
    (a soup from STL, or a mesh that split vertices at seams), the result shares every vertex
    that has one position. Per-vertex attributes are carried to the corners and averaged.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="corners, vertices_after, merged, degenerate_faces",
    test_variants=({},),
)
