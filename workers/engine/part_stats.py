"""The statistics of every member of a pack (:mod:`.packing`) from one topology of the pack:
:func:`~.ops.stats.mesh_stats` of each member alone, field for field (bit for bit on NumPy), as
per-part reductions, on either backend.

Members share no vertex, so every edge, fan, boundary loop and component lies in one member:
counts are bincounts by part. The sums (area, volume) are taken per member over its own
contiguous slice of the pack's per-face values, which NumPy sums in the same pairwise order as
the member's own array; the per-face values are the ones ``mesh_stats`` computes
(``_face_norms_numpy``). Rebuilding each member's topology instead costs more than the rest of
a small member's pipeline (on the GPU, hundreds of launches per member).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backend import to_numpy
from .geometry import face_corners64, face_cross64
from .graph import group_rows, unique
from .mesh import TriMesh
from .ops.stats import _face_norms_numpy
from .reindex import degenerate_mask


def part_stats(mesh: TriMesh, v_off: np.ndarray, f_off: np.ndarray) -> list[dict[str, Any]]:
    """``mesh_stats`` of each part of ``mesh`` (NumPy or CuPy): part ``i`` has vertices
    ``v_off[i]:v_off[i + 1]`` and faces ``f_off[i]:f_off[i + 1]``, and no face of one part uses
    a vertex of another. The counts are reductions on the mesh's backend over its (cached)
    topology; the sums and bounding boxes are taken on the host, per part, from one copy of the
    per-face and per-vertex values. On CuPy the per-face values are ``mesh_stats``'s generic
    expressions and the sums NumPy's, not CuPy's: the area and volume may differ from the
    member's own GPU figures in the last bits."""
    xp = mesh.xp
    n_parts = int(v_off.shape[0]) - 1
    topo = mesh.topology
    V, F = mesh.V, mesh.F
    nv, nf = np.diff(v_off), np.diff(f_off)
    vp = xp.asarray(np.repeat(np.arange(n_parts), nv))
    fp = xp.asarray(np.repeat(np.arange(n_parts), nf))

    def per_part(parts: Any) -> np.ndarray:
        return to_numpy(xp.bincount(parts, minlength=n_parts))

    EV = topo.EV
    ep = vp[EV[:, 0]]
    ne = per_part(ep)
    used = topo.used_vertices
    n_used = per_part(vp[used])
    comp, n_comp_all = topo.vertex_components()
    comp_part = xp.full(n_comp_all, -1, dtype=xp.int64)
    comp_part[comp[used]] = vp[used]
    n_comp = per_part(comp_part)
    n_bnd = per_part(ep[topo.boundary_edges])
    n_nme = per_part(ep[topo.non_manifold_edges])
    n_nmv = per_part(vp[topo.non_manifold_vertices])
    verts, loop, n_loops_all = topo.boundary_loop_labels()
    loop_vertex = xp.zeros(n_loops_all, dtype=xp.int64)
    loop_vertex[loop] = verts  # any vertex of each loop
    n_loops = per_part(vp[loop_vertex])
    consistent, orientable_face = topo.orientation()
    consistent_p = np.ones(n_parts, dtype=bool)
    if not consistent:  # Topology.orientation's test, per part
        s, t = topo.ef_pairs()
        two = topo.edge_face_count[topo.FE.ravel()[s] // 2] == 2
        s, t = s[two], t[two]
        bits = topo.FE.ravel() & 1
        same = bits[s] == bits[t]
        consistent_p = per_part(fp[s[same] // 3]) == 0
    orientable = per_part(fp[~orientable_face]) == 0
    manifold = (n_nme == 0) & (n_nmv == 0)
    closed = (n_bnd == 0) & (n_nme == 0)

    repeated = degenerate_mask(xp, F)
    n_repeated = per_part(fp[repeated])
    face_groups = group_rows(xp, xp.sort(F, axis=1))
    dup_faces = nf - per_part(fp[_any_member(xp, face_groups)])
    used_idx = xp.nonzero(used)[0]
    lab = group_rows(xp, V[used_idx] + 0.0)
    # equal positions in two parts share a label: keyed by part
    span = int(lab.max()) + 1 if int(lab.shape[0]) else 1
    distinct = unique(xp, vp[used_idx].astype(xp.int64) * span + lab) // span
    dup_verts = n_used - per_part(distinct)

    if xp is np:
        norms, prod = _face_norms_numpy(V, F, True)
    else:  # mesh_stats's generic expressions
        cross = face_cross64(xp, V, F)
        norms = xp.linalg.norm(cross, axis=1)
        prod = face_corners64(xp, V, F)[0] * cross
    n_zero_area = per_part(fp[(norms == 0) & ~repeated])

    # genus: (2 - chi_c - b_c) / 2 per component, summed over the part's components
    nc = n_comp_all
    v_c = xp.bincount(comp[comp >= 0], minlength=nc)
    e_c = xp.bincount(comp[EV[:, 0]], minlength=nc)
    f_c = xp.bincount(comp[F[:, 0]], minlength=nc)
    b_c = xp.bincount(comp[loop_vertex], minlength=nc)
    twice_g = 2 - (v_c - e_c + f_c) - b_c
    odd = (twice_g < 0) | (twice_g % 2 != 0)
    genus_bad = per_part(comp_part[odd]) > 0
    genus_sum = to_numpy(xp.bincount(comp_part, weights=twice_g // 2, minlength=n_parts))

    # one copy each to the host: the per-part sums and extremes are NumPy's
    norms, prod, V, used = to_numpy(norms), to_numpy(prod), to_numpy(V), to_numpy(used)
    out = []
    for i in range(n_parts):
        v0, v1, f0, f1 = int(v_off[i]), int(v_off[i + 1]), int(f_off[i]), int(f_off[i + 1])
        nu = int(n_used[i])
        Vp = V[v0:v1]
        Vu = Vp if nu in (0, v1 - v0) else Vp[used[v0:v1]]
        bbox_min = bbox_max = bbox_diagonal = None
        if Vu.shape[0]:
            lo = np.array([Vu[:, k].min() for k in range(3)], dtype=np.float64)
            hi = np.array([Vu[:, k].max() for k in range(3)], dtype=np.float64)
            bbox_min, bbox_max = [float(x) for x in lo], [float(x) for x in hi]
            bbox_diagonal = float(np.linalg.norm(hi - lo))
        genus = None
        if manifold[i] and orientable[i] and n_comp[i] > 0 and not genus_bad[i]:
            genus = int(genus_sum[i])
        volume = None
        if closed[i] and consistent_p[i]:
            volume = float(prod[f0:f1].sum() / 6.0)
        out.append(
            {
                "vertices": v1 - v0,
                "faces": f1 - f0,
                "edges": int(ne[i]),
                "unused_vertices": v1 - v0 - nu,
                "duplicate_vertices": int(dup_verts[i]),
                "degenerate_faces": int(n_repeated[i] + n_zero_area[i]),
                "degenerate_faces_repeated_index": int(n_repeated[i]),
                "degenerate_faces_zero_area": int(n_zero_area[i]),
                "duplicate_faces": int(dup_faces[i]),
                "boundary_edges": int(n_bnd[i]),
                "boundary_loops": int(n_loops[i]),
                "non_manifold_edges": int(n_nme[i]),
                "non_manifold_vertices": int(n_nmv[i]),
                "components": int(n_comp[i]),
                "euler_characteristic": nu - int(ne[i]) + (f1 - f0),
                "genus": genus,
                "closed": bool(closed[i]),
                "manifold": bool(manifold[i]),
                "orientable": bool(orientable[i]),
                "consistently_oriented": bool(consistent_p[i]),
                "bbox_min": bbox_min,
                "bbox_max": bbox_max,
                "bbox_diagonal": bbox_diagonal,
                "area": float(0.5 * norms[f0:f1].sum()),
                "volume": volume,
            }
        )
    return out


def _any_member(xp: Any, labels: Any) -> Any:
    """An element of each label ``0..k-1`` (the labels of ``group_rows``)."""
    if int(labels.shape[0]) == 0:
        return xp.zeros(0, dtype=xp.int64)
    first = xp.zeros(int(labels.max()) + 1, dtype=xp.int64)
    first[labels] = xp.arange(labels.shape[0], dtype=xp.int64)  # whichever write lands
    return first
