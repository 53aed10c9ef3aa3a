"""``stats``: counts, topology and measures of a mesh, as the file stores it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..geometry import face_corners64, face_cross64
from ..graph import bucket_sort, group_rows, numpy_fast
from ..mesh import TriMesh
from ..reindex import degenerate_mask
from .registry import Operation, OpKind, OpParams, OpResult, Packing


class Params(OpParams):
    pass


def mesh_stats(mesh: TriMesh) -> dict[str, Any]:
    """The statistics dictionary (also used for the job record's before/after figures)."""
    xp = mesh.xp
    topo = mesh.topology
    if numpy_fast(xp):
        return _stats_numpy(mesh)
    # the same faces (the topology is cached with them) and bit for bit the same positions as
    # last time (a job's statistics after a weld that merged nothing and operations that only add
    # attributes): the same figures, for one device copy and comparison of the positions
    return _copy_stats(_by_positions(topo, "stats_generic", mesh.V, lambda: _stats_generic(mesh)))


def _by_positions(topo: Any, key: str, V: Any, make: Any) -> Any:
    """``make()``, memoised on the topology with a copy of the positions it was made from: given
    again while the positions are the same bit for bit (the same array, or an equal one)."""
    memo = topo._cache.get(key)
    if memo is not None and _same_bits(topo.xp, memo[0], V):
        return memo[1]
    value = make()
    topo._cache[key] = (V.copy(), value)
    return value


def _copy_stats(d: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in d.items()}


def _same_bits(xp: Any, a: Any, b: Any) -> bool:
    """Whether two arrays hold the same values bit for bit (``-0.0`` is not ``0.0``, a NaN
    equals itself)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    u = np.dtype(f"u{a.dtype.itemsize}")
    return bool(xp.array_equal(xp.ascontiguousarray(a).view(u), xp.ascontiguousarray(b).view(u)))


def _stats_generic(mesh: TriMesh) -> dict[str, Any]:
    """:func:`mesh_stats` in array code that runs on either backend (the GPU's path)."""
    xp = mesh.xp
    topo = mesh.topology
    nv, nf, ne = mesh.n_vertices, mesh.n_faces, topo.n_edges
    used = topo.used_vertices
    n_used = int(used.sum())
    comp, n_comp = topo.vertex_components()
    n_bnd = int(topo.boundary_edges.shape[0])
    n_nme = int(topo.non_manifold_edges.shape[0])
    n_nmv = int(topo.non_manifold_vertices.shape[0])
    chi = n_used - ne + nf
    closed = n_bnd == 0 and n_nme == 0
    consistent, orientable_face = topo.orientation()
    orientable = bool(orientable_face.all())
    manifold = n_nme == 0 and n_nmv == 0

    F = mesh.F
    repeated = degenerate_mask(xp, F)
    n_repeated = int(repeated.sum())
    dup_faces = nf - int(group_rows(xp, xp.sort(F, axis=1)).max() + 1) if nf else 0
    used_idx = xp.nonzero(used)[0]
    dup_verts = n_used - int(group_rows(xp, mesh.V[used_idx] + 0.0).max() + 1) if n_used else 0

    cross = face_cross64(xp, mesh.V, F)
    norms = xp.linalg.norm(cross, axis=1)
    area = float(0.5 * norms.sum())
    n_zero_area = int(((norms == 0) & ~repeated).sum())
    volume = None
    if closed and consistent:
        a, _, _ = face_corners64(xp, mesh.V, F)
        volume = float((a * cross).sum() / 6.0)

    genus = None
    if manifold and orientable and n_comp > 0:
        genus = _genus(xp, topo, comp, n_comp)

    Vu = mesh.V[used_idx].astype(xp.float64) if n_used else mesh.V.astype(xp.float64)
    bbox_min = bbox_max = bbox_diagonal = None  # an operation may leave no vertex at all
    if Vu.shape[0]:
        lo, hi = Vu.min(axis=0), Vu.max(axis=0)
        bbox_min, bbox_max = [float(x) for x in lo], [float(x) for x in hi]
        bbox_diagonal = float(xp.linalg.norm(hi - lo))
    return {
        "vertices": nv,
        "faces": nf,
        "edges": ne,
        "unused_vertices": nv - n_used,
        "duplicate_vertices": dup_verts,
        "degenerate_faces": n_repeated + n_zero_area,
        "degenerate_faces_repeated_index": n_repeated,
        "degenerate_faces_zero_area": n_zero_area,
        "duplicate_faces": dup_faces,
        "boundary_edges": n_bnd,
        "boundary_loops": topo.boundary_loops(),
        "non_manifold_edges": n_nme,
        "non_manifold_vertices": n_nmv,
        "components": n_comp,
        "euler_characteristic": chi,
        "genus": genus,
        "closed": closed,
        "manifold": manifold,
        "orientable": orientable,
        "consistently_oriented": consistent,
        "bbox_min": bbox_min,
        "bbox_max": bbox_max,
        "bbox_diagonal": bbox_diagonal,
        "area": area,
        "volume": volume,
    }


def _stats_numpy(mesh: TriMesh) -> dict[str, Any]:
    """:func:`mesh_stats` on NumPy, equal to it field for field. Memoised on the topology: the
    figures that depend on the faces alone, and those of the positions with a copy of the
    positions they were computed from. A mesh that keeps its faces (a weld that merged nothing,
    an operation that adds attributes) and bit for bit its positions (the same array, or another
    equal one) pays one comparison of the positions; one whose vertices moved pays only for the
    positions' figures: the duplicate positions, the area and volume, the bounding box."""
    topo = mesh.topology
    t = topo._memo("stats", lambda: _face_figures_numpy(topo))
    V, nv = mesh.V, mesh.n_vertices
    p = _by_positions(
        topo,
        "stats_positions",
        V,
        lambda: _position_figures_numpy(
            V, topo, t["n_used"], t["closed"] and t["consistently_oriented"]
        ),
    )
    return {
        "vertices": nv,
        "faces": t["faces"],
        "edges": t["edges"],
        "unused_vertices": nv - t["n_used"],
        "duplicate_vertices": p["duplicate_vertices"],
        "degenerate_faces": t["degenerate_faces"] + p["zero_area_faces"],
        "degenerate_faces_repeated_index": t["degenerate_faces"],
        "degenerate_faces_zero_area": p["zero_area_faces"],
        "duplicate_faces": t["duplicate_faces"],
        "boundary_edges": t["boundary_edges"],
        "boundary_loops": t["boundary_loops"],
        "non_manifold_edges": t["non_manifold_edges"],
        "non_manifold_vertices": t["non_manifold_vertices"],
        "components": t["components"],
        "euler_characteristic": t["euler_characteristic"],
        "genus": t["genus"],
        "closed": t["closed"],
        "manifold": t["manifold"],
        "orientable": t["orientable"],
        "consistently_oriented": t["consistently_oriented"],
        "bbox_min": None if p["bbox_min"] is None else list(p["bbox_min"]),  # the caller's own
        "bbox_max": None if p["bbox_max"] is None else list(p["bbox_max"]),
        "bbox_diagonal": p["bbox_diagonal"],
        "area": p["area"],
        "volume": p["volume"],
    }


def _position_figures_numpy(V: Any, topo: Any, n_used: int, with_volume: bool) -> dict[str, Any]:
    """The figures of :func:`mesh_stats` that depend on the positions, as it computes them."""
    nv = int(V.shape[0])
    Vu = V if n_used in (0, nv) else V[topo.used_vertices]  # no used vertex: the bbox of all
    area, volume, zero = _area_volume_numpy(V, topo.F, with_volume)
    # faces of zero area whose three indices differ (a repeated index gives a zero cross product
    # too; those are counted from the faces alone)
    repeated = topo._memo("repeated_index", lambda: degenerate_mask(np, topo.F))
    n_zero_area = int(np.count_nonzero(zero & ~repeated)) if zero is not None else 0
    bbox_min = bbox_max = bbox_diagonal = None  # an operation may leave no vertex at all
    if Vu.shape[0]:
        # min and max commute with the exact widening to float64: taken in the stored type
        # (column by column: a reduction along the short axis is twenty times slower)
        lo = np.array([Vu[:, k].min() for k in range(3)], dtype=np.float64)
        hi = np.array([Vu[:, k].max() for k in range(3)], dtype=np.float64)
        bbox_min, bbox_max = [float(x) for x in lo], [float(x) for x in hi]
        bbox_diagonal = float(np.linalg.norm(hi - lo))
    return {
        "duplicate_vertices": n_used - _distinct_rows_numpy(Vu + 0.0) if n_used else 0,
        "zero_area_faces": n_zero_area,
        "bbox_min": bbox_min,
        "bbox_max": bbox_max,
        "bbox_diagonal": bbox_diagonal,
        "area": area,
        "volume": volume,
    }


def _face_figures_numpy(topo: Any) -> dict[str, Any]:
    """The figures of :func:`mesh_stats` that depend on the faces alone (and the used-vertex
    count), as it computes them."""
    nf, ne = topo.n_faces, topo.n_edges
    n_used = int(np.count_nonzero(topo.used_vertices))
    comp, n_comp = topo.vertex_components()
    n_bnd = int(topo.boundary_edges.shape[0])
    n_nme = int(topo.non_manifold_edges.shape[0])
    n_nmv = int(topo.non_manifold_vertices.shape[0])
    consistent, orientable_face = topo.orientation()
    orientable = bool(orientable_face.all())
    manifold = n_nme == 0 and n_nmv == 0
    degenerate = int(
        np.count_nonzero(topo._memo("repeated_index", lambda: degenerate_mask(np, topo.F)))
    )
    genus = None
    if manifold and orientable and n_comp == 1:  # _genus's sums over the one component
        twice_g = 2 - (n_used - ne + nf) - topo.boundary_loops()
        genus = None if twice_g < 0 or twice_g % 2 != 0 else twice_g // 2
    elif manifold and orientable and n_comp > 0:
        genus = _genus(np, topo, comp, n_comp)
    return {
        "n_used": n_used,
        "faces": nf,
        "edges": ne,
        "degenerate_faces": degenerate,
        "duplicate_faces": nf - _distinct_faces_numpy(topo) if nf else 0,
        "boundary_edges": n_bnd,
        "boundary_loops": topo.boundary_loops(),
        "non_manifold_edges": n_nme,
        "non_manifold_vertices": n_nmv,
        "components": n_comp,
        "euler_characteristic": n_used - ne + nf,
        "genus": genus,
        "closed": n_bnd == 0 and n_nme == 0,
        "manifold": manifold,
        "orientable": orientable,
        "consistently_oriented": consistent,
    }


#: faces per block of the NumPy area and volume: the float64 temporaries of a block stay in cache
_BLOCK = 1 << 14

#: odd 64-bit multipliers mixing the bit patterns of a row's coordinates into one hash key
_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)


def _distinct_faces_numpy(topo: Any) -> int:
    """Number of distinct vertex sets among the faces (NumPy), as ``group_rows`` of the sorted
    rows counts them, without sorting rows: the two smallest corners of a face are the ends of
    one of its sides, so ``(edge of that side, largest corner)`` is one int32 pair per face that
    determines the sorted row and is determined by it. Two stable counting sorts order the pairs;
    distinct pairs are the changes between neighbours."""
    F, FE = topo.F, topo.FE
    m = int(F.shape[0])
    largest = np.maximum(np.maximum(F[:, 0], F[:, 1]), F[:, 2]).astype(np.int32)
    # the side opposite a largest corner (side k + 1 is opposite corner k) joins the other two
    side = np.where(largest == F[:, 0], FE[:, 1], np.where(largest == F[:, 1], FE[:, 2], FE[:, 0]))
    edge = (side >> 1).astype(np.int32)
    del side
    faces = np.arange(m, dtype=np.int32)
    _, by_largest, edge_by_largest = bucket_sort(largest, topo.n_vertices, faces, edge)
    offsets, _, largest_sorted = bucket_sort(
        edge_by_largest, topo.n_edges, by_largest, largest[by_largest]
    )
    new = np.empty(m, dtype=bool)
    new[:1] = True
    np.not_equal(largest_sorted[1:], largest_sorted[:-1], out=new[1:])
    starts = offsets[:-1]
    new[starts[starts < m]] = True  # a new edge starts
    return int(np.count_nonzero(new))


def _distinct_rows_numpy(P: Any) -> int:
    """Number of distinct rows of the (k, 3) float array ``P`` (NumPy), as ``group_rows`` counts
    them (exact float comparison; ``-0.0`` must already be ``+0.0``).

    Each row's bit pattern is mixed into one uint64 and the keys are sorted, not the rows: a row
    whose key no other row has is distinct from every other. Only the rows whose key repeats
    (true duplicates, NaN rows, or a hash collision) go to ``group_rows``, which compares them
    exactly."""
    k = int(P.shape[0])
    if k == 0:
        return 0
    if P.dtype.itemsize not in (4, 8):
        return int(group_rows(np, P).max() + 1)
    bits = np.ascontiguousarray(P).view(np.uint32 if P.dtype.itemsize == 4 else np.uint64)
    bits = bits.reshape(k, 3)
    key = bits[:, 0].astype(np.uint64) * np.uint64(_MIX[0])
    key += bits[:, 1].astype(np.uint64) * np.uint64(_MIX[1])
    key += bits[:, 2].astype(np.uint64) * np.uint64(_MIX[2])
    key ^= key >> np.uint64(29)
    sk = np.sort(key)
    repeated = sk[1:][sk[1:] == sk[:-1]]
    if repeated.shape[0] == 0:
        return k
    suspect = np.isin(key, repeated)
    n_suspect = int(np.count_nonzero(suspect))
    return k - n_suspect + int(group_rows(np, P[suspect]).max() + 1)


def _area_volume_numpy(V: Any, F: Any, with_volume: bool) -> tuple[float, float | None, Any]:
    """``(area, volume or None, zero-area mask or None)`` on NumPy, equal to the bit to the
    generic path's whole-array expressions: :func:`_face_norms_numpy`'s arrays, each summed once
    as a whole in NumPy's pairwise order, as the generic path sums its own. The mask marks the
    faces whose cross product is exactly zero (None when no face has one)."""
    norms, prod = _face_norms_numpy(V, F, with_volume)
    area = float(0.5 * norms.sum())
    volume = float(prod.sum() / 6.0) if prod is not None else None
    zero = norms == 0
    return area, volume, zero if zero.any() else None


def _face_norms_numpy(V: Any, F: Any, with_products: bool) -> tuple[Any, Any]:
    """``(|cross|, a * cross or None)``, (m,) and (m, 3) float64, with ``cross`` and ``a`` as
    face_cross64 and face_corners64 give them, equal to the bit to
    ``np.linalg.norm(cross, axis=1)`` and ``a * cross``.

    Per block of faces, coordinate by coordinate (gathers from one float64 column per
    coordinate, contiguous arithmetic), the same element operations: the corners widened to
    float64, np.cross's products and differences, the squared norm summed in the order
    ``np.add.reduce`` sums a row of three (checked at import; ``np.linalg.norm`` otherwise).
    The blocks' temporaries stay in cache instead of a dozen arrays of the mesh's size."""
    m = int(F.shape[0])
    VT = np.ascontiguousarray(V.T, dtype=np.float64)  # widening is exact: gather, then widen
    norms = np.empty(m, dtype=np.float64)
    prod = np.empty((m, 3), dtype=np.float64) if with_products else None
    for i in range(0, m, _BLOCK):
        Fb = F[i : i + _BLOCK]
        f0, f1, f2 = (np.ascontiguousarray(Fb[:, k]) for k in range(3))
        a = [VT[k].take(f0) for k in range(3)]
        u = [VT[k].take(f1) - a[k] for k in range(3)]  # b - a
        w = [VT[k].take(f2) - a[k] for k in range(3)]  # c - a
        # np.cross: cp0 = u1 w2 - u2 w1, cp1 = u2 w0 - u0 w2, cp2 = u0 w1 - u1 w0
        c0 = u[1] * w[2]
        c0 -= u[2] * w[1]
        c1 = u[2] * w[0]
        c1 -= u[0] * w[2]
        c2 = u[0] * w[1]
        c2 -= u[1] * w[0]
        if _ROW_SUM_LEFT:
            norms[i : i + _BLOCK] = np.sqrt((c0 * c0 + c1 * c1) + c2 * c2)
        else:  # a NumPy that sums a row of three the other way
            norms[i : i + _BLOCK] = np.linalg.norm(np.stack([c0, c1, c2], axis=1), axis=1)
        if prod is not None:
            p = prod[i : i + _BLOCK]
            np.multiply(a[0], c0, out=p[:, 0])
            np.multiply(a[1], c1, out=p[:, 1])
            np.multiply(a[2], c2, out=p[:, 2])
    return norms, prod


#: whether ``np.add.reduce`` sums a row of three as ``(x0 + x1) + x2`` (as NumPy 2 does; the other
#: order gives ``1 + 2**-52`` here)
_ROW_SUM_LEFT = bool(np.add.reduce(np.array([[1.0, 2.0**-53, 2.0**-53]]), axis=1)[0] == 1.0)


def _genus(xp: Any, topo: Any, comp: Any, n_comp: int) -> int | None:
    """Sum over components of ``g = (2 - chi_c - b_c) / 2`` (orientable manifold surfaces with
    ``b_c`` boundary loops); None if some component gives a non-integer."""
    ev = topo.EV
    v_c = xp.bincount(comp[comp >= 0], minlength=n_comp)
    e_c = xp.bincount(comp[ev[:, 0]], minlength=n_comp)
    f_c = xp.bincount(comp[topo.F[:, 0]], minlength=n_comp)
    chi_c = v_c - e_c + f_c
    verts, loop, n_loops = topo.boundary_loop_labels()
    b_c = xp.zeros(n_comp, dtype=xp.int64)
    if n_loops:
        first = xp.zeros(n_loops, dtype=xp.int64)
        first[loop] = xp.arange(loop.shape[0], dtype=xp.int64)  # any vertex of each loop
        b_c = xp.bincount(comp[verts[first]], minlength=n_comp)
    twice_g = 2 - chi_c - b_c
    if bool((twice_g < 0).any()) or bool((twice_g % 2 != 0).any()):
        return None
    return int((twice_g // 2).sum())


def _array(mesh: TriMesh, p: Params) -> OpResult:
    return OpResult(mesh, mesh_stats(mesh))


OP = Operation(
    name="stats",
    summary="Counts, topology (boundaries, non-manifold elements, genus) and measures.",
    description="""
    Counts (vertices, faces, edges, unused and duplicate vertices, degenerate and duplicate
    faces), topology (boundary edges and loops, non-manifold edges and bow-tie vertices,
    components, Euler characteristic ``V - E + F`` over used vertices, genus of orientable manifold
    components ``(2 - chi - b) / 2``, closed, orientable, consistently oriented) and measures
    (bounding box, None when there is no vertex; area; the enclosed volume when closed and
    consistently oriented). The mesh is measured as the file stores it (nothing is welded
    first) and is not changed; the same figures appear in the job record.

    Degenerate faces by kind: ``degenerate_faces_repeated_index`` (a vertex index appears twice
    in the face) and ``degenerate_faces_zero_area`` (three distinct indices but zero area: the
    cross product of two sides, in float64, is exactly zero, as for coincident or collinear
    positions); ``degenerate_faces`` is their sum. Non-manifold elements by kind:
    ``non_manifold_edges`` (edges with three or more faces) and ``non_manifold_vertices``
    (vertices whose faces form more than one fan: bow-ties).
    """,
    kind=OpKind.report,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="see the description; the same figures appear in the job record",
    packing=Packing.measure,
    test_variants=({},),
)
