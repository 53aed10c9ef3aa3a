"""Connectivity built by key-sort and scan (KEY-WELD; RXMesh's EV/FE), on NumPy or CuPy.

Everything here is derived from ``F`` alone. Edges are the distinct unordered vertex pairs of the
face sides, found by sorting the integer keys ``min * n + max`` (on the GPU by hashing them into a
table, ``kernels/topology.cu``, which gives the same arrays without a sort); every incidence
relation is a CSR pair ``(offsets, values)`` made by a stable sort on the owning element and a
prefix sum of counts.

Conventions
-----------
* Side ``k`` of face ``f`` goes from ``F[f, k]`` to ``F[f, (k + 1) % 3]``.
* ``FE[f, k] = 2 * e + o``: the edge of side ``k`` and an orientation bit, ``o = 1`` when the side
  runs from the edge's larger vertex to its smaller (``EV[e] = (min, max)``).
* An edge with one face is a boundary edge; with three or more, non-manifold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from types import ModuleType
from typing import Any

from .backend import array_backend, xp_for
from .graph import (
    INT32_MAX,
    bucket_sort,
    compact_groups,
    compact_groups_csr,
    compact_ordered,
    connected_components,
    counts,
    csr_components,
    csr_from_pairs,
    ends_of,
    numpy_fast,
    scatter_min,
    scipy_components,
    unique,
)

#: the NumPy fast paths index sides and corners in int32


def topology_kernel(name: str, n: int, *args: Any, op: str) -> None:
    """Launch ``kernels/topology.cu``'s kernel ``name`` over ``n`` elements."""
    from .kernels.loader import launch, load_kernel

    launch(load_kernel("topology", name), n, args, op=op)


def hash_sides(xp: ModuleType, F: Any, base: int, op: str) -> tuple[Any, Any, Any, Any]:
    """The sides of ``F (m, 3)`` (m > 0) in a hash table by their key ``lo * base + hi``
    (``kernels/topology.cu``, on the GPU), what :meth:`Topology.build` and the dynamic rounds'
    edge table start from: ``(F int64, table (slots, 3) int64, slot_of_side (3 m,), head (3 m,)
    int64)``. A slot holds a key (-1: empty), its smallest side and its number of sides; the
    table is at most half full; ``head[s]`` is 1 where side ``s`` is its key's smallest."""
    i64 = xp.int64
    F64 = xp.ascontiguousarray(F, dtype=i64)
    n_sides = 3 * int(F.shape[0])
    bits = max(4, (2 * n_sides - 1).bit_length())
    slots = 1 << bits
    table = xp.empty((slots, 3), dtype=i64)
    slot_of_side = xp.empty(n_sides, dtype=i64)
    head = xp.empty(n_sides, dtype=i64)
    sides = i64(n_sides)
    topology_kernel("table_init", slots, i64(slots), table, op=op)
    topology_kernel("edge_insert", n_sides, F64, sides, i64(base), xp.int32(bits), table,
                    slot_of_side, op=op)  # fmt: skip
    topology_kernel("edge_heads", n_sides, table, slot_of_side, sides, head, op=op)
    return F64, table, slot_of_side, head


