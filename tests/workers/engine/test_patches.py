"""Patching: every invariant on every shared mesh at several patch sizes, determinism, and the
meshes that do not fit (high valence, many tiny components)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine import shapes
from workers.engine.backend import to_numpy
from workers.engine.patches import Patches, PatchingError, build_patches, patch_mesh, validate


@pytest.mark.parametrize("size", [16, 64, 512])
@pytest.mark.parametrize("name", all_meshes())
@pytest.mark.parametrize("method", ["lloyd", "morton"])
def test_every_shared_mesh_validates(name, size, method):
    mesh = shapes.load(name)
    p = build_patches(mesh, size, method=method)
    validate(p, mesh)
    assert p.summary()["method"] == method
    owned = np.asarray(p.owned_faces)
    assert owned.max() <= size and owned.sum() == mesh.n_faces
    summary = p.summary()
    assert summary["patches"] == p.n_patches and summary["faces_max"] <= size


def test_morton_patches_are_few_and_compact():
    """Space-filling-curve patches after merging small pieces: not many more patches, nor much
    more ribbon, than Lloyd's (measured on the welded bunny at 512: 212 vs 195 patches, ribbon
    0.42 vs 0.35); deterministic without a seed."""
    mesh = shapes.welded("stanford-bunny.obj")
    lloyd, morton = build_patches(mesh, 512), build_patches(mesh, 512, method="morton")
    assert morton.n_patches <= 1.5 * lloyd.n_patches
    assert morton.summary()["ribbon_overhead"] <= 1.5 * lloyd.summary()["ribbon_overhead"]
    again = build_patches(mesh, 512, method="morton", seed=9)
    np.testing.assert_array_equal(morton.face_patch, again.face_patch)
    with pytest.raises(ValueError):
        build_patches(mesh, 512, method="kmeans")


def test_tiny_patches_put_most_elements_on_a_ribbon():
    mesh = shapes.welded("stanford-bunny.obj")
    p = build_patches(mesh, 16)
    assert p.summary()["ribbon_overhead"] > 1.0  # more ribbon faces than owned ones


def test_fixed_seed_gives_the_same_patches():
    mesh = shapes.welded("rx-dragon.obj")
    a, b = build_patches(mesh, 128, seed=3), build_patches(mesh, 128, seed=3)
    np.testing.assert_array_equal(a.face_patch, b.face_patch)
    np.testing.assert_array_equal(a.local_fe, b.local_fe)
    c = build_patches(mesh, 128, seed=4)
    assert not np.array_equal(a.face_patch, c.face_patch)


def test_isolated_faces_are_patches_of_their_own():
    soup = shapes.soup(shapes.welded("rx-sphere3.obj"))  # every face its own component
    p = build_patches(soup, 64)
    validate(p, soup)
    assert p.n_patches == soup.n_faces


def test_high_valence_fan_falls_back_to_smaller_patches_or_none():
    n = 20000  # one vertex with 20000 faces around it: its one-ring joins every ribbon near it
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    V = np.vstack([[0, 0, 0], np.c_[np.cos(ang), np.sin(ang), np.zeros(n)]])
    F = np.c_[np.zeros(n, int), 1 + np.arange(n), 1 + (np.arange(n) + 1) % n]
    fan = shapes.mesh(V, F)
    with pytest.raises(PatchingError) as exc:
        build_patches(fan, 512)
    assert exc.value.code == "mesh.patching_failed"
    assert patch_mesh(fan) is None  # the caller runs unpatched kernels


def test_patch_mesh_halves_the_size_until_it_fits():
    mesh = shapes.welded("rx-torus.obj")
    p = patch_mesh(mesh, 512, shared_bytes=2000)
    assert p is not None and p.patch_size < 512
    validate(p, mesh, shared_bytes=2000)


@pytest.mark.parametrize("field", ["local_fe", "local_ev", "faces", "vertex_owner", "face_patch"])
def test_validate_catches_corruption(field):
    mesh = shapes.welded("spot.obj")
    p = build_patches(mesh, 64)
    arr = getattr(p, field).copy()
    arr[len(arr) // 2] = arr[len(arr) // 2] + 1
    setattr(p, field, arr)
    with pytest.raises(PatchingError):
        validate(p, mesh)


def test_merging_never_makes_a_patch_over_the_size_or_apart():
    """Small pieces join a neighbour only while the total fits: no patch is ever cut
    afterwards, and every patch stays connected (validate checks it)."""
    for name in ("rx-dragon.obj", "spot.obj"):
        mesh = shapes.welded(name)
        for size in (16, 100, 512):
            p = build_patches(mesh, size, method="morton")
            validate(p, mesh)
            assert p.fallback_splits == 0 and int(np.asarray(p.owned_faces).max()) <= size
            assert p.iterations > 0  # pieces were merged


def assert_same_patches(got, want):
    assert got.n_patches == want.n_patches
    for name in Patches.ARRAYS:
        a, b = to_numpy(getattr(got, name)), to_numpy(getattr(want, name))
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", all_meshes())
@pytest.mark.parametrize(("method", "size"), [("morton", 512), ("morton", 16), ("lloyd", 64)])
def test_gpu_patching_kernels_give_the_host_arrays(name, method, size):
    """The run and row kernels (kernels/patching.cu) build exactly what the array code builds
    on the host: every array of the structure, bit for bit."""
    cpu = shapes.load(name)
    want = build_patches(cpu, size, method=method)
    got = build_patches(cpu.to("cupy"), size, method=method)
    assert_same_patches(got, want)


@pytest.mark.gpu
def test_gpu_rows_that_overflow_the_kernel_buffers_fall_back_to_the_array_code(monkeypatch):
    """The kernel builds the rows; rows that do not fit its pools go to larger pools, then to
    the array code, and so do rows that do not fit its shared-memory buffers."""
    from workers.engine import patches

    cpu = shapes.welded("stanford-bunny.obj")
    want = build_patches(cpu, 512, method="morton")
    calls = []
    real = patches._rows

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(patches, "_rows", spy)
    assert_same_patches(build_patches(cpu.to("cupy"), 512, method="morton"), want)
    assert calls == []  # the kernel built them
    # pools too small for the rows: the next size is tried, and past the last the array code
    monkeypatch.setattr(patches, "ROW_POOL", (0.5, 1.75))
    assert_same_patches(build_patches(cpu.to("cupy"), 512, method="morton"), want)
    assert calls == []
    monkeypatch.setattr(patches, "ROW_POOL", (0.5,))
    assert_same_patches(build_patches(cpu.to("cupy"), 512, method="morton"), want)
    assert calls == [1]
    monkeypatch.setattr(patches, "ROW_POOL", (1.75,))
    monkeypatch.setattr(patches, "ROW_CAP", {"CAP_F": 256, "CAP_V": 2048, "CAP_E": 1024})
    assert_same_patches(build_patches(cpu.to("cupy"), 512, method="morton"), want)
    assert calls == [1, 1]


def test_small_pieces_join_in_order_of_number_while_the_total_fits():
    """Three small pieces (under a quarter of 128 faces) next to one big piece: the first fits
    (100 + 20), the second would not (+ 30), and the third waits behind it (the running total
    counts the second), and in later rounds neither fits the grown piece; a small piece that
    joins a bigger one of a larger number gives the merged piece its own number (pieces are
    numbered by their first Morton position)."""
    from workers.engine.patches import MERGE_ROUNDS, _merge_pieces

    sizes = np.array([100, 20, 30, 10])
    a, b = np.array([1, 2, 3, 0, 0, 0]), np.array([0, 0, 0, 1, 2, 3])  # pieces across edges
    piece, moved, sizes2 = _merge_pieces(np, sizes, a, b, 128)
    assert moved == 1
    np.testing.assert_array_equal(piece, [0, 0, 1, 2])
    np.testing.assert_array_equal(sizes2, [120, 30, 10])
    # nothing fits: nothing changes
    piece, moved, sizes2 = _merge_pieces(
        np, np.array([120, 30, 10]), np.array([1, 2]), np.array([0, 0]), 128
    )
    assert moved == 0
    np.testing.assert_array_equal(piece, [0, 1, 2])
    # piece 0 joins piece 1 and piece 3 joins piece 2, in one round
    sizes = np.array([10, 100, 50, 5])
    a, b = np.array([0, 1, 3, 2]), np.array([1, 0, 2, 3])
    piece, moved, sizes2 = _merge_pieces(np, sizes, a, b, 128)
    np.testing.assert_array_equal(piece, [0, 0, 1, 1])
    np.testing.assert_array_equal(sizes2, [110, 55])
    assert moved == 2
    # piece 0 touches only the small piece 1, which joins piece 2 first: piece 0 follows in
    # the next round, into the merged piece (numbered by its first piece, 1)
    assert MERGE_ROUNDS >= 2
    a, b = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])
    piece, moved, sizes2 = _merge_pieces(np, np.array([10, 20, 90]), a, b, 128)
    np.testing.assert_array_equal(piece, [0, 0, 0])
    np.testing.assert_array_equal(sizes2, [120])
    assert moved == 2
