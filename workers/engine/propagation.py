"""Geodesic distance by parallel front propagation: the triangle update iterated to a fixed point.

A vertex's distance is relaxed, from the previous iterate, by every face around it: the face's other
two corners ``A`` and ``B`` (distances ``dA``, ``dB``) are unfolded into the plane with a virtual
source ``S`` at distance ``dA`` from ``A`` and ``dB`` from ``B`` on the far side of edge ``AB``;
when the straight line from ``S`` to the vertex crosses ``AB`` the candidate is ``|S C|`` (the
planar wave front through the triangle, as in fast marching on triangulated domains), otherwise the
better of the two edge paths ``dA + |AC|``, ``dB + |BC|``. ``S`` is a real source only when ``dA``
and ``dB`` come from the same unfolded point; where two fronts meet (around a saddle vertex, over a
crease) the circles meet nearer than either, and ``|S C|`` falls short (by 7 % on fandisk). So ``S``
is checked against ``D``, the vertex across ``AB`` (the face the front comes through): when ``D``
lies in ``S``'s wedge over ``AB`` a real source reaches it in at most ``|S D|``, and a virtual
source with ``dD > |S D|`` is refused (the edge paths remain; the update of another face around
``C`` carries the true front). Measured against exact geodesics this takes the worst error on the
shared meshes from 7.0 % to 4.5 %; the virtual corners below go unchecked (their side is no mesh
edge; checking them against the vertex across the real side they stand on refused true fronts: 5.9 %
too long on rocker-arm). Sources are 0, everything else starts at infinity; the iteration stops when
no value changes. This is the iterative scheme of the parallel geodesic methods (fast iterative
method, the toplesets propagation that RXMesh's geodesic application runs): a fixed point of the
update, reached from above.

The schedule (which vertices an iteration updates) is the frontier with a band: a vertex that
changed passes its value on only when it is below a threshold ``tau``; then every vertex with a
corner that reads it is updated, from all of its corners and the previous iterate. A changed
vertex at or above ``tau`` waits; when an iteration has nothing to update, ``tau`` rises by
:data:`BAND` median side lengths (:func:`band_width`). Without the band (``band=None``) every
changed vertex passes its value on at once, and this is the plain Jacobi iteration step for
step (a vertex none of whose inputs changed would not change). The band matters because the
Jacobi iteration settles by small steps: on the bunny a vertex is updated 56.5 times on average
at 278k faces and 100.9 times at 1.1M as the values behind it improve; with the band about six
times (``python -m bench.propagation_work``), the front crosses the band before the next one opens,
and the iterations grow by 2-3x (``bench/RESULTS.md``, "Geodesic propagation in a frontier
schedule"). The update is not monotone in the order values arrive (a virtual source is refused
only once the vertex across is known), so the two schedules reach slightly different fixed
points: within 3e-5 of each other at 17.8M faces, within 0.8 % at single vertices of the shared
meshes, with the same errors against exact geodesics. The schedule is the same on every backend,
so the numbers are too.

Several sources. The unfolding is only sound when ``dA`` and ``dB`` are distances to the same
source: mixing two sources' fronts places a virtual source that does not exist, and the
candidate can fall far below the true distance (measured against exact geodesics from 8 sources:
37 % too short on rx-sphere3 and rx-dragon, next to the boundaries between the sources' regions).
Unfolding only same-source pairs fixes that but overshoots there instead (31 %): the shortest
path from one source often crosses a triangle whose far corner is nearer another source, so the
first source's front is not known at that corner. So every vertex keeps two fronts, ``(d1, l1)``
its best distance and the source (label) it comes from, and ``(d2, l2)`` the best distance from
any other source; a face offers, for each label its two other corners hold, the candidate of the
two corners' distances to that source (an edge path when only one corner knows it), and the
vertex keeps the best two labels in the order ``(distance, label)``. A vertex's first front is
its distance. With one source the second fronts stay empty and this is the plain update.

Implementations that give the same numbers (every operation is written in double in the
same order, and the CUDA kernels are compiled without FMA contraction):

- :func:`propagate_numpy`: array code over index lists, one vectorized pass over the targets'
  corners per iteration and a segmented minimum per vertex (the op's CPU path): an iteration
  costs its front, not the mesh.
- :func:`propagate_frontier`: the same schedule on the GPU over lists, the launches of 16
  iterations in one CUDA graph (the op's GPU path).
- :func:`propagate_global` and :func:`propagate_patched`: the plain Jacobi iteration
  (``band=None``), one GPU thread per vertex over the vertex→face CSR in global memory, and the
  same body on the patched path (one block per patch, the VF query in shared memory) with
  RXMesh's active-set filter (a patch runs only when one of its vertices changed). They were the
  op's GPU paths before the frontier (11.8 s at 17.8M faces against 0.44 s) and stay as its
  baselines (``python -m bench.propagation_schedules``).

Accuracy is that of first-order fast marching (error O(h)); the test suite measures it against
libigl's exact polyhedral geodesics on every shared mesh (``geodesic_distance``'s docstring has
the figures), exact great-circle distances on spheres and Euclidean distances on flat meshes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import progress
from .backend import to_numpy
from .errors import MeshError
from .graph import csr_from_pairs, unique
from .mesh import TriMesh

#: iterations beyond which propagation gives up (a multiple of the vertex count, see _cap)
CAP_PER_VERTEX = 4
#: the frontier schedule's band, in median side lengths (:func:`band_width`). On the bunny at
#: 278k faces (``python -m bench.propagation_work``, one source) 4 takes the updates per vertex
#: from 56.5 (Jacobi) to 5.8 in 539 iterations (273), the distances within 8e-4 of Jacobi's at
#: any vertex (3e-7 on average); 1, 2 and 8 give 5.1, 5.3 and 6.8 updates in 861, 663 and 477
#: iterations. On the H100 at 17.8M faces 8 and 16 were no faster than 4 (0.42 and 0.45 s
#: against 0.44 s in file order, 0.63 and 0.67 s against 0.62 s shuffled: the fewer iterations
#: are paid for in updates; ``python -m bench.propagation_schedules --bands 8,16``).
BAND = 4.0
#: faces whose sides set the band's width (the first ones; a median of a sample is exact on
#: either backend, a mean over all sides would differ in its last bits)
BAND_SAMPLE = 1 << 16


def _cap(n: int) -> int:
    return CAP_PER_VERTEX * n + 100


def _report(it: int, n: int) -> None:
    """Progress after ``it`` iterations. How many a mesh needs is not known in advance (on the
    shared meshes one to three times sqrt(n): the front crosses the surface, then the values
    settle), so the estimate is ``1 - exp(-2 it / sqrt(n))``, the same on every path. Worked
    out only when a report is due (this runs every iteration on the CPU)."""
    if progress.due():
        progress.report(1.0 - math.exp(-2.0 * it / math.sqrt(max(n, 1))), f"iteration {it}")


def _not_converged(iterations: int) -> MeshError:
    return MeshError(
        "geodesic propagation did not converge",
        code="op.not_converged",
        iterations=iterations,
    )


def initial(xp: Any, n: int, sources: Any) -> Any:
    d = xp.full(n, xp.inf, dtype=xp.float64)
    d[sources] = 0.0
    return d


def _length(P: Any, Q: Any) -> Any:
    d = P - Q
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


#: a triangle candidate is refused when the opposite vertex's distance exceeds its distance from
#: the virtual source by more than this factor (rounding aside: a real source never does)
SLACK = 1.000000001


def candidate(dA: Any, dB: Any, a: Any, b: Any, c: Any, dD: Any, e: Any, f: Any) -> Any:
    """Distance at ``C`` from the triangle ``A B C`` given ``dA``, ``dB`` and the side lengths
    ``a = |BC|``, ``b = |AC|``, ``c = |AB|`` (NumPy arrays; mirrors ``tri_candidate`` in
    ``kernels/propagation.cu`` operation for operation).

    ``D`` is the vertex across ``AB`` (the face ``A B D`` the front comes through; ``dD`` its
    distance to the same source, inf where there is none), ``e = |AD|`` and ``f = |BD|``. The
    virtual source ``S`` placed from ``dA`` and ``dB`` is a real one only when both come from the
    same unfolded point; where two fronts meet (around a saddle vertex, across a crease) it is a
    point nearer than either, and ``|S C|`` too short. A real source sees ``D`` no farther than
    ``|S D|`` when ``D`` lies in its wedge over ``AB``, so a virtual source with ``dD > |S D|``
    (by more than rounding, ``SLACK``) is refused and the edge paths remain."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        edge = np.minimum(dA + b, dB + a)
        two_c = 2.0 * c
        Sx = ((dA - dB) * (dA + dB) + c * c) / two_c
        Sy2 = (dA - Sx) * (dA + Sx)
        Cx = ((b - a) * (b + a) + c * c) / two_c
        Cy2 = (b - Cx) * (b + Cx)
        Sy = -np.sqrt(np.maximum(Sy2, 0.0))
        Cy = np.sqrt(np.maximum(Cy2, 0.0))
        x = Sx + (Cx - Sx) * (-Sy / (Cy - Sy))
        dx = Cx - Sx
        dy = Cy - Sy
        tri = np.sqrt(dx * dx + dy * dy)
        ok = (
            np.isfinite(dA)
            & np.isfinite(dB)
            & (c > 0.0)
            & (Sy2 >= 0.0)
            & (Cy2 > 0.0)
            & (x >= 0.0)
            & (x <= c)
        )
        # the consistency check against D, unfolded on S's side of AB
        Dx = ((e - f) * (e + f) + c * c) / two_c
        Dy2 = (e - Dx) * (e + Dx)
        Dy = -np.sqrt(np.maximum(Dy2, 0.0))
        xD = Sx + (Dx - Sx) * (-Sy / (Dy - Sy))
        ex = Dx - Sx
        ey = Dy - Sy
        sd = np.sqrt(ex * ex + ey * ey)
        refused = (
            np.isfinite(dD) & (Dy2 > 0.0) & (Dy > Sy) & (xD >= 0.0) & (xD <= c) & (dD > sd * SLACK)
        )
    return np.where(ok & ~refused, np.minimum(edge, tri), edge)


