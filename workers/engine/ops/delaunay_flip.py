"""``delaunay_flip``: flip edges until every interior edge is locally Delaunay.

Motivation: intrinsic-looking meshes (cotangent Laplacians with non-negative weights, well-shaped
triangles for FEM) want every interior edge locally Delaunay: the two angles facing it sum to at
most pi. Flipping a non-Delaunay edge of a planar quad makes it Delaunay; Lawson's algorithm
repeats that until none is left (Lawson 1977; on surfaces, the extrinsic version of Bobenko and
Springborn 2007 / geometry-central's ``flipToDelaunay``).

Design: rounds of disjoint cavities (``workers.engine.dynamic.flip``). The edge table is built
once and follows the flips (:func:`~workers.engine.dynamic.flip.edges_after_flips`: the six
sides a flip changes, the edges renumbered in key order by a merge; it is built again each
round on a mesh with an edge of three faces or more, and on the GPU below
:data:`~workers.engine.dynamic._edges.FOLLOW_MIN_FACES`). Each round measures the
opposite-angle sums, and every non-Delaunay edge whose flip passes the preconditions and lowers
its opposite-angle sum becomes a candidate with priority "largest excess first"; candidates
claim their two faces by a scatter-min of packed keys, winners flip at once. On a non-planar
quad the flipped edge can be non-Delaunay again, and extrinsic flips are not guaranteed to
terminate on curved surfaces; requiring the sum to drop rules out flipping an edge back and
forth, and ``max_rounds`` bounds the rest.

The patched path (GPU, ``TESSERA_GPU_PATH=patched``; :mod:`workers.engine.dynamic.patched_flip`)
first flips inside patches, all rounds of every patch in one kernel, then runs the rounds above
for what crosses the patches. It is not the default: the rounds that follow cost what they cost
before (bench/RESULTS.md, "Delaunay flips inside patches").

Alternatives: a sequential queue (geometry-central) flips one edge at a time; intrinsic
triangulations (Sharp et al.) always terminate but change the mesh into a different data structure.

Testing: after the op, every interior edge that is still non-Delaunay is counted under exactly one
reason it could not be flipped (``blocked``); on the shared meshes nothing is left ``unresolved``.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from .. import paths, progress
from ..dynamic._edges import edge_table, float_priority, follows
from ..dynamic.flip import (
    BOUNDARY,
    REASONS,
    apply_flips,
    edges_after_flips,
    flip_quads,
    opposite_angle_sums,
    select_flips,
)
from ..dynamic.patched_flip import MAX_ROUNDS, PATCH_SIZE, flip_in_patches, patch_sides
from ..dynamic.seams import record_kept, seam_keys
from ..mesh import TriMesh
from ..patches import morton_patches
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    max_rounds: int = Field(
        100, ge=1, le=10_000, description="Most rounds of parallel flips before giving up."
    )
    feature_angle: float = Field(
        45.0,
        ge=0.0,
        le=180.0,
        description="Edges whose dihedral angle (between the two face normals) exceeds this many "
        "degrees are feature edges and never flipped; 180 flips regardless of the angle.",
    )
    angle_tolerance: float = Field(
        1e-9,
        ge=0.0,
        le=0.1,
        description="An edge is locally Delaunay when its two opposite angles sum to at most "
        "pi plus this many radians.",
    )


def delaunay(mesh: TriMesh, p: Params, *, patched: bool | None = None) -> OpResult:
    """The op; ``patched``: flip inside patches first (:mod:`~..dynamic.patched_flip`), else
    only rounds over the whole mesh. By default the GPU's path choice
    (:func:`~..paths.wants_patches`: global unless ``TESSERA_GPU_PATH=patched``, the measured
    reasons in :data:`~..paths.PATCHED`); the CPU never, where the patches' array code does
    more work than the rounds it saves (``python -m bench.delaunay --sizes 7e4 --repeat 1
    --device cpu``: 7.0 s against 2.5 s at 278K faces, development machine)."""
    xp = mesh.xp
    if patched is None:
        patched = xp.__name__ == "cupy" and paths.wants_patches("delaunay_flip")
    V = mesh.V.astype(xp.float64)
    F = mesh.F.astype(xp.int64)
    n, m = mesh.n_vertices, mesh.n_faces
    limit = math.pi + p.angle_tolerance
    seams = seam_keys(xp, F, n)
    flips, rounds, before, first = 0, 0, None, 0
    patch_flips = patch_rounds = 0
    path = "global"
    E = edge_table(xp, F)
    # the table follows the flips (edges_after_flips) unless an edge has three faces or more,
    # or the GPU builds it faster (_edges.FOLLOW_MIN_FACES)
    follow = follows(xp, m) and m > 0 and int(E.count.max()) <= 2
    while True:
        Q = flip_quads(xp, V, F, E, p.feature_angle, seams)
        old, new = opposite_angle_sums(xp, V, Q)
        bad = (Q.reason != BOUNDARY) & (old > limit)
        if before is None:
            before = int(bad.sum())
            if patched and before and m:
                progress.report(0.0, "flips inside patches")
                F, patch_flips, patch_rounds = _inside_patches(mesh, V, F, E, seams, limit, p)
                flips += patch_flips
                path = "patched"
                E = edge_table(xp, F)
                follow = follow and int(E.count.max()) <= 2
                continue
        flippable = bad & (Q.reason == 0) & (new < old)
        # the count (not just any()) in the same one read to the host: it estimates progress
        left = int(flippable.sum())
        if rounds >= p.max_rounds or left == 0:
            break
        first = first or left
        progress.report(
            progress.rounds_done(rounds, p.max_rounds, first, left),
            f"round {rounds + 1}, {left} to flip",
        )
        acc = select_flips(
            xp, Q, flippable, float_priority(xp, old - math.pi, larger_first=True), m, n
        )
        F = apply_flips(xp, F, Q, acc)
        E = edges_after_flips(xp, E, Q, acc) if follow else edge_table(xp, F)
        flips += int(acc.shape[0])
        rounds += 1
    # why every edge still non-Delaunay was left: its flip's failing precondition, or no gain
    why = xp.where(Q.reason == 0, len(REASONS), Q.reason)[bad & ~flippable]
    counts = xp.bincount(why, minlength=len(REASONS) + 1)
    blocked = {name: int(counts[i]) for i, name in enumerate(REASONS) if i not in (0, BOUNDARY)}
    blocked["no_improvement"] = int(counts[len(REASONS)])
    record_kept(xp, seams)
    out = TriMesh(
        mesh.V, F.astype(xp.int32), mesh.vertex_attrs, mesh.face_attrs, source=mesh.source
    )
    report: dict[str, Any] = {
        "flips": flips,
        "rounds": rounds,
        "patch_flips": patch_flips,
        "patch_rounds": patch_rounds,
        "interior_edges": int((Q.reason != BOUNDARY).sum()),
        "non_delaunay_before": before,
        "non_delaunay_after": int(bad.sum()),
        "blocked": blocked,
        "unresolved": int(flippable.sum()),
        "seam_edges": int(seams.shape[0]),
        "execution": {"path": path},
    }
    return OpResult(out, report)


def _inside_patches(
    mesh: TriMesh, V: Any, F: Any, E: Any, seams: Any, limit: float, p: Params
) -> tuple[Any, int, int]:
    """The flips inside Morton patches of at most ``PATCH_SIZE`` faces, all rounds of every
    patch in one kernel on the GPU."""
    xp = mesh.xp
    label, _, _, sizes = morton_patches(xp, mesh, PATCH_SIZE)
    P = patch_sides(xp, F, E, label, int(sizes.shape[0]), mesh.n_vertices, seams)
    rounds = min(p.max_rounds, MAX_ROUNDS)
    return flip_in_patches(xp, V, F, P, limit, p.feature_angle, rounds)


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    return delaunay(mesh, p)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """The twin's array code on CuPy (key sorts, gathers, scatter-min claims)."""
    return delaunay(mesh, p)


