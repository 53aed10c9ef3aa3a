"""One pipeline over many small meshes at once: the meshes packed side by side into one mesh,
each step run once over the pack where that gives every mesh what it alone would get.

Motivation: a batch of a dataset's files (thousands of meshes of 1k to 70k faces) run one by
one pays each step's fixed cost (on a GPU, dozens of kernel launches and host syncs per step)
per mesh. Packed, it pays it once per pack.

Design:

* :func:`pack` concatenates the members (Wald 2021, section 3.2: vertex arrays appended, each
  member's indices shifted by the vertices before it). No two members share a vertex, so every
  step that reads only what is joined to an element (its faces, edges, fans, components) gives
  each member what it alone would: the op declares this as ``packing=Packing.local``
  (:class:`~.ops.registry.Packing`). A step that would join members by position, an exact weld,
  is ``keyed``: its ``Operation.packed`` implementation keys it by each vertex's part. A
  measurement (``measure``: its report is per mesh) runs member by member, or not at all where
  the caller keeps no reports. Every other step (a bounding box, a global scale, a remesher)
  is ``single``: run member by member and packed again.
* The part of each vertex and face travels as the attribute ``_pack_part`` (:data:`PART`), so
  that any re-indexing carries it (``TriMesh.reindexed``). After each step the parts are put
  back in order (:func:`_in_order`): a stable sort by part, which keeps each member's own
  order, e.g. ``repair``'s split vertices, appended after all members, move to the end of their
  own member, where the member alone appends them. The step must leave every face's vertices in
  its own part; it is checked, and a pack that breaks it raises :class:`PackingError`.
* :func:`unpack` cuts the pack back into its members; :func:`~.part_stats.part_stats` gives
  each member's statistics from the pack's own topology.

The result of each member is then the same, bit for bit on NumPy, as the pipeline run on it
alone (``tests/workers/engine/test_packing.py`` compares them over the shared meshes), which is
what lets a batch pack its items (``workers.runner.execute_chunk``). Members whose run would
have failed are for the caller to run alone (:func:`packable`, :attr:`PackedRun.alone`).
Corner attributes (texture coordinates, corner normals) are packed with their faces and carried
as for a mesh alone, member by member where a step changed faces (:func:`_run_step`); each
member keeps its own materials (:attr:`Pack.libraries`). A pack in which a step rebuilt a face
of a textured member (its corners would be interpolated from the nearest surface) runs its
members alone.

Measured on NumPy (2-core CPU, shared with other work, so give or take a third; weld + repair
+ vertex_normals + stats): the 16 shared meshes of 1k to 70k faces (attributes left out) as
one pack, 1.1 to 1.2 s against 0.7 s one by one (repair's sorts and components grow faster
than linearly); 64 meshes of 1k to 7k faces in a batch chunk, 43 to 48 items/s packed against
42 to 50 one by one: no gain; 32 cubes of 12 faces, 13 ms against 45 ms; 200 meshes of 12 to
968 faces in a chunk, about 245 items/s against 165. So a batch on the CPU packs only meshes
under ``CPU_PACK_FACES`` faces; on the GPU each step's fixed cost (launches, syncs) is what a
pack saves, and every mesh up to a quarter of ``GPU_PACK_FACES`` is packed (not measured here:
no GPU on this host).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .backend import sync, to_numpy
from .mesh import TriMesh
from .ops import Packing
from .ops.stats import mesh_stats
from .part_stats import part_stats
from .pipeline import Step

#: the attribute (vertex and face, int32) that says which member of a pack an element belongs to
PART = "_pack_part"


class PackingError(RuntimeError):
    """A step left a pack whose parts are joined (a face with vertices of two members): a bug
    in that op's ``packing`` declaration; or it rebuilt faces of textured members, whose
    corners only a run alone can carry (``members``: their indices in the pack). The caller
    runs the members alone instead (those in ``members`` alone, the others may pack again)."""

    def __init__(self, message: str, members: list[int] | None = None) -> None:
        super().__init__(message)
        self.members = members


@dataclass
class Pack:
    """Members side by side: ``mesh`` holds them all; member ``i`` has vertices
    ``v_off[i]:v_off[i + 1]`` and faces ``f_off[i]:f_off[i + 1]``."""

    mesh: TriMesh
    v_off: np.ndarray
    f_off: np.ndarray
    #: each member's materials, where they have them (the pack's own ``materials`` is only the
    #: largest of them, so that the faces' ``material`` indices, each member's own, pass the
    #: mesh's checks and the steps carry them as for a member alone)
    libraries: list[Any] | None = None

    def moved(self, mesh: TriMesh) -> Pack:
        """The same members, ``mesh`` holding them (on another backend)."""
        return Pack(mesh, self.v_off, self.f_off, self.libraries)

    @property
    def n_parts(self) -> int:
        return int(self.v_off.shape[0]) - 1

    def faces_of(self) -> np.ndarray:
        return np.diff(self.f_off)


def signature(mesh: TriMesh) -> tuple[Any, ...]:
    """What two meshes must share to be packed together: backend, position and index types, and
    the name, type and shape per element of every vertex, face and corner attribute, and
    whether it has materials (each member keeps its own)."""

    def attrs(d: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sorted((k, str(a.dtype), tuple(a.shape[1:])) for k, a in d.items()))

    return (
        mesh.backend,
        str(mesh.V.dtype),
        str(mesh.F.dtype),
        attrs(mesh.vertex_attrs),
        attrs(mesh.face_attrs),
        attrs(mesh.corner_attrs),
        mesh.materials is not None,
    )


def packable(mesh: TriMesh) -> bool:
    """Whether a mesh can go into a pack: it has faces and no attribute named ``PART``. Corner
    attributes (texture coordinates, corner normals, tangents) and materials are packed: see
    :func:`_run_step` and :attr:`Pack.libraries`."""
    return mesh.n_faces > 0 and PART not in mesh.vertex_attrs and PART not in mesh.face_attrs


def pack(meshes: list[TriMesh]) -> Pack:
    """The members side by side (all of one :func:`signature`), with ``PART`` on vertices and
    faces."""
    if len({signature(m) for m in meshes}) != 1:
        raise ValueError("a pack's members must share one signature")
    xp = meshes[0].xp
    nv = np.array([m.n_vertices for m in meshes], dtype=np.int64)
    nf = np.array([m.n_faces for m in meshes], dtype=np.int64)
    v_off = np.concatenate([[0], np.cumsum(nv)])
    f_off = np.concatenate([[0], np.cumsum(nf)])
    V = xp.concatenate([m.V for m in meshes])
    F = xp.concatenate([m.F + int(o) for m, o in zip(meshes, v_off[:-1], strict=True)])
    ids = np.arange(len(meshes), dtype=np.int32)
    va = {k: xp.concatenate([m.vertex_attrs[k] for m in meshes]) for k in meshes[0].vertex_attrs}
    fa = {k: xp.concatenate([m.face_attrs[k] for m in meshes]) for k in meshes[0].face_attrs}
    # made on the host (CuPy's repeat takes no array of counts), copied once
    va[PART] = xp.asarray(np.repeat(ids, nv))
    fa[PART] = xp.asarray(np.repeat(ids, nf))
    ca = {k: xp.concatenate([m.corner_attrs[k] for m in meshes]) for k in meshes[0].corner_attrs}
    libraries = [m.materials for m in meshes]
    if all(lib is None for lib in libraries):
        return Pack(TriMesh(V, F.astype(xp.int32), va, fa, corner_attrs=ca), v_off, f_off)
    largest = max((lib for lib in libraries if lib is not None), key=len)
    mesh = TriMesh(V, F.astype(xp.int32), va, fa, corner_attrs=ca, materials=largest)
    return Pack(mesh, v_off, f_off, libraries)


def unpack(p: Pack) -> list[TriMesh]:
    """The members of a pack, without ``PART`` (positions and attributes are views of the
    pack's arrays; faces are shifted copies)."""
    m = p.mesh
    out = []
    for i in range(p.n_parts):
        v0, v1 = int(p.v_off[i]), int(p.v_off[i + 1])
        f0, f1 = int(p.f_off[i]), int(p.f_off[i + 1])
        F = m.F[f0:f1] - np.int32(v0) if v0 else m.F[f0:f1]
        va = {k: a[v0:v1] for k, a in m.vertex_attrs.items() if k != PART}
        fa = {k: a[f0:f1] for k, a in m.face_attrs.items() if k != PART}
        ca = {k: a[f0:f1] for k, a in m.corner_attrs.items()}
        lib = p.libraries[i] if p.libraries is not None else None
        F = F.astype(m.xp.int32, copy=False)
        out.append(TriMesh(m.V[v0:v1], F, va, fa, corner_attrs=ca, materials=lib))
    return out


def _in_order(mesh: TriMesh, n_parts: int, libraries: list[Any] | None = None) -> Pack:
    """The pack a step left, its parts put back in order: vertices and faces stably sorted by
    ``PART`` where they are not already, the offsets counted; checks that every face's
    vertices are of the face's own part. ``libraries``: the members' (:attr:`Pack.libraries`)."""
    xp = mesh.xp
    vpart = mesh.vertex_attrs.get(PART)
    fpart = mesh.face_attrs.get(PART)
    if vpart is None or fpart is None:
        raise PackingError("a step dropped the part attribute")
    vpart = vpart.astype(xp.int32, copy=False)  # a weld averages it (equal values: exact)
    V, F, va, fa = mesh.V, mesh.F, dict(mesh.vertex_attrs), dict(mesh.face_attrs)
    ca = dict(mesh.corner_attrs)
    va[PART] = vpart
    if bool((vpart[1:] < vpart[:-1]).any()):
        order = xp.argsort(vpart, kind="stable")
        new_of_old = xp.empty_like(order)
        new_of_old[order] = xp.arange(order.shape[0], dtype=order.dtype)
        V = V[order]
        F = new_of_old[F].astype(xp.int32)
        va = {k: a[order] for k, a in va.items()}
        vpart = va[PART]
    if bool((fpart[1:] < fpart[:-1]).any()):
        order = xp.argsort(fpart, kind="stable")
        F = F[order]
        fa = {k: a[order] for k, a in fa.items()}
        ca = {k: a[order] for k, a in ca.items()}
        fpart = fa[PART]
    if F.shape[0] and not bool((vpart[F] == fpart[:, None]).all()):
        raise PackingError("a step joined two members of a pack")
    v_off = np.zeros(n_parts + 1, dtype=np.int64)
    f_off = np.zeros(n_parts + 1, dtype=np.int64)
    v_off[1:] = np.cumsum(to_numpy(xp.bincount(vpart, minlength=n_parts)))
    f_off[1:] = np.cumsum(to_numpy(xp.bincount(fpart, minlength=n_parts)))
    if V is mesh.V and F is mesh.F:
        out = mesh.with_attrs(vertex={PART: vpart})
    else:
        out = TriMesh(V, F, va, fa, corner_attrs=ca, materials=mesh.materials)
    return Pack(out, v_off, f_off, libraries)


def _member_step(op: Any, backend: str, mesh: TriMesh, params: Any) -> Any:
    """A step on one member, as the pipeline runs it on a mesh alone (corner attributes
    carried by :func:`~.corners.run_carrying`)."""
    from .corners import carries, run_carrying

    if carries(mesh):
        return run_carrying(op, backend, mesh, params)
    return op.implementation(backend)(mesh, params)


def _run_step(op: Any, backend: str, mode: Packing, p: Pack, params: Any) -> Any:
    """One ``local`` or ``keyed`` step over the whole pack ``p`` (on ``backend``). Corner
    attributes are carried as the pipeline carries them for a mesh alone
    (:func:`~.corners.carry`): as they are where the step carried them, left the faces as they
    were or kept every face in its row (an exact weld); where it changed faces otherwise (a
    repair that dropped faces), member by member (:func:`_carry_per_member`)."""
    from .corners import _drop_undeclared, carried_in_place, carries, carry

    mesh = p.mesh
    if mode is Packing.keyed:
        assert op.packed is not None  # packing_for says single otherwise
        out = op.packed(mesh, params, mesh.vertex_attrs[PART])
    else:
        out = op.implementation(backend)(mesh, params)
    if not carries(mesh):
        return out
    after = out.mesh
    new_normals = "vertex_normals" in op.outputs
    # where carry keeps the corners as they are, it does so for the pack as for each member
    # alone; elsewhere it would search the whole pack
    if carried_in_place(mesh, after):
        out.mesh, _ = carry(mesh, after, None, new_normals)
    else:
        out.mesh = _carry_per_member(op, p, after, new_normals)
    _drop_undeclared(op, params, mesh, after, out.mesh)
    return out


def _carry_per_member(op: Any, p: Pack, after: TriMesh, new_normals: bool) -> TriMesh:
    """``after`` (a step's result on the pack ``p``, which changed its faces) with ``p``'s
    corner attributes carried member by member, as :func:`~.corners.carry` carries them for
    each member alone: :func:`~.corners.transfer` between the member before and after, on the
    host (one copy of each pack). Every face of every member must be one the step kept (the
    same corner positions in the same turning order): a face it rebuilt would take its values
    from the nearest surface, which is where a member alone and a pack could differ, so that is
    a :class:`PackingError` and the members run alone."""
    from .corners import transfer

    n = p.n_parts
    ordered = _in_order(after, n, p.libraries)
    b, a = p.mesh.to("numpy"), ordered.mesh.to("numpy")
    pieces: dict[str, list[np.ndarray]] = {k: [] for k in b.corner_attrs}
    face_attrs: dict[str, list[np.ndarray]] = {}
    rebuilt_in: list[int] = []
    for i in range(n):
        v0, v1, f0, f1 = (int(x) for x in (p.v_off[i], p.v_off[i + 1], p.f_off[i], p.f_off[i + 1]))
        w0, w1 = int(ordered.v_off[i]), int(ordered.v_off[i + 1])
        g0, g1 = int(ordered.f_off[i]), int(ordered.f_off[i + 1])
        before_i = TriMesh(
            b.V[v0:v1],
            b.F[f0:f1] - np.int32(v0),
            face_attrs={k: x[f0:f1] for k, x in b.face_attrs.items() if k != PART},
            corner_attrs={k: x[f0:f1] for k, x in b.corner_attrs.items()},
        )
        after_i = TriMesh(
            a.V[w0:w1],
            a.F[g0:g1] - np.int32(w0),
            face_attrs={k: x[g0:g1] for k, x in a.face_attrs.items() if k != PART},
        )
        got, _, rebuilt = transfer(before_i, after_i)
        if rebuilt.any():
            rebuilt_in.append(i)
            continue
        for k in pieces:
            pieces[k].append(to_numpy(got.corner_attrs[k]))
        for k, x in got.face_attrs.items():
            if k not in a.face_attrs:  # what the step dropped, taken back as alone
                face_attrs.setdefault(k, []).append(to_numpy(x))
    if rebuilt_in:
        raise PackingError(
            f"{op.name} rebuilt faces of {len(rebuilt_in)} textured members of a pack: their "
            "corners would be transferred from the nearest surface",
            members=rebuilt_in,
        )
    xp = ordered.mesh.xp
    corners = {k: xp.asarray(np.concatenate(v)) for k, v in pieces.items()}
    if new_normals:  # corner normals go stale with new vertex normals, as alone
        corners.pop("normal", None)
    fa = dict(ordered.mesh.face_attrs)
    fa.update({k: xp.asarray(np.concatenate(v)) for k, v in face_attrs.items()})
    out = TriMesh(
        ordered.mesh.V,
        ordered.mesh.F,
        ordered.mesh.vertex_attrs,
        fa,
        source=after.source,
        corner_attrs=corners,
        materials=p.mesh.materials,
    )
    out.dropped = after.dropped
    return out


@dataclass
class PackedRun:
    """What :func:`run_packed` gives: each member's resulting mesh (None for those that must
    run alone), the indices of those (``alone``: their run would fail at some step, and alone
    it fails with its own error), the seconds of each step and which way it ran."""

    meshes: list[TriMesh | None]
    alone: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)
    #: with ``stats=True``: each member's ``mesh_stats`` (None for those in ``alone``)
    stats: list[dict[str, Any] | None] = field(default_factory=list)


