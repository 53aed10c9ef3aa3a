"""Topology: EV/FE/EF consistency, VF/VV against brute force, fans, components, boundary loops,
orientation."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    SHARED,
    bowtie,
    cube,
    cylinder,
    load,
    mesh,
    mobius,
    open_square,
    soup,
    tetrahedron,
    three_on_an_edge,
    welded,
)
from workers.engine import TriMesh
from workers.engine.topology import Topology

SMALL = {
    "tetrahedron": tetrahedron,
    "cube": cube,
    "open_square": open_square,
    "bowtie": bowtie,
    "three_on_an_edge": three_on_an_edge,
    "mobius": mobius,
    "cylinder": cylinder,
    "tetra_soup": lambda: soup(tetrahedron()),
}
REAL = ["suzanne.obj", "beetle.obj", "rx-cloth.obj"]


def _mesh(name: str) -> TriMesh:
    return welded(name) if name.endswith(".obj") else SMALL[name]()


def _sides(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return F.ravel(), F[:, [1, 2, 0]].ravel()


@pytest.mark.parametrize("name", [*SMALL, *REAL])
def test_ev_fe_consistency(name: str) -> None:
    m = _mesh(name)
    topo = m.topology
    F = np.asarray(m.F)
    EV, FE = np.asarray(topo.EV), np.asarray(topo.FE)
    assert EV.dtype == np.int32 and FE.dtype == np.int32
    assert FE.shape == F.shape
    # edges: the distinct unordered pairs of face sides, min first
    a, b = _sides(F)
    pairs = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}
    assert topo.n_edges == len(pairs)
    assert set(map(tuple, EV.tolist())) == pairs
    assert (EV[:, 0] <= EV[:, 1]).all()
    # FE: side k of face f runs F[f,k] -> F[f,k+1]; bit 1 when it runs from max to min
    e, o = FE.ravel() // 2, FE.ravel() & 1
    np.testing.assert_array_equal(EV[e, 0], np.minimum(a, b))
    np.testing.assert_array_equal(EV[e, 1], np.maximum(a, b))
    np.testing.assert_array_equal(o, (a > b).astype(np.int32))
    np.testing.assert_array_equal(np.where(o == 1, EV[e, 1], EV[e, 0]), a)


@pytest.mark.parametrize("name", [*SMALL, *REAL])
def test_ef_csr(name: str) -> None:
    m = _mesh(name)
    topo = m.topology
    off, sides = np.asarray(topo.ef_offsets), np.asarray(topo.ef_sides)
    assert off.shape == (topo.n_edges + 1,) and off[0] == 0
    assert off[-1] == 3 * m.n_faces
    assert int(np.asarray(topo.edge_face_count).sum()) == 3 * m.n_faces
    np.testing.assert_array_equal(np.sort(sides), np.arange(3 * m.n_faces))
    edge_of_row = np.repeat(np.arange(topo.n_edges), np.diff(off))
    np.testing.assert_array_equal(np.asarray(topo.FE).ravel()[sides] // 2, edge_of_row)
    counts = np.diff(off)
    np.testing.assert_array_equal(np.asarray(topo.boundary_edges), np.flatnonzero(counts == 1))
    np.testing.assert_array_equal(np.asarray(topo.non_manifold_edges), np.flatnonzero(counts >= 3))


@pytest.mark.parametrize("name", [*SMALL, "suzanne.obj"])
def test_vf_and_vv_against_brute_force(name: str) -> None:
    m = _mesh(name)
    V = np.concatenate([np.asarray(m.V), [[7.0, 7.0, 7.0]]])  # plus one unused vertex
    m = mesh(V, m.F)
    topo = m.topology
    F = np.asarray(m.F)
    vf: dict[int, list[int]] = defaultdict(list)
    vv: dict[int, set[int]] = defaultdict(set)
    for f, tri in enumerate(F.tolist()):
        for k in range(3):
            vf[tri[k]].append(f)
            a, b = tri[k], tri[(k + 1) % 3]
            vv[a].add(b)
            vv[b].add(a)
    off, faces = (np.asarray(x) for x in topo.vf())
    noff, nbrs = (np.asarray(x) for x in topo.vv())
    assert off.shape == noff.shape == (m.n_vertices + 1,)
    for v in range(m.n_vertices):
        assert faces[off[v] : off[v + 1]].tolist() == vf[v]  # stable: faces in increasing order
        got = nbrs[noff[v] : noff[v + 1]].tolist()
        assert sorted(got) == sorted(vv[v]) and len(got) == len(vv[v])
    np.testing.assert_array_equal(
        np.asarray(topo.vertex_face_count), [len(vf[v]) for v in range(m.n_vertices)]
    )
    assert not topo.used_vertices[-1] and topo.used_vertices[:-1].all()


def test_ef_pairs_chain_the_faces_of_an_edge() -> None:
    topo = three_on_an_edge().topology
    s, t = (np.asarray(x) for x in topo.ef_pairs())
    assert s.shape == t.shape == (2,)  # one chain of three faces: two pairs
    assert set((s // 3).tolist()) | set((t // 3).tolist()) == {0, 1, 2}
    e = np.asarray(topo.FE).ravel() // 2
    assert (e[s] == e[t]).all()


@pytest.mark.parametrize(
    ("name", "fans"),
    [
        ("tetrahedron", [1, 1, 1, 1]),
        ("open_square", [1, 1, 1, 1]),
        ("bowtie", [2, 1, 1, 1, 1]),
        ("three_on_an_edge", [1, 1, 1, 1, 1]),
    ],
)
def test_vertex_fans(name: str, fans: list[int]) -> None:
    topo = SMALL[name]().topology
    np.testing.assert_array_equal(np.asarray(topo.vertex_fans()), fans)
    np.testing.assert_array_equal(
        np.asarray(topo.non_manifold_vertices), np.flatnonzero(np.array(fans) > 1)
    )


def test_unused_vertex_has_no_fan() -> None:
    t = tetrahedron()
    topo = mesh(np.concatenate([np.asarray(t.V), [[2.0, 2, 2]]]), t.F).topology
    np.testing.assert_array_equal(np.asarray(topo.vertex_fans()), [1, 1, 1, 1, 0])


def test_two_cones_touching_at_their_apex() -> None:
    # two closed tetrahedra glued at one vertex: no boundary, one non-manifold vertex
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), -np.asarray(t.V)[1:]])
    F2 = np.asarray(t.F).copy()
    F2 = np.where(F2 == 0, 0, F2 + 3)[:, ::-1]  # mirrored copy, reoriented, shares vertex 0
    topo = mesh(V, np.concatenate([np.asarray(t.F), F2])).topology
    assert topo.boundary_edges.shape == (0,)
    np.testing.assert_array_equal(np.asarray(topo.non_manifold_vertices), [0])
    assert topo.vertex_components()[1] == 1


def test_vertex_components() -> None:
    t = tetrahedron()
    V = np.concatenate([np.asarray(t.V), [[5.0, 5, 5]], np.asarray(t.V) + 10])
    F = np.concatenate([np.asarray(t.F) + 5, np.asarray(t.F)])
    lab, n = mesh(V, F).topology.vertex_components()
    assert n == 2
    # numbered by first vertex; the unused vertex gets -1
    np.testing.assert_array_equal(np.asarray(lab), [0, 0, 0, 0, -1, 1, 1, 1, 1])


@pytest.mark.parametrize(
    ("name", "loops"),
    [
        ("tetrahedron", 0),
        ("open_square", 1),
        ("cylinder", 2),
        ("mobius", 1),
        ("tetra_soup", 4),
        ("rx-cloth.obj", 1),
        ("stanford-bunny.obj", 5),
    ],
)
def test_boundary_loops(name: str, loops: int) -> None:
    topo = _mesh(name).topology
    verts, loop, n = topo.boundary_loop_labels()
    bverts = np.unique(np.asarray(topo.EV)[np.asarray(topo.boundary_edges)].ravel())
    np.testing.assert_array_equal(np.asarray(verts), bverts)
    assert loop.shape == verts.shape
    assert n == loops == topo.boundary_loops()
    # both ends of every boundary edge lie on the same loop
    where = {v: i for i, v in enumerate(np.asarray(verts).tolist())}
    for a, b in np.asarray(topo.EV)[np.asarray(topo.boundary_edges)].tolist():
        assert loop[where[a]] == loop[where[b]]


def test_orientation() -> None:
    consistent, orientable = cube().topology.orientation()
    assert consistent and orientable.all() and orientable.shape == (12,)
    c = cube()
    F = np.asarray(c.F).copy()
    F[3] = F[3, ::-1]
    consistent, orientable = mesh(c.V, F).topology.orientation()
    assert not consistent and orientable.all()
    consistent, orientable = mobius().topology.orientation()
    assert not consistent and not orientable.any()


def test_orientability_is_per_face_component() -> None:
    t, mb = tetrahedron(), mobius(6)
    V = np.concatenate([np.asarray(t.V), np.asarray(mb.V)])
    F = np.concatenate([np.asarray(t.F), np.asarray(mb.F) + 4])
    _, orientable = mesh(V, F).topology.orientation()
    np.testing.assert_array_equal(np.asarray(orientable), [True] * 4 + [False] * 12)


def test_topology_is_built_once_and_kept_by_attribute_ops() -> None:
    m = load("rx-sphere3.obj")
    topo = m.topology
    assert isinstance(topo, Topology) and m.topology is topo
    assert m.with_attrs(vertex={"x": np.zeros(m.n_vertices)}).topology is topo
    assert m.with_geometry(np.asarray(m.V) * 2).topology is topo
    assert topo.boundary_edges is topo.boundary_edges  # memoised


def test_build_directly() -> None:
    F = np.array([[0, 1, 2], [2, 1, 3]], dtype=np.int32)
    topo = Topology.build(F, 4)
    assert (topo.n_edges, topo.n_faces, topo.n_vertices) == (5, 2, 4)
    np.testing.assert_array_equal(np.asarray(topo.EV), [[0, 1], [1, 2], [0, 2], [1, 3], [2, 3]])
    np.testing.assert_array_equal(np.asarray(topo.FE), [[0, 2, 5], [3, 6, 9]])


def _brute_fans(F: np.ndarray, n: int) -> np.ndarray:
    """Per vertex: components of its faces, two faces joined when they share an edge at it."""
    fans = np.zeros(n, dtype=np.int64)
    faces_of: dict[int, list[int]] = defaultdict(list)
    for f, tri in enumerate(F.tolist()):
        for v in set(tri):
            faces_of[v].append(f)
    for v, fs in faces_of.items():
        parent = {f: f for f in fs}
        for a in range(len(fs)):
            for b in range(a + 1, len(fs)):
                shared = set(F[fs[a]].tolist()) & set(F[fs[b]].tolist())
                if len(shared - {v}) >= 1:
                    parent[_find(parent, fs[a])] = _find(parent, fs[b])
        fans[v] = len({_find(parent, f) for f in fs})
    return fans


def _find(parent: dict[int, int], x: int) -> int:
    while parent[x] != x:
        x = parent[x]
    return x


def _pinched(seed: int, flip_share: float, repeated: bool = False) -> tuple[TriMesh, np.ndarray]:
    """rx-sphere3 with holes, some vertices pinched together (bow-ties, non-manifold edges) and
    ``flip_share`` of the faces flipped; the faces left with a repeated vertex dropped unless
    ``repeated``."""
    rng = np.random.default_rng(seed)
    m = welded("rx-sphere3.obj")
    F = np.asarray(m.F)
    F = F[rng.random(F.shape[0]) > 0.3]  # holes
    merge = np.arange(m.n_vertices)
    a, b = rng.integers(0, m.n_vertices, (2, 8))
    merge[a] = b
    F = merge[F]
    if not repeated:
        F = F[(F[:, 0] != F[:, 1]) & (F[:, 1] != F[:, 2]) & (F[:, 2] != F[:, 0])]
    flip = rng.random(F.shape[0]) < flip_share
    F[flip] = F[flip, ::-1]
    return m, F


@pytest.mark.parametrize("seed", range(6))
def test_fans_and_orientation_on_damaged_meshes(seed: int) -> None:
    m, F = _pinched(seed, 0.1 if seed % 2 else 0.0)  # even seeds stay consistent
    topo = mesh(m.V, F).topology
    np.testing.assert_array_equal(np.asarray(topo.vertex_fans()), _brute_fans(F, m.n_vertices))
    # consistency by brute force: every two-face edge is walked both ways
    directed = defaultdict(int)
    for tri in F.tolist():
        for k in range(3):
            directed[(tri[k], tri[(k + 1) % 3])] += 1
    counts = np.asarray(topo.edge_face_count)
    two = {tuple(e) for e in np.asarray(topo.EV)[counts == 2].tolist()}
    consistent = all(directed[(x, y)] == 1 and directed[(y, x)] == 1 for x, y in two)
    assert topo.orientation()[0] == consistent == (seed % 2 == 0)


def _gpu_topology_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    cases = {name: np.asarray(make().F) for name, make in SMALL.items()}
    cases["soup(spot)"] = np.asarray(soup(welded("spot.obj")).F)
    # random faces over few vertices: edges with up to a dozen faces, repeated and degenerate
    # faces (a side from a vertex to itself is an edge of its own)
    cases["random"] = rng.integers(0, 40, (3000, 3))
    return cases


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED + sorted(_gpu_topology_cases()))
def test_the_gpu_hashed_build_gives_the_sorted_arrays(name: str) -> None:
    """Topology.build on the GPU (a hash table, no sort) against the NumPy build, array for
    array: edges numbered by first side, each edge's sides in increasing order."""
    import cupy as cp

    F = _gpu_topology_cases().get(name)
    if F is None:
        F = np.asarray(welded(name).F)
    n = int(F.max()) + 1
    want = Topology._build_numpy(F.astype(np.int64), n)
    got = Topology.build(cp.asarray(F.astype(np.int64)), n)
    for field in ("EV", "FE", "ef_offsets", "ef_sides"):
        g, w = cp.asnumpy(getattr(got, field)), np.asarray(getattr(want, field))
        assert g.dtype == w.dtype or field.startswith("ef"), field
        np.testing.assert_array_equal(g, w, err_msg=field)
    np.testing.assert_array_equal(cp.asnumpy(got.edge_face_count), want.edge_face_count)
    if name == "random":
        assert int(want.edge_face_count.max()) > 3  # rows the insertion sort has to order


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED + sorted(_gpu_topology_cases()))
def test_the_gpu_hashed_edge_table_gives_the_sorted_table(name: str) -> None:
    """The dynamic rounds' edge table on the GPU (the same hash, then a sort of the distinct
    keys only) against the sort of every side on NumPy: keys in order, ends, counts, first and
    second sides, every side's edge."""
    import cupy as cp

    from workers.engine.dynamic._edges import edge_table

    F = _gpu_topology_cases().get(name)
    if F is None:
        F = np.asarray(welded(name).F)
    F = F.astype(np.int64)
    want = edge_table(np, F)
    got = edge_table(cp, cp.asarray(F))
    for field in ("key", "EV", "count", "s0", "s1", "of_side"):
        g, w = cp.asnumpy(getattr(got, field)), getattr(want, field)
        assert g.dtype == w.dtype, field
        np.testing.assert_array_equal(g, w, err_msg=field)


