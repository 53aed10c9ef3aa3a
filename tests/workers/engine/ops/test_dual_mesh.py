"""``dual_mesh``: polygon counts, Euler characteristic, ring order, boundary rule, attributes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    bowtie,
    cube,
    grid,
    load,
    mobius,
    run,
    stats,
    tetrahedron,
)
from workers.engine import MeshError, TriMesh
from workers.engine.ops import OPS


def _dual(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("dual_mesh", params))
    return res.mesh, res.reports["dual_mesh"]


def _polygons(out: TriMesh, n_centroids: int, triangulation: str) -> list[list[int]]:
    """The dual polygons read back from the triangles: each polygon's corners in order."""
    F = np.asarray(out.F)
    pid = np.asarray(out.face_attrs["polygon_id"])
    polys: list[list[int]] = []
    for p in range(int(pid.max()) + 1):
        T = F[pid == p]
        if triangulation == "centroid":
            assert (T[:, 0] >= n_centroids).all() and len(set(T[:, 0])) == 1
            ring = [int(T[0, 1])]
            nxt = {int(a): int(b) for a, b in T[:, 1:]}
            while nxt[ring[-1]] != ring[0]:
                ring.append(nxt[ring[-1]])
            assert len(ring) == len(T)
        else:
            ring = [int(T[0, 0])] + [int(t[1]) for t in T] + [int(T[-1, 2])]
        polys.append(ring)
    return polys


def _polygon_euler(polys: list[list[int]], n_vertices: int) -> int:
    sides = {tuple(sorted((r[i], r[(i + 1) % len(r)]))) for r in polys for i in range(len(r))}
    return n_vertices - len(sides) + len(polys)


