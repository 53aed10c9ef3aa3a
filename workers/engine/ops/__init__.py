"""The operation registry: the one list of operations everything else is derived from."""

from __future__ import annotations

from . import (
    _testing,
    average_attribute,
    bilateral_denoise,
    cluster_coarsen,
    collapse_short_edges,
    decimate,
    delaunay_flip,
    dual_mesh,
    edge_lengths,
    face_areas,
    face_normals,
    face_quality,
    gaussian_curvature,
    geodesic_distance,
    isotropic_remesh,
    laplacian_matrix,
    laplacian_smooth,
    marching_cubes,
    mean_curvature,
    merge,
    remove_degenerate_faces,
    remove_unused_vertices,
    repair,
    slice_plane,
    soup_to_mesh,
    stats,
    subdivide,
    submesh,
    taubin_smooth,
    vertex_normals,
    weld,
)
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Registry

OPS = Registry(
    [
        weld.OP,
        remove_unused_vertices.OP,
        remove_degenerate_faces.OP,
        soup_to_mesh.OP,
        merge.OP,
        submesh.OP,
        repair.OP,
        marching_cubes.OP,
        slice_plane.OP,
        stats.OP,
        face_normals.OP,
        vertex_normals.OP,
        gaussian_curvature.OP,
        face_areas.OP,
        edge_lengths.OP,
        face_quality.OP,
        mean_curvature.OP,
        laplacian_smooth.OP,
        taubin_smooth.OP,
        average_attribute.OP,
        bilateral_denoise.OP,
        geodesic_distance.OP,
        laplacian_matrix.OP,
        subdivide.OP,
        dual_mesh.OP,
        cluster_coarsen.OP,
        delaunay_flip.OP,
        isotropic_remesh.OP,
        collapse_short_edges.OP,
        decimate.OP,
    ]
    + ([_testing.OP] if _testing.enabled() else [])
)

__all__ = ["OPS", "Element", "OpKind", "OpParams", "OpResult", "Operation", "Output", "Registry"]
