"""``face_quality``: the aspect-ratio quality Q of every triangle (KEY-WELD, eq. 1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..geometry import face_corners64
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from . import _device
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance

#: KEY-WELD's threshold: triangles with Q above it are of acceptable quality
ACCEPTABLE = 0.6


class Params(OpParams):
    pass


def _summary(xp: Any, q: Any) -> dict[str, Any]:
    return {
        "min_quality": float(q.min()),
        "mean_quality": float(q.mean()),
        "poor_faces": int((q < ACCEPTABLE).sum()),
    }


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    a, b, c = face_corners64(xp, mesh.V, mesh.F)
    u, v, w = b - a, c - b, a - c
    area = 0.5 * xp.linalg.norm(xp.cross(u, c - a), axis=1)
    sq = (u * u).sum(axis=1) + (v * v).sum(axis=1) + (w * w).sum(axis=1)
    q = xp.where(sq > 0, 4.0 * math.sqrt(3.0) * area / xp.where(sq > 0, sq, 1.0), 0.0)
    out = mesh.with_attrs(face={"face_quality": q.astype(xp.float32)})
    return OpResult(out, _summary(xp, q))


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/face_quality.cu``: one thread per face, in double (the report's count of poor
    faces is taken from the double values, as the twin's)."""
    cp = mesh.xp
    V, suffix = _device.positions(mesh)
    m = mesh.n_faces
    q = cp.zeros(m, dtype=cp.float64)
    launch(
        load_kernel("face_quality", f"face_quality_{suffix}"),
        m,
        (V, _device.faces(mesh), np.int64(m), q),
        op="face_quality",
    )
    out = mesh.with_attrs(face={"face_quality": q.astype(cp.float32)})
    return OpResult(out, _summary(cp, q))


OP = Operation(
    name="face_quality",
    summary="Aspect-ratio quality Q of every face (1 for equilateral).",
    description="""
    Triangle quality ``Q = 4 sqrt(3) a / (l0^2 + l1^2 + l2^2)`` with ``a`` the area and ``l_k``
    the side lengths: eq. 1 of the KEY-WELD paper ("Finely Threaded Topological Connection
    Reconstruction"; MATLAB's ``pdetriq``). It measures aspect ratio only: 1 for an equilateral
    triangle, invariant under similarity transforms, towards 0 for needles and caps; 0 for a face
    whose corners coincide. Computed in float64, stored as float32. The report gives the minimum,
    the mean, and ``poor_faces``, the number of faces below the paper's acceptance threshold 0.6.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "face_quality": Output(
            Element.face,
            "(n_faces,)",
            "float32",
            "Q = 4 sqrt(3) area / sum of squared sides, in [0, 1]; 1 for equilateral.",
        )
    },
    reports="min_quality, mean_quality; poor_faces: faces with Q < 0.6",
    test_variants=({},),
    tolerances={"face_quality": Tolerance(atol=1e-6)},
)
