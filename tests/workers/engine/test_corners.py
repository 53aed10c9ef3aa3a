"""Corner attributes (texture coordinates) and materials carried through operations: kept exactly
where the faces are kept, transferred chart by chart where they are rebuilt, and a textured
asset still looks right with its texture afterwards (colours sampled through the result's UVs
against colours at the nearest point of the input, found by libigl)."""

from __future__ import annotations

import igl
import numpy as np
import pytest
import trimesh

from tests.conftest import ASSETS
from workers.engine.corners import charts, closest_on_triangles, seams_of, uv_measures
from workers.engine.materials import Materials
from workers.engine.mesh import TriMesh


def _duck() -> tuple[TriMesh, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The duck as trimesh reads it (an independent reader: vertices split at seams), with its
    UVs per corner, one material, and the texture as an RGB array."""
    s = trimesh.load(ASSETS / "Duck.glb", force="mesh", process=False)
    V = np.asarray(s.vertices, np.float32)
    F = np.asarray(s.faces, np.int32)
    uv = np.asarray(s.visual.uv, np.float32)
    image = np.asarray(s.visual.material.baseColorTexture.convert("RGB")).astype(np.float64)
    mesh = TriMesh(
        V,
        F,
        face_attrs={"material": np.zeros(F.shape[0], np.int32)},
        corner_attrs={"uv": uv[F]},
        materials=Materials(["duck"], {"materials": [{"name": "duck"}]}),
    )
    return mesh, V, F, uv, image


def _colour(image: np.ndarray, uv: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    x = np.clip((uv[:, 0] % 1.0) * w, 0, w - 1).astype(int)
    y = np.clip((uv[:, 1] % 1.0) * h, 0, h - 1).astype(int)
    return image[y, x]


def _colour_error(out: TriMesh, V, F, uv, image, seed: int = 0) -> np.ndarray:
    """Per random point of each output face: the mean absolute difference (0-255 per channel)
    between the texture seen through the output's UVs and the texture at the input surface's
    nearest point."""
    rng = np.random.default_rng(seed)
    Vo, Fo = np.asarray(out.V, np.float64), np.asarray(out.F)
    C = np.asarray(out.corner_attrs["uv"], np.float64)
    w = rng.dirichlet([1, 1, 1], size=Fo.shape[0])
    p = (Vo[Fo] * w[:, :, None]).sum(1)
    q = (C * w[:, :, None]).sum(1)
    _, tid, cp = igl.point_mesh_squared_distance(p, V.astype(np.float64), F.astype(np.int64))
    tri = V.astype(np.float64)[F[tid]]
    bc = trimesh.triangles.points_to_barycentric(tri, cp)
    truth = (uv[F[tid]] * bc[:, :, None]).sum(1)
    return np.abs(_colour(image, q) - _colour(image, truth)).mean(axis=1)


def _corner_sets(mesh: TriMesh) -> set:
    """Each face as the set of its (position, uv) corners, rounded: order-free comparison."""
    V, F = np.asarray(mesh.V), np.asarray(mesh.F)
    uv = np.asarray(mesh.corner_attrs["uv"])
    return {
        frozenset(tuple(np.round(np.r_[V[F[f, c]], uv[f, c]], 5)) for c in range(3))
        for f in range(F.shape[0])
    }


def test_charts_and_seams_of_a_cube_with_six_uv_islands():
    cube = trimesh.creation.box()
    V = np.asarray(cube.vertices, np.float32)
    F = np.asarray(cube.faces, np.int32)
    normal = np.asarray(cube.face_normals)
    side = np.argmax(np.abs(normal), axis=1) * 2 + (normal.max(axis=1) > 0.5)
    uv = np.zeros((F.shape[0], 3, 2), np.float32)
    uv[:, :, 0] = side[:, None] / 6.0  # each side its own island
    uv[:, :, 1] = V[F][:, :, 0] + V[F][:, :, 1]
    label, seams = charts(F, {"uv": uv}, None)
    assert len(set(label)) == 6
    assert all(len(set(label[side == s])) == 1 for s in range(6))
    assert seams.shape == (12, 2)  # every edge of the cube, none of the diagonals
    mesh = TriMesh(V, F, corner_attrs={"uv": uv})
    assert np.array_equal(np.asarray(seams_of(mesh)), seams)
    one = np.zeros_like(uv)
    assert len(set(charts(F, {"uv": one}, None)[0])) == 1
    material = (side >= 3).astype(np.int32)
    assert len(set(charts(F, {"uv": one}, material)[0])) == 2


def test_stretch_of_a_scaled_map_is_one_and_grows_with_a_shear():
    V = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [2, 2, 0]], np.float32)
    F = np.array([[0, 1, 2], [1, 3, 2]], np.int32)
    uv = (V[:, :2] / 2.0)[F]  # the square on the unit square: a scale only
    flat = uv_measures(TriMesh(V, F, corner_attrs={"uv": uv}))
    assert flat["stretch_median"] == pytest.approx(1.0) and flat["stretch_p95"] == pytest.approx(
        1.0
    )
    sheared = uv.copy()
    sheared[:, :, 0] += sheared[:, :, 1] * 2.0
    assert uv_measures(TriMesh(V, F, corner_attrs={"uv": sheared}))["stretch_median"] > 1.5
    none = uv_measures(TriMesh(V, F, corner_attrs={"uv": np.zeros_like(uv)}))
    assert none["faces_without_texture_area"] == 2 and none["stretch_median"] is None


def test_closest_points_match_libigl():
    rng = np.random.default_rng(1)
    a, b, c = (rng.normal(size=(500, 3)) for _ in range(3))
    p = rng.normal(size=(500, 3)) * 2
    d2, w = closest_on_triangles(p, a, b, c)
    assert np.allclose(w.sum(1), 1.0) and (w >= -1e-12).all()
    for i in range(0, 500, 25):
        V = np.stack([a[i], b[i], c[i]])
        ref, _, _ = igl.point_mesh_squared_distance(p[i : i + 1], V, np.array([[0, 1, 2]]))
        assert d2[i] == pytest.approx(ref[0], rel=1e-9, abs=1e-12)
    # a point at a vertex gets exactly that vertex's coordinates
    _, w = closest_on_triangles(b[:10], a[:10], b[:10], c[:10])
    assert np.array_equal(w, np.tile([0.0, 1.0, 0.0], (10, 1)))


def test_weld_keeps_every_corner_exactly_and_smoothing_keeps_them_as_they_are():
    mesh, *_ = _duck()
    welded = mesh.run(["weld"], device="cpu").mesh
    assert welded.n_vertices < mesh.n_vertices and welded.n_faces == mesh.n_faces
    assert _corner_sets(welded) == _corner_sets(mesh)
    assert welded.materials is mesh.materials
    assert np.array_equal(welded.face_attrs["material"], mesh.face_attrs["material"])
    assert len(set(charts(np.asarray(welded.F), welded.corner_attrs, None)[0])) > 1
    smooth = welded.run(["laplacian_smooth"], device="cpu").mesh
    assert np.array_equal(smooth.corner_attrs["uv"], welded.corner_attrs["uv"])


@pytest.mark.parametrize(
    "pipeline, mean",
    [
        # measured: 0.09, 0.14, 0.28, and for the last two about as little
        (["weld", ("decimate", {"target_ratio": 0.5})], 0.6),
        (["weld", "isotropic_remesh"], 0.6),
        (["weld", "subdivide"], 1.0),
        (["weld", ("collapse_short_edges", {"threshold": 0.8})], 0.6),
        (["weld", "delaunay_flip"], 0.6),
    ],
    ids=["decimate-50%", "remesh", "loop", "collapse", "flip"],
)
def test_a_rebuilt_mesh_still_looks_right_with_its_texture(pipeline, mean):
    mesh, V, F, uv, image = _duck()
    result = mesh.run(pipeline, device="cpu")
    out = result.mesh
    assert out.materials is mesh.materials
    texture = result.steps[-1].report["texture"]  # what the operation did to the texture
    # the duck's texture is mirrored inside two of its charts (half the body reuses the other
    # half's image: 2075 of its 4212 faces are mirrored), so faces across those mirror lines
    # count as folded against the input face under their centroid: measured 0.3 to 3.3 %
    assert texture["folded_faces"] < 0.04 * out.n_faces
    assert texture["before"]["stretch_median"] == pytest.approx(
        uv_measures(mesh.run(["weld"], device="cpu").mesh)["stretch_median"]
    )
    assert 0.5 < texture["after"]["stretch_median"] / texture["before"]["stretch_median"] < 1.5
    assert out.corner_attrs["uv"].shape == (out.n_faces, 3, 2)
    assert out.face_attrs["material"].shape == (out.n_faces,)
    error = _colour_error(out, V, F, uv, image)
    assert error.mean() < mean, error.mean()
    assert np.percentile(error, 95) < 10.0
    # the charts (texture islands) survive: no face is stretched across the atlas
    welded = mesh.run(["weld"], device="cpu").mesh
    n_before = len(set(charts(np.asarray(welded.F), welded.corner_attrs, None)[0]))
    n_after = len(set(charts(np.asarray(out.F), out.corner_attrs, None)[0]))
    assert n_after == n_before


def test_without_charts_faces_would_straddle_seams(monkeypatch):
    """The colour check above can fail: with every face in one chart, a corner on a seam takes
    its UV from whichever island is nearest, and faces straddle the atlas."""
    import workers.engine.corners as corners

    mesh, V, F, uv, image = _duck()
    pipeline = ["weld", ("decimate", {"target_ratio": 0.5})]
    good = _colour_error(mesh.run(pipeline, device="cpu").mesh, V, F, uv, image)
    real = corners.charts

    def one_chart(F, c, m, seams=None):
        label, found = real(F, c, m, seams)
        return np.zeros_like(label), found

    monkeypatch.setattr(corners, "charts", one_chart)
    bad = _colour_error(mesh.run(pipeline, device="cpu").mesh, V, F, uv, image)
    assert bad.mean() > 2 * good.mean()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "pipeline", [["weld", ("decimate", {"target_ratio": 0.5})], ["weld"]], ids=["decimate", "weld"]
)
def test_the_gpu_carries_the_corners_the_host_carries(pipeline):
    mesh, V, F, uv, image = _duck()
    host = mesh.run(pipeline, device="cpu").mesh
    dev = mesh.run(pipeline, device="gpu").mesh
    assert dev.backend == "cupy" and dev.materials is mesh.materials
    assert dev.n_faces == host.n_faces
    back = dev.to("numpy")
    if pipeline == ["weld"]:
        assert _corner_sets(back) == _corner_sets(host)
    assert _colour_error(back, V, F, uv, image).mean() < 2.5


def test_new_vertex_normals_replace_the_hard_edges_normals():
    """A file's corner normals (its hard edges) go with it through a weld; a step that computes
    vertex normals makes them stale, and they are left out (the new ones get written)."""
    cube = trimesh.creation.box()
    V = np.asarray(cube.vertices, np.float32)
    F = np.asarray(cube.faces, np.int32)
    flat = np.repeat(np.asarray(cube.face_normals, np.float32)[:, None, :], 3, axis=1)
    mesh = TriMesh(V, F, corner_attrs={"normal": flat})
    welded = mesh.run(["weld"], device="cpu").mesh
    np.testing.assert_array_equal(welded.corner_attrs["normal"], flat)
    moved = welded.run(["laplacian_smooth"], device="cpu").mesh
    assert "normal" in moved.corner_attrs  # positions moved, normals not recomputed: kept
    # a decimation carries (interpolates) vertex normals it was given: not new ones
    carried = welded.run(["vertex_normals", ("decimate", {"target_ratio": 0.5})], device="cpu")
    assert "normal" not in carried.mesh.corner_attrs  # left out by the first step
    given = TriMesh(V, F, {"vertex_normals": V / 2}, corner_attrs={"normal": flat})
    kept = given.run(["weld", ("decimate", {"target_ratio": 0.5})], device="cpu").mesh
    assert "normal" in kept.corner_attrs and "vertex_normals" in kept.vertex_attrs
    fresh = welded.run(["vertex_normals"], device="cpu").mesh
    assert "normal" not in fresh.corner_attrs and "vertex_normals" in fresh.vertex_attrs


@pytest.mark.parametrize(
    "step", ["dual_mesh", ("decimate", {"target_ratio": 0.5}), "subdivide", "cluster_coarsen"]
)
def test_the_origin_the_pipeline_gives_rebuilding_operations_is_never_left_on_the_mesh(step):
    from workers.engine.corners import ORIGIN

    mesh, *_ = _duck()
    out = mesh.run(["weld", step], device="cpu").mesh
    assert ORIGIN not in out.face_attrs and ORIGIN not in out.vertex_attrs
    assert out.corner_attrs["uv"].shape == (out.n_faces, 3, 2)


def test_a_transfer_whose_faces_kept_their_rows_is_the_search_s_answer(monkeypatch):
    """An exact weld of a split textured mesh (every face with its own vertices, as a glTF
    writes seams) keeps every face in its row: transfer then keeps the corners and face
    attributes as they are, bit for bit what matching each face by its positions gives, and a
    face turned in its row is matched by the search instead."""
    import workers.engine.corners as corners
    from tests.conftest import mesh_path
    from workers.engine.io import load_path
    from workers.engine.pipeline import run_pipeline

    m = load_path(mesh_path("rx-sphere3.obj"))
    rng = np.random.default_rng(3)
    split = TriMesh(
        m.V[m.F.reshape(-1)],
        np.arange(3 * m.n_faces, dtype=np.int32).reshape(-1, 3),
        {},
        {"label": rng.integers(0, 9, m.n_faces).astype(np.int32)},
        corner_attrs={"uv": rng.random((m.n_faces, 3, 2)).astype(np.float32)},
    )
    welded = run_pipeline(split.without_corners(), ["weld"], device="cpu").mesh
    welded.face_attrs.pop("label")  # the transfer takes it back from the input's rows
    assert corners.rows_kept(split, welded)
    fast, home, rebuilt = corners.transfer(split, welded)
    monkeypatch.setattr(corners, "rows_kept", lambda a, b: False)
    slow, home2, rebuilt2 = corners.transfer(split, welded)
    assert not rebuilt.any() and np.array_equal(home, home2) and np.array_equal(rebuilt, rebuilt2)
    assert fast.corner_attrs["uv"].tobytes() == slow.corner_attrs["uv"].tobytes()
    assert list(fast.face_attrs) == list(slow.face_attrs)
    assert np.array_equal(fast.face_attrs["label"], slow.face_attrs["label"])
    turned = TriMesh(welded.V, welded.F[:, [1, 2, 0]])
    assert not corners.rows_kept(split, turned)
