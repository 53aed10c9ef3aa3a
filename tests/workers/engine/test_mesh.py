"""TriMesh: construction and its checks, derivation, attributes, save/load, run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.workers.engine.shapes import load, mesh, tetrahedron
from workers.engine import MeshError, TriMesh
from workers.engine.io import load_bytes
from workers.engine.mesh import segment_mean

TETRA_V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
TETRA_F = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]


def test_from_arrays_dtypes() -> None:
    m = TriMesh.from_arrays(TETRA_V, TETRA_F)
    assert m.V.dtype == np.float32 and m.F.dtype == np.int32
    assert m.V.flags.c_contiguous and m.F.flags.c_contiguous
    assert (m.n_vertices, m.n_faces, m.backend) == (4, 4, "numpy")
    m64 = TriMesh.from_arrays(TETRA_V, np.array(TETRA_F, dtype=np.uint64), dtype="float64")
    assert m64.V.dtype == np.float64 and m64.F.dtype == np.int32
    assert m.xp is np


@pytest.mark.parametrize(
    ("V", "F", "code"),
    [
        (np.zeros((0, 3)), np.zeros((0, 3), dtype=int), "mesh.empty"),  # nothing at all
        (TETRA_V, np.zeros((0, 3), dtype=int), "mesh.no_faces"),  # points only
        ([(np.nan, 0, 0)] + TETRA_V[1:], TETRA_F, "mesh.non_finite"),  # NaN
        ([(0, 0, np.inf)] + TETRA_V[1:], TETRA_F, "mesh.non_finite"),  # infinity
        ([(1e39, 0, 0)] + TETRA_V[1:], TETRA_F, "mesh.non_finite"),  # overflows float32
        (TETRA_V, [(0, 1, 4)], "mesh.index_out_of_range"),  # past the end
        (TETRA_V, [(0, -1, 2)], "mesh.index_out_of_range"),  # negative
        (TETRA_V, [(0.0, 1.0, 2.0)], "mesh.bad_indices"),  # float indices
        (np.zeros((4, 2)), TETRA_F, "mesh.bad_shape"),  # 2-D positions
        (TETRA_V, [(0, 1, 2, 3)], "mesh.bad_shape"),  # quads
    ],
)
def test_from_arrays_rejects(V: object, F: object, code: str) -> None:
    with pytest.raises(MeshError) as ei:
        TriMesh.from_arrays(V, F)
    assert ei.value.code == code
    assert ei.value.status == 422


INDEX_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize(
    ("dtype", "bad"),
    [
        (t, b)
        for t in INDEX_TYPES
        for b in ("none", "negative", "count", "huge")
        if not (b == "negative" and np.iinfo(t).min == 0)
    ],
)
def test_index_range_in_every_integer_type(dtype: type, bad: str) -> None:
    """The one-pass range check (the largest index seen as unsigned) takes every index type,
    and a failure reports the smallest and the largest index as given."""
    value = {"none": 3, "negative": -1, "count": 4, "huge": int(np.iinfo(dtype).max)}[bad]
    F = np.array(TETRA_F, dtype=dtype)
    F[1, 2] = value
    if bad == "none":
        assert TriMesh.from_arrays(TETRA_V, F).F.max() == 3
        return
    with pytest.raises(MeshError) as ei:
        TriMesh.from_arrays(TETRA_V, F)
    assert ei.value.code == "mesh.index_out_of_range"
    assert ei.value.detail["min_index"] == min(0, value)
    assert ei.value.detail["max_index"] == max(3, value)


def test_non_finite_detail_names_the_first_bad_vertex() -> None:
    V = np.array(TETRA_V, dtype=np.float64)
    V[2, 1] = np.nan
    V[3, 0] = np.inf
    with pytest.raises(MeshError) as ei:
        TriMesh.from_arrays(V, TETRA_F)
    assert ei.value.detail == {"count": 2, "first_vertex": 2}


def test_check_false_skips_checks() -> None:
    m = TriMesh.from_arrays(TETRA_V, [(0, 1, 9)], check=False)
    with pytest.raises(MeshError) as ei:
        m.check()
    assert ei.value.code == "mesh.index_out_of_range"


@pytest.mark.parametrize("where", ["vertex", "face"])
def test_attribute_length_is_checked(where: str) -> None:
    kw = {f"{where}_attrs": {"a": np.zeros(3)}}
    with pytest.raises(MeshError) as ei:
        TriMesh.from_arrays(TETRA_V, TETRA_F, **kw)
    assert ei.value.code == "mesh.bad_attribute" and ei.value.detail == {"name": "a"}


def test_derivation_keeps_what_it_should() -> None:
    t = tetrahedron()
    topo = t.topology
    a = t.with_attrs(vertex={"k": np.ones(4)}, face={"n": np.zeros((4, 3))})
    assert a.topology is topo and a.F is t.F and a.V is t.V
    assert set(a.vertex_attrs) == {"k"} and set(a.face_attrs) == {"n"}
    assert t.vertex_attrs == {}  # the original is untouched
    b = a.with_geometry(np.asarray(a.V) + 1)
    assert b.topology is topo and set(b.vertex_attrs) == {"k"}
    np.testing.assert_array_equal(b.V, np.asarray(t.V) + 1)
    assert a.to("numpy") is a


def test_reindexed_carries_attributes() -> None:
    t = tetrahedron().with_attrs(vertex={"k": np.arange(4.0)}, face={"f": np.arange(4)})
    r = t.reindexed(t.V[[1, 0]], t.F[:1], vertex_take=np.array([1, 0]), face_take=np.array([2]))
    np.testing.assert_array_equal(r.vertex_attrs["k"], [1.0, 0.0])
    np.testing.assert_array_equal(r.face_attrs["f"], [2])
    g = t.reindexed(t.V[:2], t.F, vertex_groups=(np.arange(4), np.array([0, 1, 0, 1]), 2))
    np.testing.assert_array_equal(g.vertex_attrs["k"], [1.0, 2.0])
    assert g._topology is None  # new connectivity: no stale cache


def test_segment_mean() -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    out = segment_mean(np, a, np.array([2, 0, 2]), 4)
    np.testing.assert_array_equal(out, [[3, 4], [0, 0], [3, 4], [0, 0]])
    assert out.dtype == np.float32
    ints = segment_mean(np, np.array([1, 2, 4]), np.array([0, 0, 1]), 2)
    assert ints.dtype == np.array([1]).dtype
    np.testing.assert_array_equal(ints, [1, 4])  # the mean 1.5 is truncated for integers


def test_repr() -> None:
    r = repr(tetrahedron().with_attrs(vertex={"k": np.ones(4)}))
    assert r == "TriMesh(4 vertices, 4 faces, numpy, attrs=['k'])"


@pytest.mark.parametrize("ext", ["ply", "obj", "npz", "glb"])
def test_save_and_load(tmp_path: Path, ext: str) -> None:
    m = load("rx-cube.obj")
    p = tmp_path / f"cube.{ext}"
    m.save(p)
    back = TriMesh.load(p)
    np.testing.assert_array_equal(back.V, m.V)
    np.testing.assert_array_equal(back.F, m.F)
    assert back.source == str(p)
    assert TriMesh.load(p, dtype="float64").V.dtype == np.float64


def test_run() -> None:
    res = load("rx-cube.obj").run(
        ["weld", ("vertex_normals", {"weighting": "angle"}), "stats"], device="cpu"
    )
    assert res.backend == "numpy"
    assert "vertex_normals" in res.mesh.vertex_attrs
    assert res.reports["stats"]["vertices"] == 8


def test_mesh_alias() -> None:
    from workers.engine import Mesh

    assert Mesh is TriMesh and isinstance(mesh(TETRA_V, TETRA_F), Mesh)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "bool", "complex64", "nope"])
def test_positions_of_another_type_than_float32_or_float64_are_refused(dtype: str) -> None:
    """``tessera.load(path, dtype="int8")`` gave positions rounded (and uint8 wrapped -2 to
    254), silently."""
    V = np.array([[-2.5, 0, 0], [1, 0, 0], [0, 1, 0]])
    with pytest.raises(MeshError) as ei:
        TriMesh.from_arrays(V, [[0, 1, 2]], dtype=dtype)
    assert ei.value.code == "mesh.bad_dtype"
    with pytest.raises(MeshError):
        load_bytes(b"v -2.5 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "t.obj", dtype=dtype)


def test_concatenate_leaves_out_an_attribute_of_several_types_and_says_so() -> None:
    """Byte colours (0..255) beside float ones (0..1) or 16-bit ones (0..65535) were joined into
    one array of the wider type, so the GLB written showed one part's colours wrong (128 as
    255, or as 0). Such an attribute is left out and counted; floats of two widths still join."""
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    F = np.array([[0, 1, 2]], np.int32)

    def part(colors: np.ndarray, quality: np.ndarray) -> TriMesh:
        return TriMesh(V, F, {"vertex_colors": colors, "quality": quality})

    byte = part(np.full((3, 3), 128, np.uint8), np.ones(3, np.float32))
    for other in (np.full((3, 3), 0.5, np.float32), np.full((3, 3), 32768, np.uint16)):
        both = TriMesh.concatenate([byte, part(other, np.ones(3, np.float64))])
        assert "vertex_colors" not in both.vertex_attrs
        assert both.dropped == {"vertex attributes (of several types on the parts)": 1}
        assert both.vertex_attrs["quality"].shape == (6,)
    same = TriMesh.concatenate([byte, byte])
    assert same.vertex_attrs["vertex_colors"].dtype == np.uint8 and same.dropped == {}
