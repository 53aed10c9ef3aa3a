"""``repair``: drop degenerate and duplicate faces, split non-manifold edges and vertices, orient
faces consistently per component (outward for closed ones).

Everything is sort, scan, scatter and connected components, written once for NumPy and CuPy.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from pydantic import Field

from ..corners import DERIVED, carries
from ..geometry import face_areas64
from ..graph import compact_groups, connected_components, scatter_min
from ..mesh import TriMesh
from ..topology import Topology
from .registry import Operation, OpKind, OpParams, OpResult, Packing


class Params(OpParams):
    remove_degenerate: bool = Field(
        True,
        description="Drop faces with a repeated vertex index (and, with `geometric`, no area).",
    )
    geometric: bool = Field(
        False, description="Also drop faces whose area is at most `area_threshold`."
    )
    area_threshold: float = Field(
        0.0, ge=0.0, le=1e12, description="Area at or below which a face counts as degenerate."
    )
    remove_duplicates: bool = Field(
        True,
        description="Drop faces with the same vertex set as an earlier face (either orientation); "
        "the first one is kept.",
    )
    split_non_manifold: bool = Field(
        True,
        description="Split non-manifold edges (faces beyond the kept pair get their own copies of "
        "the edge's vertices) and non-manifold vertices (one vertex copy per fan of faces).",
    )
    orient: bool = Field(
        True,
        description="Flip faces so that each edge-connected component is consistently oriented "
        "(the orientation most of its faces already have wins; ties keep the lowest face's).",
    )
    outward: bool = Field(
        True,
        description="Flip closed, orientable components whose signed volume is negative, so that "
        "their normals point outward.",
    )


def _face_keys(xp: ModuleType, F: Any, n: int) -> Any:
    """A key per face such that faces with the same vertex set share it: the sorted corners as
    one int64 ``(a * n + b) * n + c`` where ``n**3`` fits (meshes of up to 2,097,151 vertices),
    otherwise a group id from two key sorts that cannot overflow (``(a, b)`` first, then
    ``(group, c)``)."""
    S = xp.sort(F.astype(xp.int64), axis=1)
    if n < 2_097_151:
        return (S[:, 0] * n + S[:, 1]) * n + S[:, 2]
    g1, _ = compact_groups(xp, S[:, 0] * n + S[:, 1])
    g2, _ = compact_groups(xp, g1 * n + S[:, 2])
    return g2


def _repeats(xp: ModuleType, keys: Any) -> Any:
    """Where ``keys`` repeats an earlier element's key (one stable sort)."""
    order = xp.argsort(keys, kind="stable")
    sk = keys[order]
    later = xp.zeros(keys.shape[0], dtype=bool)
    later[order[1:][sk[1:] == sk[:-1]]] = True
    return later


def _kept_pairs(xp: ModuleType, topo: Topology) -> tuple[Any, Any, Any]:
    """Side pairs ``(s, t)`` that stay joined: both sides of every two-face edge and, on an edge
    with three or more faces, its first side and the first later side running the other way (the
    second side when none does). Returns the pairs and the sides cut loose (the others)."""
    cnt = topo.edge_face_count
    off = topo.ef_offsets
    sides = topo.ef_sides
    bits = topo.FE.ravel() & 1
    two = xp.nonzero(cnt == 2)[0]
    s2, t2 = sides[off[two]], sides[off[two] + 1]
    nm = xp.nonzero(cnt >= 3)[0]
    if int(nm.shape[0]) == 0:
        return s2, t2, xp.zeros(0, dtype=xp.int64)
    # every side of a non-manifold edge with its rank inside the edge's CSR row
    n_sides = int(sides.shape[0])
    edge_of_pos = xp.zeros(n_sides, dtype=xp.int64)
    edge_of_pos[off[1:-1]] = 1
    edge_of_pos = xp.cumsum(edge_of_pos)  # the edge owning each CSR position
    pos = xp.arange(n_sides, dtype=xp.int64)
    rank = pos - off[edge_of_pos]
    in_nm = cnt[edge_of_pos] >= 3
    first_bit = bits[sides[off[edge_of_pos]]]
    opposite = bits[sides] != first_bit
    big = n_sides + 1
    score = xp.where(opposite & (rank >= 1), rank, xp.where(rank == 1, big, 2 * big))
    best = xp.full(topo.n_edges, 2 * big, dtype=xp.int64)
    sel = xp.nonzero(in_nm)[0]
    scatter_min(xp, best, edge_of_pos[sel], score[sel])
    partner_rank = xp.where(best[nm] == big, 1, best[nm])
    s3 = sides[off[nm]]
    t3 = sides[off[nm] + partner_rank]
    partner_of_pos = xp.full(topo.n_edges, -1, dtype=xp.int64)
    partner_of_pos[nm] = partner_rank
    loose = in_nm & (rank != 0) & (rank != partner_of_pos[edge_of_pos])
    return xp.concatenate([s2, s3]), xp.concatenate([t2, t3]), sides[loose]


