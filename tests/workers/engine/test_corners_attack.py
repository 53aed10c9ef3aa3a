"""Textured meshes that are hard to carry through operations: every rebuilding operation keeps
the corner attributes whole (one value per face corner, finite where the input's were), the
materials valid, no internal attribute left over, and the result writable as GLB; plus the
cases that once went wrong (a non-finite corner spreading to its neighbours, a merge that lost
its parts' materials without saying so, a carried attribute the operation had removed)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from workers.engine import corners
from workers.engine.io import load_bytes
from workers.engine.io.writing import serialize
from workers.engine.materials import Materials
from workers.engine.mesh import TriMesh


def _library(n: int, prefix: str = "m") -> Materials:
    names = [f"{prefix}{i}" for i in range(n)]
    return Materials(names, {"materials": [{"name": x} for x in names]})


def _sphere() -> tuple[np.ndarray, np.ndarray]:
    s = trimesh.creation.icosphere(subdivisions=1)
    return np.asarray(s.vertices, np.float32), np.asarray(s.faces, np.int32)


def _planar_uv(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    return (V[:, :2] * 0.5 + 0.5)[F].astype(np.float32)


def _cases() -> dict[str, TriMesh]:
    V, F = _sphere()
    m = F.shape[0]
    rng = np.random.default_rng(7)
    uv = _planar_uv(V, F)
    normal = np.asarray(trimesh.Trimesh(V, F, process=False).face_normals, np.float32)
    # a non-manifold edge: three faces of three charts and three materials
    Vn = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, -1, 0], [0.5, 0, 1]], np.float32)
    Fn = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4]], np.int32)
    return {
        "one_face": TriMesh(
            np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32),
            np.array([[0, 1, 2]], np.int32),
            corner_attrs={"uv": np.array([[[0, 0], [1, 0], [0, 1]]], np.float32)},
        ),
        "zero_uv": TriMesh(V, F, corner_attrs={"uv": np.zeros((m, 3, 2), np.float32)}),
        "every_edge_a_seam": TriMesh(
            V, F, corner_attrs={"uv": rng.random((m, 3, 2)).astype(np.float32)}
        ),
        "coincident_twins": TriMesh(
            V,
            np.concatenate([F, F[:6]]),
            corner_attrs={"uv": np.concatenate([uv, uv[:6] + 0.5])},
        ),
        "non_manifold_charts": TriMesh(
            Vn,
            Fn,
            face_attrs={"material": np.arange(3, dtype=np.int32)},
            corner_attrs={"uv": rng.random((3, 3, 2)).astype(np.float32)},
            materials=_library(3),
        ),
        "materials_only": TriMesh(
            V,
            F,
            face_attrs={"material": (np.arange(m) % 3).astype(np.int32)},
            materials=_library(3),
        ),
        "normal_only": TriMesh(
            V, F, corner_attrs={"normal": np.repeat(normal[:, None], 3, axis=1)}
        ),
        "two_uv_sets": TriMesh(
            V,
            F,
            corner_attrs={"uv": uv, "uv1": rng.random((m, 3, 3)).astype(np.float32)},
        ),
    }


#: the operations that rebuild the faces (each output corner found on the input surface)
REBUILDING = [
    ("subdivide", {"scheme": "midpoint"}),
    ("subdivide", {"scheme": "catmull_clark"}),
    ("decimate", {"target_faces": 1}),
    ("collapse_short_edges", {"threshold": 100.0}),
    ("isotropic_remesh", {"iterations": 2, "sliver_angle": 30.0}),
    ("isotropic_remesh", {"target_edge_length": 100.0, "iterations": 2}),
    ("delaunay_flip", {}),
    ("dual_mesh", {}),
    ("slice_plane", {"keep": "both", "cap": True, "point": [0.1, 0.2, 0.05]}),
    ("cluster_coarsen", {"cell_size": 0.5}),
    ("repair", {}),
]


def _check(before: TriMesh, out: TriMesh) -> None:
    m = out.n_faces
    for name, values in out.corner_attrs.items():
        v = np.asarray(values)
        assert v.shape[:2] == (m, 3), name
        if np.isfinite(np.asarray(before.corner_attrs[name])).all():
            assert np.isfinite(v).all(), name
    for name in before.corner_attrs:
        assert name in out.corner_attrs or name == "normal", name
    if "material" in before.face_attrs:
        mat = np.asarray(out.face_attrs["material"])
        assert out.materials is not None
        assert mat.shape == (m,) and mat.min() >= 0 and mat.max() < len(out.materials)
    assert corners.ORIGIN not in out.face_attrs and corners.ORIGIN not in out.vertex_attrs
    back = load_bytes(serialize(out, "glb"), "out.glb")
    assert back.n_faces == m
    assert set(back.corner_attrs) >= {k for k in out.corner_attrs if k in ("uv", "normal")}


@pytest.mark.parametrize("case", sorted(_cases()))
def test_rebuilding_operations_keep_a_hard_textured_mesh_whole(case: str) -> None:
    from workers.engine.errors import MeshError

    mesh = _cases()[case]
    ran = 0
    for step in REBUILDING:
        try:
            out = mesh.run(["weld", step], device="cpu").mesh
        except MeshError as exc:  # a typed refusal (nothing left, ...) is a fair answer
            assert exc.code, step
            continue
        _check(mesh, out)
        ran += 1
    assert ran >= len(REBUILDING) // 2


def test_a_non_finite_corner_does_not_spread_to_its_vertex_neighbours() -> None:
    """A NaN texture coordinate at one corner: the faces around that vertex, and the new
    vertices a midpoint subdivision puts on the edges away from it, take finite values from
    the faces that have them; before, one NaN became every corner at its vertex."""
    V, F = _sphere()
    uv = _planar_uv(V, F)
    uv[3, 1] = np.nan
    uv[7, 2, 0] = np.inf
    mesh = TriMesh(V, F, corner_attrs={"uv": uv})
    with np.errstate(all="raise"):  # and no floating-point warnings on the way
        out = mesh.run([("subdivide", {"scheme": "midpoint"})], device="cpu").mesh
    got = np.asarray(out.corner_attrs["uv"])
    assert np.isfinite(got).all()
    # the values are the neighbours' (the texture is continuous there): one value per vertex
    Fo = np.asarray(out.F)
    by_vertex: dict[int, set[tuple[float, float]]] = {}
    for f, c in np.ndindex(Fo.shape):
        by_vertex.setdefault(int(Fo[f, c]), set()).add(tuple(np.round(got[f, c], 5)))
    assert max(len(v) for v in by_vertex.values()) == 1


def test_a_decimation_beside_a_non_finite_corner_keeps_the_rest_finite() -> None:
    """The NaN stays on its own corner (the vertex is locked: its edges are seams, NaN equals
    nothing); the other corners at that vertex once took it too."""
    s = trimesh.creation.icosphere(subdivisions=2)
    V, F = np.asarray(s.vertices, np.float32), np.asarray(s.faces, np.int32)
    uv = _planar_uv(V, F)
    uv[3, 1] = np.nan
    mesh = TriMesh(V, F, corner_attrs={"uv": uv})
    out = mesh.run([("decimate", {"target_ratio": 0.5})], device="cpu").mesh
    got = np.asarray(out.corner_attrs["uv"])
    assert (~np.isfinite(got).all(axis=2)).sum() <= 1


def test_glb_keeps_an_all_zero_uv_set_and_the_first_two_of_a_wider_one() -> None:
    """A texture of no area is still the mesh's set (it was left out as if no primitive had
    it); a set of three (OBJ's ``vt u v w``) gives its first two, as OBJ and PLY write it, and
    the job hears what was left out (it was left out whole, silently)."""
    from workers.engine.io.writing import left_out

    V, F = _sphere()
    m = F.shape[0]
    rng = np.random.default_rng(3)
    zero = TriMesh(V, F, corner_attrs={"uv": np.zeros((m, 3, 2), np.float32)})
    back = load_bytes(serialize(zero, "glb"), "out.glb")
    np.testing.assert_array_equal(back.corner_attrs["uv"], 0.0)
    uv1 = rng.random((m, 3, 3)).astype(np.float32)
    wide = TriMesh(V, F, corner_attrs={"uv": _planar_uv(V, F), "uv1": uv1})
    back = load_bytes(serialize(wide, "glb"), "out.glb")
    np.testing.assert_array_equal(back.corner_attrs["uv1"], uv1[:, :, :2])
    for fmt in ("glb", "obj", "ply"):
        assert left_out(wide, fmt).get("texture coordinate components beyond two", 0) == (
            1 if fmt == "glb" else 0  # OBJ and PLY hold no second set at all
        ), fmt


def test_merging_parts_with_different_libraries_keeps_both() -> None:
    V, F = _sphere()
    m = F.shape[0]
    uv = _planar_uv(V, F)
    a = TriMesh(
        V,
        F,
        face_attrs={"material": np.zeros(m, np.int32)},
        corner_attrs={"uv": uv},
        materials=_library(1, "a"),
    )
    b = TriMesh(
        V + 3,
        F,
        face_attrs={"material": (np.arange(m) % 2).astype(np.int32)},
        corner_attrs={"uv": uv, "color": np.ones((m, 3, 4), np.float32)},
        materials=_library(2, "b"),
    )
    both = TriMesh.concatenate([a, b])
    assert both.materials is not None and both.materials.names == ["a0", "b0", "b1"]
    np.testing.assert_array_equal(
        both.face_attrs["material"], np.r_[np.zeros(m), 1 + np.arange(m) % 2]
    )
    assert both.dropped == {"corner attributes (not on every part alike)": 1}
    # the same library read twice is one library: kept, with the faces' materials
    a2 = TriMesh(V + 3, F, face_attrs={"material": np.zeros(m, np.int32)},
                 corner_attrs={"uv": uv}, materials=_library(1, "a"))  # fmt: skip
    same = TriMesh.concatenate([a, a2])
    assert same.materials is not None and "material" in same.face_attrs
    assert not same.dropped
    out = same.run(["merge"], device="cpu").mesh
    assert out.materials is not None and np.asarray(out.face_attrs["material"]).shape == (2 * m,)
    assert out.corner_attrs["uv"].shape == (2 * m, 3, 2)


def test_an_attribute_the_operation_removed_is_not_carried_back() -> None:
    """``merge`` without ``keep_parts`` removes ``part``; on a textured mesh the carrying put it
    back (it restores face attributes a rebuilt mesh lacks)."""
    V, F = _sphere()
    uv = _planar_uv(V, F)
    parts = [TriMesh(V + 3 * i, F, corner_attrs={"uv": uv}) for i in range(2)]
    both = TriMesh.concatenate(parts)
    assert "part" in both.face_attrs
    assert "part" not in both.run(["merge"], device="cpu").mesh.face_attrs
    assert "part" in both.run([("merge", {"keep_parts": True})], device="cpu").mesh.face_attrs


@pytest.mark.parametrize("fmt", ["obj", "ply", "off", "glb"])
def test_catmull_clark_quads_with_corners_write_and_read_back(fmt: str) -> None:
    V, F = _sphere()
    mesh = TriMesh(V, F, corner_attrs={"uv": _planar_uv(V, F)})
    out = mesh.run([("subdivide", {"scheme": "catmull_clark"})], device="cpu").mesh
    assert "quad_id" in out.face_attrs
    for polygons in (True, False):
        back = load_bytes(serialize(out, fmt, polygons=polygons), f"out.{fmt}")
        assert back.n_faces == out.n_faces
        if fmt in ("obj", "ply", "glb"):
            assert back.corner_attrs["uv"].shape == (out.n_faces, 3, 2)


def test_coincident_twins_that_moved_keep_their_own_values() -> None:
    """Two faces on the same corners with different texture coordinates, reordered by an
    operation: each keeps a value of its own (both took the first twin's before)."""
    V, F = _sphere()
    uv = _planar_uv(V, F)
    Ft = np.concatenate([F, F[:4]])
    uvt = np.concatenate([uv, uv[:4] + 0.5])
    before = TriMesh(V, Ft, corner_attrs={"uv": uvt})
    perm = np.random.default_rng(5).permutation(Ft.shape[0])
    out, _ = corners.carry(before, TriMesh(V, Ft[perm]))
    np.testing.assert_array_equal(
        np.sort(np.asarray(out.corner_attrs["uv"]).reshape(len(perm), -1), axis=0),
        np.sort(uvt.reshape(len(perm), -1), axis=0),
    )
    src, _ = corners.match_faces(V, Ft, V, Ft[perm])
    assert np.unique(src).size == src.size
