"""Delaunay flips inside patches (``dynamic.patched_flip``): the side adjacency updated in place
equals one rebuilt from the faces, patches are independent (all at once equals one by one, which
is what lets the kernel run a block per patch), only edges inside a patch change, and the
kernel equals the array code on the GPU bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, grid, stats, welded
from workers.engine.dynamic._edges import edge_keys, edge_table
from workers.engine.dynamic.flip import flip_quads, opposite_angle_sums
from workers.engine.dynamic.patched_flip import (
    PatchSides,
    _apply,
    _candidates,
    flip_in_patches,
    kernel_fits,
    patch_sides,
)
from workers.engine.dynamic.seams import seam_keys
from workers.engine.mesh import TriMesh
from workers.engine.ops.delaunay_flip import Params, delaunay
from workers.engine.patches import morton_patches

LIMIT = math.pi + 1e-9
#: shared meshes with non-Delaunay edges, and a planar grid with many
FLIPPY = ["beetle.obj", "cow.obj", "rx-dragon.obj", "rx-giraffe.obj", "rx-torus.obj", "teapot.obj"]


def _mesh(name: str) -> TriMesh:
    return grid(40, jitter=0.24, seed=5) if name == "grid" else welded(name)


def _sides(xp, m: TriMesh, size: int = 128) -> tuple[np.ndarray, np.ndarray, PatchSides]:
    V = xp.asarray(m.V, dtype=xp.float64)
    F = xp.asarray(m.F, dtype=xp.int64)
    label, _, _, sizes = morton_patches(xp, m, size)
    P = patch_sides(xp, F, edge_table(xp, F), label, int(sizes.shape[0]), m.n_vertices)
    return V, F, P


def _labels(P: PatchSides, m: int) -> np.ndarray:
    """Each face's patch, from the grouped faces."""
    label = np.empty(m, dtype=np.int64)
    for p in range(P.n_patches):
        label[P.faces[P.offsets[p] : P.offsets[p + 1]]] = p
    return label


def _cross_patch_edges(F: np.ndarray, label: np.ndarray) -> set[tuple[int, int]]:
    """Edges whose faces lie in more than one patch, as vertex pairs."""
    a, b = F.ravel(), F[:, [1, 2, 0]].ravel()
    key = edge_keys(np, a, b)
    lab = np.repeat(label, 3)
    order = np.lexsort([lab, key])
    k, lo = key[order], lab[order]
    out = set()
    same_key = k[1:] == k[:-1]
    for i in np.nonzero(same_key & (lo[1:] != lo[:-1]))[0]:
        out.add((int(k[i] >> 32), int(k[i] & 0xFFFFFFFF)))
    return out


@pytest.mark.parametrize("name", [*FLIPPY, "grid"])
def test_twins_updated_in_place_equal_the_rebuilt_ones(name: str) -> None:
    m = _mesh(name)
    V, F, P = _sides(np, m)
    label = _labels(P, m.n_faces)
    Fl, twin = F[P.faces], P.twin.copy()
    sides = np.arange(twin.shape[0])
    flipped = 0
    for _ in range(4):
        s0 = np.nonzero(twin > sides)[0]
        s1 = twin[s0]
        ok, _, _ = _candidates(np, V, Fl, s0, s1, P.inner, LIMIT, 180.0)
        # every other wanted flip: disjoint by construction of the test, no claims needed
        pick = np.nonzero(ok)[0]
        used = np.zeros(Fl.shape[0], dtype=bool)
        take = []
        for i in pick:
            f, g = s0[i] // 3, s1[i] // 3
            if not used[f] and not used[g]:
                used[f] = used[g] = True
                take.append(i)
        take = np.asarray(take[::2], dtype=np.int64)
        if take.shape[0] == 0:
            break
        Fl, twin = _apply(np, Fl, twin, s0[take], s1[take])
        flipped += int(take.shape[0])
        F2 = F.copy()
        F2[P.faces] = Fl
        rebuilt = patch_sides(np, F2, edge_table(np, F2), label, P.n_patches, m.n_vertices)
        np.testing.assert_array_equal(rebuilt.faces, P.faces)
        np.testing.assert_array_equal(twin, rebuilt.twin)
        np.testing.assert_array_equal(rebuilt.inner, P.inner)
    assert flipped > 0


