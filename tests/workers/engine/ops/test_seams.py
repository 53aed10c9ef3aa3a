"""Dynamic operations keep texture seams (``corners.seam_edges``): remesh splits them at midpoints
and never collapses or flips them, decimate and collapse_short_edges keep every seam edge between
the same two unmoved vertices, delaunay_flip never flips one. Every check here also runs without
the seams and must then fail, so it measures what the seams changed.

The operations are called directly (``op.numpy`` / ``op.cupy``) inside ``keeping_seams``, as the
pipeline runs them for a mesh with corner attributes."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from tests.conftest import ASSETS
from tests.workers.engine.shapes import boundary_mask, grid, mesh, stats, welded
from workers.engine import MeshError, TriMesh
from workers.engine.backend import to_numpy
from workers.engine.corners import keeping_seams
from workers.engine.dynamic.seams import recording_kept
from workers.engine.ops import OPS


# ------------------------------------------------------------------------------ seams
def _edges(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(EV (E, 2) sorted, faces (E, 2))`` of the edges with exactly two faces."""
    a = F.ravel()
    b = F[:, [1, 2, 0]].ravel()
    EV = np.sort(np.stack([a, b], axis=1), axis=1)
    face = np.repeat(np.arange(F.shape[0]), 3)
    order = np.lexsort((EV[:, 1], EV[:, 0]))
    EV, face = EV[order], face[order]
    key = EV[:, 0] * (F.max() + 1) + EV[:, 1]
    first = np.r_[True, key[1:] != key[:-1]]
    start = np.nonzero(first)[0]
    count = np.diff(np.r_[start, key.shape[0]])
    two = start[count == 2]
    return EV[two], np.stack([face[two], face[two + 1]], axis=1)


def plane_seam(m: TriMesh, axis: int = 0, at: float = 0.5) -> np.ndarray:
    """The edges between the faces whose centroid lies below the plane ``x[axis]`` = the
    ``at`` quantile of the centroids and those above it: where a chart boundary runs."""
    V, F = np.asarray(m.V, np.float64), np.asarray(m.F, np.int64)
    c = V[F].mean(axis=1)[:, axis]
    side = c < np.quantile(c, at)
    EV, faces = _edges(F)
    return EV[side[faces[:, 0]] != side[faces[:, 1]]]


def path_seam(m: TriMesh, a: int, b: int) -> np.ndarray:
    """The edges of the shortest edge path from vertex ``a`` to ``b`` (an open seam line)."""
    V, F = np.asarray(m.V, np.float64), np.asarray(m.F, np.int64)
    EV, _ = _edges(F)
    w = np.linalg.norm(V[EV[:, 0]] - V[EV[:, 1]], axis=1)
    n = m.n_vertices
    G = coo_matrix((np.r_[w, w], (np.r_[EV[:, 0], EV[:, 1]], np.r_[EV[:, 1], EV[:, 0]])), (n, n))
    _, pred = dijkstra(G.tocsr(), indices=a, return_predecessors=True)
    out, v = [], b
    while v != a:
        out.append((min(v, pred[v]), max(v, pred[v])))
        v = pred[v]
    return np.asarray(out, dtype=np.int64)


def seams_of(m: TriMesh) -> np.ndarray:
    """A closed chart boundary and an open seam line crossing it (junctions, ends, and on an open
    mesh a seam that runs into the boundary)."""
    V = np.asarray(m.V, np.float64)
    lo, hi = int(np.argmin(V[:, 1])), int(np.argmax(V[:, 1]))
    both = np.concatenate([plane_seam(m), path_seam(m, lo, hi)])
    return np.unique(both, axis=0)


