"""``weld``: merge duplicate vertices, exactly or within a tolerance."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..kernels.loader import launch, load_kernel
from ..mesh import TriMesh
from ..reindex import apply_vertex_map, weld
from .registry import Operation, OpKind, OpParams, OpResult, Packing


class Params(OpParams):
    tolerance: float = Field(
        0.0,
        ge=0.0,
        le=1e6,
        description="Vertices closer than this merge (0: only exactly equal positions). Chains of "
        "close vertices merge transitively.",
    )
    relative: bool = Field(
        False, description="Read the tolerance as a fraction of the bounding-box diagonal."
    )
    remove_unused: bool = Field(True, description="Also drop vertices that no face references.")


def _tolerance(mesh: TriMesh, p: Params) -> float:
    tol = p.tolerance
    if p.relative and tol > 0 and mesh.n_vertices > 0:
        # the diagonal ``stats`` reports: of the used vertices (all of them if none is used), so
        # that a stray unused vertex cannot inflate the tolerance
        xp = mesh.xp
        used = mesh.used_vertices()
        P = mesh.V[used] if bool(used.any()) else mesh.V
        lo, hi = P.min(axis=0).astype(xp.float64), P.max(axis=0).astype(xp.float64)
        tol *= float(xp.linalg.norm(hi - lo))
    return tol


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    tol = _tolerance(mesh, p)
    out, report = weld(mesh, tolerance=tol, remove_unused=p.remove_unused)
    report["tolerance"] = tol
    return OpResult(out, report)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """Exact weld by hashing (``kernels/weld.cu``): one pass inserts every used vertex's position
    into an open-addressing table, each slot keeps its group's smallest vertex id, and a scan
    numbers the groups in order of that id, as the twin does after its sort. A tolerance weld
    runs the twin's grid-and-sort code on CuPy."""
    tol = _tolerance(mesh, p)
    if tol > 0 or mesh.n_vertices == 0 or mesh.n_vertices >= 2**31 - 1:
        out, report = weld(mesh, tolerance=tol, remove_unused=p.remove_unused)
        report["tolerance"] = tol
        return OpResult(out, report)
    cp = mesh.xp
    n = mesh.n_vertices
    V = cp.ascontiguousarray(mesh.V, dtype=cp.float32)
    used = cp.ascontiguousarray(mesh.used_vertices()) if p.remove_unused else cp.ones(1, bool)
    n_cand = int(used.sum()) if p.remove_unused else n
    size = 1 << max(int(2 * max(n_cand, 1) - 1).bit_length(), 4)  # load factor <= 1/2
    slot_vertex = cp.full(size, 0xFFFFFFFF, dtype=cp.uint32)
    slot_min = cp.full(size, 0xFFFFFFFF, dtype=cp.uint32)
    slot_of = cp.empty(n, dtype=cp.int32)
    launch(
        load_kernel("weld", "weld_insert"),
        n,
        (
            V,
            used,
            np.int32(p.remove_unused),
            np.int64(n),
            slot_vertex,
            slot_min,
            np.uint64(size - 1),
            slot_of,
        ),
        op="weld",
    )
    rep = cp.empty(n, dtype=cp.int32)
    launch(
        load_kernel("weld", "weld_representative"),
        n,
        (slot_of, slot_min, np.int64(n), rep),
        op="weld",
    )
    del slot_vertex, slot_min, slot_of
    first = rep == cp.arange(n, dtype=cp.int32)
    new_id = cp.cumsum(first, dtype=cp.int32) - 1
    new_of_old = cp.where(rep >= 0, new_id[cp.maximum(rep, 0)], -1)
    out, report = apply_vertex_map(mesh, new_of_old, cp.nonzero(first)[0], n_cand)
    report["tolerance"] = tol
    return OpResult(out, report)


def _packed(mesh: TriMesh, p: Params, part: object) -> OpResult:
    """An exact weld of a pack (:mod:`..packing`) keyed by ``(part, position)``, on either
    backend: the twin's sort code, which numbers groups as the GPU's hash kernel does."""
    out, report = weld(mesh, tolerance=0.0, remove_unused=p.remove_unused, part=part)
    report["tolerance"] = 0.0
    return OpResult(out, report)


def _packing(p: Params) -> Packing:
    # a tolerance (relative: of each mesh's own bounding box) would join or measure across parts
    return Packing.keyed if p.tolerance == 0 else Packing.single


OP = Operation(
    name="weld",
    summary="Merge duplicate vertices (exact or within a tolerance).",
    description="""
    Merge vertices at equal positions (or within ``tolerance``) by sort, scan and scatter
    (Wald 2021). Faces are re-indexed; per-vertex attributes of merged vertices are averaged.
    Faces that collapse (two equal corners) are kept and counted in the report: chain
    ``remove_degenerate_faces`` to drop them.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    reports="vertices_before, vertices_after, merged, unused_removed, degenerate_faces, tolerance",
    packing=_packing,
    packed=_packed,
    test_variants=(
        {},
        {"tolerance": 1e-3, "relative": True},
        {"remove_unused": False},
    ),
)
