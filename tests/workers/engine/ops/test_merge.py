"""merge: parts of a multi-file upload joined, shared vertices welded."""

from __future__ import annotations

import numpy as np

from tests.workers.engine import shapes
from workers.engine import TriMesh
from workers.engine.ops.merge import OP, Params


def test_two_halves_weld_into_the_closed_mesh():
    cube = shapes.cube()
    top, bottom = cube.F[:6], cube.F[6:]
    a = TriMesh.from_arrays(cube.V, top, dtype="float64")
    b = TriMesh.from_arrays(cube.V, bottom, dtype="float64")
    joined = TriMesh.concatenate([a, b])
    assert joined.n_vertices == 16 and joined.face_attrs["part"].tolist() == [0] * 6 + [1] * 6
    out = OP.numpy(joined, Params())
    assert out.report["parts"] == 2 and out.mesh.n_vertices == 8
    assert "part" not in out.mesh.face_attrs
    assert shapes.stats(out.mesh)["closed"]


def test_keep_parts_and_no_weld():
    cube = shapes.cube()
    joined = TriMesh.concatenate([cube, cube])
    out = OP.numpy(joined, Params(weld=False, keep_parts=True))
    assert out.mesh.n_vertices == 16
    np.testing.assert_array_equal(out.mesh.face_attrs["part"], np.repeat([0, 1], 12))


def test_concatenate_keeps_only_common_attributes():
    a = shapes.cube().with_attrs(vertex={"k": np.ones(8), "only_a": np.ones(8)})
    b = shapes.cube().with_attrs(vertex={"k": np.zeros(8)})
    joined = TriMesh.concatenate([a, b])
    assert set(joined.vertex_attrs) == {"k"}
    np.testing.assert_array_equal(joined.vertex_attrs["k"], np.r_[np.ones(8), np.zeros(8)])
