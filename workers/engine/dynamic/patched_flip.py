"""Delaunay flips inside patches: a cavity operation run by one kernel, a block per patch.

The RXMesh way of running a dynamic operation (the dynamic RXMesh paper; the dissertation's
programming model): the mesh is cut into patches (:func:`~workers.engine.patches.morton_patches`,
at most :data:`PATCH_SIZE` faces each), every patch's faces and the adjacency of their sides sit
in one block's shared memory, and the block claims, checks and fills cavities there, round after
round, with no host in the loop; what crosses a patch boundary is left to the rounds over the
whole mesh that follow (``delaunay_flip``).

A flip (:mod:`.flip`: ``(a, b, c), (b, a, d) -> (a, d, c), (b, c, d)``) runs inside a patch when

* both faces of its edge are in the patch, the edge is not a texture seam, it has exactly two
  faces walked in opposite directions and ``c != d``;
* one end of the new edge ``c-d`` is *inner*: all of its faces lie in the patch (a flip inside a
  patch keeps that so). Call ``x`` the smaller inner end. Every edge at ``x`` is then in the
  patch, so "``c-d`` exists already" is answered there, and no other patch can make an edge at
  ``x`` in the meantime;
* the preconditions of :func:`.flip.flip_quads` hold (not a feature edge at ``feature_angle``, no
  degenerate or turned face), and the flip is wanted: the opposite angles sum to more than
  ``limit`` and the flip lowers the sum.

Each round every such flip claims its two faces and ``x`` with the key ``(priority, side)``,
priority largest excess first (:func:`~._edges.float_priority`), side the edge's first side in
the patch (ties go to the lower face id, as in the rounds over the whole mesh); a flip whose key
holds all three is applied. Two winners share no face, and no two create the same edge (they would
share ``x``), so each winner's checks, made before the round, still hold after it. The faces are
rewritten in place and so is the side adjacency: a side that moves to another slot takes its
twin's new slot (:func:`_apply`). A patch stops after a round without candidates or after
``max_rounds``.

Patches never read or write each other's faces or claims, so running the rounds of all patches at
once as array code (:func:`flip_in_patches`, NumPy or CuPy) gives what the kernel gives
(``kernels/flip.cu``: ``patched_delaunay_flips``), the same expressions compiled without FMA
contraction: the GPU test finds the same faces, flips and rounds on every shared mesh and a
jittered grid, against the array code on CuPy (NumPy's arctangent may round otherwise; the CPU
never takes this path). An angle sum may still differ from CuPy's array code in its last bit
(CuPy's norm rounds otherwise, see :func:`.flip.opposite_angle_sums`), which would change a
decision only at an exact tie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..graph import counts, scatter_min
from ._edges import EdgeTable, angle_at, claim, edge_keys, edge_lookup, float_priority
from .flip import quad_folds

#: faces per patch at most: 48 bytes of faces and side adjacency, 24 of candidate keys and 8 of
#: claims per face in shared memory, 40 KiB at 512
PATCH_SIZE = 512
#: rounds inside a patch at most (a patch of 512 faces seldom needs a dozen)
MAX_ROUNDS = 32
#: shared memory per face slot of the kernel
_SMEM_PER_FACE = 80
#: dynamic shared memory a block may take without opting in
_SMEM_LIMIT = 48 * 1024


@dataclass(eq=False)
class PatchSides:
    """Faces grouped by patch and the adjacency of their sides inside each patch.

    ``offsets (k + 1,)`` int64 and ``faces (m,)`` int64: the patches' global face ids, each patch
    in increasing order; a *local side* ``3 i + j`` is side ``j`` of ``faces[i]``. ``twin (3 m,)``
    int64: the local side of the same edge in the same patch, ``-1`` where the edge is not
    flipped inside a patch (one face or more than two, the other face in another patch, a seam).
    ``inner (n,)`` bool: vertices whose faces all lie in one patch. ``cap``: the largest patch's
    face count."""

    offsets: Any
    faces: Any
    twin: Any
    inner: Any
    cap: int

    @property
    def n_patches(self) -> int:
        return int(self.offsets.shape[0]) - 1


def patch_sides(
    xp: ModuleType, F: Any, E: EdgeTable, label: Any, n_patches: int, n: int, seams: Any = None
) -> PatchSides:
    """:class:`PatchSides` of the faces ``F (m, 3)`` int64 with the edge table ``E``, patch
    labels ``label (m,)`` in ``[0, n_patches)`` and ``n`` vertices; ``seams``: sorted int64 keys
    of edges never flipped, or None."""
    m = int(F.shape[0])
    label = label.astype(xp.int64)
    faces = xp.argsort(label, kind="stable")
    sizes = counts(xp, label, n_patches)
    offsets = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(sizes)])
    pos = xp.empty(m, dtype=xp.int64)
    pos[faces] = xp.arange(m, dtype=xp.int64)
    side = (3 * faces[:, None] + xp.arange(3, dtype=xp.int64)).ravel()
    e = E.of_side[side]
    two = E.count[e] == 2
    other = xp.where(two, xp.where(E.s0[e] == side, E.s1[e], E.s0[e]), side)
    ok = two & (label[other // 3] == label[side // 3])
    if seams is not None and seams.shape[0]:
        ok &= ~edge_lookup(xp, seams, E.key[e])[0]
    twin = xp.where(ok, 3 * pos[other // 3] + other % 3, -1)
    corner_label = xp.repeat(label, 3)
    big = xp.iinfo(xp.int64).max
    lo = xp.full(n, big, dtype=xp.int64)
    scatter_min(xp, lo, F.ravel(), corner_label)
    neg = xp.full(n, big, dtype=xp.int64)
    scatter_min(xp, neg, F.ravel(), -corner_label)
    inner = (lo != big) & (lo == -neg)
    cap = int(sizes.max()) if n_patches else 0
    return PatchSides(offsets, faces, twin, inner, cap)


def kernel_fits(P: PatchSides, n: int) -> bool:
    """Whether the kernel takes these patches: its shared memory within the default limit and
    vertex ids within its 32-bit faces (else the array code runs)."""
    return _SMEM_PER_FACE * P.cap <= _SMEM_LIMIT and n < 2**31


def flip_in_patches(
    xp: ModuleType,
    V: Any,
    F: Any,
    P: PatchSides,
    limit: float,
    feature_angle: float = 180.0,
    max_rounds: int = MAX_ROUNDS,
    *,
    kernel: bool = True,
) -> tuple[Any, int, int]:
    """Flip non-Delaunay edges inside the patches ``P`` of ``F (m, 3)`` int64 over ``V (n, 3)``
    float64 (module docstring). Returns ``(F, flips, rounds)``: a new face array, the flips made
    and the most rounds any patch ran with a flip. On the GPU with ``kernel`` one launch, a block
    per patch; else array code, all patches' rounds at once."""
    if P.n_patches == 0:
        return F, 0, 0
    if kernel and xp.__name__ == "cupy" and kernel_fits(P, int(V.shape[0])):
        return _flip_kernel(xp, V, F, P, limit, feature_angle, max_rounds)
    m, n = int(F.shape[0]), int(V.shape[0])
    Fl = F[P.faces]
    twin = P.twin.copy()
    sides = xp.arange(3 * m, dtype=xp.int64)
    flips = rounds = 0
    for _ in range(max_rounds):
        s0 = xp.nonzero(twin > sides)[0]
        s1 = twin[s0]
        wanted, x, prio = _candidates(xp, V, Fl, s0, s1, P.inner, limit, feature_angle)
        pick = xp.nonzero(wanted)[0]
        if pick.shape[0] == 0:
            break
        s0, s1, x, prio = s0[pick], s1[pick], x[pick], prio[pick]
        elements = xp.stack([s0 // 3, s1 // 3, m + x], axis=1)
        won = xp.nonzero(claim(xp, elements, prio, m + n, passes=1))[0]
        Fl, twin = _apply(xp, Fl, twin, s0[won], s1[won])
        flips += int(won.shape[0])
        rounds += 1
    out = F.copy()
    out[P.faces] = Fl
    return out, flips, rounds


def _candidates(
    xp: ModuleType,
    V: Any,
    Fl: Any,
    s0: Any,
    s1: Any,
    inner: Any,
    limit: float,
    feature_angle: float,
) -> tuple[Any, Any, Any]:
    """For the edges of the local side pairs ``s0 < s1``: whether each flip runs this round, its
    claimed vertex ``x`` and its priority (the kernel's ``flip_wanted``, expression for
    expression; the opposite-angle test first, which all but a few edges fail)."""
    f, k = s0 // 3, s0 % 3
    g, h = s1 // 3, s1 % 3
    a, b, c = Fl[f, k], Fl[f, (k + 1) % 3], Fl[f, (k + 2) % 3]
    p, q, d = Fl[g, h], Fl[g, (h + 1) % 3], Fl[g, (h + 2) % 3]
    Pa, Pb, Pc, Pd = V[a], V[b], V[c], V[d]
    old = angle_at(xp, Pc, Pa, Pb) + angle_at(xp, Pd, Pa, Pb)
    ok = xp.zeros(s0.shape[0], dtype=bool)
    x = xp.zeros(s0.shape[0], dtype=xp.int64)
    prio = float_priority(xp, old - math.pi, larger_first=True)
    ic, id_ = inner[c], inner[d]
    i = xp.nonzero((p == b) & (q == a) & (c != d) & (ic | id_) & (old > limit))[0]
    if i.shape[0] == 0:
        return ok, x, prio
    a, b, c, d, ic, id_ = a[i], b[i], c[i], d[i], ic[i], id_[i]
    Pa, Pb, Pc, Pd = Pa[i], Pb[i], Pc[i], Pd[i]
    new = angle_at(xp, Pa, Pc, Pd) + angle_at(xp, Pb, Pc, Pd)
    sel = new < old[i]
    n0 = xp.cross(Pb - Pa, Pc - Pa)
    n1 = xp.cross(Pa - Pb, Pd - Pb)
    if feature_angle < 180.0:
        lim = math.cos(math.radians(feature_angle))
        norms = xp.linalg.norm(n0, axis=1) * xp.linalg.norm(n1, axis=1)
        sel &= ~((n0 * n1).sum(axis=1) < lim * norms)
    sel &= ~quad_folds(xp, Pa, Pb, Pc, Pd, n0, n1)
    # the new edge must not exist: every edge at x is in the patch's faces
    present = xp.unique(edge_keys(xp, Fl.ravel(), Fl[:, [1, 2, 0]].ravel()))
    sel &= ~edge_lookup(xp, present, edge_keys(xp, c, d))[0]
    ok[i] = sel
    x[i] = xp.where(ic & id_, xp.minimum(c, d), xp.where(ic, c, d))
    return ok, x, prio


def _apply(xp: ModuleType, Fl: Any, twin: Any, s0: Any, s1: Any) -> tuple[Any, Any]:
    """Flip the edges of the local side pairs ``(s0, s1)`` (disjoint faces): the faces
    ``(a, b, c), (b, a, d)`` become ``(a, d, c), (b, c, d)`` in their slots; each surviving side
    moves to its new slot ``mv`` and its twin is the old twin's new slot; the new edge's two sides
    (slot 1 of both faces) are each other's twins."""
    m3 = int(twin.shape[0])
    f, k = s0 // 3, s0 % 3
    g, h = s1 // 3, s1 % 3
    a, b, c = Fl[f, k], Fl[f, (k + 1) % 3], Fl[f, (k + 2) % 3]
    d = Fl[g, (h + 2) % 3]
    mv = xp.arange(m3, dtype=xp.int64)
    mv[3 * f + (k + 1) % 3] = 3 * g  # b-c: slot 0 of (b, c, d)
    mv[3 * f + (k + 2) % 3] = 3 * f + 2  # c-a: slot 2 of (a, d, c)
    mv[3 * g + (h + 1) % 3] = 3 * f  # a-d: slot 0 of (a, d, c)
    mv[3 * g + (h + 2) % 3] = 3 * g + 2  # d-b: slot 2 of (b, c, d)
    mv[s0] = -1
    mv[s1] = -1
    src = xp.nonzero(mv >= 0)[0]
    t = twin[src]
    new_twin = xp.full(m3, -1, dtype=xp.int64)
    new_twin[mv[src]] = xp.where(t >= 0, mv[xp.maximum(t, 0)], -1)
    new_twin[3 * f + 1] = 3 * g + 1
    new_twin[3 * g + 1] = 3 * f + 1
    Fl = Fl.copy()
    Fl[f] = xp.stack([a, d, c], axis=1)
    Fl[g] = xp.stack([b, c, d], axis=1)
    return Fl, new_twin


def _flip_kernel(
    xp: ModuleType,
    V: Any,
    F: Any,
    P: PatchSides,
    limit: float,
    feature_angle: float,
    max_rounds: int,
) -> tuple[Any, int, int]:
    from ..kernels.loader import launch_blocks, load_kernel

    i64 = xp.int64
    k, n = P.n_patches, int(V.shape[0])
    out = xp.ascontiguousarray(F, dtype=i64).copy()
    vclaim = xp.empty(n, dtype=xp.uint64)
    flips = xp.zeros(k, dtype=i64)
    rounds = xp.zeros(k, dtype=i64)
    use_feature = feature_angle < 180.0
    lim = math.cos(math.radians(feature_angle)) if use_feature else 0.0
    args = (
        xp.ascontiguousarray(V, dtype=xp.float64),
        xp.ascontiguousarray(F, dtype=i64),
        xp.ascontiguousarray(P.faces, dtype=i64),
        xp.ascontiguousarray(P.offsets, dtype=i64),
        xp.ascontiguousarray(P.twin, dtype=i64),
        xp.ascontiguousarray(P.inner, dtype=xp.uint8),
        xp.int32(use_feature),
        xp.float64(lim),
        xp.float64(limit),
        xp.int32(max_rounds),
        xp.int32(P.cap),
        out,
        vclaim,
        flips,
        rounds,
    )
    kern = load_kernel("flip", "patched_delaunay_flips")
    launch_blocks(kern, k, 256, args, op="delaunay_flip", shared_mem=_SMEM_PER_FACE * P.cap)
    return out, int(flips.sum()), int(rounds.max())