@pytest.mark.parametrize("name", ["cow.obj", "rx-dragon.obj", "grid"])
def test_patches_all_at_once_equal_patches_one_by_one(name: str) -> None:
    """The array code runs every patch's rounds together; the kernel runs each patch alone in
    its block. Running each patch alone here (the other patches' sides masked out) and putting
    the results together gives the same faces."""
    m = _mesh(name)
    V, F, P = _sides(np, m)
    together, flips, rounds = flip_in_patches(np, V, F, P, LIMIT, 45.0)
    assert flips > 0 and rounds > 0
    alone = F.copy()
    total = 0
    for p in range(P.n_patches):
        lo, hi = int(P.offsets[p]), int(P.offsets[p + 1])
        twin = np.full_like(P.twin, -1)
        twin[3 * lo : 3 * hi] = P.twin[3 * lo : 3 * hi]
        one = PatchSides(P.offsets, P.faces, twin, P.inner, P.cap)
        out, k, _ = flip_in_patches(np, V, F, one, LIMIT, 45.0)
        rows = P.faces[lo:hi]
        alone[rows] = out[rows]
        total += k
    np.testing.assert_array_equal(together, alone)
    assert total == flips


@pytest.mark.parametrize("name", [*FLIPPY, "grid"])
def test_only_edges_inside_patches_change_and_the_mesh_stays_valid(name: str) -> None:
    m = _mesh(name)
    V, F, P = _sides(np, m)
    label = _labels(P, m.n_faces)
    out, flips, _ = flip_in_patches(np, V, F, P, LIMIT, 45.0)
    assert flips > 0
    assert _cross_patch_edges(out, label) == _cross_patch_edges(F, label)
    s0, s1 = stats(m), stats(TriMesh(m.V, out.astype(np.int32)))
    for k in ("edges", "euler_characteristic", "boundary_edges", "non_manifold_edges"):
        assert s1[k] == s0[k], k
    assert s1["consistently_oriented"] == s0["consistently_oriented"]
    assert s1["degenerate_faces"] == 0 and s1["duplicate_faces"] == s0["duplicate_faces"]


@pytest.mark.parametrize("name", FLIPPY)
def test_the_op_with_and_without_patches_ends_alike(name: str) -> None:
    m = welded(name)
    a = delaunay(m, Params(), patched=False)
    b = delaunay(m, Params(), patched=True)
    ra, rb = a.report, b.report
    assert rb["patch_flips"] > 0.5 * ra["flips"]
    assert rb["patch_flips"] <= rb["flips"]
    assert ra["non_delaunay_before"] == rb["non_delaunay_before"]
    assert rb["unresolved"] == 0
    assert rb["non_delaunay_after"] <= ra["non_delaunay_after"] + 2
    assert rb["rounds"] <= ra["rounds"]
    sa, sb = stats(a.mesh), stats(b.mesh)
    for k in ("edges", "euler_characteristic", "non_manifold_edges", "degenerate_faces"):
        assert sa[k] == sb[k], k


def test_seam_edges_are_not_flipped_inside_patches() -> None:
    m = grid(24, jitter=0.24, seed=2)
    F = np.asarray(m.F, dtype=np.int64)
    E = edge_table(np, F)
    interior = np.nonzero(E.count == 2)[0]
    seams = np.sort(E.key[interior[::3]])
    label, _, _, sizes = morton_patches(np, m, 128)
    P = patch_sides(np, F, E, label, int(sizes.shape[0]), m.n_vertices, seams)
    out, flips, _ = flip_in_patches(np, np.asarray(m.V, np.float64), F, P, LIMIT, 180.0)
    assert flips > 0
    kept = np.unique(edge_keys(np, out.ravel(), out[:, [1, 2, 0]].ravel()))
    assert np.isin(seams, kept).all()


@pytest.mark.gpu
@pytest.mark.parametrize("feature", [45.0, 180.0])
@pytest.mark.parametrize("name", [*SHARED, "grid"])
def test_the_kernel_equals_the_array_code_on_the_gpu(name: str, feature: float) -> None:
    import cupy as cp

    m = _mesh(name).to("cupy")
    V, F, P = _sides(cp, m, 512)
    assert kernel_fits(P, m.n_vertices)  # else both calls would run the array code
    want, wflips, wrounds = flip_in_patches(cp, V, F, P, LIMIT, feature, kernel=False)
    got, flips, rounds = flip_in_patches(cp, V, F, P, LIMIT, feature, kernel=True)
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
    assert (flips, rounds) == (wflips, wrounds)


