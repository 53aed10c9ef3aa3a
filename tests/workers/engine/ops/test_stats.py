"""``stats``: the counts of shared/meshes/README.md on every real mesh, and hand-made cases for
each topological figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    NON_MANIFOLD_VERTICES,
    README_COUNTS,
    SHARED,
    bowtie,
    cube,
    cylinder,
    load,
    mesh,
    mobius,
    open_square,
    run,
    soup,
    stats,
    tetrahedron,
    three_on_an_edge,
    welded_stats,
)
from workers.engine import TriMesh


def _join(*meshes: TriMesh) -> TriMesh:
    """Disjoint union of meshes."""
    V, F, off = [], [], 0
    for m in meshes:
        V.append(np.asarray(m.V, dtype=np.float64))
        F.append(np.asarray(m.F) + off)
        off += m.n_vertices
    return mesh(np.concatenate(V), np.concatenate(F))


# ------------------------------------------------------------------------------ shared meshes
@pytest.mark.parametrize("name", SHARED)
def test_raw_file_counts_match_readme(name: str) -> None:
    c = README_COUNTS[name]
    s = stats(load(name))
    assert (s["vertices"], s["faces"]) == (c.v, c.F)
    assert s["unused_vertices"] == c.unused
    # distinct positions among used vertices = V weld
    assert s["duplicate_vertices"] == c.v - c.unused - c.v_weld


@pytest.mark.parametrize("name", SHARED)
def test_welded_counts_match_readme(name: str) -> None:
    c = README_COUNTS[name]
    s = welded_stats(name)
    got = (
        s["vertices"],
        s["faces"],
        s["unused_vertices"],
        s["duplicate_vertices"],
        s["duplicate_faces"],
        s["edges"],
        s["boundary_edges"],
        s["non_manifold_edges"],
        s["euler_characteristic"],
    )
    assert got == (
        c.v_weld,
        c.F,
        0,
        0,
        c.dup_faces,
        c.edges,
        c.boundary_edges,
        c.non_manifold_edges,
        c.chi,
    )
    assert s["euler_characteristic"] == s["vertices"] - s["edges"] + s["faces"]
    assert s["closed"] == (c.boundary_edges == 0 and c.non_manifold_edges == 0)
    assert s["non_manifold_vertices"] == NON_MANIFOLD_VERTICES.get(name, 0)
    assert s["manifold"] == (c.non_manifold_edges == 0 and name not in NON_MANIFOLD_VERTICES)


def test_readme_examples_before_weld() -> None:
    bunny = stats(load("stanford-bunny.obj"))
    assert bunny["unused_vertices"] == 1113
    assert bunny["duplicate_vertices"] == 0
    teapot = stats(load("teapot.obj"))
    assert teapot["vertices"] == 3644
    assert teapot["duplicate_vertices"] == 403
    assert welded_stats("teapot.obj")["vertices"] == 3241


def test_spot_is_not_split_at_texture_seams() -> None:
    s = stats(load("spot.obj"))  # no weld: positions exactly as the file stores them
    assert s["vertices"] == 2930
    assert s["boundary_edges"] == 0
    assert s["components"] == 1
    assert s["closed"] and s["genus"] == 0


@pytest.mark.parametrize(
    ("name", "genus"),
    [
        ("rx-torus.obj", 1),
        ("rocker-arm.obj", 1),
        ("rx-dragon.obj", 1),
        ("rx-sphere3.obj", 0),
        ("spot.obj", 0),
        ("rx-cube.obj", 0),
        # open and manifold: genus = (2 - chi - loops) / 2
        ("rx-plane_5.obj", 0),
        ("stanford-bunny.obj", 0),
        ("alligator.obj", 0),
        # non-manifold: no genus
        ("beetle.obj", None),
        ("cow.obj", None),
        ("suzanne.obj", None),
    ],
)
def test_genus_of_shared_meshes(name: str, genus: int | None) -> None:
    assert welded_stats(name)["genus"] == genus


def test_bunny_holes_are_boundary_loops() -> None:
    s = welded_stats("stanford-bunny.obj")
    # one component, chi = -3, genus 0  =>  5 boundary loops
    assert (s["components"], s["euler_characteristic"], s["genus"]) == (1, -3, 0)
    assert s["boundary_loops"] == 5


@pytest.mark.parametrize("name", ["rx-cube.obj", "rx-sphere3.obj", "spot.obj", "rx-torus.obj"])
def test_closed_meshes_have_positive_volume(name: str) -> None:
    s = welded_stats(name)
    assert s["closed"] and s["consistently_oriented"]
    assert s["volume"] is not None and s["volume"] > 0


def test_stats_op_reports_and_keeps_the_mesh() -> None:
    m = cube()
    res = run(m, "stats")
    assert res.mesh is m
    assert res.reports["stats"] == stats(m)


# ------------------------------------------------------------------------------ hand-made cases
def test_tetrahedron() -> None:
    s = stats(tetrahedron())
    assert (s["vertices"], s["edges"], s["faces"]) == (4, 6, 4)
    assert s["euler_characteristic"] == 2
    assert s["genus"] == 0
    assert s["closed"] and s["manifold"] and s["orientable"] and s["consistently_oriented"]
    assert (s["boundary_edges"], s["boundary_loops"], s["components"]) == (0, 0, 1)
    assert s["volume"] == pytest.approx(1 / 6, rel=1e-12)
    assert s["area"] == pytest.approx(1.5 + math.sqrt(3) / 2, rel=1e-12)
    assert s["bbox_min"] == [0.0, 0.0, 0.0] and s["bbox_max"] == [1.0, 1.0, 1.0]
    assert s["bbox_diagonal"] == pytest.approx(math.sqrt(3))
    assert (s["degenerate_faces"], s["duplicate_faces"], s["duplicate_vertices"]) == (0, 0, 0)


def test_reversed_tetrahedron_has_negative_volume() -> None:
    t = tetrahedron()
    s = stats(mesh(t.V, np.asarray(t.F)[:, ::-1]))
    assert s["consistently_oriented"]
    assert s["volume"] == pytest.approx(-1 / 6, rel=1e-12)


def test_cube() -> None:
    s = stats(cube())
    assert (s["vertices"], s["edges"], s["faces"], s["euler_characteristic"]) == (8, 18, 12, 2)
    assert s["volume"] == pytest.approx(1.0, rel=1e-12)
    assert s["area"] == pytest.approx(6.0, rel=1e-12)
    assert s["genus"] == 0


def test_open_square() -> None:
    s = stats(open_square())
    assert (s["vertices"], s["edges"], s["faces"], s["euler_characteristic"]) == (4, 5, 2, 1)
    assert (s["boundary_edges"], s["boundary_loops"]) == (4, 1)
    assert not s["closed"] and s["manifold"] and s["genus"] == 0
    assert s["volume"] is None
    assert s["area"] == pytest.approx(1.0)


def test_bowtie_has_one_non_manifold_vertex() -> None:
    s = stats(bowtie())
    assert s["non_manifold_vertices"] == 1
    assert s["non_manifold_edges"] == 0
    assert s["components"] == 1
    assert not s["manifold"] and s["genus"] is None
    assert s["boundary_edges"] == 6
    assert s["boundary_loops"] == 1  # loops touching at a vertex count once


def test_three_faces_on_one_edge() -> None:
    s = stats(three_on_an_edge())
    assert s["non_manifold_edges"] == 1
    assert s["non_manifold_vertices"] == 0
    assert s["boundary_edges"] == 6
    assert not s["closed"] and not s["manifold"] and s["genus"] is None


def test_mobius_strip_is_not_orientable() -> None:
    n = 8
    s = stats(mobius(n))
    assert (s["vertices"], s["edges"], s["faces"]) == (2 * n, 4 * n, 2 * n)
    assert s["euler_characteristic"] == 0
    assert s["manifold"]
    assert s["orientable"] is False
    assert s["consistently_oriented"] is False
    assert s["genus"] is None
    assert (s["boundary_edges"], s["boundary_loops"]) == (2 * n, 1)


def test_torus_genus_one() -> None:
    s = welded_stats("rx-torus.obj")
    assert (s["euler_characteristic"], s["genus"], s["components"]) == (0, 1, 1)


def test_cylinder_has_two_boundary_loops() -> None:
    s = stats(cylinder(8))
    assert (s["euler_characteristic"], s["boundary_loops"], s["genus"]) == (0, 2, 0)
    assert s["boundary_edges"] == 16


def test_one_flipped_face_is_inconsistent_but_orientable() -> None:
    c = cube()
    F = np.asarray(c.F).copy()
    F[5] = F[5, ::-1]
    s = stats(mesh(c.V, F))
    assert s["closed"] and s["manifold"]
    assert s["consistently_oriented"] is False
    assert s["orientable"] is True
    assert s["genus"] == 0
    assert s["volume"] is None  # no volume without a consistent orientation


def test_components_and_genus_add_up() -> None:
    torus = load("rx-torus.obj")
    s = stats(_join(tetrahedron(), torus, cube()))
    assert s["components"] == 3
    assert s["euler_characteristic"] == 2 + 0 + 2
    assert s["genus"] == 1
    assert s["volume"] == pytest.approx(1 / 6 + 1 + stats(torus)["volume"], rel=1e-6)


def test_mobius_next_to_a_sphere_makes_the_whole_non_orientable() -> None:
    s = stats(_join(tetrahedron(), mobius()))
    assert s["orientable"] is False and s["genus"] is None


def test_duplicate_faces_count_same_vertex_sets() -> None:
    t = tetrahedron()
    F = np.asarray(t.F)
    s = stats(mesh(t.V, np.concatenate([F, F[:1], F[1:2, ::-1]])))
    assert s["duplicate_faces"] == 2
    assert s["non_manifold_edges"] == 5  # the 5 edges of faces 0 and 1 now have 3 or 4 faces


def _degenerate(s: dict) -> tuple[int, int, int]:
    return (
        s["degenerate_faces"],
        s["degenerate_faces_repeated_index"],
        s["degenerate_faces_zero_area"],
    )


def test_degenerate_faces_by_kind() -> None:
    """A repeated index and zero area with three distinct indices (collinear, coincident) are
    both degenerate, reported apart and in the total."""
    V = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (0, 1, 0)]
    F = [
        (0, 1, 3),  # a proper triangle
        (0, 0, 1),  # repeated index
        (1, 2, 2),  # repeated index (and collinear)
        (0, 1, 2),  # distinct indices, collinear: zero area
        (0, 3, 4),  # distinct indices, two coincident positions: zero area
    ]
    assert _degenerate(stats(mesh(V, F))) == (4, 2, 2)
    assert _degenerate(stats(mesh(V, F[:1]))) == (0, 0, 0)
    # a sliver of tiny but nonzero area is not degenerate
    assert _degenerate(stats(mesh([(0, 0, 0), (1, 0, 0), (2, 1e-9, 0)], [(0, 1, 2)]))) == (0, 0, 0)


def test_degenerate_kinds_agree_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The NumPy path and the generic one (the GPU's) count the same faces, also after the
    positions move (the zero-area count depends on them, the repeated-index one does not)."""
    from workers.engine import graph
    from workers.engine.mesh import TriMesh
    from workers.engine.ops import stats as stats_mod

    V = np.array([(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (0, 1, 0)], dtype=np.float64)
    F = np.array([(0, 1, 3), (0, 0, 1), (0, 1, 2), (0, 3, 4)], dtype=np.int32)
    fast = stats_mod.mesh_stats(TriMesh(V, F))
    moved = V.copy()
    moved[2, 1] = 0.5  # face (0, 1, 2) is no longer flat
    fast_moved = stats_mod.mesh_stats(TriMesh(moved, F, _topology=TriMesh(V, F).topology))
    monkeypatch.setattr(graph, "NUMPY_FAST", False)
    generic = stats_mod.mesh_stats(TriMesh(V, F))
    generic_moved = stats_mod.mesh_stats(TriMesh(moved, F))
    assert _degenerate(fast) == _degenerate(generic) == (3, 1, 2)
    assert _degenerate(fast_moved) == _degenerate(generic_moved) == (2, 1, 1)


def test_unused_vertices_leave_chi_and_bbox_alone() -> None:
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), [[10.0, 10.0, 10.0]]])
    s = stats(mesh(V, t.F))
    assert s["vertices"] == 5 and s["unused_vertices"] == 1
    assert s["euler_characteristic"] == 2
    assert s["components"] == 1
    assert s["bbox_max"] == [1.0, 1.0, 1.0]


