"""``stats``: counts, topology and measures of a mesh, as the file stores it."""

from __future__ import annotations

from typing import Any

from ..geometry import face_corners64, face_cross64
from ..graph import group_rows
from ..mesh import TriMesh
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    pass


def mesh_stats(mesh: TriMesh) -> dict[str, Any]:
    """The statistics dictionary (also used for the job record's before/after figures)."""
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
    degenerate = int(((F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])).sum())
    dup_faces = nf - int(group_rows(xp, xp.sort(F, axis=1)).max() + 1) if nf else 0
    used_idx = xp.nonzero(used)[0]
    dup_verts = n_used - int(group_rows(xp, mesh.V[used_idx] + 0.0).max() + 1) if n_used else 0

    cross = face_cross64(xp, mesh.V, F)
    area = float(0.5 * xp.linalg.norm(cross, axis=1).sum())
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
        "degenerate_faces": degenerate,
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
    """Counts (vertices, faces, edges, unused and duplicate vertices, degenerate and duplicate
    faces), topology (boundary edges and loops, non-manifold edges and bow-tie vertices,
    components, Euler characteristic ``V - E + F`` over used vertices, genus of orientable manifold
    components ``(2 - chi - b) / 2``, closed, orientable, consistently oriented) and measures
    (bounding box, None when there is no vertex; area; the enclosed volume when closed and
    consistently oriented)."""
    return OpResult(mesh, mesh_stats(mesh))


OP = Operation(
    name="stats",
    summary="Counts, topology (boundaries, non-manifold elements, genus) and measures.",
    kind=OpKind.report,
    params=Params,
    numpy=_array,
    cupy=_array,  # the same sort/scan/scatter code: CuPy runs it on the GPU
    reports="see the description; the same figures appear in the job record",
)
