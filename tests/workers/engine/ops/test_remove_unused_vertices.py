"""``remove_unused_vertices``: compaction that keeps order, geometry and attributes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import (
    README_COUNTS,
    SHARED,
    load,
    mesh,
    run,
    stats,
    tetrahedron,
)
from workers.engine import OpParamsError, TriMesh


def _remove(m: TriMesh) -> tuple[TriMesh, dict]:
    res = run(m, "remove_unused_vertices")
    return res.mesh, res.reports["remove_unused_vertices"]


@pytest.mark.parametrize("name", ["stanford-bunny.obj", "teapot.obj", "rx-cube.obj"])
def test_shared_meshes(name: str) -> None:
    c = README_COUNTS[name]
    m = load(name)
    out, rep = _remove(m)
    assert rep == {"vertices_before": c.v, "removed": c.unused}
    assert out.n_vertices == c.v - c.unused and out.n_faces == c.F
    used = np.zeros(m.n_vertices, dtype=bool)
    used[np.asarray(m.F).ravel()] = True
    np.testing.assert_array_equal(out.V, np.asarray(m.V)[used])  # order kept
    np.testing.assert_array_equal(
        np.asarray(out.V)[np.asarray(out.F)], np.asarray(m.V)[np.asarray(m.F)]
    )
    assert out.F.dtype == np.int32
    s = stats(out)
    assert s["unused_vertices"] == 0
    assert s["euler_characteristic"] == stats(m)["euler_characteristic"]


def test_every_shared_mesh_has_the_readme_unused_count() -> None:
    for name in SHARED:
        assert _remove(load(name))[1]["removed"] == README_COUNTS[name].unused, name


def test_attributes_follow_their_vertices() -> None:
    t = tetrahedron()
    V = np.concatenate([[[9.0, 9, 9]], np.asarray(t.V), [[8.0, 8, 8]]])
    m = mesh(
        V,
        np.asarray(t.F) + 1,
        vertex_attrs={"id": np.arange(6), "vec": np.arange(18.0).reshape(6, 3)},
        face_attrs={"fid": np.arange(4)},
    )
    out, rep = _remove(m)
    assert rep["removed"] == 2
    np.testing.assert_array_equal(out.vertex_attrs["id"], [1, 2, 3, 4])
    np.testing.assert_array_equal(out.vertex_attrs["vec"], np.arange(18.0).reshape(6, 3)[1:5])
    np.testing.assert_array_equal(out.face_attrs["fid"], np.arange(4))
    np.testing.assert_array_equal(out.F, t.F)


def test_nothing_to_remove_keeps_mesh_and_topology() -> None:
    t = tetrahedron()
    topo = t.topology
    out, rep = _remove(t)
    assert rep["removed"] == 0
    np.testing.assert_array_equal(out.V, t.V)
    np.testing.assert_array_equal(out.F, t.F)
    assert out.topology is topo


def test_no_params() -> None:
    with pytest.raises(OpParamsError) as ei:
        run(tetrahedron(), ("remove_unused_vertices", {"all": True}))
    assert ei.value.code == "op.params_invalid"