@functools.cache
def duck() -> tuple[TriMesh, np.ndarray]:
    """Duck.glb's mesh welded by position, and its UV seams: the edges whose two faces give an
    end different texture coordinates (the glTF file splits its vertices there)."""
    import trimesh

    path = ASSETS / "Duck.glb"
    if not path.is_file():
        pytest.fail(f"asset {path} missing: set TESSERA_ASSETS to the shared/assets folder")
    (g,) = trimesh.load(path, process=False).geometry.values()
    Fs = np.asarray(g.faces, np.int64)
    uv = np.asarray(g.visual.uv, np.float64)
    P, inv = np.unique(np.asarray(g.vertices, np.float64), axis=0, return_inverse=True)
    F = inv.ravel()[Fs]
    # every face side: welded ends (lo, hi) and the texture coordinates at each
    a, b = F.ravel(), F[:, [1, 2, 0]].ravel()
    ua, ub = uv[Fs.ravel()], uv[Fs[:, [1, 2, 0]].ravel()]
    up = a < b
    uv_lo = np.where(up[:, None], ua, ub)
    uv_hi = np.where(up[:, None], ub, ua)
    key = np.minimum(a, b) * P.shape[0] + np.maximum(a, b)
    order = np.argsort(key, kind="stable")
    pair = key[order][1:] == key[order][:-1]
    s0, s1 = order[:-1][pair], order[1:][pair]
    differ = (uv_lo[s0] != uv_lo[s1]).any(axis=1) | (uv_hi[s0] != uv_hi[s1]).any(axis=1)
    seams = np.stack([np.minimum(a, b)[s0[differ]], np.maximum(a, b)[s0[differ]]], axis=1)
    return mesh(P, F), seams


# ------------------------------------------------------------------------------ checks
def _edge_set(F: np.ndarray) -> set[tuple[int, int]]:
    E = np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]), axis=1)
    return set(map(tuple, np.unique(E, axis=0).tolist()))


def kept_seams(m: TriMesh, seams: np.ndarray, out: TriMesh, *, split: bool) -> list[str]:
    """What is wrong with ``out``'s seams (empty: every seam kept). Every input seam edge ``a-b``
    must be a chain of output edges from ``a``'s position to ``b``'s (both unchanged, exactly)
    through output vertices on the segment: a single edge unless ``split``, else pieces on the
    segment that cover it in order."""
    V0 = np.asarray(m.V)
    Vo = np.asarray(to_numpy(out.V))
    Fo = np.asarray(to_numpy(out.F), np.int64)
    at = {tuple(p): i for i, p in enumerate(Vo.tolist())}
    edges = _edge_set(Fo)
    V64 = Vo.astype(np.float64)
    scale = float(np.linalg.norm(V64.max(axis=0) - V64.min(axis=0)))
    problems = []
    for a, b in seams.tolist():
        ia, ib = at.get(tuple(V0[a].tolist())), at.get(tuple(V0[b].tolist()))
        if ia is None or ib is None:
            problems.append(f"seam {a}-{b}: an end moved or went")
            continue
        if not split:
            if (min(ia, ib), max(ia, ib)) not in edges:
                problems.append(f"seam {a}-{b}: no longer an edge")
            continue
        P, Q = V64[ia], V64[ib]
        d = Q - P
        t = (V64 - P) @ d / (d @ d)
        off = np.linalg.norm(V64 - P - t[:, None] * d, axis=1)
        on = np.nonzero((t > -1e-9) & (t < 1 + 1e-9) & (off <= 1e-6 * scale))[0]
        chain = on[np.argsort(t[on])]
        if chain[0] != ia or chain[-1] != ib:
            problems.append(f"seam {a}-{b}: the vertices on it do not end at its ends")
            continue
        for u, v in zip(chain[:-1], chain[1:], strict=True):
            if (min(u, v), max(u, v)) not in edges:
                problems.append(f"seam {a}-{b}: no edge between its pieces {u}-{v}")
    return problems


def seam_lines(m: TriMesh, seams: np.ndarray) -> list[tuple[list[int], bool]]:
    """The seam graph cut into lines: ``(vertices in order, closed)``, each running between two
    fixed vertices (a junction, an end of a seam, a boundary vertex) or round a loop."""
    nbrs: dict[int, list[int]] = {}
    for a, b in seams.tolist():
        nbrs.setdefault(a, []).append(b)
        nbrs.setdefault(b, []).append(a)
    bnd = set(np.nonzero(boundary_mask(m))[0].tolist())
    fixed = {v for v, nb in nbrs.items() if len(nb) != 2 or v in bnd}
    seen: set[tuple[int, int]] = set()
    lines = []
    for start in sorted(fixed) + sorted(set(nbrs) - fixed):
        for nxt in nbrs[start]:
            if (start, nxt) in seen:
                continue
            line, prev, v = [start], start, nxt
            seen |= {(start, nxt), (nxt, start)}
            while v not in fixed and v != start:
                line.append(v)
                a, b = nbrs[v]
                prev, v = v, (b if a == prev else a)
                seen |= {(prev, v), (v, prev)}
            closed = v == start and start not in fixed
            lines.append((line if closed else [*line, v], closed))
    return lines