#: which corners get virtual ones (Kimmel and Sethian's unfolding): "obtuse", "all" or "none"
VIRTUAL = "all"


def virtual_corners(mesh: TriMesh) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Kimmel and Sethian's unfolding for obtuse angles, as extra corners ``(C, A, B, a, b, c)``
    (target, the two other corners, ``a = |BC|``, ``b = |AC|``, ``c = |AB|``, all float64).

    At an obtuse corner ``C`` of face ``A B C`` the straight line from a front behind ``AB``
    often reaches ``C`` past ``A`` or ``B``, and the update falls back to an edge path, too long.
    The face across ``AB`` (``A B D``, on a manifold edge) is unfolded into ``C``'s plane; when
    ``D`` lands inside ``C``'s angle (the segment ``C D`` crosses ``AB`` inside it) the segment
    is a path on the surface of length ``|CD|``, and the two virtual triangles ``A D C`` and
    ``D B C``, each inside the unfolded pair, give ``C`` two more triangle updates (from ``A`` and
    ``D``, from ``D`` and ``B``) with sharper angles at ``C``. Elementwise arithmetic only (no
    reductions), so NumPy and CuPy give the same bits."""
    xp = mesh.xp
    V = xp.asarray(mesh.V, dtype=xp.float64)
    F = xp.asarray(mesh.F, dtype=xp.int64)
    s, t = mesh.topology.ef_pairs()
    s, t = xp.asarray(s, dtype=xp.int64), xp.asarray(t, dtype=xp.int64)
    s, t = xp.concatenate([s, t]), xp.concatenate([t, s])
    # in chunks of the side pairs: a dozen float64 temporaries of a chunk's length, not of the
    # mesh's (a 17.8M-face mesh has 53M pairs: 0.4 GB per temporary)
    parts = [
        _virtual_chunk(xp, V, F, s[i : i + VIRTUAL_CHUNK], t[i : i + VIRTUAL_CHUNK])
        for i in range(0, int(s.shape[0]), VIRTUAL_CHUNK)
    ] or [_virtual_chunk(xp, V, F, s, t)]
    C, A, B, D, a, b, cd, e, f = (xp.concatenate(list(x)) for x in zip(*parts, strict=True))
    # (C; A, D): |DC|, |AC|, |AD|   and   (C; D, B): |BC|, |DC|, |DB|
    return (
        xp.concatenate([C, C]),
        xp.concatenate([A, D]),
        xp.concatenate([D, B]),
        xp.concatenate([cd, a]),
        xp.concatenate([b, cd]),
        xp.concatenate([e, f]),
    )


#: side pairs per chunk of :func:`virtual_corners`
VIRTUAL_CHUNK = 1 << 22


def _virtual_chunk(xp: Any, V: Any, F: Any, s: Any, t: Any) -> tuple[Any, ...]:
    """The kept unfoldings of the side pairs ``(s, t)``: ``(C, A, B, D, a, b, cd, e, f)``."""
    fs, ks = s // 3, s % 3
    ft, kt = t // 3, t % 3
    A = F[fs, ks]
    B = F[fs, (ks + 1) % 3]
    C = F[fs, (ks + 2) % 3]
    D = F[ft, (kt + 2) % 3]
    a, b, c = _length(V[C], V[B]), _length(V[C], V[A]), _length(V[A], V[B])
    e, f = _length(V[D], V[A]), _length(V[D], V[B])
    with np.errstate(invalid="ignore", divide="ignore"):
        two_c = 2.0 * c
        Cx = ((b - a) * (b + a) + c * c) / two_c
        Cy2 = (b - Cx) * (b + Cx)
        Dx = ((e - f) * (e + f) + c * c) / two_c
        Dy2 = (e - Dx) * (e + Dx)
        Cy = xp.sqrt(xp.maximum(Cy2, 0.0))
        Dy = -xp.sqrt(xp.maximum(Dy2, 0.0))
        x = Dx + (Cx - Dx) * (-Dy / (Cy - Dy))
        dx, dy = Cx - Dx, Cy - Dy
        cd = xp.sqrt(dx * dx + dy * dy)
        obtuse = a * a + b * b < c * c
        keep = (
            (c > 0.0)
            & (Cy2 > 0.0)
            & (Dy2 > 0.0)
            & (x > 0.0)
            & (x < c)
            & (D != A)
            & (D != B)
            & (D != C)
        )
    if VIRTUAL == "obtuse":
        keep &= obtuse
    elif VIRTUAL == "none":
        keep &= False
    return tuple(x[keep] for x in (C, A, B, D, a, b, cd, e, f))


def opposite(mesh: TriMesh) -> Any:
    """(3 * n_faces,) int64: for face corner ``3 f + k`` (vertex ``F[f, k]``) the vertex across
    the opposite side (``F[f, k+1]``, ``F[f, k+2]``), the far corner of the other face on that
    edge; -1 on a boundary side and on a side of a non-manifold edge (no single face across).
    Elementwise and a scatter without repeated targets: NumPy and CuPy give the same array."""
    xp = mesh.xp
    F = xp.asarray(mesh.F, dtype=xp.int64)
    m = int(F.shape[0])
    s, t = mesh.topology.ef_pairs()
    s, t = xp.asarray(s, dtype=xp.int64), xp.asarray(t, dtype=xp.int64)
    s, t = xp.concatenate([s, t]), xp.concatenate([t, s])
    one = xp.bincount(s, minlength=3 * m)[s] == 1
    across = xp.full(3 * m, -1, dtype=xp.int64)
    across[s[one]] = F[t[one] // 3, (t[one] % 3 + 2) % 3]
    # side 3 f + j joins F[f, j] and F[f, j+1]: the side opposite corner k is j = k + 1
    f = xp.arange(m, dtype=xp.int64)[:, None]
    k = xp.arange(3, dtype=xp.int64)[None, :]
    return across[(3 * f + (k + 1) % 3).ravel()]


def initial_labels(xp: Any, n: int, sources: Any) -> Any:
    """(n,) int32: source ``i`` (in the order given) holds label ``i``, every other vertex -1."""
    labels = xp.full(n, -1, dtype=xp.int32)
    labels[sources] = xp.arange(len(sources), dtype=xp.int32)
    return labels


def value_for(label: Any, d1: Any, l1: Any, d2: Any, l2: Any) -> Any:
    """A vertex's distance to the source ``label`` as far as it knows it (inf when neither of its
    two fronts is that source's)."""
    return np.where(l1 == label, d1, np.where(l2 == label, d2, np.inf))


