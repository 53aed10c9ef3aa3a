"""Re-indexing by sort, scan and scatter (Wald, *GPGPU-Parallel Re-indexing of Triangle Meshes with
Duplicate-Vertex and Unused-Vertex Removal*), written once for NumPy and CuPy.

Where Wald overwrites unused vertices with a used one so that they merge away, we simply leave them
out of the sort: the result is the same and the sort is smaller. Where Wald numbers the output in
sorted order, we number groups by their first vertex in the input (one more sort of the group
heads), so welding a mesh without duplicates returns it unchanged.
"""

from __future__ import annotations

import itertools
from types import ModuleType
from typing import Any

from .errors import OpParamsError
from .geometry import face_areas64
from .graph import compact_groups, connected_components, expand_counts, group_rows, numpy_fast
from .mesh import TriMesh
from .topology import Topology

#: candidate pairs examined by a tolerance weld before it refuses (memory bound, not a tuning knob)
MAX_CANDIDATE_PAIRS = 50_000_000

_HALF_NEIGHBOURS = [o for o in itertools.product((-1, 0, 1), repeat=3) if o > (0, 0, 0)]


def weld(
    mesh: TriMesh, tolerance: float = 0.0, remove_unused: bool = True, part: Any = None
) -> tuple[TriMesh, dict]:
    """Merge vertices at the same position (``tolerance == 0``: exact float equality) or closer
    than ``tolerance`` (transitively: chains of close vertices become one). The merged vertex keeps
    the position of its lowest-index member; per-vertex attributes are averaged.

    ``part`` (n_vertices,) int: only vertices of the same part merge (an exact weld of meshes
    packed side by side, :mod:`.packing`): groups are keyed by ``(part, position)``, and as they
    are numbered by their first vertex, a part whose vertices are contiguous welds to what it
    would alone, shifted."""
    xp = mesh.xp
    n = mesh.n_vertices
    cand = xp.nonzero(mesh.used_vertices())[0] if remove_unused else xp.arange(n, dtype=xp.int64)
    P = mesh.V[cand] + 0.0  # + 0.0 turns -0.0 into +0.0 so both compare and sort as equal
    labels = group_rows(xp, P)
    if part is not None:
        if tolerance > 0:
            raise ValueError("a weld keyed by part is exact (tolerance 0)")
        if int(cand.shape[0]):
            labels = part[cand].astype(xp.int64) * (int(labels.max()) + 1) + labels
    if tolerance > 0:
        exact_id, heads = compact_groups(xp, labels)
        Q = P[heads].astype(xp.float64)
        i, j = close_pairs(xp, Q, float(tolerance))
        lab2 = connected_components(xp, int(Q.shape[0]), i, j)
        labels = lab2[exact_id]
    new_of_cand, first = compact_groups(xp, labels)
    new_of_old = xp.full(n, -1, dtype=xp.int64)
    new_of_old[cand] = new_of_cand
    return apply_vertex_map(mesh, new_of_old, cand[first], int(cand.shape[0]))


def apply_vertex_map(
    mesh: TriMesh, new_of_old: Any, reps: Any, n_candidates: int
) -> tuple[TriMesh, dict]:
    """The welded mesh from ``new_of_old`` (new id of each old vertex, -1 when dropped) and
    ``reps`` (the old vertex whose position each new vertex takes), with the weld report."""
    xp = mesh.xp
    n, n_new = mesh.n_vertices, int(reps.shape[0])
    unchanged = (
        n_new == n
        and mesh.F.dtype == xp.int32
        and _is_range(xp, new_of_old)
        and _is_range(xp, reps)
    )
    if unchanged:
        # nothing merged or dropped: the input's faces and positions are the result's, and so is
        # its topology with everything memoised on it (a later step or the job's stats reuse it)
        F, V = mesh.F, mesh.V
    else:
        F = new_of_old[mesh.F].astype(xp.int32)
        V = mesh.V[reps]
    groups = None
    if mesh.vertex_attrs:
        old = xp.nonzero(new_of_old >= 0)[0]
        groups = (old, new_of_old[old], n_new)
    out = mesh.reindexed(V, F, vertex_groups=groups)
    if unchanged:
        out._topology = mesh._topology
    else:
        out._topology = _topology_without_unused(mesh, new_of_old, n_new, F)
    report = {
        "vertices_before": n,
        "vertices_after": n_new,
        "merged": n_candidates - n_new,
        "unused_removed": n - n_candidates,
        "degenerate_faces": int(degenerate_mask(xp, F).sum()),
    }
    return out, report


