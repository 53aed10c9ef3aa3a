"""A packed run gives every member what the pipeline gives it alone, bit for bit (NumPy) or within
the ops' tolerances (GPU): positions, faces, attributes, statistics and the bytes written."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import mesh_path
from workers.engine.io import load_path, serialize
from workers.engine.mesh import TriMesh
from workers.engine.ops import OPS, Packing
from workers.engine.ops.stats import mesh_stats
from workers.engine.packing import (
    PART,
    PackingError,
    _in_order,
    pack,
    run_packed,
    signature,
    unpack,
)
from workers.engine.pipeline import parse_pipeline, run_pipeline

PIPELINE = ["weld", "repair", ("vertex_normals", {"weighting": "angle"}), "stats"]
#: small shared meshes (the test stays fast), twice the same one (a weld must not join them)
SHARED = ["rx-el_topo_sphere_1280.obj", "woody.obj", "rx-cloth.obj", "woody.obj", "cow.obj"]


def _broken() -> list[TriMesh]:
    """A bow-tie of two triangles sharing one vertex, with a duplicate face, a face with a
    repeated index and an unused vertex; an open strip whose second face is flipped and whose
    vertices repeat (a soup: weld joins them); a mesh whose only face collapses (weld, then
    repair, leave it no face)."""
    bowtie = TriMesh(
        np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0], [5, 5, 5]], np.float32),
        np.array([[0, 1, 2], [0, 3, 4], [0, 1, 2], [1, 1, 2]], np.int32),
    )
    soup = TriMesh(
        np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.5]], np.float32),
        np.array([[0, 1, 2], [3, 4, 5]], np.int32),
    )
    collapsed = TriMesh(
        np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0]], np.float32),
        np.array([[0, 1, 2]], np.int32),
    )
    return [bowtie, soup, collapsed]


def _same(a: TriMesh, b: TriMesh, exact: bool = True) -> None:
    assert a.n_vertices == b.n_vertices and a.n_faces == b.n_faces
    assert sorted(a.vertex_attrs) == sorted(b.vertex_attrs)
    assert sorted(a.face_attrs) == sorted(b.face_attrs)
    assert np.array_equal(a.F, b.F)
    assert a.V.dtype == b.V.dtype
    assert np.array_equal(a.V, b.V)
    for k in a.vertex_attrs:
        assert a.vertex_attrs[k].dtype == b.vertex_attrs[k].dtype, k
        assert np.array_equal(a.vertex_attrs[k], b.vertex_attrs[k]), k
    for k in a.face_attrs:
        assert np.array_equal(a.face_attrs[k], b.face_attrs[k]), k
    if exact:
        assert mesh_stats(a) == mesh_stats(b)
        assert serialize(a, "ply") == serialize(b, "ply")


def _with_attrs(m: TriMesh, seed: int) -> TriMesh:
    """``m`` with a vertex attribute (a weld averages it) and a face attribute (carried)."""
    rng = np.random.default_rng(seed)
    return TriMesh(
        m.V,
        m.F,
        {"quality": rng.random(m.n_vertices, dtype=np.float32)},
        {"label": rng.integers(0, 9, m.n_faces, dtype=np.int32)},
    )


def _members() -> list[TriMesh]:
    """All of one signature (what a pack holds): the shared meshes, then the broken ones."""
    shared = [load_path(mesh_path(n)) for n in SHARED]
    return [_with_attrs(m, i) for i, m in enumerate(shared + _broken())]


def test_pack_and_unpack_give_the_members_back():
    members = _members()
    back = unpack(pack(members))
    for a, b in zip(back, members, strict=True):
        _same(a, b)


def test_a_packed_pipeline_gives_each_member_what_it_alone_gets():
    members = _members()
    run = run_packed(members, parse_pipeline(PIPELINE))
    assert run.modes == ["keyed", "local", "local", "measure"]
    collapsed = len(members) - 1
    assert run.alone == [collapsed]  # alone, it fails with its own error
    with pytest.raises(Exception, match="no faces"):
        run_pipeline(members[collapsed], PIPELINE, device="cpu")
    for i, m in enumerate(members[:collapsed]):
        got = run.meshes[i]
        assert got is not None
        _same(got, run_pipeline(m, PIPELINE, device="cpu").mesh)
    # the bow-tie was split: repair appended a vertex to that member, not after the pack
    bowtie = run.meshes[len(SHARED)]
    assert bowtie is not None and bowtie.n_vertices == 6


@pytest.mark.parametrize(
    "pipeline",
    [
        [("weld", {"remove_unused": False}), "remove_degenerate_faces", "face_normals"],
        # a weld with a tolerance runs member by member, between packed steps
        ["remove_unused_vertices", ("weld", {"tolerance": 0.01, "relative": True}), "repair"],
    ],
)
def test_other_pipelines_and_single_steps_between_packed_ones(pipeline):
    members = _members()
    members = members[len(SHARED) :] + members[:1]  # the small ones: fast
    run = run_packed(members, parse_pipeline(pipeline))
    for i, m in enumerate(members):
        if i in run.alone:
            continue
        got = run.meshes[i]
        assert got is not None
        _same(got, run_pipeline(m, pipeline, device="cpu").mesh)


def _with_corners(m: TriMesh, seed: int, normals: bool = False) -> TriMesh:
    """``m`` with texture coordinates per corner (a seam wherever two faces disagree) and,
    with ``normals``, corner normals."""
    rng = np.random.default_rng(seed)
    ca = {"uv": rng.random((m.n_faces, 3, 2)).astype(np.float32)}
    if normals:
        n = rng.normal(size=(m.n_faces, 3, 3))
        ca["normal"] = (n / np.linalg.norm(n, axis=2, keepdims=True)).astype(np.float32)
    return TriMesh(m.V, m.F, m.vertex_attrs, m.face_attrs, corner_attrs=ca)


def _packed_as_alone(members: list[TriMesh], pipeline: list, fmt: str) -> None:
    """``members`` run as one pack: none left to run alone, each equal to its run alone
    (positions, faces, attributes, statistics, corners, its own library) and written as
    ``fmt`` byte for byte alike."""
    run = run_packed(members, parse_pipeline(pipeline))
    assert run.alone == []
    for got, m in zip(run.meshes, members, strict=True):
        assert got is not None and got.materials is m.materials
        want = run_pipeline(m, pipeline, device="cpu").mesh
        _same(got, want)
        assert sorted(got.corner_attrs) == sorted(want.corner_attrs)
        for k in want.corner_attrs:
            assert np.array_equal(got.corner_attrs[k], want.corner_attrs[k]), k
        assert serialize(got, fmt) == serialize(want, fmt)


@pytest.mark.parametrize("normals", [False, True])
@pytest.mark.parametrize(
    "pipeline",
    [
        PIPELINE,
        # a weld with a tolerance runs member by member (corners carried as alone); this one
        # merges nothing, so no later step changes faces
        ["remove_unused_vertices", ("weld", {"tolerance": 1e-7, "relative": True}), "repair"],
    ],
)
def test_members_with_corner_attributes_get_what_each_alone_gets(pipeline, normals):
    """Texture coordinates and corner normals are packed with their faces and carried as for a
    mesh alone (corner normals left out after vertex_normals): bit for bit, OBJ bytes too."""
    spot = load_path(mesh_path("spot.obj"))
    assert "uv" in spot.corner_attrs
    names = ["rx-el_topo_sphere_1280.obj", "woody.obj", "rx-cloth.obj"]
    members = [_with_corners(load_path(mesh_path(n)), i, normals) for i, n in enumerate(names)]
    if not normals:
        members.append(TriMesh(spot.V, spot.F, corner_attrs=spot.corner_attrs))
    _packed_as_alone(members, pipeline, "obj")


def _split(m: TriMesh) -> TriMesh:
    """``m`` as a glTF exporter writes a textured mesh: every face with vertices of its own
    (a weld joins them again, faces and their order kept)."""
    return TriMesh(
        m.V[m.F.reshape(-1)],
        np.arange(3 * m.n_faces, dtype=np.int32).reshape(-1, 3),
        corner_attrs=m.corner_attrs,
    )


def test_members_whose_weld_merges_vertices_keep_their_corners_as_alone():
    """A weld that merges split vertices changes the pack's faces but keeps every face: the
    corners are carried member by member (corners.transfer, nothing rebuilt), as alone."""
    names = ["woody.obj", "rx-sphere3.obj", "woody.obj"]
    members = [_split(_with_corners(load_path(mesh_path(n)), i)) for i, n in enumerate(names)]
    members.append(_with_corners(load_path(mesh_path("rx-cloth.obj")), 9))  # nothing merges
    for m in members[:-1]:  # the weld does merge the split ones
        assert run_pipeline(m, ["weld"], device="cpu").mesh.n_vertices < m.n_vertices
    _packed_as_alone(members, PIPELINE, "obj")


def test_an_exact_weld_of_a_textured_pack_keeps_the_corners_row_for_row(monkeypatch):
    """An exact weld keeps every face and its corner positions: the pack keeps its corners
    row for row (no search for each face's match), and each member gets what it alone gets."""
    import workers.engine.corners as corners

    names = ["woody.obj", "rx-sphere3.obj"]
    members = [_split(_with_corners(load_path(mesh_path(n)), i)) for i, n in enumerate(names)]
    calls: list[int] = []
    real = corners.match_faces
    monkeypatch.setattr(corners, "match_faces", lambda *a: calls.append(1) or real(*a))
    run = run_packed(members, parse_pipeline(["weld"]))
    assert calls == []
    for got, m in zip(run.meshes, members, strict=True):
        assert got is not None
        want = run_pipeline(m, ["weld"], device="cpu").mesh
        _same(got, want)
        assert np.array_equal(got.corner_attrs["uv"], want.corner_attrs["uv"])
        assert serialize(got, "obj") == serialize(want, "obj")


def test_members_with_materials_keep_their_own_library_as_alone():
    """Textured assets with their own libraries (glTF assets whose weld joins their split
    vertices, an OBJ zip with textures) through the batch pipeline in packs: each comes back
    with its own library and corners, its GLB byte for byte what it alone gives. Beetle (an
    OBJ with an MTL and corner normals) has a face repair turns over: its pack runs alone."""
    from tests.conftest import ASSETS

    names = ("fuze.zip", "Duck.glb", "BoxTextured.glb", "CesiumMilkTruck.glb")
    members = [load_path(ASSETS / n) for n in names]
    assert all(m.materials is not None for m in members)
    by_sig: dict = {}
    for m in members:
        by_sig.setdefault(signature(m), []).append(m)
    assert max(len(g) for g in by_sig.values()) == 3  # the three GLBs share one
    for group in by_sig.values():
        _packed_as_alone(group, PIPELINE, "glb")
    # beetle (an OBJ with an MTL and corner normals) has parts repair turns over and vertices
    # it splits: repair carries each corner with its face's row, so it packs too
    beetle = load_path(mesh_path("beetle.obj"))
    _packed_as_alone([beetle, beetle], PIPELINE, "glb")


def test_a_pack_with_corners_whose_faces_a_step_changes_runs_its_members_alone():
    """A repair that turns a face over (the soup's second face) carries plain corners with the
    face's row, in a pack as alone; tangents it leaves to the surface search, whose answer in a
    pack could come from another member: with tangents the pack refuses (the caller runs the
    member alone) instead of guessing."""
    soup = _with_corners(_broken()[1], 3)
    woody = _with_corners(load_path(mesh_path("woody.obj")), 4)
    _packed_as_alone([woody, soup], PIPELINE, "glb")
    for m in (soup, woody):  # a pack's members share their attributes
        m.corner_attrs["tangent"] = np.tile(np.array([1, 0, 0, 1], np.float32), (m.n_faces, 3, 1))
    with pytest.raises(PackingError, match="repair rebuilt faces of 1 textured member") as exc:
        run_packed([woody, soup], parse_pipeline(PIPELINE))
    assert exc.value.members == [1]  # the soup alone; woody may pack again


def test_a_step_that_joins_members_is_caught():
    """A pack whose faces reach into another member's vertices raises instead of giving a
    member someone else's vertices."""
    p = pack(_broken()[:2])
    F = p.mesh.F.copy()
    F[0, 0] = int(p.v_off[1])  # the bow-tie's first face now uses the soup's first vertex
    joined = TriMesh(p.mesh.V, F, p.mesh.vertex_attrs, p.mesh.face_attrs)
    with pytest.raises(PackingError):
        _in_order(joined, 2)


def test_declared_packing():
    """The ops declared ``local`` or ``keyed`` are those the pipelines above compare member by
    member: declaring another one packable needs it added here."""
    weld = OPS.get("weld")
    assert weld.packing_for(weld.parse_params({})) is Packing.keyed
    assert weld.packing_for(weld.parse_params({"tolerance": 0.1})) is Packing.single
    packed = {op.name for op in OPS if op.packing is not Packing.single}
    tested = {"weld", "repair", "vertex_normals", "face_normals"}
    tested |= {"remove_degenerate_faces", "remove_unused_vertices", "stats"}
    assert packed == tested
    assert PART not in OPS.attribute_names()


@pytest.mark.gpu
def test_a_packed_pipeline_on_the_gpu_matches_each_member_alone():
    """The same packed run on CuPy arrays: every member equal to its own GPU run in faces and
    positions, its attributes within the ops' tolerances (the GPU's atomic sums are not
    ordered, so two runs of one mesh may differ in the last bits)."""
    members = [m.to("cupy") for m in _members()]
    run = run_packed(members, parse_pipeline(PIPELINE))
    assert run.alone == [len(members) - 1]
    for i, m in enumerate(members[:-1]):
        got = run.meshes[i]
        assert got is not None and got.backend == "cupy"
        ref = run_pipeline(m, PIPELINE, device="gpu").mesh
        a, b = got.to("numpy"), ref.to("numpy")
        assert np.array_equal(a.F, b.F) and np.array_equal(a.V, b.V)
        tol = OPS.tolerance(OPS.get("vertex_normals"), "vertex_normals")
        na, nb = a.vertex_attrs["vertex_normals"], b.vertex_attrs["vertex_normals"]
        assert np.all(np.abs(na - nb) <= tol.atol + tol.rtol * np.abs(nb))
        assert mesh_stats(a) == mesh_stats(b)


@pytest.mark.gpu
def test_textured_members_packed_on_the_gpu_keep_their_corners_as_alone():
    """Texture coordinates through a packed GPU run, weld merging split vertices: each
    member's corners equal its own GPU run's, bit for bit (carried, never computed)."""
    names = ["woody.obj", "rx-sphere3.obj", "rx-cloth.obj"]
    members = [_with_corners(load_path(mesh_path(n)), i) for i, n in enumerate(names)]
    members = [_split(members[0]), _split(members[1]), members[2]]
    run = run_packed([m.to("cupy") for m in members], parse_pipeline(PIPELINE))
    assert run.alone == []
    for got, m in zip(run.meshes, members, strict=True):
        assert got is not None and got.backend == "cupy"
        ref = run_pipeline(m.to("cupy"), PIPELINE, device="gpu").mesh
        a, b = got.to("numpy"), ref.to("numpy")
        assert np.array_equal(a.F, b.F) and np.array_equal(a.V, b.V)
        assert np.array_equal(a.corner_attrs["uv"], b.corner_attrs["uv"])


def test_the_statistics_of_each_part_are_those_of_the_member_alone():
    """Every field, bit for bit, on meshes that take every branch: open and closed, genus 1,
    duplicate vertices and faces, a bow-tie, unused vertices, a face turned over, two equal
    members; before and after the pipeline."""
    from workers.engine.part_stats import part_stats

    names = ["rx-torus.obj", "suzanne.obj", "teapot.obj", "woody.obj", "woody.obj"]
    members = [load_path(mesh_path(n)) for n in names]
    members = [TriMesh(m.V, m.F) for m in members] + _broken()
    cube = load_path(mesh_path("rx-cube.obj"))
    F = cube.F.copy()
    F[0] = F[0, ::-1]  # closed, not consistently oriented: no volume
    members.insert(1, TriMesh(cube.V, F))
    p = pack(members)
    got = part_stats(TriMesh(p.mesh.V, p.mesh.F), p.v_off, p.f_off)
    assert got == [mesh_stats(m) for m in members]
    run = run_packed(members[:-1], parse_pipeline(PIPELINE))  # not the collapsed one
    p = _in_order(pack([m for m in run.meshes if m is not None]).mesh, len(members) - 1)
    assert part_stats(p.mesh, p.v_off, p.f_off) == [mesh_stats(m) for m in run.meshes]


@pytest.mark.gpu
def test_the_statistics_of_each_part_on_the_gpu_are_those_of_the_member_alone():
    """part_stats on a CuPy pack against mesh_stats of each member on CuPy: counts and flags
    equal, the area and volume within float64 rounding (NumPy's sums against CuPy's)."""
    from workers.engine.part_stats import part_stats

    names = ["rx-torus.obj", "suzanne.obj", "teapot.obj", "woody.obj", "woody.obj"]
    members = [load_path(mesh_path(n)) for n in names]
    members = [TriMesh(m.V, m.F).to("cupy") for m in members]
    members += [m.to("cupy") for m in _broken()]
    p = pack(members)
    got = part_stats(TriMesh(p.mesh.V, p.mesh.F), p.v_off, p.f_off)
    for g, m in zip(got, members, strict=True):
        want = mesh_stats(m)
        assert g.keys() == want.keys()
        for k, v in want.items():
            if k in ("area", "volume", "bbox_diagonal") and v is not None:
                assert g[k] == pytest.approx(v, rel=1e-12), k
            else:
                assert g[k] == v, k
