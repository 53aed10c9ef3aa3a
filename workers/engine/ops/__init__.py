"""The operation registry: the one list of operations everything else is derived from."""

from __future__ import annotations

from . import (
    _testing,
    face_normals,
    gaussian_curvature,
    remove_degenerate_faces,
    remove_unused_vertices,
    stats,
    vertex_normals,
    weld,
)
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Registry

OPS = Registry(
    [
        weld.OP,
        remove_unused_vertices.OP,
        remove_degenerate_faces.OP,
        stats.OP,
        face_normals.OP,
        vertex_normals.OP,
        gaussian_curvature.OP,
    ]
    + ([_testing.OP] if _testing.enabled() else [])
)

__all__ = ["OPS", "Element", "OpKind", "OpParams", "OpResult", "Operation", "Output", "Registry"]
