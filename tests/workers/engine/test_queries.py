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