def run_packed(
    meshes: list[TriMesh],
    steps: list[Step],
    *,
    measure: bool = True,
    host: bool = False,
    backend: str | None = None,
    stats: bool = False,
) -> PackedRun:
    """Run parsed ``steps`` over ``meshes`` (all :func:`packable`, of one :func:`signature`)
    as one pack; see the module's docstring. A member that a step
    leaves with no faces is dropped from the result and listed in ``alone`` (the pipeline run
    on it alone raises ``mesh.no_faces_left`` there); a step that raises, raises.

    ``measure=False`` skips the ``measure`` steps (they leave the mesh as it is and refuse no
    mesh: a caller that keeps only the meshes, as a batch does, has no use for their reports).
    ``host``: the members come back on NumPy, the pack copied once. ``backend``: the pack
    runs there (packed where the members are, then copied once). ``stats``: also each
    member's statistics, by :func:`~.part_stats.part_stats` on the pack (timed as
    ``stats_after``)."""
    n = len(meshes)
    run = PackedRun([None] * n)
    p = pack(meshes)
    be = backend or p.mesh.backend
    if p.mesh.backend != be:
        p = p.moved(p.mesh.to(be))
    members: list[TriMesh] | None = None  # the pack cut up, while no step changed it
    dead = np.zeros(n, dtype=bool)
    for i, step in enumerate(steps):
        op = step.op
        impl_backend = be if (be == "numpy" or op.cupy is not None) else "numpy"
        mode = op.packing_for(step.params)
        if mode is Packing.measure and not measure:
            run.modes.append("skipped")
            continue
        t0 = time.perf_counter()
        if mode in (Packing.single, Packing.measure):
            members = members or [m.to(impl_backend) for m in unpack(p)]
            # a member left with no faces stays as it is: it runs alone later
            outs = [
                m if dead[j] else _member_step(op, impl_backend, m, step.params).mesh
                for j, m in enumerate(members)
            ]
            if all(o is m for o, m in zip(outs, members, strict=True)):
                pass  # a measurement: the pack and its members stay as they are
            else:
                members = [o.to(be) for o in outs]
                p = pack(members)
        else:
            moved = p.moved(p.mesh.to(impl_backend))
            out = _run_step(op, impl_backend, mode, moved, step.params)
            p = _in_order(out.mesh.to(be), n, p.libraries)
            members = None
        sync(p.mesh)
        run.timings[f"{i}:{op.name}"] = time.perf_counter() - t0
        run.modes.append(mode.value)
        dead |= p.faces_of() == 0
    t0 = time.perf_counter()
    figures: list[dict[str, Any]] | None = None
    if members is not None:
        kept = [m.to("numpy") for m in members] if host else members
        if stats:
            figures = [mesh_stats(m.to("numpy")) for m in members]
    else:
        if stats:  # where the pack is, with the topology its last steps built
            figures = part_stats(p.mesh, p.v_off, p.f_off)
        kept = unpack(p.moved(p.mesh.to("numpy")) if host else p)
    if stats:
        run.timings["stats_after"] = time.perf_counter() - t0
    run.stats = [None] * n
    for j in range(n):
        if dead[j]:
            run.alone.append(j)
        else:
            run.meshes[j] = kept[j]
            run.stats[j] = figures[j] if figures is not None else None
    return run
