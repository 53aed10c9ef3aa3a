"""The engine's mesh: positions, triangles and named per-vertex and per-face attributes.

A :class:`TriMesh` is treated as immutable in its connectivity: an operation that changes the
vertex or face set returns a new mesh; one that only adds attributes or moves vertices keeps the
faces array, and with it the cached topology.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import hostpar
from .backend import array_backend, to_device, to_numpy, xp_for
from .errors import MeshError

if TYPE_CHECKING:
    from .materials import Materials
    from .pipeline import PipelineResult
    from .topology import Topology


class TriMesh:
    """A triangle mesh on NumPy or CuPy.

    Parameters
    ----------
    V : (n_vertices, 3) float32 or float64
        Positions.
    F : (n_faces, 3) int32
        Vertex indices of each triangle, counter-clockwise seen from outside.
    vertex_attrs, face_attrs : mapping of name to array with ``n_vertices`` / ``n_faces`` rows.
    corner_attrs : mapping of name to array of shape ``(n_faces, 3, k)``: a value per corner of
        each face, in the order of ``F``'s columns (texture coordinates ``uv``, ``uv1``...,
        corner normals ``normal`` where edges are hard, colours ``color``). Two faces that
        meet at a vertex with different values there meet at a seam. See
        :mod:`workers.engine.corners` for how operations carry them.
    materials : the asset's materials, textures and images (:class:`~.materials.Materials`);
        each face names its material in the face attribute ``material``.
    """

    __slots__ = (
        "V",
        "F",
        "vertex_attrs",
        "face_attrs",
        "corner_attrs",
        "materials",
        "_topology",
        "source",
        "dropped",
    )

    def __init__(
        self,
        V: Any,
        F: Any,
        vertex_attrs: Mapping[str, Any] | None = None,
        face_attrs: Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        _topology: Topology | None = None,
        corner_attrs: Mapping[str, Any] | None = None,
        materials: Materials | None = None,
    ) -> None:
        self.V = V
        self.F = F
        self.vertex_attrs: dict[str, Any] = dict(vertex_attrs or {})
        self.face_attrs: dict[str, Any] = dict(face_attrs or {})
        self.corner_attrs: dict[str, Any] = dict(corner_attrs or {})
        self.materials = materials
        self._topology = _topology
        self.source = source
        #: what the file it was read from held and the mesh does not carry (``{"materials": 6,
        #: "texture coordinates": 3225}``), set by the readers; empty for every other mesh
        self.dropped: dict[str, int] = {}
        if V.ndim != 2 or V.shape[1] != 3:
            raise MeshError("positions must be (n, 3)", code="mesh.bad_shape", shape=list(V.shape))
        if F.ndim != 2 or F.shape[1] != 3:
            raise MeshError("faces must be (m, 3)", code="mesh.bad_shape", shape=list(F.shape))

    # ------------------------------------------------------------------ basics
    @property
    def backend(self) -> str:
        return array_backend(self.V)

    @property
    def xp(self) -> ModuleType:
        return xp_for(self.backend)

    @property
    def n_vertices(self) -> int:
        return int(self.V.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.F.shape[0])

    @property
    def topology(self) -> Topology:
        """Connectivity (edges, incidence, boundary, components), built on first use and cached."""
        if self._topology is None:
            from .topology import Topology

            self._topology = Topology.build(self.F, self.n_vertices)
        return self._topology

    def used_vertices(self) -> Any:
        """Boolean mask of vertices some face references: from the cached topology when it was
        built, else one scatter over the faces (re-indexing must not pay for edge sorting)."""
        if self._topology is not None:
            return self._topology.used_vertices
        used = self.xp.zeros(self.n_vertices, dtype=bool)
        used[self.F.ravel()] = True
        return used

    def __repr__(self) -> str:
        attrs = sorted(self.vertex_attrs) + sorted(self.face_attrs)
        attrs += [f"corner.{k}" for k in sorted(self.corner_attrs)]
        return (
            f"TriMesh({self.n_vertices} vertices, {self.n_faces} faces, {self.backend}"
            + (f", attrs={attrs}" if attrs else "")
            + ")"
        )

    @classmethod
    def from_arrays(
        cls,
        V: Any,
        F: Any,
        *,
        dtype: str | np.dtype = "float32",
        vertex_attrs: Mapping[str, Any] | None = None,
        face_attrs: Mapping[str, Any] | None = None,
        check: bool = True,
    ) -> TriMesh:
        """Build a mesh from array-likes, checking finiteness and index range (``check=True``).
        Positions are ``float32`` or ``float64`` (another ``dtype`` raises ``mesh.bad_dtype``:
        an integer type would silently round or wrap them)."""
        try:
            ok = np.dtype(dtype) in (np.float32, np.float64)
        except TypeError:
            ok = False
        if not ok:
            raise MeshError(
                "positions are float32 or float64", code="mesh.bad_dtype", dtype=str(dtype)
            )
        xp = xp_for(array_backend(V))
        with np.errstate(over="ignore"):  # values beyond float32 become inf: check() reports them
            V = xp.ascontiguousarray(xp.asarray(V, dtype=dtype))
        F_in = xp.asarray(F)
        if F_in.size and not xp.issubdtype(F_in.dtype, xp.integer):
            raise MeshError("face indices must be integers", code="mesh.bad_indices")
        mesh = cls(
            V,
            xp.ascontiguousarray(F_in.reshape(-1, 3) if F_in.size == 0 else F_in),
            vertex_attrs,
            face_attrs,
        )
        if check:
            mesh.check()
        if xp is np:  # across the host's cores (hostpar)
            mesh.F = hostpar.astype(mesh.F, np.int32)
        else:
            mesh.F = mesh.F.astype(xp.int32, copy=False)
        return mesh

    def check_finite(self) -> None:
        """Raise ``mesh.non_finite`` when a vertex position is NaN or infinite."""
        xp = self.xp
        # one pass (on the host across its cores); the per-row detail only on failure
        ok = hostpar.all_finite(self.V) if xp is np else bool(xp.isfinite(self.V).all())
        if not ok:
            finite = xp.isfinite(self.V).all(axis=1)
            raise MeshError(
                "vertex positions must be finite",
                code="mesh.non_finite",
                count=int((~finite).sum()),
                first_vertex=int(xp.argmin(finite)),
            )

    def check(self) -> None:
        """Raise :class:`MeshError` for what no operation accepts: NaN/Inf, indices out of range,
        no faces. Other defects (duplicates, non-manifold edges...) are operations' business."""
        if self.n_vertices == 0:
            raise MeshError("mesh has no vertices", code="mesh.empty")
        if self.n_faces == 0:
            raise MeshError("mesh has no faces", code="mesh.no_faces", n_vertices=self.n_vertices)
        self.check_finite()
        if not self._indices_in_range():
            lo, hi = int(self.F.min()), int(self.F.max())
            raise MeshError(
                "face index out of range",
                code="mesh.index_out_of_range",
                min_index=lo,
                max_index=hi,
                n_vertices=self.n_vertices,
            )
        if self.n_vertices >= 2**31 - 1 or self.n_faces >= 2**31 - 1:
            raise MeshError("mesh too large for 32-bit indices", code="mesh.too_large")
        for attrs, n in ((self.vertex_attrs, self.n_vertices), (self.face_attrs, self.n_faces)):
            for name, a in attrs.items():
                if a.ndim == 0 or a.shape[0] != n:
                    raise MeshError(
                        "attribute has wrong length", code="mesh.bad_attribute", name=name
                    )
        for name, a in self.corner_attrs.items():
            if a.ndim != 3 or a.shape[:2] != (self.n_faces, 3):
                raise MeshError(
                    "corner attribute must have one row of values per corner of each face",
                    code="mesh.bad_attribute",
                    name=name,
                    shape=list(a.shape),
                )
        if "material" in self.face_attrs and self.materials is not None and self.n_faces:
            m = self.face_attrs["material"]
            if int(m.min()) < 0 or int(m.max()) >= len(self.materials):
                raise MeshError(
                    "a face names a material the mesh does not have",
                    code="mesh.bad_attribute",
                    name="material",
                    n_materials=len(self.materials),
                )

    def _indices_in_range(self) -> bool:
        """Every face index in ``[0, n_vertices)``, in one pass: seen as unsigned, a negative
        index is larger than any count, so the largest unsigned value alone decides (two
        reductions, the smallest and the largest, only for another type and to report a
        failure)."""
        xp, F = self.xp, self.F
        if not xp.issubdtype(F.dtype, xp.integer):
            return int(F.min()) >= 0 and int(F.max()) < self.n_vertices
        if xp is np:
            return hostpar.max_unsigned(F) < self.n_vertices
        unsigned = xp.dtype(f"u{F.dtype.itemsize}")
        return int(F.view(unsigned).max()) < self.n_vertices

    # ------------------------------------------------------------ derivation
    def with_geometry(self, V: Any) -> TriMesh:
        """Same connectivity and topology cache, new positions."""
        return TriMesh(
            V,
            self.F,
            self.vertex_attrs,
            self.face_attrs,
            source=self.source,
            _topology=self._topology,
            corner_attrs=self.corner_attrs,
            materials=self.materials,
        )

    def with_topology(self, topo: Topology) -> TriMesh:
        """This mesh with ``topo`` as its topology cache (the caller's: built from these very
        faces and vertex count)."""
        out = copy.copy(self)
        out._topology = topo
        return out

    def with_attrs(
        self, vertex: Mapping[str, Any] | None = None, face: Mapping[str, Any] | None = None
    ) -> TriMesh:
        """Same mesh with attributes added or replaced."""
        va = {**self.vertex_attrs, **(vertex or {})}
        fa = {**self.face_attrs, **(face or {})}
        return TriMesh(
            self.V,
            self.F,
            va,
            fa,
            source=self.source,
            _topology=self._topology,
            corner_attrs=self.corner_attrs,
            materials=self.materials,
        )

    def without_corners(self) -> TriMesh:
        """The same mesh without its corner attributes and materials (what an operation that
        rebuilds the faces works on: :mod:`workers.engine.corners` carries them across)."""
        return TriMesh(
            self.V,
            self.F,
            self.vertex_attrs,
            self.face_attrs,
            source=self.source,
            _topology=self._topology,
        )

    def reindexed(
        self,
        V: Any,
        F: Any,
        *,
        vertex_take: Any | None = None,
        vertex_groups: tuple[Any, Any, int] | None = None,
        face_take: Any | None = None,
    ) -> TriMesh:
        """A new mesh after re-indexing, with attributes carried along.

        ``vertex_take``: new vertex ``i`` takes the attributes of old vertex ``vertex_take[i]``.
        ``vertex_groups``: ``(old_ids, new_ids, n_new)``: each new vertex gets the mean of the
        attributes of the old vertices mapped to it (KEY-WELD's sum, then normalize).
        ``face_take``: new face ``j`` takes the attributes of old face ``face_take[j]``.
        """
        xp = self.xp
        va: dict[str, Any] = {}
        for name, a in self.vertex_attrs.items():
            if vertex_take is not None:
                va[name] = a[vertex_take]
            elif vertex_groups is not None:
                old, new, n_new = vertex_groups
                va[name] = segment_mean(xp, a[old], new, n_new)
            else:
                va[name] = a
        fa = {
            name: (a[face_take] if face_take is not None else a)
            for name, a in self.face_attrs.items()
        }
        return TriMesh(V, F, va, fa, source=self.source)

    def to(self, backend: str) -> TriMesh:
        """The same mesh on ``"numpy"`` or ``"cupy"`` (a no-op when already there)."""
        if backend == self.backend:
            return self
        conv = to_numpy if backend == "numpy" else to_device
        return TriMesh(
            conv(self.V),
            conv(self.F),
            {k: conv(v) for k, v in self.vertex_attrs.items()},
            {k: conv(v) for k, v in self.face_attrs.items()},
            source=self.source,
            corner_attrs={k: conv(v) for k, v in self.corner_attrs.items()},
            materials=self.materials,
        )

    @classmethod
    def concatenate(cls, meshes: list[TriMesh]) -> TriMesh:
        """One mesh holding all of ``meshes`` side by side (Wald, section 3.2: vertex arrays
        appended, each mesh's indices shifted by the vertices before it). A face attribute
        ``part`` (int32) tells which input each face came from; other attributes are kept when
        every part has them with the same shape per element and the same type (floats: any
        width); one of several types is left out and counted in ``dropped``. Parts with
        different material libraries get one library holding all of them
        (:func:`.materials.combine`), the faces' ``material`` moved to match; a part without one
        gets glTF's default material."""
        if not meshes:
            raise MeshError("nothing to concatenate", code="mesh.empty")
        xp = meshes[0].xp
        offsets = np.cumsum([0] + [m.n_vertices for m in meshes])
        V = xp.concatenate([m.V for m in meshes])
        F = xp.concatenate([m.F + int(o) for m, o in zip(meshes, offsets[:-1], strict=True)])

        lost: dict[str, int] = {}

        def alike(arrays: list[Any]) -> bool:
            """One shape per element, and one type (or floats of any width): integers of
            several widths mean several scales (colours: 0..255 beside 0..65535), and
            integers beside floats too (0..255 beside 0..1), which one array cannot hold."""
            if len({a.shape[1:] for a in arrays}) != 1:
                return False
            types = {a.dtype for a in arrays}
            return len(types) == 1 or all(t.kind == "f" for t in types)

        def common(attrs: list[dict[str, Any]], what: str | None = None) -> dict[str, Any]:
            names = set.intersection(*(set(a) for a in attrs))
            out = {}
            for k in sorted(names):
                if alike([a[k] for a in attrs]):
                    out[k] = xp.concatenate([a[k] for a in attrs])
                elif what and len({a[k].shape[1:] for a in attrs}) == 1:  # several types
                    key = f"{what} attributes (of several types on the parts)"
                    lost[key] = lost.get(key, 0) + 1
            return out

        va = common([m.vertex_attrs for m in meshes], "vertex")
        fa = common([m.face_attrs for m in meshes], "face")
        ca = common([m.corner_attrs for m in meshes])  # what it leaves out: counted below
        materials = meshes[0].materials
        if any(m.materials != materials for m in meshes[1:]):
            # parts with their own libraries (not one equal in every name, material, texture
            # and file: the same asset read twice): one library holding them all, each part's
            # material ids moved past the parts' before it (materials.combine)
            from .materials import combine

            materials, at = combine([m.materials for m in meshes])
            fa["material"] = xp.concatenate(
                [
                    (
                        m.face_attrs["material"].astype(xp.int32) + o
                        if m.materials is not None and "material" in m.face_attrs
                        else xp.full(m.n_faces, o, dtype=xp.int32)
                    )
                    for m, o in zip(meshes, at, strict=True)
                ]
            )
        gone = set().union(*(m.corner_attrs for m in meshes)) - set(ca)
        if gone:
            lost["corner attributes (not on every part alike)"] = len(gone)
        fa["part"] = xp.concatenate(
            [xp.full(m.n_faces, i, dtype=xp.int32) for i, m in enumerate(meshes)]
        )
        out = cls(
            V,
            F.astype(xp.int32),
            va,
            fa,
            source=meshes[0].source,
            corner_attrs=ca,
            materials=materials,
        )
        for m in meshes:  # what the files left out, added up
            for k, n in m.dropped.items():
                out.dropped[k] = out.dropped.get(k, 0) + n
        for k, n in lost.items():
            out.dropped[k] = out.dropped.get(k, 0) + n
        return out

    # -------------------------------------------------------------- library
    # Conveniences for scripts: the same as :func:`~.library.load`, :func:`~.library.save` and
    # :func:`~.library.run`, which are the facade (``tessera.load`` / ``save`` / ``run``).
    @classmethod
    def load(cls, path: str | os.PathLike[str], *, dtype: str = "float32") -> TriMesh:
        """:func:`workers.engine.library.load`."""
        from .library import load

        return load(path, dtype=dtype)

    def save(self, path: str | os.PathLike[str], **options: Any) -> None:
        """:func:`workers.engine.library.save` of this mesh."""
        from .library import save

        save(self, path, **options)

    def run(self, pipeline: Iterable[Any], *, device: str = "auto") -> PipelineResult:
        """:func:`workers.engine.library.run` on this mesh."""
        from .library import run

        return run(self, pipeline, device=device)


def segment_mean(xp: ModuleType, a: Any, seg: Any, n: int) -> Any:
    """Mean of rows of ``a`` grouped by ``seg`` (ids in ``[0, n)``), by scatter-add and count."""
    a2 = a.reshape(a.shape[0], math.prod(a.shape[1:])).astype(xp.float64)  # 0 rows too
    out = xp.zeros((n, a2.shape[1]), dtype=xp.float64)
    for k in range(a2.shape[1]):
        out[:, k] = xp.bincount(seg, weights=a2[:, k], minlength=n)
    cnt = xp.bincount(seg, minlength=n).astype(xp.float64)
    out /= xp.maximum(cnt, 1.0)[:, None]
    return out.reshape((n,) + a.shape[1:]).astype(a.dtype)
