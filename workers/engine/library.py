"""The engine as a library: read a mesh file, run a pipeline on it, write the result.

These three functions are the facade a script uses (``tessera.load``, ``tessera.run``,
``tessera.save`` are the same functions); :class:`~.mesh.TriMesh` itself is the data they pass
around::

    import tessera
    mesh = tessera.load("bunny.obj")
    result = tessera.run(mesh, ["weld", ("vertex_normals", {"weighting": "angle"})])
    tessera.save(result.mesh, "bunny.glb")
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .io.reading import load_path as load
from .io.writing import save_path as save
from .mesh import TriMesh
from .pipeline import PipelineResult

__all__ = ["load", "run", "save"]


def run(mesh: TriMesh, pipeline: Iterable[Any], *, device: str = "auto") -> PipelineResult:
    """Run operations in order, e.g. ``run(mesh, ["weld", ("vertex_normals", {"weighting":
    "angle"})])``, on ``device`` ("auto": the GPU where there is one and the mesh is large
    enough; "gpu"; "cpu"). Returns a :class:`~.pipeline.PipelineResult` whose ``mesh`` is the
    processed mesh and ``reports`` what each operation reported."""
    from .pipeline import run_pipeline

    return run_pipeline(mesh, pipeline, device=device)
