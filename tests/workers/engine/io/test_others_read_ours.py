"""What Tessera writes, other readers read: every output format of a triangle mesh with
attributes, of Catmull-Clark quads and of dual polygons (several sizes) is loaded by trimesh and
by a second, independent reader (plyfile for PLY, meshio for OBJ, OFF and STL), with the counts
and positions written."""

from __future__ import annotations

import io
import os
import tempfile

import meshio
import numpy as np
import plyfile
import pytest
import trimesh

from tests.workers.engine import shapes
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize


def _meshes() -> dict[str, tuple[TriMesh, int]]:
    """name -> (mesh, polygons the file holds)"""
    sphere = shapes.run(shapes.load("rx-sphere3.obj"), "weld", "vertex_normals").mesh
    cc = shapes.run(shapes.cube(), {"op": "subdivide", "scheme": "catmull_clark"}).mesh
    dual = shapes.run(shapes.load("rx-sphere3.obj"), "weld", {"op": "dual_mesh"}).mesh
    return {
        "triangles": (sphere, sphere.n_faces),
        "quads": (cc, cc.n_faces // 2),
        "dual polygons": (dual, int(np.unique(np.asarray(dual.face_attrs["polygon_id"])).shape[0])),
    }


MESHES = _meshes()


TRIMESH_OFF_POLYGONS = pytest.mark.xfail(
    raises=TypeError,
    strict=True,
    reason="trimesh 5.2's OFF reader fans polygons of several sizes with a string product that "
    "NumPy 2 refuses (trimesh/util.py triangle_fans_to_faces); the file is plain OFF",
)


@pytest.mark.parametrize(
    "name, fmt",
    [
        pytest.param(
            name,
            fmt,
            marks=TRIMESH_OFF_POLYGONS if (name, fmt) == ("dual polygons", "off") else (),
        )
        for name in MESHES
        for fmt in ("ply", "obj", "off", "stl", "glb")
    ],
)
def test_trimesh_reads_what_we_write(name: str, fmt: str) -> None:
    m, _ = MESHES[name]
    data = serialize(m, fmt)
    tm = trimesh.load(io.BytesIO(data), file_type=fmt, process=False, force="mesh")
    ours = load_bytes(data, f"m.{fmt}")  # the dual's centre vertices are not in its polygons
    assert tm.vertices.shape[0] == ours.n_vertices
    # every polygon is back as triangles on the same surface: the area of ours (convex
    # polygons fanned by both)
    assert tm.area == pytest.approx(shapes.stats(ours)["area"], rel=1e-5)


@pytest.mark.parametrize("name", list(MESHES))
def test_plyfile_reads_our_ply(name: str) -> None:
    m, polygons = MESHES[name]
    ply = plyfile.PlyData.read(io.BytesIO(serialize(m, "ply")))
    assert ply["face"].count == polygons
    V = np.stack([ply["vertex"][c] for c in "xyz"], axis=1)
    if name != "dual polygons":  # the dual's centre vertices are left out of its polygons
        np.testing.assert_allclose(V, np.asarray(m.V), rtol=1e-6)
    sizes = [len(f) for f in ply["face"]["vertex_indices"]]
    assert sum(s - 2 for s in sizes) == load_bytes(serialize(m, "ply"), "m.ply").n_faces


@pytest.mark.parametrize(
    "name, fmt",
    [(name, fmt) for name in MESHES for fmt in ("obj", "stl")] + [("triangles", "off")],
)
def test_meshio_reads_what_we_write(name: str, fmt: str) -> None:
    """meshio's OFF reader takes triangles only: polygon OFF has trimesh as its second reader."""
    m, polygons = MESHES[name]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"m.{fmt}")
        with open(path, "wb") as f:
            f.write(serialize(m, fmt))
        mm = meshio.read(path)
    cells = sum(len(c.data) for c in mm.cells)
    assert cells == (m.n_faces if fmt == "stl" else polygons)