OP = Operation(
    name="delaunay_flip",
    summary="Flip edges until every interior edge is locally Delaunay (vertices stay).",
    description="""
    Flip interior edges until each is locally Delaunay (its two opposite angles sum to at most
    pi + ``angle_tolerance``) or ``max_rounds`` rounds have run. Vertices do not move and keep
    their attributes; a flipped pair of faces keeps its two face ids, attributes and orientation.

    Each round flips a set of disjoint edges at once: every non-Delaunay edge whose flip is
    allowed and lowers its opposite-angle sum claims its two faces with a key (largest excess
    first, then edge id); an edge flips iff it owns both (deterministic, order-free). A flip is
    allowed on an interior manifold edge (two consistently oriented faces) that is not a feature
    edge (dihedral angle above ``feature_angle``), when the new edge does not exist yet and
    neither new face is degenerate or turned against the old normals. Texture seams (edges where
    the corner attributes, such as UVs, or the material differ) are never flipped.

    Reports ``flips``, ``rounds``, ``interior_edges``, ``non_delaunay_before``,
    ``non_delaunay_after`` and, for the edges left non-Delaunay, ``blocked`` by reason
    (``feature``, ``exists``, ``fold``, ``seam``, ``no_improvement``: on a curved surface the flip
    would not lower the sum), ``unresolved`` (still flippable when ``max_rounds`` ran out) and
    ``seam_edges`` (the texture seam edges kept).
    Boundary and non-manifold edges are not counted (they have no Delaunay condition).
    ``patch_flips`` and ``patch_rounds``: the flips made inside patches and the most rounds a
    patch ran, on the GPU's patched path (``execution.path``: ``patched`` where that pass ran,
    else ``global``; zero on the global path): one kernel, a block per patch, flips an edge there
    when both its faces are in the patch and one end of the new edge has all its faces there;
    the rounds over the whole mesh do the rest. There ``max_rounds`` bounds the rounds inside
    each patch (up to 32) and, separately, the rounds over the whole mesh (``rounds``).
    """,
    kind=OpKind.dynamic,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    reports="flips, rounds, interior_edges, non_delaunay_before, non_delaunay_after, blocked "
    "(per reason: feature, exists, fold, seam, no_improvement), unresolved (flippable edges left "
    "when max_rounds ran out), seam_edges, patch_flips, patch_rounds, execution (path: patched "
    "or global)",
    test_variants=(
        {},
        {"feature_angle": 180.0, "max_rounds": 3},
    ),
)
