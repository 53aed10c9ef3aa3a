"""``vertex_normals``: unit normal at every vertex from weighted incident face normals."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ..geometry import corner_angles64, face_cross64, scatter_rows, unitize
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Packing, Tolerance


class Params(OpParams):
    weighting: Literal["area", "angle", "uniform", "max"] = Field(
        "area",
        description="How incident face normals are weighted: by face area, by the corner angle "
        "at the vertex (Thürmer-Wüthrich), equally, or by Max's weights (the corner's cross "
        "product over the squared lengths of its two sides; exact for a sphere).",
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    cross = face_cross64(xp, mesh.V, mesh.F)
    if p.weighting == "max":
        w = _max_corners(xp, mesh)
    elif p.weighting == "area":
        w = xp.repeat(cross, 3, axis=0)
    else:
        unit = unitize(xp, cross)
        if p.weighting == "uniform":
            w = xp.repeat(unit, 3, axis=0)
        else:
            ang = corner_angles64(xp, mesh.V, mesh.F).ravel()
            w = xp.repeat(unit, 3, axis=0) * ang[:, None]
    acc = scatter_rows(xp, mesh.F.ravel(), w, mesh.n_vertices)
    size = scatter_rows(xp, mesh.F.ravel(), xp.linalg.norm(w, axis=1)[:, None], mesh.n_vertices)
    n = unitize(xp, acc)
    cancelled = xp.linalg.norm(acc, axis=1) <= CANCELLED * size[:, 0]
    n[cancelled] = 0.0
    return OpResult(
        mesh.with_attrs(vertex={"vertex_normals": n.astype(xp.float32)}),
        report=_report(xp, cancelled & (size[:, 0] > 0)),
    )


#: a vertex whose weighted normals add up to less than this fraction of their lengths' sum gets
#: no normal: its faces face opposite ways (a double-sided sheet, a fold), and what is left of
#: the sum is rounding noise
CANCELLED = 1e-4


def _report(xp: object, cancelled: object) -> dict[str, int]:
    return {"cancelled_normals": int(cancelled.sum())}  # type: ignore[attr-defined]


def _max_corners(xp: object, mesh: TriMesh) -> object:
    """(3 * n_faces, 3) Max's corner vectors, corner-major like ``F.ravel()``."""
    from ..geometry import face_corners64

    a, b, c = face_corners64(xp, mesh.V, mesh.F)
    out = []
    for p, q, r in ((a, b, c), (b, c, a), (c, a, b)):
        u, w = q - p, r - p
        d = (u * u).sum(axis=1) * (w * w).sum(axis=1)
        out.append(xp.cross(u, w) / xp.where(d > 0, d, 1.0)[:, None])  # type: ignore[attr-defined]
    return xp.stack(out, axis=1).reshape(-1, 3)  # type: ignore[attr-defined]


_WEIGHTING = {"area": 0, "angle": 1, "uniform": 2, "max": 3}


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/vertex_normals.cu``: one thread per face scatters its weighted normal to its
    corners with atomic adds (float32), then one thread per vertex unitizes. This is the
    mesh-matrix product ``N = M^T n`` with the weighting as the action map, done without forming
    ``M``."""
    cp = mesh.xp
    V = cp.ascontiguousarray(mesh.V, dtype=cp.float32)
    F = cp.ascontiguousarray(mesh.F, dtype=cp.int32)
    N = cp.zeros((mesh.n_vertices, 3), dtype=cp.float32)
    size = cp.zeros(mesh.n_vertices, dtype=cp.float32)
    acc = load_kernel("vertex_normals", "vertex_normals_accumulate")
    launch(
        acc,
        mesh.n_faces,
        (V, F, np.int64(mesh.n_faces), np.int32(_WEIGHTING[p.weighting]), N, size),
        op="vertex_normals",
    )
    norm = load_kernel("vertex_normals", "vertex_normals_normalize")
    launch(
        norm,
        mesh.n_vertices,
        (N, size, np.int64(mesh.n_vertices), np.float32(CANCELLED)),
        op="vertex_normals",
    )
    # the normalize kernel zeroed the cancelled vertices: those with faces and a zero normal
    cancelled = (size > 0) & ~N.any(axis=1)
    return OpResult(mesh.with_attrs(vertex={"vertex_normals": N}), report=_report(cp, cancelled))


OP = Operation(
    name="vertex_normals",
    summary="Unit normal at every vertex.",
    description="""
    Scatter-add each face's weighted normal to its three corners, then unitize.

    ``area``: the raw cross product (twice the area times the unit normal); ``angle``: the unit
    normal times the corner angle; ``uniform``: the unit normal; ``max``: at a corner with sides
    ``u``, ``w``, the vector ``u x w / (|u|^2 |w|^2)`` (N. Max, "Weights for computing vertex
    normals from facet normals", 1999). Vertices with no face get the zero vector, and so do
    vertices whose weighted normals cancel (they add up to less than 1e-4 of their lengths' sum:
    the two sides of a double-sided sheet, a fold onto itself); the report counts those as
    ``cancelled_normals``, since such a vertex has no outside to point to.
    """,
    reports="cancelled_normals: vertices with faces whose weighted normals cancel (double-sided "
    "or folded surfaces), given the zero vector",
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "vertex_normals": Output(
            Element.vertex,
            "(n_vertices, 3)",
            "float32",
            "Unit vertex normal; written as nx ny nz in PLY.",
        )
    },
    packing=Packing.local,
    test_variants=(
        {"weighting": "area"},
        {"weighting": "angle"},
        {"weighting": "uniform"},
        {"weighting": "max"},
    ),
    tolerances={"vertex_normals": Tolerance(atol=2e-4)},
)