def top_two(value: Any, label: Any, starts: Any, segment: Any) -> tuple[Any, Any, Any, Any]:
    """Per segment of the flat ``(value, label)`` entries (segments contiguous, beginning at
    ``starts``): the best entry in the order ``(value, label)`` and the best one of another
    label; ``(inf, -1)`` where there is none. Mirrors ``Top2`` in ``kernels/propagation.cu``
    (which inserts the same entries one at a time and reaches the same pair)."""
    label = np.where(np.isfinite(value), label, -1)
    none = np.int32(np.iinfo(np.int32).max)
    d1 = np.minimum.reduceat(value, starts)
    l1 = np.minimum.reduceat(np.where(value == d1[segment], label, none), starts)
    other = label != l1[segment]
    v2 = np.where(other, value, np.inf)
    d2 = np.minimum.reduceat(v2, starts)
    l2 = np.minimum.reduceat(np.where(other & (v2 == d2[segment]), label, none), starts)
    l1 = np.where(np.isfinite(d1), l1, -1).astype(np.int32)
    l2 = np.where(np.isfinite(d2), l2, -1).astype(np.int32)
    return d1, l1, d2, l2


def propagate_numpy(
    mesh: TriMesh, sources: np.ndarray, band: float | None = BAND
) -> tuple[np.ndarray, int]:
    """``(distance (n,) float64, iterations)`` on the host (``band``: see :func:`band_width`;
    None runs every changed vertex at once, the plain Jacobi iteration)."""
    d1, _, _, _, it = fronts_numpy(mesh, sources, band)
    return d1, it


