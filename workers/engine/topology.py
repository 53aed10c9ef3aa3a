"""Connectivity built by key-sort and scan (KEY-WELD; RXMesh's EV/FE), on NumPy or CuPy.

Everything here is derived from ``F`` alone. Edges are the distinct unordered vertex pairs of the
face sides, found by sorting the integer keys ``min * n + max``; every incidence relation is a CSR
pair ``(offsets, values)`` made by a stable sort on the owning element and a prefix sum of counts.

Conventions
-----------
* Side ``k`` of face ``f`` goes from ``F[f, k]`` to ``F[f, (k + 1) % 3]``.
* ``FE[f, k] = 2 * e + o``: the edge of side ``k`` and an orientation bit, ``o = 1`` when the side
  runs from the edge's larger vertex to its smaller (``EV[e] = (min, max)``).
* An edge with one face is a boundary edge; with three or more, non-manifold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .backend import array_backend, xp_for
from .graph import compact_groups, connected_components, csr_from_pairs


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
        F64 = F.astype(xp.int64)
        a = F64.ravel()
        b = F64[:, [1, 2, 0]].ravel()
        lo, hi = xp.minimum(a, b), xp.maximum(a, b)
        key = lo * n_vertices + hi
        edge_of_side, first = compact_groups(xp, key)
        EV = xp.stack([lo[first], hi[first]], axis=1).astype(xp.int32)
        FE = (2 * edge_of_side + (a > b)).reshape(-1, 3).astype(xp.int32)
        n_edges = int(first.shape[0])
        sides = xp.arange(a.shape[0], dtype=xp.int64)
        ef_offsets, ef_sides, _ = csr_from_pairs(xp, n_edges, edge_of_side, sides)
        return cls(n_vertices, F, EV, FE, ef_offsets, ef_sides)

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

        def make() -> Any:
            mask = self.xp.zeros(self.n_vertices, dtype=bool)
            mask[self.EV[self.boundary_edges].ravel()] = True
            return mask

        return self._memo("bndv", make)

    @property
    def non_manifold_edges(self) -> Any:
        """Ids of edges with three or more incident faces."""
        return self._memo("nme", lambda: self.xp.nonzero(self.edge_face_count >= 3)[0])

    # ---------------------------------------------------------- per vertex
    @property
    def vertex_face_count(self) -> Any:
        return self._memo(
            "vfc", lambda: self.xp.bincount(self.F.ravel(), minlength=self.n_vertices)
        )

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
            # distinct (vertex, component) pairs, counted per vertex
            key = Fr.astype(xp.int64) * n_corners + lab
            uniq = xp.unique(key)
            return xp.bincount(uniq // n_corners, minlength=self.n_vertices)

        return self._memo("fans", make)

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
            verts = xp.unique(ev.ravel())
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