def _split(xp: ModuleType, F: Any, n: int, topo: Topology, isolated: Any = None) -> tuple[Any, Any]:
    """One vertex per fan of corners joined across the kept side pairs (corners flagged in
    ``isolated`` join nothing). Returns the new faces and ``take`` (the original vertex of every
    output vertex). A vertex's first fan (by lowest corner) keeps its id; others are appended."""
    s, t, _ = _kept_pairs(xp, topo)
    Fr = F.ravel().astype(xp.int64)
    fs, ks = s // 3, s % 3
    ft, kt = t // 3, t % 3
    a0 = 3 * fs + ks
    a1 = 3 * fs + (ks + 1) % 3
    t0 = 3 * ft + kt
    t1 = 3 * ft + (kt + 1) % 3
    same_dir = Fr[a0] == Fr[t0]
    b0 = xp.where(same_dir, t0, t1)
    b1 = xp.where(same_dir, t1, t0)
    nc = int(Fr.shape[0])
    A, B = xp.concatenate([a0, a1]), xp.concatenate([b0, b1])
    if isolated is not None:
        ok = ~(isolated[A] | isolated[B])
        A, B = A[ok], B[ok]
    lab = connected_components(xp, nc, A, B)
    lab, _ = compact_groups(xp, lab)  # canonical: numbered by lowest corner on either backend
    key = Fr * nc + lab
    fan_of_corner, first = compact_groups(xp, key)  # fans numbered by their lowest corner
    vert_of_fan = Fr[first]
    # a fan is its vertex's first one when no earlier-numbered fan has the same vertex
    lowest = xp.full(n, nc, dtype=xp.int64)
    scatter_min(xp, lowest, vert_of_fan, first)
    primary = lowest[vert_of_fan] == first
    extra = xp.nonzero(~primary)[0]
    new_id = vert_of_fan.copy()
    new_id[extra] = n + xp.arange(extra.shape[0], dtype=xp.int64)
    F_new = new_id[fan_of_corner].reshape(-1, 3).astype(xp.int32)
    take = xp.concatenate([xp.arange(n, dtype=xp.int64), vert_of_fan[extra]])
    return F_new, take