def test_the_cpu_takes_the_global_path_whatever_the_gpu_path_says(monkeypatch) -> None:
    monkeypatch.setenv("TESSERA_GPU_PATH", "patched")
    rep = delaunay(welded("cow.obj"), Params()).report
    assert rep["execution"]["path"] == "global" and rep["patch_flips"] == 0
    assert rep["flips"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", FLIPPY)
def test_the_gpu_paths_end_alike(name: str, monkeypatch) -> None:
    m = welded(name).to("cupy")
    monkeypatch.setenv("TESSERA_GPU_PATH", "global")
    a = delaunay(m, Params())
    monkeypatch.setenv("TESSERA_GPU_PATH", "patched")
    b = delaunay(m, Params())
    ra, rb = a.report, b.report
    assert ra["execution"]["path"] == "global" and rb["execution"]["path"] == "patched"
    assert ra["patch_flips"] == 0 and rb["patch_flips"] > 0.5 * ra["flips"]
    assert ra["non_delaunay_before"] == rb["non_delaunay_before"]
    assert rb["unresolved"] == 0
    assert rb["non_delaunay_after"] <= ra["non_delaunay_after"] + 2
    sa, sb = stats(a.mesh.to("numpy")), stats(b.mesh.to("numpy"))
    for k in ("edges", "euler_characteristic", "non_manifold_edges", "degenerate_faces"):
        assert sa[k] == sb[k], k


def _two_flips_one_new_edge() -> tuple[np.ndarray, np.ndarray]:
    """A fan of four faces around vertex 0 (ring 1, 2, 3, 4), bent in space so that edges 0-2
    and 0-4 are both non-Delaunay and flippable: they share no face, and each flip would make
    the edge 1-3. Found by a random search over such fans."""
    V = np.array(
        [
            [-0.216, 0.8, 0.317],
            [-0.921, 0.175, -0.184],
            [-1.215, -1.13, 0.086],
            [-0.028, 0.005, -0.344],
            [-0.184, -1.037, -0.278],
        ]
    )
    F = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]], np.int64)
    return V, F


def _flip_alone(xp, V, F, kernel: bool) -> tuple[np.ndarray, int]:
    """The four faces as one patch, flipped there."""
    V, F = xp.asarray(V), xp.asarray(F)
    P = patch_sides(xp, F, edge_table(xp, F), xp.zeros(4, dtype=xp.int64), 1, 5)
    out, flips, _ = flip_in_patches(xp, V, F, P, LIMIT, 180.0, kernel=kernel)
    return np.asarray(out.get() if xp is not np else out), flips


def test_two_flips_that_would_make_one_edge_are_not_made_together() -> None:
    """Their faces differ, so only the claim on the new edge's end keeps one of the two flips
    out of the round (made together, the edge 1-3 would be made twice: four faces on one
    edge); the other then finds the edge made and is blocked, as in the rounds over the whole
    mesh."""
    V, F = _two_flips_one_new_edge()
    E = edge_table(np, F)
    Q = flip_quads(np, V, F, E, 180.0, seam_keys(np, F, 5))
    old, new = opposite_angle_sums(np, V, Q)
    wanted = (Q.reason == 0) & (old > LIMIT) & (new < old)
    assert sorted(map(tuple, E.EV[wanted].tolist())) == [(0, 2), (0, 4)]
    out, flips = _flip_alone(np, V, F, kernel=False)
    assert flips == 1
    s = stats(TriMesh(V, out.astype(np.int32)))
    assert s["edges"] == 8 and s["non_manifold_edges"] == 0 and s["consistently_oriented"]
    rep = delaunay(TriMesh(V, F.astype(np.int32)), Params(feature_angle=180.0)).report
    assert rep["flips"] == 1 and rep["blocked"]["exists"] == 1
    global_F = delaunay(TriMesh(V, F.astype(np.int32)), Params(feature_angle=180.0)).mesh.F
    np.testing.assert_array_equal(np.asarray(global_F), out)


@pytest.mark.gpu
def test_two_flips_that_would_make_one_edge_on_the_gpu() -> None:
    """The kernel's claim on the new edge's end: one flip, the array code's."""
    import cupy as cp

    V, F = _two_flips_one_new_edge()
    want, wflips = _flip_alone(np, V, F, kernel=False)
    got, flips = _flip_alone(cp, V, F, kernel=True)
    assert flips == wflips == 1
    np.testing.assert_array_equal(got, want)
