"""``face_normals``: unit normal of every triangle."""

from __future__ import annotations

from ..geometry import face_cross64, unitize
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output


class Params(OpParams):
    pass


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    """Unit normal ``(b - a) x (c - a) / |...|`` of each face, right-handed in the corner order.
    Faces of zero area get the zero vector."""
    xp = mesh.xp
    n = unitize(xp, face_cross64(xp, mesh.V, mesh.F)).astype(xp.float32)
    return OpResult(mesh.with_attrs(face={"face_normals": n}))


OP = Operation(
    name="face_normals",
    summary="Unit normal of every face.",
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    outputs={
        "face_normals": Output(
            Element.face, "(n_faces, 3)", "float32", "Unit face normal; zero for zero-area faces."
        )
    },
)
