"""Which GPU path an operation takes: the patched path (RXMesh: one block per patch, queries in
shared memory) or the global-memory kernels.

Patching is built once per connectivity and cached on the topology (``patches.cached_patches``),
so it pays off for operations that iterate over the mesh many times. ``PATCHED`` names the
operations that take the patched path by default, chosen from the measurements in
``bench/RESULTS.md`` (section "Patched vs global"); every other operation runs its global kernel.
``TESSERA_GPU_PATH=patched|global`` forces one path for every operation that has both (the
benchmarks and tests use it); ``auto`` (the default) follows ``PATCHED``.
"""

from __future__ import annotations

import os

from .mesh import TriMesh
from .patches import Patches, cached_patches

#: operations whose GPU implementation runs on the patches unless told otherwise: none now.
#: The one-ring bilateral step has both paths but stays global (0.33x patched in local order,
#: 1.2-1.6x shuffled; bench/RESULTS.md "Patched vs global", H100). Geodesic propagation took
#: the patched path (2.9-4.5x the global kernel on shuffled meshes from 4.4M faces) until the
#: frontier schedule (propagation.propagate_frontier), which updates only the vertices that
#: read a released change, and needs no patches. A cheap test of the element order that
#: predicts the crossover was tried (index jumps between consecutive faces) and rejected: real
#: meshes in file order jump as far as shuffled ones by that measure. ``delaunay_flip`` has a
#: patched path too (its flips inside patches, one kernel: ``dynamic.patched_flip``) and stays
#: global: the kernel makes 86-89 % of the flips (27 ms for 2.4M flips at 17.8M faces), but the
#: rounds over the whole mesh that must follow for the edges across patches rebuild the edge
#: table each round as before (most of their time), so the op took 0.038 s against 0.029 s at
#: 1.1M faces, 0.077 against 0.054 s at 4.4M and 0.264 against 0.240 s at 17.8M
#: (``python -m bench.delaunay``, H100, 63fd0fc; bench/RESULTS.md).
PATCHED: frozenset[str] = frozenset()
MODES = ("auto", "patched", "global")


def mode() -> str:
    value = os.environ.get("TESSERA_GPU_PATH", "auto")
    return value if value in MODES else "auto"


def wants_patches(op: str) -> bool:
    """Whether ``op`` takes its patched path (``TESSERA_GPU_PATH``, else :data:`PATCHED`)."""
    m = mode()
    return m == "patched" or (m == "auto" and op in PATCHED)


def patches_for(mesh: TriMesh, op: str) -> Patches | None:
    """The (cached) patches when ``op`` should run patched on ``mesh``, else None (also when the
    mesh cannot be patched: the global kernels handle every mesh)."""
    if not wants_patches(op):
        return None
    return cached_patches(mesh)