def kept_seam_lines(
    m: TriMesh, seams: np.ndarray, out: TriMesh
) -> tuple[list[str], set[tuple[int, int]], float]:
    """Seams simplified along their lines: ``(problems, output seam edges, largest deviation)``.
    Every fixed vertex of every line is still an output vertex where it was; the line's
    surviving vertices (unmoved) follow each other along output edges, a loop keeps three at
    least; the deviation is the distance of each removed vertex from the output segment that
    replaced it, over the bounding-box diagonal."""
    V0 = np.asarray(m.V)
    Vo = np.asarray(to_numpy(out.V))
    at = {tuple(p): i for i, p in enumerate(Vo.tolist())}
    edges = _edge_set(np.asarray(to_numpy(out.F), np.int64))
    V64 = V0.astype(np.float64)
    diag = float(np.linalg.norm(V64.max(axis=0) - V64.min(axis=0)))
    problems, kept, worst = [], set(), 0.0
    for line, closed in seam_lines(m, seams):
        ends = [] if closed else [line[0], line[-1]]
        if any(tuple(V0[v].tolist()) not in at for v in ends):
            problems.append(f"line {line[0]}..{line[-1]}: an end moved or went")
            continue
        alive = [i for i, v in enumerate(line) if tuple(V0[v].tolist()) in at]
        if closed:
            if len(alive) < 3:
                problems.append(f"loop at {line[0]}: {len(alive)} vertices left")
                continue
            alive = [*alive, alive[0] + len(line)]
        ring = line + line if closed else line
        for i, j in zip(alive[:-1], alive[1:], strict=True):
            u, v = at[tuple(V0[ring[i]].tolist())], at[tuple(V0[ring[j]].tolist())]
            if (min(u, v), max(u, v)) not in edges:
                problems.append(f"line {line[0]}..{line[-1]}: no edge {ring[i]}-{ring[j]}")
            kept.add((min(u, v), max(u, v)))
            P, d = V64[ring[i]], V64[ring[j]] - V64[ring[i]]
            for k in range(i + 1, j):
                x = V64[ring[k]] - P
                t = np.clip(x @ d / (d @ d), 0.0, 1.0)
                worst = max(worst, float(np.linalg.norm(x - t * d)) / diag)
    return problems, kept, worst


def chart_count(F: np.ndarray, seam_edges: set[tuple[int, int]]) -> int:
    """Components of the faces joined across every two-face edge that is not a seam."""
    EV, faces = _edges(F)
    cut = np.asarray([tuple(e) in seam_edges for e in EV.tolist()], dtype=bool)
    f0, f1 = faces[~cut, 0], faces[~cut, 1]
    m = F.shape[0]
    G = coo_matrix((np.ones(f0.shape[0]), (f0, f1)), (m, m))
    return int(connected_components(G, directed=False)[0])


def output_seam_edges(m: TriMesh, seams: np.ndarray, out: TriMesh) -> set[tuple[int, int]]:
    """The output edges lying on an input seam segment (both ends on it)."""
    V0 = np.asarray(m.V, np.float64)
    Vo = np.asarray(to_numpy(out.V), np.float64)
    scale = float(np.linalg.norm(Vo.max(axis=0) - Vo.min(axis=0)))
    found = set()
    for a, b in seams.tolist():
        P, d = V0[a], V0[b] - V0[a]
        t = (Vo - P) @ d / (d @ d)
        off = np.linalg.norm(Vo - P - t[:, None] * d, axis=1)
        on = np.nonzero((t > -1e-9) & (t < 1 + 1e-9) & (off <= 1e-6 * scale))[0]
        chain = on[np.argsort(t[on])]
        found |= {(min(u, v), max(u, v)) for u, v in zip(chain[:-1], chain[1:], strict=True)}
    return found & _edge_set(np.asarray(to_numpy(out.F), np.int64))


