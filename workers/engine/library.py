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

import os
from collections.abc import Iterable
from typing import Any

from .mesh import TriMesh
from .pipeline import PipelineResult


def load(path: str | os.PathLike[str], *, dtype: str = "float32") -> TriMesh:
    """Read a mesh file (OBJ, PLY, STL, OFF, GLB/glTF, NPZ, or one of them in .zip/.gz); the
    format is found from the file's content and name. Raises :class:`~.errors.FormatError`
    (with a machine-readable ``code``) for a file that cannot be read as a mesh."""
    from .io import load_path

    return load_path(path, dtype=dtype)


def save(
    mesh: TriMesh,
    path: str | os.PathLike[str],
    *,
    attributes: Iterable[str] | None = None,
    polygons: bool = True,
    compression: str = "none",
) -> None:
    """Write ``mesh``; the format is taken from the file name's extension. OBJ, PLY and OFF
    write Catmull-Clark quads and dual polygons as polygons unless ``polygons`` is False;
    ``compression="draco"`` compresses a GLB's triangles (KHR_draco_mesh_compression)."""
    from .io import save_path

    save_path(mesh, path, attributes=attributes, polygons=polygons, compression=compression)


def run(mesh: TriMesh, pipeline: Iterable[Any], *, device: str = "auto") -> PipelineResult:
    """Run operations in order, e.g. ``run(mesh, ["weld", ("vertex_normals", {"weighting":
    "angle"})])``, on ``device`` ("auto": the GPU where there is one and the mesh is large
    enough; "gpu"; "cpu"). Returns a :class:`~.pipeline.PipelineResult` whose ``mesh`` is the
    processed mesh and ``reports`` what each operation reported."""
    from .pipeline import run_pipeline

    return run_pipeline(mesh, pipeline, device=device)