def split_non_manifold(
    xp: ModuleType, F: Any, n: int, topo: Topology | None = None
) -> tuple[Any, Any, dict[str, int]]:
    """Fans split; where a face cut loose from a non-manifold edge is still joined to the kept
    pair's fan around both ends (a fin), a second pass gives the corners of such faces on that
    edge their own vertices. A mesh with neither kind of non-manifold element comes back as it
    is (``take`` is then None): each vertex has one fan, which keeps its id."""
    topo = Topology.build(F, n) if topo is None else topo
    stats = {
        "non_manifold_edges": int(topo.non_manifold_edges.shape[0]),
        "non_manifold_vertices": int(topo.non_manifold_vertices.shape[0]),
    }
    if not stats["non_manifold_edges"] and not stats["non_manifold_vertices"]:
        return F, None, stats
    F1, take = _split(xp, F, n, topo)
    if stats["non_manifold_edges"]:
        topo1 = Topology.build(F1, int(take.shape[0]))
        _, _, loose = _kept_pairs(xp, topo1)
        if int(loose.shape[0]):
            isolated = xp.zeros(3 * int(F.shape[0]), dtype=bool)
            isolated[loose] = True
            isolated[3 * (loose // 3) + (loose % 3 + 1) % 3] = True
            F1, take = _split(xp, F, n, topo, isolated)
            # cutting those corners loose can leave fans that touch only at a vertex: split again
            F1, take2 = _split(xp, F1, int(take.shape[0]), Topology.build(F1, int(take.shape[0])))
            take = take[take2]
    return F1, take, stats


def _orient(
    xp: ModuleType, V: Any, F: Any, topo: Topology, outward: bool
) -> tuple[Any, dict[str, int]]:
    """A flip flag per face from the orientation double cover (see ``Topology.orientation``),
    over edges with exactly two faces."""
    m = int(F.shape[0])
    cnt = topo.edge_face_count
    off, sides = topo.ef_offsets, topo.ef_sides
    two = xp.nonzero(cnt == 2)[0]
    s, t = sides[off[two]], sides[off[two] + 1]
    bits = topo.FE.ravel() & 1
    same = bits[s] == bits[t]  # walked the same way: one of the two must flip
    fs, ft = s // 3, t // 3
    comp = connected_components(xp, m, fs, ft)
    comp, seeds = compact_groups(xp, comp)
    n_comp = int(seeds.shape[0])
    if bool(same.any()):
        u = xp.concatenate([fs, fs + m])
        v = xp.concatenate([xp.where(same, ft + m, ft), xp.where(same, ft, ft + m)])
        lab = connected_components(xp, 2 * m, u, v)
        seed = seeds[comp]
        orientable_comp = lab[seeds] != lab[seeds + m]
        orientable = orientable_comp[comp]
        flip = orientable & (lab[xp.arange(m)] != lab[seed])
        # majority: flip the whole component when more of its faces would flip than stay
        n_flip = xp.bincount(comp, weights=flip.astype(xp.float64), minlength=n_comp)
        n_all = xp.bincount(comp, minlength=n_comp).astype(xp.float64)
        invert = (2 * n_flip > n_all)[comp] & orientable
        flip = flip ^ invert
    else:  # every shared edge walked both ways: each component is oriented already
        orientable_comp = xp.ones(n_comp, dtype=bool)
        flip = xp.zeros(m, dtype=bool)
    stats = {
        "components": n_comp,
        "non_orientable_components": int((~orientable_comp).sum()),
    }
    closed_comp = xp.zeros(n_comp, dtype=bool)
    made_outward = 0
    if outward:
        open_face = (cnt[topo.FE // 2] != 2).any(axis=1)
        n_open = xp.bincount(comp, weights=open_face.astype(xp.float64), minlength=n_comp)
        closed_comp = (n_open == 0) & orientable_comp
        G = xp.where(flip[:, None], F[:, [0, 2, 1]], F).astype(xp.int64)
        P = V.astype(xp.float64)
        vol = (P[G[:, 0]] * xp.cross(P[G[:, 1]], P[G[:, 2]])).sum(axis=1)
        cvol = xp.bincount(comp, weights=vol, minlength=n_comp)
        turn = closed_comp & (cvol < 0)
        made_outward = int(turn.sum())
        flip = flip ^ turn[comp]
    stats["closed_components"] = int(closed_comp.sum())
    stats["components_turned_outward"] = made_outward
    return flip, stats


def repair(mesh: TriMesh, p: Params) -> tuple[TriMesh, dict[str, Any]]:
    xp = mesh.xp
    n, m0 = mesh.n_vertices, mesh.n_faces
    F = mesh.F
    report: dict[str, Any] = {"faces_before": m0, "vertices_before": n}
    keep = xp.ones(m0, dtype=bool)
    rep_idx = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
    n_deg = n_small = 0
    if p.remove_degenerate:
        bad = rep_idx
        if p.geometric:
            bad = bad | (face_areas64(xp, mesh.V, F) <= p.area_threshold)
        keep &= ~bad
        n_deg = int(rep_idx.sum())
        n_small = int((bad & ~rep_idx).sum())
    report["degenerate_faces_removed"] = n_deg
    report["zero_area_faces_removed"] = n_small
    n_dup = 0
    if p.remove_duplicates:
        idx = xp.nonzero(keep)[0]
        dup = _repeats(xp, _face_keys(xp, F[idx], n))
        n_dup = int(dup.sum())
        keep[idx[dup]] = False
    report["duplicate_faces_removed"] = n_dup
    all_kept = int(keep.sum()) == m0
    faces = None if all_kept else xp.nonzero(keep)[0]
    F = F if faces is None else F[faces]
    # the topology of F as it now is, while it is (a mesh kept whole has its own already)
    topo = mesh.topology if all_kept and F.shape[0] else None
    take = None
    n_nm_e = n_nm_v = added = 0
    if p.split_non_manifold and F.shape[0]:
        topo = Topology.build(F, n) if topo is None else topo
        F, take, st = split_non_manifold(xp, F, n, topo)
        if take is not None:  # F split: its topology is another
            topo = None
        n_nm_e, n_nm_v = st["non_manifold_edges"], st["non_manifold_vertices"]
        added = 0 if take is None else int(take.shape[0]) - n
    report["non_manifold_edges"] = n_nm_e
    report["non_manifold_vertices"] = n_nm_v
    report["vertices_added"] = added
    V = mesh.V if take is None else mesh.V[take]
    n_flipped = 0
    flipped = None
    orient_stats = {
        "components": 0,
        "non_orientable_components": 0,
        "closed_components": 0,
        "components_turned_outward": 0,
    }
    if p.orient and F.shape[0]:
        topo = Topology.build(F, int(V.shape[0])) if topo is None else topo
        flip, orient_stats = _orient(xp, V, F, topo, p.outward)
        n_flipped = int(flip.sum())
        if n_flipped:
            F = xp.where(flip[:, None], F[:, [0, 2, 1]], F).astype(xp.int32)
            topo = None
            flipped = flip
    report["faces_flipped"] = n_flipped
    report.update(orient_stats)
    out = mesh.reindexed(
        V,
        F.astype(xp.int32),
        vertex_take=take if added else None,
        face_take=faces,
    )
    if topo is not None and faces is None and take is None:  # the faces as they came
        out = out.with_topology(topo)
    if carries(mesh) and not any(k in mesh.corner_attrs for k in DERIVED):
        # every face kept is its row of the input, its corners turned as the face was: the
        # corners go with them here (what the surface search of corners.transfer finds, for
        # no search; tangents, whose handedness a turned face changes, are left to it)
        out.corner_attrs = {
            k: _turned(xp, v if faces is None else v[faces], flipped)
            for k, v in mesh.corner_attrs.items()
        }
        out.materials = mesh.materials
    if p.split_non_manifold and take is None:
        # none to split, and turning faces over makes none: the counts stay 0
        report["non_manifold_edges_after"] = report["non_manifold_vertices_after"] = 0
    elif out.n_faces:
        t = out.topology
        report["non_manifold_edges_after"] = int(t.non_manifold_edges.shape[0])
        report["non_manifold_vertices_after"] = int(t.non_manifold_vertices.shape[0])
    else:
        report["non_manifold_edges_after"] = report["non_manifold_vertices_after"] = 0
    report["faces_after"] = out.n_faces
    report["vertices_after"] = out.n_vertices
    return out, report


def _turned(xp: ModuleType, values: Any, flipped: Any) -> Any:
    """Per-corner ``values`` (F, 3, ...) with the corners of the ``flipped`` faces in the order
    ``[0, 2, 1]``, as the faces' vertices were."""
    if flipped is None:
        return values
    flip = flipped.reshape((-1,) + (1,) * (values.ndim - 1))
    return xp.where(flip, values[:, [0, 2, 1]], values)


def _array(mesh: TriMesh, p: Params) -> OpResult:
    out, report = repair(mesh, p)
    return OpResult(out, report)


OP = Operation(
    name="repair",
    summary="Remove degenerate/duplicate faces, split non-manifold edges and vertices, orient.",
    description="""
    Clean a mesh's connectivity in four passes, each optional: (1) drop faces with a repeated
    vertex (and, with ``geometric``, of area at most ``area_threshold``); (2) drop faces whose
    vertex set repeats an earlier face's (sorted-corner keys, two integer sorts); (3) split
    non-manifold edges and vertices: on an edge with three or more faces the first face and the
    first later one running the other way stay joined, the others are cut loose; then corners
    joined across the remaining two-face edges form fans (connected components) and every fan
    of a vertex beyond its first gets a copy of the vertex (appended; attributes copied); (4)
    orient: the orientation double cover (face ``f`` as ``f+``/``f-``) labelled by connected
    components tells each face whether it agrees with its component's seed; the orientation most
    of the component's faces already have wins; closed orientable components with negative
    signed volume are turned over. Non-orientable components (a Moebius strip) are left as they
    are and counted. Vertices are not welded: chain ``weld`` first.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # sort/scan/scatter/components: the same array code on CuPy
    reports="faces_before, vertices_before, degenerate_faces_removed, zero_area_faces_removed, "
    "duplicate_faces_removed, non_manifold_edges, non_manifold_vertices, vertices_added, "
    "faces_flipped, components, non_orientable_components, closed_components, "
    "components_turned_outward, non_manifold_edges_after, non_manifold_vertices_after, "
    "faces_after, vertices_after",
    packing=Packing.local,
    test_variants=(
        {},
        {"outward": False, "geometric": True, "remove_duplicates": False},
    ),
)