def check_seams(
    op_name: str, params: dict, m: TriMesh, seams: np.ndarray, out: TriMesh
) -> tuple[list[str], set[tuple[int, int]]]:
    """``(problems, output seam edges)`` by what the operation promises: decimate (with
    ``simplify_seams``) keeps the seam lines, remesh splits the seam edges, the others keep each
    one as it was."""
    if op_name == "decimate" and params.get("simplify_seams", True):
        problems, kept, _ = kept_seam_lines(m, seams, out)
        return problems, kept
    split = op_name == "isotropic_remesh"
    return kept_seams(m, seams, out, split=split), output_seam_edges(m, seams, out)


def assert_valid_around_seams(m: TriMesh, out: TriMesh) -> None:
    s0, s = stats(m), stats(out)
    for k in ("euler_characteristic", "components", "non_manifold_edges", "boundary_loops"):
        assert s[k] == s0[k], k
    assert s["degenerate_faces"] == 0 and s["unused_vertices"] == 0
    if s0["manifold"]:
        assert s["manifold"]


def recorded(box: list[Any]) -> set[tuple[int, int]] | None:
    """The seams one operation recorded (:func:`recording_kept`) as a set of pairs, None when
    it recorded none."""
    assert len(box) <= 1
    if not box:
        return None
    pairs = np.asarray(to_numpy(box[0]), np.int64)
    assert pairs.ndim == 2 and pairs.shape[1] == 2 and (pairs[:, 0] < pairs[:, 1]).all()
    return set(map(tuple, pairs.tolist()))


def _run(name: str, mesh: TriMesh, params: dict[str, Any], seams: np.ndarray | None) -> Any:
    """The op's result, with ``kept``: the output seams it recorded (None without seams)."""
    op = OPS.get(name)
    with keeping_seams(seams), recording_kept() as box:
        res = op.numpy(mesh, op.parse_params(params))
    res.kept = recorded(box)
    return res


# ------------------------------------------------------------------------------ remesh
REMESH = [("rx-sphere3.obj", 0.6), ("rx-cloth.obj", 0.6), ("spot.obj", 1.5)]


@functools.cache
def _remeshed(name: str, L: float, with_seams: bool) -> tuple[TriMesh, np.ndarray, Any]:
    m = welded(name)
    seams = seams_of(m)
    params = {"target_edge_length": L, "iterations": 3}
    return m, seams, _run("isotropic_remesh", m, params, seams if with_seams else None)


@pytest.mark.parametrize(("name", "L"), REMESH)
def test_remesh_splits_seams_and_keeps_them(name: str, L: float) -> None:
    m, seams, res = _remeshed(name, L, True)
    out, rep = res.mesh, res.report
    assert kept_seams(m, seams, out, split=True) == []
    assert res.kept == output_seam_edges(m, seams, out)
    assert_valid_around_seams(m, out)
    assert rep["seam_edges"] == seams.shape[0]
    assert rep["splits"] > 0 and rep["collapses"] > 0 and rep["flips"] > 0
    # the charts the seams cut the surface into are the input's
    F0 = np.asarray(m.F, np.int64)
    seam_set = set(map(tuple, seams.tolist()))
    n_charts = chart_count(F0, seam_set)
    assert n_charts >= 2
    assert chart_count(np.asarray(out.F, np.int64), output_seam_edges(m, seams, out)) == n_charts


@pytest.mark.parametrize(("name", "L"), REMESH)
def test_remesh_without_seams_loses_them(name: str, L: float) -> None:
    m, seams, res = _remeshed(name, L, False)
    assert len(kept_seams(m, seams, res.mesh, split=True)) > 0.5 * seams.shape[0]
    assert res.report["seam_edges"] == 0


