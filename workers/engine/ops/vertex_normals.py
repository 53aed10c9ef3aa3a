"""``vertex_normals``: unit normal at every vertex from weighted incident face normals."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..geometry import corner_angles64, face_cross64, scatter_rows, unitize
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output


class Params(OpParams):
    weighting: Literal["area", "angle", "uniform"] = Field(
        "area",
        description="How incident face normals are weighted: by face area, by the corner angle "
        "at the vertex (Thürmer-Wüthrich), or equally.",
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    """Scatter-add each face's weighted normal to its three corners, then unitize.

    ``area``: the raw cross product (twice the area times the unit normal); ``angle``: the unit
    normal times the corner angle; ``uniform``: the unit normal. Vertices with no face, or whose
    weighted normals cancel, get the zero vector."""
    xp = mesh.xp
    cross = face_cross64(xp, mesh.V, mesh.F)
    if p.weighting == "area":
        w = xp.repeat(cross, 3, axis=0)
    else:
        unit = unitize(xp, cross)
        if p.weighting == "uniform":
            w = xp.repeat(unit, 3, axis=0)
        else:
            ang = corner_angles64(xp, mesh.V, mesh.F).ravel()
            w = xp.repeat(unit, 3, axis=0) * ang[:, None]
    acc = scatter_rows(xp, mesh.F.ravel(), w, mesh.n_vertices)
    n = unitize(xp, acc).astype(xp.float32)
    return OpResult(mesh.with_attrs(vertex={"vertex_normals": n}))


OP = Operation(
    name="vertex_normals",
    summary="Unit normal at every vertex.",
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    outputs={
        "vertex_normals": Output(
            Element.vertex,
            "(n_vertices, 3)",
            "float32",
            "Unit vertex normal; written as nx ny nz in PLY.",
        )
    },
)
