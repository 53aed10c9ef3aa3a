"""submesh: components and attribute ranges, compacted and re-indexed."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine import OpParamsError, TriMesh
from workers.engine.ops.submesh import OP, Params


def three_parts() -> TriMesh:
    return TriMesh.concatenate(
        [shapes.cube(), shapes.tetrahedron(), shapes.welded("rx-sphere3.obj").to("numpy")]
    )


def test_largest_component():
    out = OP.numpy(three_parts(), Params())
    assert (out.mesh.n_vertices, out.mesh.n_faces) == (386, 768)
    assert shapes.stats(out.mesh)["unused_vertices"] == 0


@pytest.mark.parametrize(("k", "faces"), [(0, 12), (1, 4), (2, 768)])
def test_component_by_number(k, faces):
    out = OP.numpy(three_parts(), Params(select="component", component=k))
    assert out.mesh.n_faces == faces and shapes.stats(out.mesh)["components"] == 1


def test_attribute_range_keeps_face_attributes_aligned():
    mesh = three_parts()
    out = OP.numpy(mesh, Params(select="attribute", attribute="part", min=1, max=1))
    assert out.mesh.n_faces == 4
    np.testing.assert_array_equal(out.mesh.face_attrs["part"], np.ones(4))


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"select": "component", "component": 3}, "op.unknown_component"),
        ({"select": "attribute", "attribute": "nope"}, "op.unknown_attribute"),
    ],
)
def test_bad_selection(params, code):
    with pytest.raises(OpParamsError) as exc:
        OP.numpy(three_parts(), Params(**params))
    assert exc.value.code == code


def test_min_above_max_is_rejected():
    with pytest.raises(ValueError):
        Params(select="attribute", attribute="part", min=2, max=1)