def test_remesh_refines_seams() -> None:
    """A target well below the seam edges' length splits them: the halves stay seams and are
    split again."""
    m = welded("rx-sphere3.obj")
    seams = plane_seam(m)
    out = _run("isotropic_remesh", m, {"target_edge_length": 0.3, "iterations": 2}, seams).mesh
    assert kept_seams(m, seams, out, split=True) == []
    assert len(output_seam_edges(m, seams, out)) >= 3 * seams.shape[0]


# ------------------------------------------------------------------------------ collapses
COLLAPSE_CASES = [
    ("decimate", "spot.obj", {"target_ratio": 0.2, "simplify_seams": False}),
    ("decimate", "rx-cloth.obj", {"target_ratio": 0.2, "preserve_boundary": False}),
    ("decimate", "rx-sphere3.obj", {"target_faces": 100, "simplify_seams": False}),
    ("decimate", "rx-sphere3.obj", {"target_faces": 60}),
    ("decimate", "spot.obj", {"target_ratio": 0.05}),
    ("collapse_short_edges", "spot.obj", {"threshold": 1.2}),
    ("collapse_short_edges", "rx-cloth.obj", {"threshold": 1.5, "preserve_boundary": False}),
]


@pytest.mark.parametrize(("op_name", "name", "params"), COLLAPSE_CASES)
def test_collapses_keep_the_seams(op_name: str, name: str, params: dict) -> None:
    m = welded(name)
    seams = seams_of(m)
    res = _run(op_name, m, params, seams)
    out, rep = res.mesh, res.report
    problems, out_seams = check_seams(op_name, params, m, seams, out)
    assert problems == []
    assert res.kept == out_seams  # what the op says its seams are is where they are
    assert_valid_around_seams(m, out)
    n_pinned = np.unique(seams).shape[0]
    removed = rep.get("seam_vertices_removed", 0)
    assert rep["seam_vertices_locked"] + removed == n_pinned
    if op_name == "decimate" and params.get("simplify_seams", True):
        assert rep["stopped"] == "target"
        # a line bends by little: the removed vertices lie near the segments that replaced them
        assert kept_seam_lines(m, seams, out)[2] < 0.05
    else:
        assert removed == 0 and kept_seams(m, seams, out, split=False) == []
    assert rep["collapses"] > 0 and out.n_faces < 0.8 * m.n_faces
    # the seams cut the surface into the input's charts (where the boundary may move, a chart
    # running along it may be pinched in two at a seam vertex)
    n_charts = chart_count(np.asarray(m.F, np.int64), set(map(tuple, seams.tolist())))
    n_out = chart_count(np.asarray(out.F, np.int64), out_seams)
    if params.get("preserve_boundary", True):
        assert n_out == n_charts
    else:
        assert n_out >= n_charts
    # without the seams the same run loses many of them
    free = _run(op_name, m, params, None)
    assert free.kept is None
    assert len(check_seams(op_name, params, m, seams, free.mesh)[0]) > 0
    assert len(kept_seams(m, seams, free.mesh, split=False)) > 0.3 * seams.shape[0]
    assert free.report["seam_vertices_locked"] == 0


def test_decimate_goes_further_along_seam_lines() -> None:
    """Locked seam vertices leave a strong decimation blocked; collapses along the seam lines
    reach the target and keep the lines' junctions and ends."""
    m, seams = duck()
    locked = _run("decimate", m, {"target_ratio": 0.05, "simplify_seams": False}, seams)
    lines = _run("decimate", m, {"target_ratio": 0.05}, seams)
    assert locked.report["stopped"] == "blocked" and lines.report["stopped"] == "target"
    assert lines.mesh.n_faces < 0.7 * locked.mesh.n_faces
    assert locked.report["seam_vertices_removed"] == 0
    assert lines.report["seam_vertices_removed"] > 0.3 * np.unique(seams).shape[0]
    problems, out_seams, worst = kept_seam_lines(m, seams, lines.mesh)
    assert problems == [] and worst < 0.05 and lines.kept == out_seams
    n_charts = chart_count(np.asarray(m.F, np.int64), set(map(tuple, seams.tolist())))
    assert chart_count(np.asarray(lines.mesh.F, np.int64), out_seams) == n_charts
    assert_valid_around_seams(m, lines.mesh)