def band_width(mesh: TriMesh, band: float | None) -> float:
    """The step of the threshold: ``band`` times the median length of the sides of the first
    ``BAND_SAMPLE`` faces (those of positive length), worked out on the host from the same
    numbers on either backend, so the schedule is the same bit for bit; inf for ``band=None``
    or a mesh with no side of positive length (then every changed vertex moves at once)."""
    if band is None or mesh.n_faces == 0:
        return math.inf
    xp = mesh.xp
    F = mesh.F[:BAND_SAMPLE]
    used = unique(xp, F)
    V = to_numpy(mesh.V[used]).astype(np.float64)
    Fl = np.searchsorted(to_numpy(used), to_numpy(F))
    sides = np.concatenate([_length(V[Fl[:, k]], V[Fl[:, (k + 1) % 3]]) for k in range(3)])
    sides = sides[sides > 0]
    return float(band * np.median(sides)) if sides.shape[0] else math.inf


class _Frontier:
    """The schedule of the twin's loops (the module docstring): the changed and the waiting
    vertices, the threshold, and which corners an iteration evaluates, through two CSRs over the
    corners (host arrays): the corners that read each vertex (as ``A``, ``B`` or the vertex
    across ``D``) and the corners of each target. An iteration's work is the size of its front,
    not of the mesh."""

    def __init__(self, n: int, C: Any, A: Any, B: Any, D: Any, changed: Any, delta: float):
        k = np.arange(C.shape[0], dtype=np.int64)
        has = D >= 0
        self.C = C
        self.readers = csr_from_pairs(
            np, n, np.concatenate([A, B, D[has]]), np.concatenate([k, k, k[has]])
        )[:2]
        self.corners = csr_from_pairs(np, n, C, k)[:2]
        self.changed = changed  # the vertices whose value the last iteration changed
        self.pending = np.zeros(0, dtype=np.int64)  # those waiting for the threshold
        self.tau, self.delta = delta, delta

    def step(self, d: Any) -> tuple[Any, Any] | None:
        """``(targets, live)`` for the next iteration, ``d`` the current distances (first
        fronts): the vertices with a corner that reads a changed or waiting vertex below the
        threshold (ascending), and all of their corners (by target, then corner), from which
        each is updated; no targets: the threshold rises. None at the fixed point. The caller
        sets :attr:`changed` after the update."""
        moving = np.union1d(self.changed, self.pending)
        if moving.shape[0] == 0:
            return None
        below = d[moving] < self.tau
        go, self.pending = moving[below], moving[~below]
        targets = unique(np, self.C[_rows_of(*self.readers, go)])
        if targets.shape[0] == 0:
            self.tau += self.delta
            self.changed = targets
        return targets, _rows_of(*self.corners, targets)