def _fan_cases() -> dict[str, np.ndarray]:
    cases = {name: np.asarray(make().F) for name, make in SMALL.items()}
    for seed in range(4):  # faces with a repeated vertex kept
        cases[f"damaged {seed}"] = _pinched(seed, 0.1, repeated=True)[1]
    t = np.asarray(tetrahedron().F)
    cases["two tetrahedra at a vertex"] = np.concatenate([t, np.where(t == 0, 0, t + 3)])
    return cases


@pytest.mark.gpu
@pytest.mark.parametrize("name", SHARED + sorted(_fan_cases()))
def test_the_gpu_fan_walk_counts_the_fans(name: str) -> None:
    """vertex_fans on the GPU (a walk around each vertex, the corner components only when some
    vertex has several fans or cannot be walked) against the NumPy count; the walk alone answers
    for the manifold meshes and gives up wherever a vertex has several fans."""
    import cupy as cp

    F = _fan_cases().get(name)
    if F is None:
        F = np.asarray(welded(name).F)
    F = F.astype(np.int64)
    n = int(F.max()) + 2  # one unused vertex
    want = np.asarray(Topology._build_numpy(F, n).vertex_fans())
    topo = Topology.build(cp.asarray(F), n)
    np.testing.assert_array_equal(cp.asnumpy(topo.vertex_fans()), want)
    walked = Topology.build(cp.asarray(F), n)._one_fan_each()
    if walked is not None:
        np.testing.assert_array_equal(cp.asnumpy(walked), want)
    if (want > 1).any():
        assert walked is None
    repeated = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
    if not repeated.any() and not (cp.asnumpy(topo.edge_face_count) > 2).any():
        assert (walked is None) == bool((want > 1).any())  # manifold edges: the walk decides