def test_decimate_keeps_small_charts() -> None:
    """Seam loops of three and four edges (charts of one face and of two) keep a face at least:
    a collapse along a loop of three would close it into two coincident edges."""
    m = welded("rx-sphere3.obj")
    F = np.asarray(m.F, np.int64)
    EV, faces = _edges(F)
    f = int(faces[0, 0])
    # one chart: face f alone; another: the two faces of an edge far from it
    far = int(
        np.argmax(
            np.linalg.norm(
                np.asarray(m.V)[EV].mean(axis=1) - np.asarray(m.V)[F[f]].mean(axis=0), axis=1
            )
        )
    )
    pair = set(faces[far].tolist())
    seams = [
        e for e, (g, h) in zip(EV.tolist(), faces.tolist(), strict=True) if (g == f) != (h == f)
    ]
    seams += [
        e
        for e, (g, h) in zip(EV.tolist(), faces.tolist(), strict=True)
        if (g in pair) != (h in pair)
    ]
    seams = np.unique(np.asarray(seams, np.int64), axis=0)
    assert seams.shape[0] == 7
    res = _run("decimate", m, {"target_faces": 4}, seams)
    problems, out_seams, _ = kept_seam_lines(m, seams, res.mesh)
    assert problems == [] and res.kept == out_seams
    n_charts = chart_count(F, set(map(tuple, seams.tolist())))
    assert n_charts == 3
    assert chart_count(np.asarray(res.mesh.F, np.int64), out_seams) == n_charts
    assert res.report["seam_vertices_removed"] == 1  # the loop of four becomes one of three
    assert_valid_around_seams(m, res.mesh)


def test_decimate_collapses_onto_seam_vertices() -> None:
    """Pinned vertices take their neighbours: the mesh near a seam still simplifies."""
    m = welded("spot.obj")
    seams = plane_seam(m)
    out = _run("decimate", m, {"target_ratio": 0.1, "simplify_seams": False}, seams).mesh
    assert kept_seams(m, seams, out, split=False) == []
    seam_v = np.unique(seams)
    # the input seam vertices' one-rings hold many vertices that went
    ring0 = {v for e in _edge_set(np.asarray(m.F, np.int64)) for v in e if set(e) & set(seam_v)}
    kept_pos = {tuple(p) for p in np.asarray(out.V).tolist()}
    V0 = np.asarray(m.V)
    gone = [v for v in ring0 - set(seam_v.tolist()) if tuple(V0[v].tolist()) not in kept_pos]
    assert len(gone) > 0.5 * len(ring0 - set(seam_v.tolist()))


# ------------------------------------------------------------------------------ flips
def test_delaunay_flip_never_flips_a_seam() -> None:
    m = grid(12, jitter=0.24, seed=3)
    op = OPS.get("delaunay_flip")
    p = op.parse_params({})
    free = op.numpy(m, p)
    before = _edge_set(np.asarray(m.F, np.int64))
    flipped = np.asarray(sorted(before - _edge_set(np.asarray(free.mesh.F, np.int64))))
    assert flipped.shape[0] >= 10
    seams = flipped[::2]
    res = _run("delaunay_flip", m, {}, seams)
    after = _edge_set(np.asarray(res.mesh.F, np.int64))
    assert set(map(tuple, seams.tolist())) <= after
    assert res.kept == set(map(tuple, seams.tolist()))
    assert res.report["blocked"]["seam"] > 0 and res.report["seam_edges"] == seams.shape[0]
    assert res.report["flips"] > 0
    assert free.report["blocked"]["seam"] == 0


# ------------------------------------------------------------------------------ a real asset
@pytest.mark.parametrize(
    ("op_name", "params"),
    [
        ("decimate", {"target_ratio": 0.2}),
        ("collapse_short_edges", {"threshold": 1.0}),
        ("isotropic_remesh", {"iterations": 3}),
        ("delaunay_flip", {}),
    ],
)
def test_duck_keeps_its_uv_seams(op_name: str, params: dict) -> None:
    m, seams = duck()
    F0 = np.asarray(m.F, np.int64)
    n_charts = chart_count(F0, set(map(tuple, seams.tolist())))
    assert seams.shape[0] > 100 and n_charts > 5  # the duck's atlas: several charts
    res = _run(op_name, m, params, seams)
    out = res.mesh
    problems, out_seams = check_seams(op_name, params, m, seams, out)
    assert problems == [] and res.kept == out_seams
    assert_valid_around_seams(m, out)
    assert chart_count(np.asarray(out.F, np.int64), out_seams) == n_charts
    free = _run(op_name, m, params, None).mesh
    assert len(check_seams(op_name, params, m, seams, free)[0]) > 10


