"""soup_to_mesh: an indexed mesh from independent triangles."""

from __future__ import annotations

import pytest

from tests.workers.engine import shapes
from workers.engine.ops.soup_to_mesh import OP, Params


@pytest.mark.parametrize("name", ["rx-torus.obj", "teapot.obj", "stanford-bunny.obj"])
def test_soup_of_a_mesh_gives_the_welded_mesh_back(name):
    welded = shapes.welded(name)
    out = OP.numpy(shapes.soup(welded), Params())
    assert (out.mesh.n_vertices, out.mesh.n_faces) == (welded.n_vertices, welded.n_faces)
    assert out.report["corners"] == 3 * welded.n_faces
    s = shapes.stats(out.mesh)
    assert s["euler_characteristic"] == shapes.stats(welded)["euler_characteristic"]


def test_seam_split_mesh_is_rejoined():
    # a mesh indexed with split vertices (each face its own corners) joins at equal positions
    cube = shapes.cube()
    out = OP.numpy(shapes.soup(cube), Params())
    assert out.mesh.n_vertices == 8 and shapes.stats(out.mesh)["closed"]
