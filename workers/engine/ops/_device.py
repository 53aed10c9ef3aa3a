"""Small helpers the GPU implementations share: positions in the dtype a kernel entry point takes.

Kernels that only read positions have one entry point per storage dtype (``<name>_f32`` and
``<name>_f64``), so a float64 mesh is read at full precision, as its NumPy twin reads it, and a
float32 mesh is not copied.
"""

from __future__ import annotations

from typing import Any

from ..mesh import TriMesh


def positions(mesh: TriMesh) -> tuple[Any, str]:
    """``(V, suffix)``: the mesh's positions as a C-contiguous float32 or float64 device array and
    the kernel-name suffix for that dtype (``"f32"`` or ``"f64"``); other dtypes become float64."""
    cp = mesh.xp
    if mesh.V.dtype == cp.float32:
        return cp.ascontiguousarray(mesh.V), "f32"
    return cp.ascontiguousarray(mesh.V, dtype=cp.float64), "f64"


def positions64(mesh: TriMesh) -> Any:
    """The positions as a C-contiguous float64 device array (a copy for float32 meshes): kernels
    that iterate or accumulate work in double, like the NumPy twins."""
    cp = mesh.xp
    return cp.ascontiguousarray(mesh.V, dtype=cp.float64)


def faces(mesh: TriMesh) -> Any:
    """The faces as a C-contiguous int32 device array."""
    cp = mesh.xp
    return cp.ascontiguousarray(mesh.F, dtype=cp.int32)