def _rows_of(off: Any, values: Any, rows: Any) -> Any:
    """The CSR rows ``rows`` one after another."""
    count = off[rows + 1] - off[rows]
    start = np.repeat(off[rows] - (np.cumsum(count) - count), count)
    return values[start + np.arange(start.shape[0], dtype=np.int64)]


def fronts_numpy(
    mesh: TriMesh, sources: np.ndarray, band: float | None = BAND
) -> tuple[Any, Any, Any, Any, int]:
    """``(d1, l1, d2, l2, iterations)``: both fronts of every vertex at the fixed point."""
    n = mesh.n_vertices
    d1 = initial(np, n, sources)
    l1 = initial_labels(np, n, sources)
    d2 = np.full(n, np.inf)
    l2 = np.full(n, -1, dtype=np.int32)
    if mesh.n_faces == 0:
        return d1, l1, d2, l2, 0
    delta = band_width(mesh, band)
    if len(sources) == 1:
        d1, it = _propagate_one(mesh, d1, delta)
        return d1, np.where(np.isfinite(d1), 0, -1).astype(np.int32), d2, l2, it
    C, A, B, a, b, c, D, e, f = corners(mesh)
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    frontier = _Frontier(n, C, A, B, D, sources, delta)
    for it in range(1, _cap(n) + 1):
        _report(it - 1, n)
        step = frontier.step(d1)
        if step is None:
            return d1, l1, d2, l2, it
        targets, live = step
        if targets.shape[0] == 0:
            continue
        # every corner of every target: its new fronts are the best two of its old ones and
        # every candidate its corners give from the current values (as on the GPU)
        Cl, Al, Bl = C[live], A[live], B[live]
        options = np.stack([l1[Al], l2[Al], l1[Bl], l2[Bl]], axis=1)
        # each distinct known label once (a repeated entry changes nothing); the rest (inf, -1)
        need = options >= 0
        need[:, 2] &= (options[:, 2] != options[:, 0]) & (options[:, 2] != options[:, 1])
        need[:, 3] &= (options[:, 3] != options[:, 0]) & (options[:, 3] != options[:, 1])
        row, col = np.nonzero(need)
        lab = options[row, col]
        Ar, Br, lr = Al[row], Bl[row], live[row]
        Dr = D[lr]
        Dv = np.maximum(Dr, 0)
        dD = np.where(Dr >= 0, value_for(lab, d1[Dv], l1[Dv], d2[Dv], l2[Dv]), np.inf)
        cand = np.full(options.shape, np.inf)
        cand[row, col] = candidate(
            value_for(lab, d1[Ar], l1[Ar], d2[Ar], l2[Ar]),
            value_for(lab, d1[Br], l1[Br], d2[Br], l2[Br]),
            a[lr],
            b[lr],
            c[lr],
            dD,
            e[lr],
            f[lr],
        )
        options = np.where(need, options, -1)
        # live comes by target: per target its two fronts, then four entries per corner
        counts = np.bincount(np.searchsorted(targets, Cl), minlength=targets.shape[0])
        size = 2 + 4 * counts
        first = np.r_[0, np.cumsum(size)[:-1]]
        values = np.empty(int(size.sum()))
        labels = np.empty(values.shape[0], dtype=np.int32)
        values[first], labels[first] = d1[targets], l1[targets]
        values[first + 1], labels[first + 1] = d2[targets], l2[targets]
        rest = np.ones(values.shape[0], dtype=bool)
        rest[first] = rest[first + 1] = False
        values[rest], labels[rest] = cand.ravel(), options.ravel()
        segment = np.repeat(np.arange(targets.shape[0]), size)
        new = top_two(values, labels, first, segment)
        old = (d1[targets], l1[targets], d2[targets], l2[targets])
        moved = np.zeros(targets.shape[0], dtype=bool)
        for x, y in zip(new, old, strict=True):
            moved |= x != y
        frontier.changed = targets[moved]
        for arr, x in zip((d1, l1, d2, l2), new, strict=True):
            arr[frontier.changed] = x[moved]
    raise _not_converged(_cap(n))