def _topology_without_unused(mesh: TriMesh, new_of_old: Any, n_new: int, F: Any) -> Topology | None:
    """The input's topology carried over to the result (NumPy, when it was built) when the map
    only drops the unused vertices and numbers the used ones in order: a weld that merged
    nothing, ``remove_unused``. None otherwise: the result builds its own on demand."""
    topo = mesh._topology
    if topo is None or not numpy_fast(mesh.xp):
        return None
    xp = mesh.xp
    used = xp.nonzero(topo.used_vertices)[0]
    if used.shape[0] != n_new or not _is_range(xp, new_of_old[used]):
        return None
    return topo.without_unused(F, used, new_of_old)


def _is_range(xp: ModuleType, a: Any) -> bool:
    """Whether the 1-D integer array ``a`` is ``0, 1, ..., len(a) - 1``."""
    return bool((a == xp.arange(a.shape[0], dtype=a.dtype)).all())


def close_pairs(xp: ModuleType, P: Any, tol: float) -> tuple[Any, Any]:
    """All pairs ``(i, j)``, ``i != j``, of rows of ``P`` (float64) within distance ``tol``.

    Points are bucketed on a grid of cells at least ``tol`` wide, sorted by cell key; each point
    looks up its own cell and the 13 neighbour cells of one half-space by binary search, so every
    close pair is found exactly once."""
    n = int(P.shape[0])
    if n < 2:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z
    lo = P.min(axis=0)
    extent = float((P.max(axis=0) - lo).max())
    cell = max(tol, extent / 2**20) if extent > 0 else tol
    c = xp.floor((P - lo) / cell).astype(xp.int64) + 1  # +1: neighbours of cell 0 stay >= 0
    dims = c.max(axis=0) + 2
    d1, d2 = int(dims[1]), int(dims[2])

    def key(cc: Any) -> Any:
        return (cc[:, 0] * d1 + cc[:, 1]) * d2 + cc[:, 2]

    order = xp.argsort(key(c))
    sk = key(c)[order]
    cs = c[order]
    Ps = P[order]
    pos = xp.arange(n, dtype=xp.int64)
    out_i, out_j = [], []
    total = 0
    for off in [(0, 0, 0)] + _HALF_NEIGHBOURS:
        nk = key(cs + xp.asarray(off, dtype=xp.int64))
        start = xp.searchsorted(sk, nk, side="left")
        stop = xp.searchsorted(sk, nk, side="right")
        if off == (0, 0, 0):
            start = xp.maximum(start, pos + 1)
        counts = xp.maximum(stop - start, 0)
        m = int(counts.sum())
        total += m
        if total > MAX_CANDIDATE_PAIRS:
            raise OpParamsError(
                "tolerance too large for this mesh",
                code="op.tolerance_too_large",
                tolerance=tol,
                candidate_pairs=total,
            )
        if m == 0:
            continue
        ii = expand_counts(xp, counts)  # pos is the identity
        csum = xp.cumsum(counts) - counts
        jj = start[ii] + (xp.arange(m, dtype=xp.int64) - csum[ii])
        d = Ps[ii] - Ps[jj]
        close = (d * d).sum(axis=1) <= tol * tol
        out_i.append(order[ii[close]])
        out_j.append(order[jj[close]])
    if not out_i:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z
    return xp.concatenate(out_i), xp.concatenate(out_j)


def remove_unused(mesh: TriMesh) -> tuple[TriMesh, dict]:
    """Drop vertices no face references: flag, exclusive scan, scatter."""
    xp = mesh.xp
    used = mesh.used_vertices()
    keep = xp.nonzero(used)[0]
    new_of_old = xp.cumsum(used) - 1
    F = new_of_old[mesh.F].astype(xp.int32)
    out = mesh.reindexed(mesh.V[keep], F, vertex_take=keep)
    n_keep = int(keep.shape[0])
    if n_keep == mesh.n_vertices:  # nothing removed: keep the topology cache
        out._topology = mesh._topology
    else:
        out._topology = _topology_without_unused(mesh, new_of_old, n_keep, F)
    return out, {"vertices_before": mesh.n_vertices, "removed": mesh.n_vertices - n_keep}


def degenerate_mask(xp: ModuleType, F: Any) -> Any:
    """Faces that repeat a vertex index."""
    return (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])


def remove_degenerate(
    mesh: TriMesh, geometric: bool, area_threshold: float
) -> tuple[TriMesh, dict]:
    """Drop faces with a repeated vertex index and, if ``geometric``, faces of area at most
    ``area_threshold``. Vertices are kept (chain ``remove_unused_vertices`` to drop them)."""
    xp = mesh.xp
    topo = degenerate_mask(xp, mesh.F)
    bad = topo
    if geometric:
        bad = bad | (face_areas64(xp, mesh.V, mesh.F) <= area_threshold)
    keep = xp.nonzero(~bad)[0]
    out = mesh.reindexed(mesh.V, mesh.F[keep], face_take=keep)
    return out, {
        "faces_before": mesh.n_faces,
        "removed": int(bad.sum()),
        "removed_repeated_index": int(topo.sum()),
        "removed_small_area": int((bad & ~topo).sum()),
    }
