"""``isotropic_remesh``: Botsch-Kobbelt isotropic remeshing as rounds of disjoint cavities.

Motivation: simulation, parameterization and display want triangles of one size with angles
near 60 degrees and valences near 6. Botsch and Kobbelt ("A remeshing approach to multiresolution
modeling", SGP 2004) reach that with a simple loop on a target edge length ``L``.

Design: each of ``iterations`` runs

1. split every edge longer than 4/3 L at its midpoint (``dynamic.split``: rounds, longest first);
2. collapse every interior edge shorter than 4/5 L (to its midpoint, or onto a locked end) whose
   collapse passes the link condition and the fold-over test and makes no edge longer than 4/3 L
   (``dynamic.remesh_collapse``; shortest first, cavities = closed one-rings of both ends);
3. flip edges that bring the valences of their four vertices closer to 6 (4 on the boundary)
   (``dynamic.flip``; cavities = the four vertices);

   collapses and flips may lower the smallest angle of their cavity only while it stays above
   10 degrees: without that guard, flat quads of nearly collinear vertices (every midpoint-
   subdivided input is full of them) turned into zero-angle faces;
4. tangential relaxation toward the mean of the one-ring (or its area-weighted centroid)
   (``dynamic.relax``);
5. projection of the moved vertices onto the input triangles (uniform-grid hash of the input
   faces, exact point-triangle distance).

Every step is array code (key sorts, scans, gathers, scatter-min claims) that runs unchanged on
NumPy and CuPy; accepted cavities in a round are disjoint, so the result does not depend on the
order in which a GPU runs them, but float rounding may order priorities differently on the two
backends (the GPU test compares invariants and quality, not bits).

Slivers: faces whose smallest angle is below ``sliver_angle`` degrees are removed first
(:func:`~workers.engine.dynamic.slivers.remove_slivers`: needles collapsed, caps flipped), while
only boundary, non-manifold and seam vertices are locked: those with an edge sharper than
``feature_angle`` (whose vertices would be locked; the iterations reach the others). A sliver's
normal is unreliable, and the dihedral angles beside it used to lock its vertices as features: a
scan's 0.044 degree sliver (rx-giraffe) came back unchanged; now the output's minimum angle is 3
degrees. After the last iteration, faces whose smallest angle is below
:data:`FINAL_SLIVER_ANGLE` go the same way (features, seams and the boundary kept): the last
relaxation leaves caps beside locked vertices. Last, the faces still below :data:`ANGLE_BOUND` are
repaired (:func:`_angle_repair`), in up to :data:`ANGLE_PASSES` passes: flips that raise a quad's
smallest angle while its vertices' summed distance from valence 6 (4 on the boundary) does not
grow, and vertex moves, each vertex to the best of nine points (toward the mean equilateral apex
over its faces' opposite sides, the apex over its worst face's, and its ring's centre, three step
lengths each), kept only where the vertex's worst face gets better. On the shared meshes
(``python -m bench.remesh_quality``, development machine), against one pass toward the mean apex
alone: the output's smallest angle 22.2 -> 29.2 degrees on alligator (input 30.1), 29.8 -> 35.0 on
rx-bumpy-cube (input 35.3), 27.5 -> 33.5 on rx-cloth, 13.4 -> 16.1 on spot, 7.8 -> 9.2 on teapot,
34.1 -> 35.1 on rx-torus, up or equal on the rest; fewer faces below 30 degrees (cow 7.5 -> 6.5 %,
rx-dragon 4.0 -> 2.7 %), for a mean smallest angle lower by up to 0.7 degrees (rx-dragon 49.9 ->
49.3: a move raises its vertex's worst face at the others' expense) and the valence-6 share as it
was.

Preservation: boundary vertices, non-manifold vertices and the vertices of feature edges (dihedral
angle above ``feature_angle``, measured after the sliver removal) are locked: they never move and
are never removed. Boundary and feature edges are split (at their midpoints, so the boundary
polygon and feature lines keep their shape, and the new vertices are locked in turn) but never
collapsed or flipped; non-manifold edges are left alone, and so is an edge whose two faces share
their opposite corner (a fin: two back-to-back triangles), whose split would make an edge of four
faces. Hence the boundary is refined but never coarsened, and no step makes a non-manifold edge or
vertex that was not there. Texture seams (:func:`workers.engine.corners.seam_edges`: where the
corner attributes or the material change) are feature edges too, whatever their dihedral angle:
split at midpoints (the halves stay seams), never collapsed or flipped, their vertices locked, so
every output face lies in one chart of the input's atlas. The Euler characteristic is kept by every
step. Vertex attributes are re-sampled at the end by barycentric interpolation on the input face
nearest each output vertex; face attributes are taken from the input face nearest each output
face's centroid.

Alternatives: the sequential half-edge loops of OpenMesh/pmp/gpytoolbox (one edge at a time, a
queue); RXMesh's patch-local cavities in shared memory (the GPU design this mirrors with global
arrays instead of patches).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import ModuleType
from typing import Any, Literal

from pydantic import Field

from .. import progress
from ..dynamic._edges import (
    EdgeTables,
    Surface,
    claim_pairs,
    compact_vertices,
    edge_table,
    float_priority,
    follows,
    normals,
    sin_min_angle,
)
from ..dynamic.flip import angle_flip_round, valence_flip_round
from ..dynamic.relax import SurfaceProjector, tangential_relax
from ..dynamic.remesh_collapse import collapse_short_edges_rounds
from ..dynamic.seams import key_vertices, record_kept, seam_keys
from ..dynamic.slivers import remove_slivers, sliver_faces
from ..dynamic.split import split_long_edges
from ..errors import MeshError, OpParamsError
from ..geometry import face_areas64
from ..graph import counts, ends_of, scatter_min, sums, unique
from ..mesh import TriMesh
from ._refine import stack_vertex_attrs, unstack_vertex_attrs
from .registry import Operation, OpKind, OpParams, OpResult

#: rounds per step and iteration at most (each step usually settles in a few)
MAX_ROUNDS = 30

#: a step stops once a round accepts fewer than this fraction of its first round's cavities: the
#: long thin tail of rounds (a few edits each, a full edge table rebuild each) is left to the next
#: iteration, as a sequential remesher's single sweep over the edges would leave it
TAIL = 1.0 / 32.0

#: share of an iteration's time per sub-step, for progress (on the CPU, Stanford bunny: the
#: collapse checks take about half, projection a fifth, flips a sixth)
SHARES = {"split": 0.1, "collapse": 0.5, "flip": 0.15, "relax": 0.05, "project": 0.2}
#: the stretch of the op's progress the iterations cover (before: the feature and projection
#: set-up; after: attribute sampling and quality)
ITERATIONS_SPAN = (0.05, 0.95)
#: degrees: after the last iteration, faces whose smallest angle is below this are removed as
#: slivers are at the start (needles collapsed, caps flipped, with the same checks), features and
#: the boundary kept. The last relaxation pulls an interior vertex nearly onto the line of two
#: locked neighbours (a cap between boundary vertices on alligator, beside feature vertices on
#: spot). On the shared meshes (``python -m bench.remesh_quality``, every mesh, development
#: machine) the output's smallest angle went from 12.9 to 22.1 degrees on alligator (input 30.1),
#: 8.0 to 13.4 on spot (input 10.2), 1.7 to 7.8 on teapot (input 3.4), 2.4 to 6.6 on the Stanford
#: bunny, up or equal on the rest; 10 degrees left alligator at 12.9
FINAL_SLIVER_ANGLE = 20.0


class Params(OpParams):
    target_edge_length: float = Field(
        1.0,
        gt=0.0,
        le=1e6,
        description="Target edge length L: absolute, or a multiple of the input's mean edge "
        "length when 'relative' is set.",
    )
    relative: bool = Field(
        True, description="Read target_edge_length relative to the input's mean edge length."
    )
    iterations: int = Field(
        5, ge=1, le=100, description="Split/collapse/flip/relax/project iterations."
    )
    feature_angle: float = Field(
        45.0,
        ge=0.0,
        le=180.0,
        description="Edges whose dihedral angle exceeds this many degrees are features: kept "
        "(split but never collapsed or flipped) and their vertices never move; 180: none. "
        "Measured after the slivers are removed (see sliver_angle).",
    )
    sliver_angle: float = Field(
        5.0,
        ge=0.0,
        le=30.0,
        description="Faces whose smallest angle is below this many degrees are slivers, whose "
        "normals say nothing of the surface: those with an edge sharper than feature_angle are "
        "removed before features are detected (a needle's shortest edge collapsed, a cap's "
        "longest edge flipped, where the checks pass), so the dihedral angles beside them lock "
        "no vertex; 0: none.",
    )
    relaxation: Literal["area", "uniform"] = Field(
        "uniform",
        description="Tangential relaxation target: the plain mean of the neighbours (rounder "
        "triangles and more even edges on the benchmark meshes), or the area-weighted centroid "
        "of the one-ring's faces.",
    )
    project: bool = Field(
        True, description="Project relaxed vertices onto the input surface after every iteration."
    )


def quality(xp: ModuleType, V: Any, F: Any) -> dict[str, Any]:
    """Edge length mean and coefficient of variation, minimum and mean-minimum corner angle
    (degrees), and the valence histogram of interior vertices (keys 3..9, 10 = 10 or more)."""
    E = edge_table(xp, F)
    ln = xp.linalg.norm(V[E.EV[:, 0]] - V[E.EV[:, 1]], axis=1)
    mean = float(ln.mean())
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    angs = []
    for p, q, r in ((a, b, c), (b, c, a), (c, a, b)):
        u, w = q - p, r - p
        angs.append(xp.arctan2(xp.linalg.norm(xp.cross(u, w), axis=1), (u * w).sum(axis=1)))
    ang = xp.degrees(xp.stack(angs, axis=1))
    n = int(V.shape[0])
    val = counts(xp, E.EV.ravel(), n)
    bnd = ends_of(xp, E.EV, E.count != 2, n)
    inner = val[(~bnd) & (val > 0)]
    hist = counts(xp, xp.minimum(inner, 10), 11)
    n_inner = max(int(inner.shape[0]), 1)
    return {
        "edge_length_mean": mean,
        "edge_length_cv": float(ln.std()) / mean if mean > 0 else 0.0,
        "min_angle": float(ang.min()),
        "mean_min_angle": float(ang.min(axis=1).mean()),
        "valence_histogram": {str(k): int(hist[k]) for k in range(3, 11)},
        "valence_6_fraction": int(hist[6]) / n_inner,
    }


def _initial_surface(
    mesh: TriMesh, feature_angle: float, sliver_angle: float, tables: EdgeTables
) -> tuple[Surface, Any, int, dict[str, int]]:
    """The working surface, the vertex attribute layout, the number of seam edges kept
    (:func:`~workers.engine.dynamic.seams.seam_keys`) and what the sliver removal did
    (:func:`~workers.engine.dynamic.slivers.remove_slivers`). Slivers go first, while only the
    boundary, non-manifold and seam vertices are locked; the features are the edges of what is
    left sharper than ``feature_angle``. Features and seams are one key set, their vertices
    locked."""
    xp = mesh.xp
    topo = mesh.topology
    V = mesh.V.astype(xp.float64)
    F = mesh.F.astype(xp.int64)
    locked = topo.boundary_vertices | (topo.vertex_fans() > 1) | ~topo.used_vertices
    locked[topo.EV[topo.non_manifold_edges].ravel()] = True
    seams = seam_keys(xp, F, mesh.n_vertices)
    if seams.shape[0]:
        locked |= key_vertices(xp, seams, mesh.n_vertices)
    A, layout = stack_vertex_attrs(mesh)
    S = Surface(V, F, A, xp.arange(mesh.n_faces, dtype=xp.int64), locked, seams, seams)
    S, slivers = remove_slivers(xp, S, sliver_angle, feature_angle, tables=tables)
    V, F, locked = S.V, S.F, S.locked
    E = tables(F)
    two = E.count == 2
    feature = xp.zeros(0, dtype=xp.int64)
    if feature_angle < 180.0 and bool(two.any()):
        e2 = xp.nonzero(two)[0]
        f0, f1 = E.s0[e2] // 3, E.s1[e2] // 3
        a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
        N = xp.cross(b - a, c - a)
        N = N / xp.maximum(xp.linalg.norm(N, axis=1), 1e-300)[:, None]
        cos = (N[f0] * N[f1]).sum(axis=1)
        sharp = cos < math.cos(math.radians(feature_angle))
        feature = E.key[e2[sharp]]
        locked[E.EV[e2[sharp]].ravel()] = True
    if S.seam is not None and S.seam.shape[0]:
        feature = unique(xp, xp.concatenate([feature, S.seam]))
    S.feature = feature
    return S, layout, int(seams.shape[0]), slivers


def _final_slivers(
    xp: ModuleType, S: Surface, tables: EdgeTables
) -> tuple[Surface, dict[str, int]]:
    """The last relaxation's slivers removed (:func:`remove_slivers` with
    :data:`FINAL_SLIVER_ANGLE`): locked vertices stay, feature and seam edges are not flipped
    (the features, seams among them, are handed over as the edges never to flip). Both key sets
    come back renumbered through the needle collapses: the removal renumbers its ``feature`` and
    ``seam`` fields, so they go in swapped and come out swapped back (handing back the keys of
    before left them naming the vertices before the collapses, and the angle repair then
    flipped texture seams)."""
    seam = S.seam if S.seam is not None else xp.zeros(0, dtype=xp.int64)
    T, done = remove_slivers(
        xp, replace(S, feature=seam, seam=S.feature), FINAL_SLIVER_ANGLE, tables=tables
    )
    return replace(T, feature=T.seam, seam=T.feature if S.seam is not None else None), done


#: degrees: after the last iteration and the sliver removal, quads whose smallest angle is below
#: this are flipped and the free vertices of such faces moved (:func:`_angle_repair`)
ANGLE_BOUND = 35.0
#: passes of :func:`_angle_repair` at most (a round of flips and a round of moves each): the
#: moves of one pass share no face, so a vertex beside a moved one waits for the next; smallest
#: angle on the shared meshes after one, two and three passes: alligator 22.4, 28.3, 29.2
#: degrees, rx-bumpy-cube 31.0, 33.8, 35.0, rx-cloth 29.8, 33.2, 33.5
ANGLE_PASSES = 3
#: degrees: the repair flips no edge whose dihedral angle is larger (the surface would change)
ANGLE_FLIP_DIHEDRAL = 30.0
#: the steps tried toward a vertex's target (fractions of the way), the best one kept
ANGLE_STEPS = (1.0, 0.5, 0.25)


def _angle_repair(
    xp: ModuleType, S: Surface, projector: SurfaceProjector | None, tables: EdgeTables
) -> tuple[Surface, dict[str, int]]:
    """The faces left below :data:`ANGLE_BOUND` by the last relaxation, repaired in passes of
    one round of flips that raise a quad's smallest angle
    (:func:`~workers.engine.dynamic.flip.angle_flip_round`: features and seams kept, no edge
    sharper than :data:`ANGLE_FLIP_DIHEDRAL`) and one round of vertex moves
    (:func:`_angle_moves`), until a pass changes nothing or :data:`ANGLE_PASSES` ran. Returns
    the surface and ``{"flips", "moves"}``."""
    done = {"flips": 0, "moves": 0}
    for _ in range(ANGLE_PASSES):
        S.F, flips = angle_flip_round(
            xp, S.V, S.F, S.feature, ANGLE_BOUND, ANGLE_FLIP_DIHEDRAL, tables
        )
        S, moves = _angle_moves(xp, S, projector)
        done["flips"] += flips
        done["moves"] += moves
        if flips + moves == 0:
            break
    return S, done


def _angle_moves(
    xp: ModuleType, S: Surface, projector: SurfaceProjector | None
) -> tuple[Surface, int]:
    """One round of moves of the free vertices of faces whose smallest angle is below
    :data:`ANGLE_BOUND`: each such vertex tries three targets, the mean over its faces of the
    apex of the equilateral triangle on the face's opposite side (on the vertex's side, in the
    face's plane), that apex for its worst face alone, and the mean of the opposite sides'
    midpoints (the ring's centre), each a step of :data:`ANGLE_STEPS` of the way, tangentially
    (the vertex normal's part removed), then onto the input surface (with a projector; a point
    that finds no input face within reach is not kept), and takes the point whose worst face is
    best. A move is kept only where it raises the smallest angle of
    the vertex's faces and turns no face's normal by 60 degrees or more (each face's own turn:
    two faces of the vertex may turn apart); the vertices
    moved share no face (claimed worst first), so each check holds as made. Returns the
    surface and the moves."""
    V, F = S.V, S.F
    n, m = int(V.shape[0]), int(F.shape[0])
    N = normals(xp, V, F)
    smin = sin_min_angle(xp, V[F[:, 0]], V[F[:, 1]], V[F[:, 2]])
    aim = xp.zeros(n, dtype=bool)
    aim[F[smin < math.sin(math.radians(ANGLE_BOUND))].ravel()] = True
    aim &= ~S.locked
    Fr = F.ravel()
    corner = xp.nonzero(aim[Fr])[0]
    if corner.shape[0] == 0:
        return S, 0
    f, k = corner // 3, corner % 3
    cand = xp.nonzero(aim)[0]
    c = int(cand.shape[0])
    slot = xp.full(n, -1, dtype=xp.int64)
    slot[cand] = xp.arange(c, dtype=xp.int64)
    i = slot[Fr[corner]]
    P, Q = V[F[f, (k + 1) % 3]], V[F[f, (k + 2) % 3]]
    e = Q - P
    mid = 0.5 * (P + Q)
    Nf = N[f]
    perp = xp.cross(Nf, e)
    perp /= xp.maximum(xp.linalg.norm(perp, axis=1), 1e-300)[:, None]
    side = xp.where(((V[Fr[corner]] - mid) * perp).sum(axis=1) < 0, -1.0, 1.0)
    apex = mid + (side * (math.sqrt(3.0) / 2.0) * xp.linalg.norm(e, axis=1))[:, None] * perp
    n_faces = counts(xp, i, c)[:, None]
    old = xp.full(c, 2.0)
    scatter_min(xp, old, i, smin[f])
    # the targets: the mean apex, the apex over the worst face's opposite side (the first such
    # corner where several faces tie) and the mean of the opposite sides' midpoints (the ring's
    # centre)
    worst = xp.full(c, corner.shape[0], dtype=xp.int64)
    at = xp.arange(corner.shape[0], dtype=xp.int64)
    scatter_min(xp, worst, i, xp.where(smin[f] == old[i], at, corner.shape[0]))

    def total(x: Any) -> Any:  # per aimed vertex, the sum over its corners' rows
        return xp.stack([sums(xp, i, x[:, j], c) for j in range(3)], axis=1)

    targets = (total(apex) / n_faces, apex[worst], total(mid) / n_faces)
    nv = total(Nf)
    nv /= xp.maximum(xp.linalg.norm(nv, axis=1), 1e-300)[:, None]
    size = xp.linalg.norm(Nf, axis=1)
    best, best_at = old, V[cand]
    for target in targets:
        d = target - V[cand]
        d -= (d * nv).sum(axis=1)[:, None] * nv
        for step in ANGLE_STEPS:
            X = V[cand] + step * d
            if projector is not None:
                X, _, _, found = projector.nearest(X)
            Xc = X[i]
            n_new = xp.cross(P - Xc, Q - Xc)
            refused = (n_new * Nf).sum(axis=1) <= 0.5 * xp.linalg.norm(n_new, axis=1) * size
            if projector is not None:
                refused |= ~found[i]  # no input face within reach: the move is not kept
            got = xp.full(c, 2.0)
            scatter_min(xp, got, i, xp.where(refused, -1.0, sin_min_angle(xp, Xc, P, Q)))
            better = got > best
            best = xp.where(better, got, best)
            best_at = xp.where(better[:, None], X, best_at)
    ok = best > old
    take = ok[i]
    won = claim_pairs(xp, i[take], f[take], float_priority(xp, old, larger_first=False), m)
    won &= ok
    moved = cand[won]
    if moved.shape[0] == 0:
        return S, 0
    V = V.copy()
    V[moved] = best_at[won]
    return replace(S, V=V), int(moved.shape[0])


#: the most faces a remesh may be asked to make (estimated from the area), as for subdivide
MAX_OUTPUT_FACES = 2**28


def _check_target(xp: ModuleType, V: Any, F: Any, L: float) -> None:
    """Refuse a target length of zero (every edge of the mesh has length 0 and the target is
    relative) and one that would make more than :data:`MAX_OUTPUT_FACES` faces: the surface's
    area over an equilateral triangle's of side ``L``."""
    if not L > 0.0:
        raise MeshError(
            "every edge has length 0: a relative target edge length is 0 too",
            code="mesh.zero_edge_length",
        )
    area = float(face_areas64(xp, V, F).sum())
    estimate = area / (math.sqrt(3.0) / 4.0 * L * L)
    if estimate > MAX_OUTPUT_FACES:
        raise OpParamsError(
            "the target edge length would make too many faces",
            code="op.output_too_large",
            estimated_faces=int(min(estimate, 1e18)),
            limit=MAX_OUTPUT_FACES,
        )


def _stretches(iteration: int, p: Params) -> dict[str, tuple[float, float]]:
    """The stretch of the op's 0..1 each sub-step of ``iteration`` covers (by :data:`SHARES`)."""
    names = [s for s in SHARES if p.project or s != "project"]
    total = sum(SHARES[s] for s in names)
    a, b = ITERATIONS_SPAN
    width = (b - a) / p.iterations
    lo = a + width * iteration
    out: dict[str, tuple[float, float]] = {}
    acc = 0.0
    for s in names:
        out[s] = (lo + width * acc / total, lo + width * (acc + SHARES[s]) / total)
        acc += SHARES[s]
    return out


def remesh(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    V0, F0 = mesh.V.astype(xp.float64), mesh.F.astype(xp.int64)
    E0 = edge_table(xp, F0)
    l0 = float(xp.linalg.norm(V0[E0.EV[:, 0]] - V0[E0.EV[:, 1]], axis=1).mean())
    L = p.target_edge_length * (l0 if p.relative else 1.0)
    _check_target(xp, V0, F0, L)
    # the edge table handed from round to round, derived from the last round's on large meshes
    tables = EdgeTables(xp, follows(xp, mesh.n_faces))
    S, layout, n_seams, slivers = _initial_surface(mesh, p.feature_angle, p.sliver_angle, tables)
    hi, lo = 4.0 / 3.0 * L, 4.0 / 5.0 * L
    # relaxation is tangential: moved vertices stay far closer to the input than l0 / 2
    projector = SurfaceProjector(xp, V0, F0, max(l0, 0.25 * L))
    before = quality(xp, V0, F0)
    totals = {"splits": 0, "collapses": 0, "flips": 0, "projection_misses": 0}
    rounds: dict[str, list[int]] = {"split": [], "collapse": [], "flip": []}
    for it in range(p.iterations):
        span = _stretches(it, p)
        where = f"iteration {it + 1}/{p.iterations}"
        with progress.part(*span["split"], f"{where}, split"):
            S, rs = split_long_edges(xp, S, hi, MAX_ROUNDS, TAIL, tables)
        with progress.part(*span["collapse"], f"{where}, collapse"):
            S, rc = collapse_short_edges_rounds(xp, S, lo, hi, MAX_ROUNDS, TAIL, tables)
        F, flips, first, n_flip_rounds, k = S.F, 0, 0, 0, 0
        with progress.part(*span["flip"], f"{where}, flip"):
            for r in range(MAX_ROUNDS):
                progress.report(
                    progress.rounds_done(r, MAX_ROUNDS, first, k, TAIL), f"round {r + 1}"
                )
                F, k = valence_flip_round(xp, S.V, F, S.feature, tables=tables)
                flips += k
                n_flip_rounds += k > 0
                first = first or k
                if k < max(TAIL * first, 1):
                    break
        S.F = F
        rounds["split"].append(rs["rounds"])
        rounds["collapse"].append(rc["rounds"])
        rounds["flip"].append(n_flip_rounds)
        progress.report(span["relax"][0], f"{where}, relax")
        V = tangential_relax(xp, S.V, S.F, ~S.locked, p.relaxation)
        if p.project:
            progress.report(span["project"][0], f"{where}, project")
            free = xp.nonzero(~S.locked)[0]
            Q, _, _, found = projector.nearest(V[free])
            V[free] = Q
            totals["projection_misses"] += int((~found).sum())
        S.V = V
        totals["splits"] += rs["splits"]
        totals["collapses"] += rc["collapses"]
        totals["flips"] += flips
    S, final = _final_slivers(xp, S, tables)
    S, angles = _angle_repair(xp, S, projector if p.project else None, tables)
    progress.report(ITERATIONS_SPAN[1], "attributes and quality")
    F, kept = compact_vertices(xp, S.F, S.n_vertices)
    V = S.V[kept]
    renum = xp.full(S.n_vertices, -1, dtype=xp.int64)
    renum[kept] = xp.arange(int(kept.shape[0]), dtype=xp.int64)
    record_kept(xp, S.seam, renum)
    # attributes: sampled on the input face nearest each output vertex / face centroid
    out = mesh.reindexed(V.astype(mesh.V.dtype), F.astype(xp.int32), face_take=S.face_src)
    if S.A is not None:
        _, vface, bary, vfound = projector.nearest(V)
        Ain, _ = stack_vertex_attrs(mesh)
        T = F0[xp.maximum(vface, 0)]
        sampled = (bary[:, :, None] * Ain[T]).sum(axis=1)
        A = xp.where(vfound[:, None], sampled, S.A[kept])
        out.vertex_attrs.update(unstack_vertex_attrs(xp, A, layout))
    if mesh.face_attrs:
        _, fface, _, ffound = projector.nearest(V[F].mean(axis=1))
        src = xp.where(ffound, fface, S.face_src)
        out.face_attrs = {k: a[src] for k, a in mesh.face_attrs.items()}
    after = quality(xp, out.V.astype(xp.float64), F)  # as stored
    report: dict[str, Any] = {
        "target_edge_length": L,
        "input_mean_edge_length": l0,
        "iterations": p.iterations,
        "vertices_before": mesh.n_vertices,
        "faces_before": mesh.n_faces,
        "vertices_after": out.n_vertices,
        "faces_after": out.n_faces,
        "feature_edges": int(S.feature.shape[0]),
        "seam_edges": n_seams,
        "locked_vertices": int(S.locked[kept].sum()),
        "slivers_before": int(sliver_faces(xp, V0, F0, p.sliver_angle).sum()),
        "slivers_collapsed": slivers["collapses"],
        "slivers_flipped": slivers["flips"],
        "slivers_after": int(sliver_faces(xp, out.V.astype(xp.float64), F, p.sliver_angle).sum()),
        "final_collapsed": final["collapses"],
        "final_flipped": final["flips"],
        "angle_flips": angles["flips"],
        "angle_moves": angles["moves"],
        **totals,
        "rounds": rounds,
        "quality_before": before,
        "quality_after": after,
    }
    return OpResult(out, report)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return remesh(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy (key sorts, scans, gathers and scatter-min claims)."""
    return remesh(mesh, p)


OP = Operation(
    name="isotropic_remesh",
    summary="Isotropic remeshing (Botsch-Kobbelt) to a target edge length.",
    description="""
    Isotropic remeshing (Botsch and Kobbelt 2004) toward the target edge length L: each
    iteration splits edges longer than 4/3 L, collapses edges shorter than 4/5 L (link condition,
    no fold-over, no new edge above 4/3 L), flips edges toward valence 6 (4 on the boundary),
    relaxes vertices tangentially and projects them back onto the input surface. Each step is a
    sequence of rounds of disjoint cavities chosen by priority claims.

    Slivers first: faces whose smallest angle is below ``sliver_angle`` have normals that say
    nothing of the surface, so before features are detected, where such a face has an edge
    sharper than ``feature_angle``, a needle's shortest edge is collapsed and a cap's longest
    edge flipped (where the link, fold-over and angle checks pass; the surface moves by at most
    the sliver's small side or height). Otherwise the dihedral angles beside them would lock
    their vertices as features and the input's worst angles would come back unchanged. After
    the last iteration the same removal runs once more on the faces whose smallest angle is
    below 20 degrees (features, seams and the boundary kept): the last relaxation can pull a
    vertex nearly onto the line of two locked neighbours. Then the faces still below 35 degrees
    are repaired in up to three passes: flips that raise a quad's smallest angle while the summed
    distance of its four vertices' valences from 6 (4 on the boundary) does not grow (no feature
    or seam edge, no edge with a dihedral angle above 30 degrees), and moves of their free
    vertices toward the equilateral apexes over their faces' opposite sides or the ring's centre,
    tangentially (and back onto the input when ``project`` is set), kept only where the vertex's
    worst face gets better.

    Boundary vertices, non-manifold vertices and feature vertices (on edges with a dihedral
    angle above ``feature_angle``, measured after the sliver removal) never move or disappear;
    boundary and feature edges are split at their midpoints but never collapsed or flipped, so
    the boundary and feature lines keep their shape (and are refined, never coarsened). No step
    makes a non-manifold edge or vertex: an edge whose two faces share their opposite vertex (a
    fin) is never split. Texture seams (edges where the corner attributes, such as UVs, or the
    material differ) are kept the same way as feature edges. The Euler characteristic and the
    orientation are kept. Vertex attributes are interpolated from the nearest input face, face
    attributes taken from the input face nearest each new face's centroid.

    Reports the target length, counts before and after, ``feature_edges`` (the output's edges
    kept as features, seam pieces included), ``seam_edges`` (the input's texture seam edges
    kept), ``slivers_before`` (faces with a smallest angle below ``sliver_angle``),
    ``slivers_collapsed`` and ``slivers_flipped`` (the sliver removal's edits),
    ``final_collapsed`` and ``final_flipped`` (the last removal's), ``angle_flips`` and
    ``angle_moves`` (the angle repair's), ``slivers_after`` (slivers in the output), the
    numbers of splits, collapses, flips, projection misses (a vertex with no input face within
    reach is left where it was), the rounds each step took in each iteration, and the quality
    before and after: edge length mean and coefficient of variation, minimum angle, mean
    of the per-face minimum angle, interior valence histogram and the fraction at valence 6.
    """,
    kind=OpKind.dynamic,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    reports="target_edge_length, input_mean_edge_length, iterations, vertices/faces before and "
    "after, feature_edges, seam_edges, locked_vertices, slivers_before, slivers_collapsed, "
    "slivers_flipped, slivers_after, final_collapsed, final_flipped, angle_flips, angle_moves, "
    "splits, collapses, flips, "
    "projection_misses, rounds (per step and iteration), "
    "quality_before and quality_after (edge_length_mean, edge_length_cv, min_angle, "
    "mean_min_angle, valence_histogram, valence_6_fraction)",
    test_variants=(
        {"iterations": 2},
        {"target_edge_length": 2.0, "relaxation": "uniform"},
    ),
)