@dataclass(eq=False)
class Topology:
    n_vertices: int
    F: Any
    EV: Any  # (n_edges, 2) int32, min first
    FE: Any  # (n_faces, 3) int32, 2 * edge + orientation
    ef_offsets: Any  # (n_edges + 1,) CSR over edges
    ef_sides: Any  # (n_faces * 3,) flat side index 3 * f + k, grouped by edge
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def xp(self) -> ModuleType:
        return xp_for(array_backend(self.F))

    @property
    def n_edges(self) -> int:
        return int(self.EV.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.F.shape[0])

    @classmethod
    def build(cls, F: Any, n_vertices: int) -> Topology:
        xp = xp_for(array_backend(F))
        if numpy_fast(xp) and max(3 * int(F.shape[0]), n_vertices) < INT32_MAX:
            return cls._build_numpy(F, n_vertices)
        if xp.__name__ == "cupy" and F.shape[0]:
            return cls._build_hashed(F, n_vertices)
        F64 = F.astype(xp.int64)
        a = F64.ravel()
        b = F64[:, [1, 2, 0]].ravel()
        lo, hi = xp.minimum(a, b), xp.maximum(a, b)
        key = lo * n_vertices + hi
        # the edges and each edge's sides (in side order) from one sort of the side keys
        edge_of_side, first, ef_offsets, ef_sides = compact_groups_csr(xp, key)
        EV = xp.stack([lo[first], hi[first]], axis=1).astype(xp.int32)
        FE = (2 * edge_of_side + (a > b)).reshape(-1, 3).astype(xp.int32)
        return cls(n_vertices, F, EV, FE, ef_offsets, ef_sides)

    @classmethod
    def _build_hashed(cls, F: Any, n_vertices: int) -> Topology:
        """:meth:`build` on the GPU without a sort: every side's edge key into a hash table (at
        most half full) that keeps each key's smallest side and side count; the sides that are
        their key's smallest are the edges' first sides, numbered in order by a prefix sum; each
        side then finds its edge through its slot, and the edges' rows, filled at atomic cursors,
        are put in side order (they are short). Five kernels and two prefix sums instead of two
        sorts and some thirty array operations; the same arrays."""
        xp = xp_for(array_backend(F))
        i64 = xp.int64
        F64, table, slot_of_side, head = hash_sides(xp, F, n_vertices, "topology")
        slots, n_sides = int(table.shape[0]), int(slot_of_side.shape[0])
        sides = i64(n_sides)
        run = partial(topology_kernel, op="topology")
        heads = xp.cumsum(head)
        n_edges = int(heads[-1])
        slot_edge = xp.empty(slots, dtype=i64)
        EV = xp.empty((n_edges, 2), dtype=xp.int32)
        efc = xp.empty(n_edges, dtype=i64)
        run("edge_number", n_sides, F64, slot_of_side, heads, table, sides, slot_edge, EV, efc)
        ef_offsets = xp.zeros(n_edges + 1, dtype=i64)
        xp.cumsum(efc, out=ef_offsets[1:])
        cursor = ef_offsets[:-1].astype(xp.uint64)
        FE = xp.empty(n_sides, dtype=xp.int32)
        ef_sides = xp.empty(n_sides, dtype=i64)
        run("edge_sides", n_sides, F64, slot_of_side, slot_edge, sides, FE, cursor, ef_sides)
        run("sort_rows", n_edges, ef_offsets, i64(n_edges), ef_sides)
        topo = cls(n_vertices, F, EV, FE.reshape(-1, 3), ef_offsets, ef_sides)
        topo._cache["efc"] = efc
        return topo

    def after_collapses(self, F: Any, keep: Any, edge: Any, b: Any) -> Topology:
        """The topology of ``F``, the mesh after a round of edge collapses on this one: the
        faces ``keep`` (increasing) of this topology's, where each collapsed edge ``edge[i]``
        lost its faces and its end ``b[i]`` was renamed to the other; the collapses' cavities
        are disjoint and pass the link condition (so an edge ``b-c`` merges with ``a-c`` only
        where ``c`` is the collapsed edge's opposite vertex). The same arrays as :meth:`build`
        of ``F``. On the GPU derived from this one (``kernels/topology.cu``): the sides of the
        removed faces tell which edges merge, each edge's row is renumbered through the faces
        kept (their order kept, the rows stay sorted), the surviving edges are numbered by
        their first side with one prefix sum; no hash table and no atomics. Elsewhere
        :meth:`build`."""
        xp = self.xp
        n_new = int(F.shape[0])
        if xp.__name__ != "cupy" or n_new == 0 or self.n_faces == 0:
            return Topology.build(F, self.n_vertices)
        i64 = xp.int64
        run = partial(topology_kernel, op="topology")
        n_e, k = self.n_edges, int(edge.shape[0])
        F_old = xp.ascontiguousarray(self.F, dtype=i64)
        FE = xp.ascontiguousarray(self.FE, dtype=xp.int32)
        off = xp.ascontiguousarray(self.ef_offsets, dtype=i64)
        sides = xp.ascontiguousarray(self.ef_sides, dtype=i64)
        Fn = xp.ascontiguousarray(F, dtype=i64)
        newface = xp.full(self.n_faces, -1, dtype=i64)
        newface[keep] = xp.arange(n_new, dtype=i64)
        merge_from = xp.full(n_e, -1, dtype=i64)
        gone = xp.zeros(n_e, dtype=xp.uint8)
        e64, b64 = xp.ascontiguousarray(edge, dtype=i64), xp.ascontiguousarray(b, dtype=i64)
        run("merge_edges", k, e64, b64, i64(k), F_old, FE, off, sides, merge_from, gone)
        count, first = xp.empty(n_e, dtype=i64), xp.empty(n_e, dtype=i64)
        head = xp.zeros(3 * n_new, dtype=i64)
        run("survivors", n_e, off, sides, newface, merge_from, gone, i64(n_e), count, first, head)
        heads = xp.cumsum(head)
        n_edges = int(heads[-1])
        new_of_old = xp.empty(n_e, dtype=i64)
        EV = xp.empty((n_edges, 2), dtype=xp.int32)
        efc = xp.empty(n_edges, dtype=i64)
        run("renumber_edges", n_e, count, first, heads, Fn, i64(n_e), new_of_old, EV, efc)
        ef_offsets = xp.zeros(n_edges + 1, dtype=i64)
        xp.cumsum(efc, out=ef_offsets[1:])
        ef_sides = xp.empty(3 * n_new, dtype=i64)
        FE_new = xp.empty(3 * n_new, dtype=xp.int32)
        args = (off, sides, newface, merge_from, count, new_of_old, Fn, ef_offsets, i64(n_e))
        run("edge_rows", n_e, *args, ef_sides, FE_new)
        topo = Topology(self.n_vertices, F, EV, FE_new.reshape(-1, 3), ef_offsets, ef_sides)
        topo._cache["efc"] = efc
        return topo

    @classmethod
    def _build_numpy(cls, F: Any, n_vertices: int) -> Topology:
        """:meth:`build` on NumPy, the same arrays without a comparison sort: three stable
        counting sorts (:func:`~.graph.bucket_sort`) in int32. Sides sorted by ``hi`` then, stably,
        by ``lo`` are sorted by the edge key with ties in side order, so each run of equal keys
        is an edge whose first entry is its smallest side; edges are numbered by that side (first
        occurrence, as :func:`~.graph.compact_groups` numbers them), and a third counting sort of
        the sides by edge id gives the EF lists in increasing side order. Arrays the sorts have
        consumed are reused as scratch: on a virtual machine fresh memory costs as much as the
        arithmetic."""
        import numpy as np

        n = n_vertices
        n_sides = 3 * int(F.shape[0])
        F32 = F.astype(np.int32, copy=False)
        a = F32.ravel()
        b = F32[:, [1, 2, 0]].ravel()
        flip = a > b  # the orientation bit of FE
        lo = np.minimum(a, b)
        hi = np.maximum(a, b, out=b)
        sides = np.arange(n_sides, dtype=np.int32)
        hi_offsets, by_hi, lo_by_hi = bucket_sort(hi, n, sides, lo)
        hi_by_hi = np.repeat(np.arange(n, dtype=np.int32), np.diff(hi_offsets))
        lo_offsets, order, hi_sorted = bucket_sort(lo_by_hi, n, by_hi, hi_by_hi)
        # by_hi, lo_by_hi and hi_by_hi are spent: reused below as scratch
        # runs of equal (lo, hi): hi changes, or a new lo row starts
        head = np.empty(n_sides, dtype=bool)
        head[:1] = True
        np.not_equal(hi_sorted[1:], hi_sorted[:-1], out=head[1:])
        del hi_sorted
        row_start = lo_offsets[:-1]
        head[row_start[row_start < n_sides]] = True
        starts = np.flatnonzero(head)
        n_edges = int(starts.shape[0])
        run_first = order[starts]  # the smallest side of each run (the sorts are stable)
        del starts
        is_first = np.zeros(n_sides, dtype=bool)
        is_first[run_first] = True
        first = np.flatnonzero(is_first)  # edge e's first side, increasing in e
        del is_first
        edge_id = by_hi
        edge_id[first] = np.arange(n_edges, dtype=np.int32)
        run_edge = edge_id[run_first]
        del run_first
        run_of_sorted = np.cumsum(head, dtype=np.int32, out=lo_by_hi)
        run_of_sorted -= 1
        del head
        edge_of_side = edge_id  # every entry is overwritten
        edge_of_side[order] = np.take(run_edge, run_of_sorted, out=hi_by_hi)
        del order, run_edge, run_of_sorted
        EV = np.empty((n_edges, 2), dtype=np.int32)
        EV[:, 0] = lo[first]
        EV[:, 1] = hi[first]
        del lo, hi, a, b, first
        FE = np.multiply(edge_of_side, 2, out=lo_by_hi)
        FE += flip
        FE = FE.reshape(-1, 3)
        ef_offsets, ef_sides, _ = bucket_sort(edge_of_side, n_edges, sides)
        return cls(
            n_vertices,
            F,
            EV,
            FE,
            ef_offsets.astype(np.int64),
            ef_sides.astype(np.int64),
        )

    def without_unused(self, F: Any, used: Any, new_of_old: Any) -> Topology:
        """This topology for the same faces after the unused vertices are dropped and the used
        ones (ids ``used``, increasing) renumbered in order: ``new_of_old[used]`` is
        ``0..len(used)-1`` and ``F`` is ``new_of_old[self.F]``.

        An order-keeping renumbering keeps every edge's min-first order and the edges' numbering
        by first side, so edges, sides and their lists stay as they are and only ``EV`` is
        renumbered. What was memoised comes along: per-edge, per-side and per-face entries as
        they are, per-vertex arrays restricted to the used vertices, vertex ids renumbered; the
        vertex CSRs and patches are rebuilt on demand. Equal to :meth:`build` on ``F``."""
        xp = self.xp
        EV = new_of_old[self.EV].astype(xp.int32)
        out = Topology(int(used.shape[0]), F, EV, self.FE, self.ef_offsets, self.ef_sides)
        cache = self._cache
        # "stats": the face figures of ops/stats.py (counts: none names a vertex)
        for key in ("efc", "bnd", "nme", "efp", "two_same", "orient", "stats"):
            if key in cache:
                out._cache[key] = cache[key]
        for key in ("vfc", "used", "bndv", "fans"):
            if key in cache:
                out._cache[key] = cache[key][used]
        if "nmv" in cache:
            out._cache["nmv"] = new_of_old[cache["nmv"]]
        if "vcomp" in cache:
            label, count = cache["vcomp"]
            out._cache["vcomp"] = (label[used], count)
        if "loops" in cache:
            verts, loop, count = cache["loops"]
            out._cache["loops"] = (new_of_old[verts], loop, count)
        return out

    # ------------------------------------------------------------ per edge
    @property
    def edge_face_count(self) -> Any:
        return self._memo("efc", lambda: self.xp.diff(self.ef_offsets))

    @property
    def boundary_edges(self) -> Any:
        """Ids of edges with exactly one incident face."""
        return self._memo("bnd", lambda: self.xp.nonzero(self.edge_face_count == 1)[0])

    @property
    def boundary_vertices(self) -> Any:
        """Boolean mask of vertices on a boundary edge."""
        return self._memo(
            "bndv",
            lambda: ends_of(self.xp, self.EV, self.edge_face_count == 1, self.n_vertices),
        )

    @property
    def non_manifold_edges(self) -> Any:
        """Ids of edges with three or more incident faces."""
        return self._memo("nme", lambda: self.xp.nonzero(self.edge_face_count >= 3)[0])

    # ---------------------------------------------------------- per vertex
    @property
    def vertex_face_count(self) -> Any:
        return self._memo("vfc", lambda: counts(self.xp, self.F.ravel(), self.n_vertices))

    @property
    def used_vertices(self) -> Any:
        """Boolean mask of vertices referenced by at least one face."""
        return self._memo("used", lambda: self.vertex_face_count > 0)

    def vf(self) -> tuple[Any, Any]:
        """Vertex → faces as CSR ``(offsets (n+1,), faces)``."""

        def make() -> tuple[Any, Any]:
            xp = self.xp
            faces = xp.repeat(xp.arange(self.n_faces, dtype=xp.int64), 3)
            off, val, _ = csr_from_pairs(xp, self.n_vertices, self.F.ravel(), faces)
            return off, val

        return self._memo("vf", make)  # type: ignore[no-any-return]

    def vv(self) -> tuple[Any, Any]:
        """Vertex → neighbouring vertices (through an edge) as CSR."""

        def make() -> tuple[Any, Any]:
            xp = self.xp
            src = xp.concatenate([self.EV[:, 0], self.EV[:, 1]]).astype(xp.int64)
            dst = xp.concatenate([self.EV[:, 1], self.EV[:, 0]]).astype(xp.int64)
            off, val, _ = csr_from_pairs(xp, self.n_vertices, src, dst)
            return off, val

        return self._memo("vv", make)  # type: ignore[no-any-return]

    def ef_pairs(self) -> tuple[Any, Any]:
        """Side pairs ``(s, t)`` (flat side ids) of consecutive faces around each edge with two or
        more faces: for a manifold interior edge its two sides; for a non-manifold one a chain."""

        def make() -> tuple[Any, Any]:
            xp = self.xp
            n = self.ef_sides.shape[0]
            if n < 2:
                z = xp.zeros(0, dtype=xp.int64)
                return z, z
            # consecutive entries in the CSR belong to the same edge unless a new row starts there
            starts = xp.zeros(n, dtype=bool)
            starts[self.ef_offsets[:-1][self.edge_face_count > 0]] = True
            same = ~starts[1:]
            return self.ef_sides[:-1][same], self.ef_sides[1:][same]

        return self._memo("efp", make)  # type: ignore[no-any-return]

    def vertex_fans(self) -> Any:
        """Number of edge-connected fans of faces around each vertex (0 for unused vertices).

        Corners ``3 * f + k`` are the nodes; two corners of the same vertex are joined when their
        faces share an edge through that vertex. A manifold vertex has one fan."""

        def make() -> Any:
            xp = self.xp
            if numpy_fast(xp) and 3 * self.n_faces < INT32_MAX:
                return self._fans_numpy()
            if xp.__name__ == "cupy" and self.n_faces:
                one = self._one_fan_each()
                if one is not None:
                    return one
            s, t = self.ef_pairs()
            # side s = 3f + k joins corners k and (k+1)%3 of face f to the matching corners of t;
            # which corner of t carries the same vertex depends on the side's direction.
            fs, ks = s // 3, s % 3
            ft, kt = t // 3, t % 3
            a0 = 3 * fs + ks
            a1 = 3 * fs + (ks + 1) % 3
            t0 = 3 * ft + kt
            t1 = 3 * ft + (kt + 1) % 3
            Fr = self.F.ravel()
            same_dir = Fr[a0] == Fr[t0]
            b0 = xp.where(same_dir, t0, t1)
            b1 = xp.where(same_dir, t1, t0)
            n_corners = 3 * self.n_faces
            lab = connected_components(
                xp, n_corners, xp.concatenate([a0, a1]), xp.concatenate([b0, b1])
            )
            # a component never leaves its vertex: count each component once, at its first
            # corner, for that corner's vertex (no sort of (vertex, component) pairs)
            corner = xp.arange(n_corners, dtype=xp.int64)
            first = xp.full(n_corners, n_corners, dtype=xp.int64)
            scatter_min(xp, first, lab, corner)
            root = xp.nonzero(first[lab] == corner)[0]
            return counts(xp, Fr[root].astype(xp.int64), self.n_vertices)

        return self._memo("fans", make)

    def _one_fan_each(self) -> Any:
        """:meth:`vertex_fans` on the GPU when every used vertex has one fan (each vertex's
        thread walks around it from one of its corners, ``kernels/topology.cu`` ``fan_walk``):
        ``(vertex_face_count > 0)`` as int64; None when a vertex has several fans or a walk
        cannot tell (a non-manifold edge or a face with a repeated vertex at it), for the
        components to count. The components over every corner took 10 ms of a 4.4M-face
        decimation on an H100, the walk needs no sort and no rounds of label propagation."""
        xp = self.xp
        i64 = xp.int64
        n = self.n_vertices
        F = xp.ascontiguousarray(self.F, dtype=i64)
        start = xp.full(n, -1, dtype=i64)
        corners = 3 * self.n_faces
        topology_kernel("fan_starts", corners, F, i64(corners), start, op="topology")
        vfc = xp.ascontiguousarray(self.vertex_face_count, dtype=i64)
        several = xp.empty(n, dtype=xp.uint8)
        args = (
            F,
            xp.ascontiguousarray(self.FE, dtype=xp.int32),
            xp.ascontiguousarray(self.ef_offsets, dtype=i64),
            xp.ascontiguousarray(self.ef_sides, dtype=i64),
            start,
            vfc,
            i64(n),
            several,
        )
        topology_kernel("fan_walk", n, *args, op="topology")
        if bool(several.any()):
            return None
        return (vfc > 0).astype(i64)

    def _fans_numpy(self) -> Any:
        """:meth:`vertex_fans` on NumPy: the same corner graph, in int32, with SciPy's components;
        a component never leaves its vertex, so the fans of a vertex are the components whose
        corners it carries, counted by one scatter and one bincount (no sort of the
        ``(vertex, component)`` pairs).

        Without edges of three or more faces every corner has at most two neighbours, one
        through each of its two sides, so the graph's CSR form is two slots per corner (itself
        where a side has no partner) written by four scatters, no sort."""
        import numpy as np

        n_corners = 3 * self.n_faces
        Fr = self.F.ravel()
        two_slots = self.non_manifold_edges.shape[0] == 0 and 2 * n_corners < INT32_MAX
        if two_slots:
            s, t = self._two_face_pairs()
            same_dir = self._two_face_same(s, t)
        else:
            s, t = (x.astype(np.int32) for x in self.ef_pairs())
            same_dir = Fr[s] == Fr[t]
        s1 = s + 1  # the corner at the end of side s: the next corner of its face
        s1[s % 3 == 2] -= 3
        t1 = t + 1
        t1[t % 3 == 2] -= 3
        if bool(same_dir.any()):
            b0 = np.where(same_dir, t, t1)  # the corner of t at s's start ...
            b1 = np.where(same_dir, t1, t)  # ... and at its end
            c0 = np.where(same_dir, s, s1)  # the corner of s at t's start ...
            c1 = np.where(same_dir, s1, s)  # ... and at its end
        else:  # consistently oriented: every pair runs both ways
            b0, b1, c0, c1 = t1, t, s1, s
        if not two_slots:
            i, j = np.concatenate([s, s1]), np.concatenate([b0, b1])
            del s, t, s1, t1, b0, b1, c0, c1
            n_comp, lab = scipy_components(n_corners, i, j)
        else:
            # slot 0 of corner c: its neighbour through side c (c is its start); slot 1: through
            # the side ending at c. Each side is in at most one pair, so no slot is written twice.
            nbr = np.empty((n_corners, 2), dtype=np.int32)
            nbr[:, 0] = np.arange(n_corners, dtype=np.int32)
            nbr[:, 1] = nbr[:, 0]
            nbr[s, 0] = b0
            nbr[s1, 1] = b1
            nbr[t, 0] = c0
            nbr[t1, 1] = c1
            del s, t, s1, t1, b0, b1, c0, c1
            indptr = np.arange(0, 2 * n_corners + 1, 2, dtype=np.int32)
            n_comp, lab = csr_components(indptr, nbr.ravel())
            del nbr, indptr
        vertex_of = np.empty(n_comp, dtype=Fr.dtype)
        vertex_of[lab] = Fr
        return np.bincount(vertex_of, minlength=self.n_vertices)

    def _two_face_pairs(self) -> tuple[Any, Any]:
        """The two sides (int32, smaller first) of every edge with exactly two faces, in edge
        order: :meth:`ef_pairs` when no edge has three or more faces. Not memoised (two int32
        per edge): fans and orientation need them once, through :meth:`_two_face_same`."""
        import numpy as np

        two = self.ef_offsets[:-1][self.edge_face_count == 2]
        return self.ef_sides[two].astype(np.int32), self.ef_sides[two + 1].astype(np.int32)

    def _two_face_same(self, s: Any = None, t: Any = None) -> Any:
        """For each of :meth:`_two_face_pairs` (``s``, ``t`` when the caller has them), whether
        its two faces walk the edge the same way (equal orientation bits): the orientation's
        inconsistency, the fans' corner matching."""

        def make() -> Any:
            a, b = (s, t) if s is not None else self._two_face_pairs()
            bits = self.FE.ravel()
            return (bits[a] & 1) == (bits[b] & 1)

        return self._memo("two_same", make)

    @property
    def non_manifold_vertices(self) -> Any:
        """Ids of vertices whose incident faces form more than one fan (bow-ties)."""
        return self._memo("nmv", lambda: self.xp.nonzero(self.vertex_fans() > 1)[0])

    # ---------------------------------------------------------- components
    def vertex_components(self) -> tuple[Any, int]:
        """``(label (n_vertices,), count)``: components of the used vertices joined by edges;
        unused vertices get label -1 and are not counted."""

        def make() -> tuple[Any, int]:
            xp = self.xp
            if numpy_fast(xp):
                import numpy as np

                n_lab, lab = scipy_components(self.n_vertices, self.EV[:, 0], self.EV[:, 1])
                used = self.used_vertices
                sub, n_comp = compact_ordered(lab[used], n_lab)
                out = np.full(self.n_vertices, -1, dtype=np.int64)
                out[used] = sub
                return out, n_comp
            lab = connected_components(xp, self.n_vertices, self.EV[:, 0], self.EV[:, 1])
            used = xp.nonzero(self.used_vertices)[0]
            sub, first = compact_groups(xp, lab[used])
            out = xp.full(self.n_vertices, -1, dtype=xp.int64)
            out[used] = sub
            return out, int(first.shape[0])

        return self._memo("vcomp", make)  # type: ignore[no-any-return]

    def boundary_loop_labels(self) -> tuple[Any, Any, int]:
        """``(vertices, loop, count)``: the boundary vertices, the loop each lies on, and the
        number of loops (components of the boundary-edge graph; loops touching at a vertex count
        once)."""

        def make() -> tuple[Any, Any, int]:
            xp = self.xp
            be = self.boundary_edges
            if be.shape[0] == 0:
                z = xp.zeros(0, dtype=xp.int64)
                return z, z, 0
            ev = self.EV[be].astype(xp.int64)
            if numpy_fast(xp):
                import numpy as np

                on_loop = np.zeros(self.n_vertices, dtype=bool)
                on_loop[ev.ravel()] = True
                verts = np.flatnonzero(on_loop)  # np.unique's result, by a scatter
                local_of = np.empty(self.n_vertices, dtype=np.int64)
                local_of[verts] = np.arange(verts.shape[0], dtype=np.int64)
                n_loops, lab = scipy_components(
                    int(verts.shape[0]), local_of[ev[:, 0]], local_of[ev[:, 1]]
                )
                loop, n_loops = compact_ordered(lab, n_loops)
                return verts, loop, n_loops
            verts = unique(xp, ev.ravel())
            local = xp.searchsorted(verts, ev)
            lab = connected_components(xp, int(verts.shape[0]), local[:, 0], local[:, 1])
            loop, first = compact_groups(xp, lab)
            return verts, loop, int(first.shape[0])

        return self._memo("loops", make)  # type: ignore[no-any-return]

    def boundary_loops(self) -> int:
        return self.boundary_loop_labels()[2]

    def orientation(self) -> tuple[bool, Any]:
        """``(consistently_oriented, orientable_per_face_component)``.

        Consistent: every edge with two faces is traversed in opposite directions. Orientable: a
        flip of some faces could make it so; decided per edge-connected face component on the
        orientation double cover (face ``f`` as nodes ``f+`` and ``f-``; an edge walked the same way
        by both faces joins ``f+`` to ``g-``, otherwise ``f+`` to ``g+``): a component is orientable
        iff ``f+`` and ``f-`` stay apart. Only edges with exactly two faces count."""

        def make() -> tuple[bool, Any]:
            xp = self.xp
            if numpy_fast(xp):
                import numpy as np

                # without an edge walked the same way by its two faces, no edge of the double
                # cover joins a positive copy to a negative one: every face is orientable
                if not bool(self._two_face_same().any()):
                    return True, np.ones(self.n_faces, dtype=bool)
            s, t = self.ef_pairs()
            e = self.FE.ravel()[s] // 2
            two = self.edge_face_count[e] == 2
            s, t = s[two], t[two]
            bits = self.FE.ravel() & 1
            same = bits[s] == bits[t]
            consistent = not bool(same.any())
            m = self.n_faces
            fs, ft = s // 3, t // 3
            # node f (positive copy) and f + m (negative copy)
            u = xp.concatenate([fs, fs + m])
            v = xp.concatenate([xp.where(same, ft + m, ft), xp.where(same, ft, ft + m)])
            lab = connected_components(xp, 2 * m, u, v)
            orientable_face = lab[:m] != lab[m:]
            return consistent, orientable_face

        return self._memo("orient", make)  # type: ignore[no-any-return]

    # ------------------------------------------------------------- helper
    def _memo(self, key: str, make: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]
