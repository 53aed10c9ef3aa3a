"""``face_areas``: the area of every triangle."""

from __future__ import annotations

import numpy as np

from ..geometry import face_areas64
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from . import _device
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


class Params(OpParams):
    pass


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    area = face_areas64(xp, mesh.V, mesh.F)
    out = mesh.with_attrs(face={"face_areas": area.astype(xp.float32)})
    return OpResult(out, {"total_area": float(area.sum())})


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/face_areas.cu``: one thread per face, the cross product in double. The total is
    summed in double from the stored float32 areas (within 1e-7 relative of the twin's)."""
    cp = mesh.xp
    V, suffix = _device.positions(mesh)
    A = cp.zeros(mesh.n_faces, dtype=cp.float32)
    launch(
        load_kernel("face_areas", f"face_areas_{suffix}"),
        mesh.n_faces,
        (V, _device.faces(mesh), np.int64(mesh.n_faces), A),
        op="face_areas",
    )
    out = mesh.with_attrs(face={"face_areas": A})
    return OpResult(out, {"total_area": float(A.sum(dtype=cp.float64))})


OP = Operation(
    name="face_areas",
    summary="Area of every face.",
    description="""
    Area ``|(b - a) x (c - a)| / 2`` of each face, computed in float64 and stored as float32;
    degenerate faces get 0. The report's ``total_area`` is the float64 sum, the ``area`` figure of
    ``stats``.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "face_areas": Output(
            Element.face, "(n_faces,)", "float32", "Triangle area; 0 for degenerate faces."
        )
    },
    reports="total_area: the sum of the face areas (the area figure of stats)",
    test_variants=({},),
    tolerances={"face_areas": Tolerance(atol=1e-6, rtol=1e-6)},
)
