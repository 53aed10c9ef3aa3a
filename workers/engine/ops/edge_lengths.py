"""``edge_lengths``: the three side lengths of every triangle, and edge-length statistics."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..geometry import face_corners64
from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from . import _device
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


class Params(OpParams):
    pass


def _summary(xp: Any, lengths: Any) -> dict[str, Any]:
    """Mean, min and max of the unique edges' float64 lengths."""
    return {
        "edges": int(lengths.shape[0]),
        "mean_edge_length": float(lengths.mean()),
        "min_edge_length": float(lengths.min()),
        "max_edge_length": float(lengths.max()),
    }


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    a, b, c = face_corners64(xp, mesh.V, mesh.F)
    sides = xp.stack(
        [
            xp.linalg.norm(b - a, axis=1),
            xp.linalg.norm(c - b, axis=1),
            xp.linalg.norm(a - c, axis=1),
        ],
        axis=1,
    )
    EV = mesh.topology.EV
    V = mesh.V.astype(xp.float64)
    lengths = xp.linalg.norm(V[EV[:, 1]] - V[EV[:, 0]], axis=1)
    out = mesh.with_attrs(face={"edge_lengths": sides.astype(xp.float32)})
    return OpResult(out, _summary(xp, lengths))


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/edge_lengths.cu``: one thread per face writes its three sides; one thread per
    unique edge (from the cached topology) writes its float64 length for the report."""
    cp = mesh.xp
    V, suffix = _device.positions(mesh)
    m = mesh.n_faces
    sides = cp.zeros((m, 3), dtype=cp.float32)
    launch(
        load_kernel("edge_lengths", f"edge_lengths_sides_{suffix}"),
        m,
        (V, _device.faces(mesh), np.int64(m), sides),
        op="edge_lengths",
    )
    EV = cp.ascontiguousarray(mesh.topology.EV, dtype=cp.int32)
    ne = int(EV.shape[0])
    lengths = cp.zeros(ne, dtype=cp.float64)
    launch(
        load_kernel("edge_lengths", f"edge_lengths_edges_{suffix}"),
        ne,
        (V, EV, np.int64(ne), lengths),
        op="edge_lengths",
    )
    out = mesh.with_attrs(face={"edge_lengths": sides})
    return OpResult(out, _summary(cp, lengths))


OP = Operation(
    name="edge_lengths",
    summary="Side lengths of every face; mean, min and max edge length.",
    description="""
    Face attribute ``edge_lengths`` (n_faces, 3): entry ``k`` is the length of side ``k``, from
    corner ``k`` to corner ``k + 1`` (the convention of the topology's ``FE``), computed in float64
    and stored as float32. The report gives the number of unique edges (the topology's ``EV``)
    and the mean, minimum and maximum of their lengths in float64; an edge shared by several
    faces counts once.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    outputs={
        "edge_lengths": Output(
            Element.face,
            "(n_faces, 3)",
            "float32",
            "Length of side k of the face, from corner k to corner k+1.",
        )
    },
    reports="edges: the number of unique edges; mean_edge_length, min_edge_length, "
    "max_edge_length over them",
    test_variants=({},),
    tolerances={"edge_lengths": Tolerance(atol=1e-6, rtol=1e-6)},
)