def test_soup_counts_duplicate_vertices() -> None:
    s = stats(soup(tetrahedron()))
    assert s["vertices"] == 12 and s["duplicate_vertices"] == 8
    assert s["components"] == 4
    assert s["boundary_edges"] == 12 and s["boundary_loops"] == 4
    assert s["euler_characteristic"] == 12 - 12 + 4


def test_the_generic_path_reuses_its_figures_only_for_the_same_positions(monkeypatch):
    """The path the GPU runs keeps its figures with a copy of the positions: the same faces and
    positions give them back (a copy of them), moved positions are measured again."""
    from tests.conftest import mesh_path
    from workers.engine import graph
    from workers.engine.io import load_bytes
    from workers.engine.mesh import TriMesh
    from workers.engine.ops import stats as stats_mod

    monkeypatch.setattr(graph, "NUMPY_FAST", False)
    mesh = load_bytes(mesh_path("spot.obj").read_bytes(), "spot.obj")
    first = stats_mod.mesh_stats(mesh)
    calls = []
    real = stats_mod._stats_generic
    monkeypatch.setattr(stats_mod, "_stats_generic", lambda m: calls.append(1) or real(m))
    again = stats_mod.mesh_stats(TriMesh(mesh.V.copy(), mesh.F, _topology=mesh.topology))
    assert again == first and calls == []
    again["bbox_min"][0] = 99.0  # the caller's own lists
    assert stats_mod.mesh_stats(mesh)["bbox_min"] == first["bbox_min"]
    moved = TriMesh(mesh.V * 2, mesh.F, _topology=mesh.topology)
    scaled = stats_mod.mesh_stats(moved)
    assert calls == [1]
    assert scaled["area"] == pytest.approx(4 * first["area"], rel=1e-6)
    assert scaled["genus"] == first["genus"] and scaled["edges"] == first["edges"]