def corners(mesh: TriMesh) -> tuple[Any, ...]:
    """Every face corner ``(C, A, B, a, b, c, D, e, f)`` (target ``C = F[f, k]``, ``A = F[f, k+1]``,
    ``B = F[f, k+2]``, ``D`` across ``AB`` or -1, the side lengths as in :func:`candidate`) and
    then the virtual corners (no ``D``: -1, ``e = f = 0``)."""
    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    C = F.ravel()
    A = F[:, [1, 2, 0]].ravel()
    B = F[:, [2, 0, 1]].ravel()
    a, b, c = _length(V[C], V[B]), _length(V[C], V[A]), _length(V[A], V[B])
    D = opposite(mesh)
    e = np.where(D >= 0, _length(V[D], V[A]), 0.0)
    f = np.where(D >= 0, _length(V[D], V[B]), 0.0)
    vC, vA, vB, va, vb, vc = virtual_corners(mesh)
    # a virtual corner's side AB is no mesh edge: no face across it, no check
    none = np.full(vC.shape[0], -1, dtype=np.int64)
    zero = np.zeros(vC.shape[0])
    real = (C, A, B, a, b, c, D, e, f)
    virtual = (vC, vA, vB, va, vb, vc, none, zero, zero)
    return tuple(np.concatenate([x, y]) for x, y in zip(real, virtual, strict=True))


def _propagate_one(
    mesh: TriMesh, d: np.ndarray, delta: float, updates: list[int] | None = None
) -> tuple[np.ndarray, int]:
    """One source: every front carries its label, the second fronts stay empty, and the update
    is the triangle candidate alone (the same numbers as the general loop, 4x less work), in
    the same schedule. ``updates`` gets each iteration's number of targets (the benchmarks)."""
    n = d.shape[0]
    C, A, B, a, b, c, D, e, f = corners(mesh)
    frontier = _Frontier(n, C, A, B, D, np.flatnonzero(np.isfinite(d)), delta)
    for it in range(1, _cap(n) + 1):
        _report(it - 1, n)
        step = frontier.step(d)
        if step is None:
            return d, it
        targets, live = step
        if updates is not None:
            updates.append(int(targets.shape[0]))
        if targets.shape[0] == 0:
            continue
        Dl = D[live]
        dD = np.where(Dl >= 0, d[np.maximum(Dl, 0)], np.inf)
        cand = candidate(d[A[live]], d[B[live]], a[live], b[live], c[live], dD, e[live], f[live])
        old = d[targets]
        new = old.copy()
        np.minimum.at(new, np.searchsorted(targets, C[live]), cand)
        moved = new != old
        frontier.changed = targets[moved]
        d[frontier.changed] = new[moved]
    raise _not_converged(_cap(n))


# ----------------------------------------------------------------------------- GPU
CHECK_EVERY = 8  # iterations between convergence checks (each costs a device→host sync)


def fronts(cp: Any, n: int, sources: Any) -> tuple[Any, Any, Any, Any]:
    """The device arrays ``(d1, l1, d2, l2)`` before the first iteration (as on the host)."""
    src = cp.asarray(sources)
    d2 = cp.full(n, cp.inf, dtype=cp.float64)
    l2 = cp.full(n, -1, dtype=cp.int32)
    return initial(cp, n, src), initial_labels(cp, n, src), d2, l2


