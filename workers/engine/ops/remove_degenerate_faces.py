"""``remove_degenerate_faces``: drop faces with a repeated corner or (optionally) no area."""

from __future__ import annotations

from pydantic import Field

from ..mesh import TriMesh
from ..reindex import remove_degenerate
from .registry import Operation, OpKind, OpParams, OpResult, Packing


class Params(OpParams):
    geometric: bool = Field(
        True, description="Also drop faces whose area is at most area_threshold."
    )
    area_threshold: float = Field(
        0.0, ge=0.0, le=1e12, description="Area at or below which a face counts as degenerate."
    )


def _array(mesh: TriMesh, p: Params) -> OpResult:
    out, report = remove_degenerate(mesh, p.geometric, p.area_threshold)
    return OpResult(out, report)


OP = Operation(
    name="remove_degenerate_faces",
    summary="Drop faces with a repeated vertex or zero area.",
    description="""
    Keep faces whose three corners are distinct vertices (and, with ``geometric``, whose area
    exceeds ``area_threshold``); a flag and a compaction. Vertices are left in place.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="faces_before, removed, removed_repeated_index, removed_small_area",
    packing=Packing.local,
    test_variants=(
        {},
        {"geometric": False},
    ),
)
