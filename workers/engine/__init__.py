"""The Tessera mesh engine: meshes on NumPy or CuPy, re-indexing, topology and operations.

Use it as a library with no server::

    from workers.engine import TriMesh
    mesh = TriMesh.load("bunny.obj")
    result = mesh.run(["weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"])
    result.mesh.save("bunny.ply")
"""

from __future__ import annotations

from .backend import Device, gpu_available
from .errors import (
    BackendUnavailable,
    EngineError,
    FormatError,
    InputError,
    KernelError,
    MeshError,
    OpParamsError,
    SpecError,
)
from .mesh import TriMesh
from .pipeline import PipelineResult, parse_pipeline, run_pipeline

Mesh = TriMesh

__all__ = [
    "BackendUnavailable",
    "Device",
    "EngineError",
    "FormatError",
    "InputError",
    "KernelError",
    "Mesh",
    "MeshError",
    "OpParamsError",
    "PipelineResult",
    "SpecError",
    "TriMesh",
    "gpu_available",
    "parse_pipeline",
    "run_pipeline",
]