def device_corners(mesh: TriMesh) -> tuple[Any, tuple[Any, ...], tuple[Any, Any]]:
    """What the kernels read besides the fronts: ``across`` (3 * n_faces,) int32 (the vertex
    across each face corner's opposite side, -1 where none: :func:`opposite`); the virtual
    corners on the device as a CSR by target, in the kernels' argument order ``(offsets, A, B,
    a, b, c)``; and the dependents CSR ``(offsets, targets)``: for each vertex, the targets whose
    corners read it from two rings away (a virtual corner's ``A`` and ``B``, a face corner's
    vertex across), whose patches the patched path wakes too."""
    cp = mesh.xp
    n = mesh.n_vertices
    across = opposite(mesh)
    C, A, B, a, b, c = virtual_corners(mesh)
    off, _, order = csr_from_pairs(cp, n, C, C)
    corners = (
        cp.ascontiguousarray(off, dtype=cp.int64),
        cp.ascontiguousarray(A[order], dtype=cp.int32),
        cp.ascontiguousarray(B[order], dtype=cp.int32),
        *(cp.ascontiguousarray(x[order], dtype=cp.float64) for x in (a, b, c)),
    )
    # A and B of a virtual corner: one is a neighbour of C, the other is D (two rings away); the
    # vertex across a face corner's side is two rings away from the corner's vertex
    has = across >= 0
    Fc = cp.asarray(mesh.F, dtype=cp.int32).ravel()
    i32 = cp.int32  # the pairs in 32 bits: about 150M of them at 17.8M faces
    src = cp.concatenate([A.astype(i32), B.astype(i32), across[has].astype(i32)])
    dst = cp.concatenate([C.astype(i32), C.astype(i32), Fc[has]])
    doff, dval, _ = csr_from_pairs(cp, n, src, dst)
    dependents = (
        cp.ascontiguousarray(doff, dtype=cp.int64),
        cp.ascontiguousarray(dval, dtype=cp.int32),
    )
    return cp.ascontiguousarray(across, dtype=cp.int32), corners, dependents


def _vf_device(mesh: TriMesh) -> tuple[Any, Any]:
    """The vertex→face CSR as the kernels read it: int64 offsets, int32 faces."""
    cp = mesh.xp
    off, val = mesh.topology.vf()
    return cp.ascontiguousarray(off, dtype=cp.int64), cp.ascontiguousarray(val, dtype=cp.int32)


def propagate_global(mesh: TriMesh, sources: Any) -> tuple[Any, int]:
    """One thread per vertex over the global VF CSR, all vertices every iteration."""
    from .kernels.loader import launch, load_kernel
    from .ops import _device

    cp = mesh.xp
    n = mesh.n_vertices
    off, val = _vf_device(mesh)
    V = _device.positions64(mesh)
    F = _device.faces(mesh)
    kernel = load_kernel("propagation", "propagate_global")
    across, vc, _ = device_corners(mesh)
    cur = fronts(cp, n, sources)
    nxt = tuple(x.copy() for x in cur)
    changed = cp.zeros(1, dtype=cp.int32)
    for it in range(1, _cap(n) + 1):
        launch(
            kernel,
            n,
            (V, F, off, val, across, *cur, *nxt, *vc, changed, np.int64(n)),
            op="geodesic_distance",
        )
        cur, nxt = nxt, cur
        if it % CHECK_EVERY == 0 or it == 1:
            if not int(changed[0]):
                return cur[0], it
            changed.fill(0)
            _report(it, n)  # after the read: the device has run ``it`` iterations
    raise _not_converged(_cap(n))


def propagate_frontier(mesh: TriMesh, sources: Any, band: float | None = BAND) -> tuple[Any, int]:
    """``(distance, iterations)`` on the GPU in the twin's schedule (:func:`fronts_numpy`), over
    lists (``kernels/propagation.cu``, "frontier schedule"): the changed and waiting vertices,
    released below the threshold, mark the vertices that read them; those are updated from all
    of their corners. The work follows the front, and the band keeps a vertex from being
    updated again and again as the values behind it settle. Most iterations touch a few
    thousand vertices, so an iteration costs its launches' latency: ``GRAPH_ITERATIONS`` of
    them are captured in one CUDA graph, and the host reads the lists' counts once per graph
    (the device runs up to that many iterations past the fixed point, which change nothing)."""
    from .kernels.loader import load_kernel
    from .ops import _device

    cp = mesh.xp
    n = mesh.n_vertices
    src = cp.asarray(sources)
    delta = band_width(mesh, band)
    off, val = _vf_device(mesh)
    V = _device.positions64(mesh)
    F = _device.faces(mesh)
    across, vc, dependents = device_corners(mesh)
    release = load_kernel("propagation", "frontier_release")
    update = load_kernel("propagation", "frontier_update")
    step = load_kernel("propagation", "frontier_step")
    cur = fronts(cp, n, src)
    nxt = tuple(x.copy() for x in cur)
    changed = cp.empty((2, n), dtype=cp.int32)
    pending = cp.empty((2, n), dtype=cp.int32)
    targets = cp.empty(n, dtype=cp.int32)
    t_stamp = cp.zeros(n, dtype=cp.int32)
    p_stamp = cp.zeros(n, dtype=cp.int32)
    counts = cp.zeros(6, dtype=cp.int32)  # changed, pending, targets; by parity
    changed[1, : src.shape[0]] = src  # iteration 1 (parity 1) starts from the sources
    counts[1] = src.shape[0]
    t = cp.ones(1, dtype=cp.int32)  # the iteration, on the device
    tau = cp.full(1, delta, dtype=cp.float64)
    blocks = (FRONTIER_BLOCKS_PER_SM * cp.cuda.Device().attributes["MultiProcessorCount"],)
    threads = (FRONTIER_THREADS,)
    n64 = np.int64(n)
    release_args = (t, n64, F, off, val, *dependents, *cur, *nxt, changed, pending, targets)
    release_args += (t_stamp, p_stamp, counts, tau)
    update_args = (t, n64, V, F, off, val, across, *cur, *nxt, *vc, targets, changed, counts)
    update_args += (tau, np.float64(delta))

    def iterations(k: int) -> None:
        for _ in range(k):
            release(blocks, threads, release_args)
            update(blocks, threads, update_args)
            step((1,), (1,), (t,))

    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.get_current_stream().synchronize()  # the set-up above ran on the current stream
    with stream:
        iterations(1)  # loads the kernels before the capture
        stream.begin_capture()
        iterations(GRAPH_ITERATIONS)
        graph = stream.end_capture()
        it = 2  # the next iteration the device runs
        while it <= _cap(n):
            c = counts.get()
            if int(c[it & 1]) + int(c[2 + (it & 1)]) == 0:
                return cur[0], it
            _report(it, n)
            graph.launch(stream)
            it += GRAPH_ITERATIONS
    raise _not_converged(_cap(n))


