"""``merge``: join several meshes (the files of one upload) into one, welding what they share."""

from __future__ import annotations

from pydantic import Field

from ..mesh import TriMesh
from ..reindex import weld
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    weld: bool = Field(True, description="Merge vertices at equal positions across the parts.")
    tolerance: float = Field(
        0.0, ge=0.0, le=1e6, description="With weld: vertices closer than this merge too."
    )
    keep_parts: bool = Field(
        False, description="Keep the per-face `part` attribute (which input each face came from)."
    )


def _array(mesh: TriMesh, p: Params) -> OpResult:
    parts = mesh.face_attrs.get("part")
    n_parts = int(parts.max()) + 1 if parts is not None and parts.shape[0] else 1
    out, report = (
        weld(mesh, tolerance=p.tolerance) if p.weld else (mesh, {"vertices_after": mesh.n_vertices})
    )
    if not p.keep_parts and "part" in out.face_attrs:
        out = TriMesh(
            out.V,
            out.F,
            out.vertex_attrs,
            {k: v for k, v in out.face_attrs.items() if k != "part"},
            source=out.source,
            _topology=out._topology,
        )
    report["parts"] = n_parts
    return OpResult(out, report)


def _attributes_after(p: Params, before: dict[str, str]) -> dict[str, str]:
    return before if p.keep_parts else {k: e for k, e in before.items() if k != "part"}


OP = Operation(
    name="merge",
    summary="Join the parts of a multi-file upload into one mesh, welding shared vertices.",
    description="""
    An upload of several files arrives concatenated (``TriMesh.concatenate``: vertex arrays
    appended, indices shifted; Wald, section 3.2) with a per-face ``part``. This welds the
    duplicate vertices the parts share, by sort, scan and scatter, so that they become one
    connected mesh where they touch.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    attribute_flow=_attributes_after,
    reports="parts, vertices_after, merged",
    test_variants=(
        {},
        {"weld": False, "keep_parts": True},
    ),
)