@pytest.mark.parametrize("triangulation", ["centroid", "fan"])
@pytest.mark.parametrize(
    "name",
    ["rx-cube.obj", "rx-sphere3.obj", "rx-torus.obj", "spot.obj", "rx-el_topo_sphere_1280.obj"],
)
def test_dual_of_closed_manifold_keeps_euler_characteristic(name: str, triangulation: str) -> None:
    m = load(name)
    s0 = stats(m)
    out, rep = _dual(m, triangulation=triangulation)
    topo = m.topology
    assert rep["polygons"] == m.n_vertices
    assert rep["dual_vertices"] == m.n_faces
    assert rep["dual_edges"] == topo.n_edges
    assert rep["polygon_sides"] == 3 * m.n_faces
    assert rep["vertices_without_polygon"] == 0
    polys = _polygons(out, m.n_faces, triangulation)
    assert len(polys) == m.n_vertices
    chi = _polygon_euler(polys, rep["dual_vertices"])
    assert chi == rep["polygon_euler_characteristic"] == s0["euler_characteristic"]
    s1 = stats(out)
    assert s1["euler_characteristic"] == s0["euler_characteristic"]
    assert s1["boundary_edges"] == 0 and s1["consistently_oriented"]
    assert s1["volume"] > 0  # outward, as the input
    # each polygon's corners are the centroids of exactly the faces around its vertex
    vf_off, vf = (np.asarray(a) for a in topo.vf())
    V, F, W = np.asarray(m.V, np.float64), np.asarray(m.F), np.asarray(out.V, np.float64)
    for v in (0, m.n_vertices // 2, m.n_vertices - 1):
        faces = vf[vf_off[v] : vf_off[v + 1]]
        np.testing.assert_allclose(
            np.sort(W[polys[v]], axis=0), np.sort(V[F[faces]].mean(axis=1), axis=0), atol=1e-6
        )


def test_dual_of_the_tetrahedron_is_a_tetrahedron() -> None:
    m = tetrahedron()
    out, rep = _dual(m, triangulation="fan")
    assert (out.n_vertices, out.n_faces, rep["polygons"]) == (4, 4, 4)
    V = np.asarray(m.V)
    np.testing.assert_allclose(np.asarray(out.V), V[np.asarray(m.F)].mean(axis=1))
    # the dual polygon of vertex v joins the faces around v: the face opposite v is left out
    F = np.asarray(m.F)
    for v, tri in enumerate(np.asarray(out.F)):
        assert sorted(tri) == [f for f in range(4) if v in F[f]]
    assert stats(out)["volume"] == pytest.approx(1 / 6 / 27)  # scaled by -1/3


def test_cube_dual_polygon_sizes_and_centroid_fans() -> None:
    m = cube()
    out, rep = _dual(m)
    # valences of the triangulated cube: two vertices of 3, six... read them from the topology
    valence = np.bincount(np.asarray(m.topology.EV).ravel())
    assert rep["polygon_sides"] == int(valence.sum()) == 36
    pid = np.asarray(out.face_attrs["polygon_id"])
    np.testing.assert_array_equal(np.bincount(pid), valence)
    assert out.n_vertices == 12 + 8 and out.n_faces == 36


def test_open_mesh_boundary_vertices_have_no_polygon() -> None:
    m = grid(4)  # 25 vertices, 16 on the boundary
    out, rep = _dual(m)
    assert rep["polygons"] == 9 and rep["vertices_without_polygon"] == 16
    # two corner squares have their diagonal between boundary vertices: one triangle there
    # touches no interior vertex and the diagonal joins no polygon
    assert rep["dual_vertices"] == 32 - 2
    assert rep["dual_edges"] == 56 - 16 - 2  # edges - boundary edges - those two diagonals
    polys = _polygons(out, rep["dual_vertices"], "centroid")
    assert _polygon_euler(polys, rep["dual_vertices"]) == rep["polygon_euler_characteristic"]
    assert stats(out)["boundary_loops"] == 1 and stats(out)["consistently_oriented"]


@pytest.mark.parametrize("make", [bowtie, mobius])
def test_no_interior_vertex_means_no_dual(make: object) -> None:
    m = make()  # type: ignore[operator]
    res = OPS.get("dual_mesh").numpy(m, OPS.get("dual_mesh").parse_params({}))
    assert res.mesh.n_faces == 0 and res.report["polygons"] == 0
    with pytest.raises(MeshError) as exc:
        run(m, "dual_mesh")
    assert exc.value.code == "mesh.no_faces_left"


def test_non_manifold_and_inconsistent_vertices_are_skipped() -> None:
    m = load("beetle.obj")  # 47 non-manifold edges, boundaries
    out, rep = _dual(m)
    topo = m.topology
    crease = np.asarray(topo.edge_face_count) != 2
    excluded = np.zeros(m.n_vertices, bool)
    excluded[np.asarray(topo.EV)[crease].ravel()] = True
    assert rep["polygons"] <= int((~excluded).sum())
    assert rep["polygons"] + rep["vertices_without_polygon"] == m.n_vertices
    assert stats(out)["non_manifold_edges"] == 0
    # flipping one face of a closed mesh takes its three vertices out
    c = cube()
    F = np.asarray(c.F).copy()
    F[0] = F[0, ::-1]
    _, rep = _dual(TriMesh.from_arrays(np.asarray(c.V), F, dtype="float64"))
    assert rep["polygons"] == 8 - 3


def test_attributes_swap_roles() -> None:
    m = load("spot.obj")
    m = m.with_attrs(
        vertex={"vid": np.arange(m.n_vertices, dtype=np.int32)},
        face={"fid": np.arange(m.n_faces, dtype=np.float64)},
    )
    out, rep = _dual(m)
    pid = np.asarray(out.face_attrs["polygon_id"])
    np.testing.assert_array_equal(out.face_attrs["vid"], pid)  # polygon p is vertex p here
    fid = np.asarray(out.vertex_attrs["fid"])
    np.testing.assert_array_equal(fid[: m.n_faces], np.arange(m.n_faces))
    assert fid.shape == (out.n_vertices,)


def test_no_interior_vertex_with_face_attributes_is_no_faces_left() -> None:
    # a lone triangle has no vertex with a polygon around it; its face attribute changes nothing
    tri = TriMesh.from_arrays(np.eye(3), np.array([[0, 1, 2]]))
    tri = TriMesh(tri.V, tri.F, {}, {"part": np.zeros(1, dtype=np.int32)})
    with pytest.raises(MeshError) as e:
        run(tri, "dual_mesh")
    assert e.value.code == "mesh.no_faces_left"
