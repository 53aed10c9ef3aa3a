"""The eight patched queries against the topology's CSR on every shared mesh at tiny and normal
patch sizes, and the patched static operations against their NumPy twins (GPU only), plus the
reference queries themselves against brute force (everywhere)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine import shapes
from workers.engine.backend import to_numpy
from workers.engine.queries import QUERIES, reference_query, rows_equal


def _brute(mesh, name):
    F = np.asarray(mesh.F)
    topo = mesh.topology
    EV = np.asarray(topo.EV)
    E = np.asarray(topo.FE) // 2
    rows: dict[int, list[int]] = {}
    if name == "VF":
        for f, tri in enumerate(F):
            for v in tri:
                rows.setdefault(int(v), []).append(f)
        n = mesh.n_vertices
    elif name == "FF":
        by_edge: dict[int, list[int]] = {}
        for f, es in enumerate(E):
            for e in es:
                by_edge.setdefault(int(e), []).append(f)
        for f, es in enumerate(E):
            rows[f] = [g for e in es for g in by_edge[int(e)] if g != f]
        n = mesh.n_faces
    elif name == "VV":
        for a, b in EV:
            rows.setdefault(int(a), []).append(int(b))
            rows.setdefault(int(b), []).append(int(a))
        n = mesh.n_vertices
    else:
        raise AssertionError(name)
    off = np.zeros(n + 1, np.int64)
    off[1:] = np.cumsum([len(rows.get(i, [])) for i in range(n)])
    val = np.array([x for i in range(n) for x in rows.get(i, [])], np.int64)
    return off, val


@pytest.mark.parametrize("name", ["VF", "FF", "VV"])
@pytest.mark.parametrize("mesh_name", ["suzanne.obj", "beetle.obj", "rx-cube.obj"])
def test_reference_queries_match_brute_force(name, mesh_name):
    mesh = shapes.load(mesh_name)
    assert rows_equal(reference_query(mesh, name), _brute(mesh, name))


CASES = [(m, s) for m in all_meshes() for s in (16, 512)]


@pytest.mark.gpu
@pytest.mark.parametrize(("mesh_name", "size"), CASES)
def test_patched_queries_equal_topology(mesh_name, size):
    from workers.engine.patches import build_patches, validate
    from workers.engine.queries import patched_query

    mesh = shapes.load(mesh_name).to("cupy")
    patches = build_patches(mesh, size)
    validate(patches, mesh)
    cpu = build_patches(shapes.load(mesh_name), size)  # same code, same seed: same patches
    np.testing.assert_array_equal(to_numpy(patches.face_patch), to_numpy(cpu.face_patch))
    for q in QUERIES:
        got = patched_query(mesh, patches, q)
        assert rows_equal(got, reference_query(mesh, q)), q


@pytest.mark.gpu
@pytest.mark.parametrize("mesh_name", all_meshes())
def test_morton_patches_on_the_gpu_equal_the_cpu_and_answer_queries(mesh_name):
    from workers.engine.patches import build_patches, validate
    from workers.engine.queries import patched_query

    mesh = shapes.load(mesh_name).to("cupy")
    patches = build_patches(mesh, 512, method="morton")
    validate(patches, mesh)
    cpu = build_patches(shapes.load(mesh_name), 512, method="morton")
    np.testing.assert_array_equal(to_numpy(patches.face_patch), to_numpy(cpu.face_patch))
    for q in ("VV", "VF", "FF"):
        assert rows_equal(patched_query(mesh, patches, q), reference_query(mesh, q)), q


@pytest.mark.gpu
@pytest.mark.parametrize(("mesh_name", "size"), [(m, s) for m in all_meshes() for s in (16, 512)])
def test_patched_static_ops_match_twins(mesh_name, size):
    from workers.engine import patched_ops
    from workers.engine.patches import build_patches

    cpu = shapes.load(mesh_name)
    mesh = cpu.to("cupy")
    patches = build_patches(mesh, size)
    ref = cpu.run(["vertex_normals", "gaussian_curvature"], device="cpu").mesh
    n = to_numpy(patched_ops.vertex_normals(mesh, patches))
    used = np.asarray(cpu.used_vertices())
    np.testing.assert_allclose(n[used], ref.vertex_attrs["vertex_normals"][used], atol=2e-4)
    k = to_numpy(patched_ops.gaussian_curvature(mesh, patches))
    np.testing.assert_allclose(k, ref.vertex_attrs["gaussian_curvature"], atol=2e-5)
    fixed = mesh.topology.boundary_vertices
    a = to_numpy(patched_ops.smooth_step(mesh, patches, 0.5, fixed))
    b = to_numpy(patched_ops.smooth_step_global(mesh, 0.5, fixed))
    c = patched_ops.smooth_step_global(cpu, 0.5, np.asarray(to_numpy(fixed)))
    np.testing.assert_allclose(a, c, atol=1e-6)
    np.testing.assert_allclose(b, c, atol=1e-6)
    # one-ring bilateral step, patched and global, against the op's twin (max_rings=1)
    from workers.engine.ops.bilateral_denoise import vertex_normals64

    step = {"op": "bilateral_denoise", "max_rings": 1, "fix_boundary": True}
    twin = cpu.run([step], device="cpu")
    X = mesh.V.astype(mesh.xp.float64)
    N = vertex_normals64(mesh.xp, X, mesh.F, mesh.n_vertices)
    for p in (patches, None):
        out, sizes = patched_ops.bilateral_step(mesh, X, N, fixed, None, None, p)
        np.testing.assert_allclose(to_numpy(out), np.asarray(twin.mesh.V, np.float64), atol=1e-9)
        rep = twin.reports["bilateral_denoise"]
        assert int(sizes.max()) == rep["max_neighbourhood"]


@pytest.mark.gpu
def test_a_gpu_pipeline_records_its_patching_and_reuses_it(monkeypatch):
    """The one-ring bilateral step forced onto the patched path: the first step builds the
    patches, the third reuses them (cached with the topology, which a change of positions
    keeps); the default takes the global kernel and builds none."""
    monkeypatch.setenv("TESSERA_GPU_PATH", "patched")
    m = shapes.load("spot.obj")
    step = {"op": "bilateral_denoise", "max_rings": 1, "fix_boundary": True}
    steps = [step, "vertex_normals", step]
    res = m.run(steps, device="gpu")
    assert len(res.patching) == 1, res.patching  # built by step 0, reused by step 2
    rec = res.patching[0]
    assert rec["step"] == 0 and rec["faces_max"] <= 512 and rec["seconds"] > 0
    assert rec["patches"] * 512 >= m.n_faces and rec["ribbon_overhead"] > 0
    assert res.steps[0].report["execution"]["path"] == "patched"
    assert res.steps[2].report["execution"]["path"] == "patched"
    cpu = m.run(steps, device="cpu")
    assert cpu.patching == []
    np.testing.assert_allclose(to_numpy(res.mesh.V), np.asarray(cpu.mesh.V), atol=1e-6)
    monkeypatch.setenv("TESSERA_GPU_PATH", "auto")
    res = m.run(steps[:1], device="gpu")
    assert res.patching == [] and res.steps[0].report["execution"]["path"] == "global"


@pytest.mark.gpu
@pytest.mark.parametrize("mesh_name", all_meshes())
def test_geodesic_propagation_paths_equal_the_numpy_twin(mesh_name):
    """The frontier schedule (the op's GPU path) reaches the twin's fixed point bit for bit, in
    its band schedule and without a band; the global-memory and the patched Jacobi kernels
    (with the patched path's active set) reach the plain Jacobi twin's: same arithmetic, and
    skipping a vertex or a patch that saw no change is exact."""
    from workers.engine.patches import build_patches
    from workers.engine.propagation import (
        propagate_frontier,
        propagate_global,
        propagate_numpy,
        propagate_patched,
    )

    cpu = shapes.load(mesh_name)
    mesh = cpu.to("cupy")
    # several sources (both fronts), and one (the twin's single-front loop); tiny patches put
    # the vertex across a corner's side (read by the check against D) outside the target's
    # patch, which only the dependents wake
    for src in (np.unique([0, cpu.n_vertices // 3, cpu.n_vertices - 1]), np.array([0])):
        ref, _ = propagate_numpy(cpu, src)
        d, _ = propagate_frontier(mesh, src)
        np.testing.assert_array_equal(to_numpy(d), ref)
        ref, _ = propagate_numpy(cpu, src, band=None)
        d, _ = propagate_frontier(mesh, src, band=None)
        np.testing.assert_array_equal(to_numpy(d), ref)
        d, _ = propagate_global(mesh, src)
        np.testing.assert_array_equal(to_numpy(d), ref)
        for size in (16, 512):
            patches = build_patches(mesh, size)
            d, iterations, ran = propagate_patched(mesh, patches, src)
            np.testing.assert_array_equal(to_numpy(d), ref)
            assert patches.n_patches <= ran <= iterations * patches.n_patches