# ------------------------------------------------------------------------------ bad seams
@pytest.mark.parametrize(
    "op_name", ["isotropic_remesh", "decimate", "collapse_short_edges", "delaunay_flip"]
)
@pytest.mark.parametrize(
    "seams", [np.array([[0, 10_000]]), np.array([[3, 3]]), np.array([0, 1, 2]), "not an edge"]
)
def test_seams_that_are_not_edges_are_refused(op_name: str, seams: Any) -> None:
    m = welded("rx-sphere3.obj")
    if isinstance(seams, str):
        E = _edge_set(np.asarray(m.F, np.int64))
        seams = np.array([[a, b] for a in range(m.n_vertices) for b in (a + 1,) if (a, b) not in E])
        seams = seams[:1]
    with pytest.raises(MeshError) as ei:
        _run(op_name, m, {}, seams)
    assert ei.value.code == "mesh.seam_edges_invalid"


def test_no_seams_and_empty_seams_agree() -> None:
    m = welded("rx-sphere3.obj")
    a = _run("decimate", m, {"target_ratio": 0.3}, None)
    b = _run("decimate", m, {"target_ratio": 0.3}, np.zeros((0, 2), np.int64))
    np.testing.assert_array_equal(np.asarray(a.mesh.F), np.asarray(b.mesh.F))
    assert a.report == b.report


# ------------------------------------------------------------------------------ GPU
GPU_CASES = [
    ("isotropic_remesh", "rx-sphere3.obj", {"target_edge_length": 0.6, "iterations": 2}),
    ("isotropic_remesh", "rx-cloth.obj", {"iterations": 2}),
    ("decimate", "spot.obj", {"target_ratio": 0.2, "simplify_seams": False}),
    ("decimate", "spot.obj", {"target_ratio": 0.05}),
    ("decimate", "rx-cloth.obj", {"target_ratio": 0.2, "preserve_boundary": False}),
    ("collapse_short_edges", "spot.obj", {"threshold": 1.2}),
    ("delaunay_flip", "rx-cloth.obj", {}),
    ("decimate", "Duck.glb", {"target_ratio": 0.2}),
    ("isotropic_remesh", "Duck.glb", {"iterations": 2}),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("op_name", "name", "params"), GPU_CASES)
def test_gpu_keeps_seams_like_the_twin(op_name: str, name: str, params: dict) -> None:
    m, seams = duck() if name == "Duck.glb" else (welded(name), seams_of(welded(name)))
    op = OPS.get(op_name)
    p = op.parse_params(params)
    with keeping_seams(seams):
        ref = op.numpy(m, p)
        with recording_kept() as box:
            got = op.cupy(m.to("cupy"), p)
    assert got.mesh.backend == "cupy"
    out = got.mesh.to("numpy")
    problems, out_seams = check_seams(op_name, params, m, seams, out)
    assert problems == [] and recorded(box) == out_seams
    assert_valid_around_seams(m, out)
    assert got.report.get("seam_edges") == ref.report.get("seam_edges")
    if "seam_vertices_locked" in ref.report:
        kept_removed = [
            r["seam_vertices_locked"] + r.get("seam_vertices_removed", 0)
            for r in (ref.report, got.report)
        ]
        assert kept_removed[0] == kept_removed[1] == np.unique(seams).shape[0]
    n_charts = chart_count(np.asarray(m.F, np.int64), set(map(tuple, seams.tolist())))
    n_out = chart_count(np.asarray(out.F, np.int64), out_seams)
    assert n_out == n_charts if params.get("preserve_boundary", True) else n_out >= n_charts
    if op_name == "delaunay_flip":
        assert set(map(tuple, seams.tolist())) <= _edge_set(np.asarray(out.F, np.int64))