#: the frontier launches: a fixed grid over the lists (most iterations touch a few thousand
#: vertices, so the grid is sized for the device, not the mesh)
FRONTIER_BLOCKS_PER_SM = 8
FRONTIER_THREADS = 256
#: iterations per CUDA graph of the frontier schedule (the host reads the counts between two)
GRAPH_ITERATIONS = 16


def vertex_patches(patches: Any) -> tuple[Any, Any]:
    """Vertex → patches holding it (owned or ribbon) as a device CSR (cached on the patches)."""
    dev = patches.device
    if "vp_offsets" not in dev:
        from .graph import expand_counts

        cp = patches.xp
        voff = cp.asarray(patches.vertex_offsets)
        owner = expand_counts(cp, voff[1:] - voff[:-1])
        n = int(patches.vertex_owner.shape[0])
        o, v, _ = csr_from_pairs(cp, n, cp.asarray(patches.vertices).astype(cp.int64), owner)
        dev["vp_offsets"] = cp.ascontiguousarray(o, dtype=cp.int32)
        dev["vp_values"] = cp.ascontiguousarray(v, dtype=cp.int32)
    return dev["vp_offsets"], dev["vp_values"]


def propagate_patched(mesh: TriMesh, patches: Any, sources: Any) -> tuple[Any, int, int]:
    """``(distance, iterations, patch launches that ran)`` on the patched path with the active
    set: iteration ``t + 1`` runs only the patches in which a vertex changed at ``t``, listed by
    the kernel as it wakes them (a launch of a fixed number of blocks takes them from the list,
    so the patches that did not wake cost nothing). A skipped patch's owned vertices keep their
    value in both buffers (nothing they depend on changed)."""
    from .kernels.loader import load_kernel
    from .ops import _device
    from .queries import launch_patched

    cp = mesh.xp
    n = mesh.n_vertices
    k = patches.n_patches
    vp_off, vp_val = vertex_patches(patches)
    V = _device.positions64(mesh)
    kernel = load_kernel("propagation", "propagate_patched")
    across, vc, dependents = device_corners(mesh)
    cur = fronts(cp, n, sources)
    nxt = tuple(x.copy() for x in cur)
    listed, count = cp.arange(k, dtype=cp.int32), cp.full(1, k, dtype=cp.int32)
    next_listed, next_count = cp.empty(k, dtype=cp.int32), cp.zeros(1, dtype=cp.int32)
    flags = cp.zeros(k, dtype=cp.int32)
    blocks = min(k, LISTED_BLOCKS_PER_SM * cp.cuda.Device().attributes["MultiProcessorCount"])
    ran = cp.zeros(1, dtype=cp.int64)  # patch runs, counted on the device (no sync)
    for it in range(1, _cap(n) + 1):
        ran += count
        launch_patched(
            kernel,
            patches,
            (V, across, *cur, *nxt, *vc, vp_off, vp_val, *dependents, listed, count, flags)
            + (next_listed, next_count),
            op="geodesic_distance",
            blocks=blocks,
        )
        cur, nxt = nxt, cur
        listed, next_listed = next_listed, listed
        count, next_count = next_count, count
        next_count.fill(0)
        flags.fill(0)
        if it % CHECK_EVERY == 0 or it == 1:
            if not int(count[0]):
                return cur[0], it, int(ran[0])
            _report(it, n)  # after the read: the device has run ``it`` iterations
    raise _not_converged(_cap(n))


#: blocks per SM of a listed launch (the kernel is register-bound at two resident 256-thread
#: blocks per SM on an H100; a few more keep the SMs fed as blocks finish unevenly)
LISTED_BLOCKS_PER_SM = 4
