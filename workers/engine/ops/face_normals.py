"""``face_normals``: unit normal of every triangle."""

from __future__ import annotations

import numpy as np

from ..geometry import face_cross64, unitize
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Packing, Tolerance


class Params(OpParams):
    pass


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    n = unitize(xp, face_cross64(xp, mesh.V, mesh.F)).astype(xp.float32)
    return OpResult(mesh.with_attrs(face={"face_normals": n}))


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """One thread per face (``kernels/face_normals.cu``), float32."""
    cp = mesh.xp
    V = cp.ascontiguousarray(mesh.V, dtype=cp.float32)
    N = cp.zeros((mesh.n_faces, 3), dtype=cp.float32)
    k = load_kernel("face_normals", "face_normals")
    launch(
        k,
        mesh.n_faces,
        (V, cp.ascontiguousarray(mesh.F, dtype=cp.int32), np.int64(mesh.n_faces), N),
        op="face_normals",
    )
    return OpResult(mesh.with_attrs(face={"face_normals": N}))


OP = Operation(
    name="face_normals",
    summary="Unit normal of every face.",
    description="""
    Unit normal ``(b - a) x (c - a) / |...|`` of each face, right-handed in the corner order.
    Faces of zero area get the zero vector.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "face_normals": Output(
            Element.face, "(n_faces, 3)", "float32", "Unit face normal; zero for zero-area faces."
        )
    },
    packing=Packing.local,
    test_variants=({},),
    tolerances={"face_normals": Tolerance(atol=1e-5)},
)
