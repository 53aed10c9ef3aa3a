"""The Tessera mesh engine: meshes on NumPy or CuPy, re-indexing, topology and operations.

Use it as a library with no server (``tessera.load`` / ``run`` / ``save`` are these)::

    from workers.engine import load, run, save
    mesh = load("bunny.obj")
    result = run(mesh, ["weld", ("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"])
    save(result.mesh, "bunny.ply")
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
from .library import load, run, save
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
    "load",
    "parse_pipeline",
    "run",
    "run_pipeline",
    "save",
]
