"""``remove_unused_vertices``: drop vertices that no face references."""

from __future__ import annotations

from ..mesh import TriMesh
from ..reindex import remove_unused
from .registry import Operation, OpKind, OpParams, OpResult, Packing


class Params(OpParams):
    pass


def _array(mesh: TriMesh, p: Params) -> OpResult:
    out, report = remove_unused(mesh)
    return OpResult(out, report)


OP = Operation(
    name="remove_unused_vertices",
    summary="Drop vertices that no face references.",
    description="""
    Flag used vertices, exclusive prefix sum for their new ids, scatter positions and
    attributes; faces are re-indexed through the same map (Wald 2021, step 1 as a compaction).
    The used vertices keep their order and their per-vertex attributes; faces and face
    attributes are unchanged.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="vertices_before, removed",
    packing=Packing.local,
    test_variants=({},),
)
