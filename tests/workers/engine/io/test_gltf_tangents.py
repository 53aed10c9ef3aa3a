"""glTF tangents (``TANGENT``, vec4: unit ``xyz`` along increasing ``u``, ``w`` the handedness)
are read per corner as ``tangent``, kept exactly by operations that keep faces, computed anew
(:mod:`workers.engine.tangents`) on the faces an operation rebuilt, and written back to GLB
beside ``NORMAL``; every GLB written passes the Khronos validator."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.workers.engine.io.common import GltfBuilder, _code, errors, validate
from tests.workers.engine.shapes import run
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.io.gltf import split_glb
from workers.engine.io.writing import left_out
from workers.engine.tangents import corner_tangents

FLOAT, USHORT = 5126, 5123


def grid(n: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """An ``n`` x ``n`` grid of squares in z = 0 over [0, 1]^2, two triangles each, facing +z."""
    x, y = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    V = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], axis=1)
    i = np.arange(n)
    a = (i[None, :] + (n + 1) * i[:, None]).ravel()
    F = np.concatenate([np.stack([a, a + 1, a + n + 2], 1), np.stack([a, a + n + 2, a + n + 1], 1)])
    return V, F


def tangent_glb(
    V: np.ndarray,
    F: np.ndarray,
    tangents: np.ndarray | None,
    *,
    normals: bool = True,
    uv: np.ndarray | None = None,
    node: dict | None = None,
) -> bytes:
    """A GLB of one primitive with POSITION, NORMAL (+z), TEXCOORD_0 (x, y unless given) and
    TANGENT (when given), placed by ``node``'s transform."""
    b = GltfBuilder()
    attrs = {"POSITION": b.accessor(V.astype("<f4"), FLOAT, "VEC3",
                                    min=V.min(0).tolist(), max=V.max(0).tolist())}  # fmt: skip
    if normals:
        N = np.tile(np.array([0, 0, 1], "<f4"), (V.shape[0], 1))
        attrs["NORMAL"] = b.accessor(N, FLOAT, "VEC3")
    st = V[:, :2] if uv is None else uv
    attrs["TEXCOORD_0"] = b.accessor(st.astype("<f4"), FLOAT, "VEC2")
    if tangents is not None:
        attrs["TANGENT"] = b.accessor(tangents.astype("<f4"), FLOAT, "VEC4")
    idx = b.accessor(F.astype("<u2").ravel(), USHORT, "SCALAR")
    b.primitive(attributes=attrs, indices=idx)
    if node:
        b.tree["nodes"][0].update(node)
    return b.glb()


def assert_valid_tangents(t: np.ndarray) -> None:
    t = np.asarray(t).reshape(-1, 4)
    np.testing.assert_allclose(np.linalg.norm(t[:, :3], axis=1), 1.0, atol=1e-6)
    assert set(np.unique(t[:, 3]).tolist()) <= {-1.0, 1.0}


# ------------------------------------------------------------------ the computation
def test_tangents_of_a_plane_follow_u_and_mirror_with_it() -> None:
    V, F = grid()
    N = np.tile([0.0, 0.0, 1.0], (F.shape[0], 3, 1))
    t = corner_tangents(V, F, N, V[F][:, :, :2])
    np.testing.assert_allclose(t.reshape(-1, 4), np.tile([1, 0, 0, 1], (F.size, 1)), atol=1e-6)
    # u running along -x: the tangent turns round, and the frame is mirrored (w = -1)
    mirrored = V[F][:, :, :2] * np.array([-1.0, 1.0])
    t = corner_tangents(V, F, N, mirrored)
    np.testing.assert_allclose(t.reshape(-1, 4), np.tile([-1, 0, 0, -1], (F.size, 1)), atol=1e-6)
    # u along y, v along -x: bitangent = cross(N, T) * w = cross(z, y) = -x, as v runs: w = +1
    turned = np.stack([V[F][:, :, 1], -V[F][:, :, 0]], axis=2)
    t = corner_tangents(V, F, N, turned)
    np.testing.assert_allclose(t.reshape(-1, 4), np.tile([0, 1, 0, 1], (F.size, 1)), atol=1e-6)


def test_tangents_of_a_sphere_follow_the_parametrisation() -> None:
    """On a latitude-longitude sphere with u = longitude / 2 pi, the tangent at every vertex
    away from the poles and the seam is the unit east direction (-sin phi, cos phi, 0), and
    orthogonal to the normal."""
    rows, cols = 24, 48
    th = np.linspace(0.2, math.pi - 0.2, rows + 1)
    ph = np.linspace(0, 2 * math.pi, cols + 1)
    T, P = np.meshgrid(th, ph, indexing="ij")
    V = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    uv = np.stack([P / (2 * math.pi), 1 - T / math.pi], -1).reshape(-1, 2)
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (i * (cols + 1) + j).ravel()
    F = np.concatenate([np.stack([a, a + cols + 1, a + 1], 1),
                        np.stack([a + 1, a + cols + 1, a + cols + 2], 1)])  # fmt: skip
    N = V[F]  # the unit sphere's normals are its positions
    t = corner_tangents(V, F, N, uv[F]).reshape(-1, 4)
    phi = P.ravel()[F.ravel()]
    east = np.stack([-np.sin(phi), np.cos(phi), np.zeros_like(phi)], 1)
    assert (np.einsum("ij,ij->i", t[:, :3], east) > 0.995).all()
    assert np.abs(np.einsum("ij,ij->i", t[:, :3], N.reshape(-1, 3))).max() < 1e-5
    assert_valid_tangents(t)


def test_a_negative_zero_does_not_split_a_vertex_s_tangent() -> None:
    """Corners of one vertex whose normals or texture coordinates differ only by the sign of a
    zero (0.0 == -0.0, as arithmetic and exporters give) share one tangent: the group key was
    their bytes, so each corner kept its own triangle's tangent (0.07 apart on this sheared
    cylinder)."""
    n = 6
    a = np.tile(np.linspace(0, 1.5, n + 1), 2)
    h = np.repeat([0.0, 1.0], n + 1)
    V = np.stack([np.cos(a), h + 0.3 * np.sin(a), np.sin(a)], 1)  # sheared: no exact tangent
    i = np.arange(n)
    F = np.concatenate([np.stack([i, i + 1, i + n + 2], 1), np.stack([i, i + n + 2, i + n + 1], 1)])
    N = np.stack([np.cos(a), np.zeros_like(a), np.sin(a)], 1)[F]
    uv = np.stack([a, h], 1)[F]
    plain = corner_tangents(V, F, N, uv)
    N[0::2, :, 1] = -0.0
    uv[1::2, :, 0] = np.where(uv[1::2, :, 0] == 0, -0.0, uv[1::2, :, 0])
    signed = corner_tangents(V, F, N, uv)
    np.testing.assert_array_equal(signed, plain)
    for v in range(V.shape[0]):  # one tangent per vertex: the surface has no seam
        t = plain.reshape(-1, 4)[F.ravel() == v]
        np.testing.assert_allclose(t, np.broadcast_to(t[0], t.shape), atol=1e-6)


def test_a_triangle_of_no_texture_area_gets_a_valid_tangent() -> None:
    V, F = grid(1)
    N = np.tile([0.0, 0.0, 1.0], (F.shape[0], 3, 1))
    t = corner_tangents(V, F, N, np.zeros((F.shape[0], 3, 2)))
    assert_valid_tangents(t)
    assert np.abs(t[:, :, 2]).max() < 1e-6  # perpendicular to +z


# ------------------------------------------------------------------ reading and writing
def test_tangents_read_per_corner_and_written_back(tmp_path: Path) -> None:
    V, F = grid()
    rng = np.random.default_rng(1)
    xyz = rng.normal(size=(V.shape[0], 3))
    xyz /= np.linalg.norm(xyz, axis=1, keepdims=True)
    w = np.where(rng.random(V.shape[0]) < 0.5, -1.0, 1.0)
    T = np.concatenate([xyz, w[:, None]], 1).astype(np.float32)
    m = load_bytes(tangent_glb(V, F, T), "t.glb")
    assert "tangents" not in m.dropped
    np.testing.assert_allclose(m.corner_attrs["tangent"], T[F], atol=1e-6)
    data = serialize(m, "glb")
    assert errors(validate(data, tmp_path)) == []
    tree, _ = split_glb(data)
    assert "TANGENT" in tree["meshes"][0]["primitives"][0]["attributes"]
    back = load_bytes(data, "b.glb")
    np.testing.assert_allclose(back.corner_attrs["tangent"], T[F], atol=1e-6)
    assert left_out(m, "glb") == {}
    assert left_out(m, "obj") == {"tangents": 1}


def test_a_mirroring_node_turns_the_tangents_and_their_handedness() -> None:
    V, F = grid(2)
    T = np.tile(np.array([1, 0, 0, 1], np.float32), (V.shape[0], 1))
    m = load_bytes(tangent_glb(V, F, T, node={"scale": [-1, 1, 1]}), "t.glb")
    np.testing.assert_allclose(m.corner_attrs["tangent"].reshape(-1, 4),
                               np.tile([-1, 0, 0, -1], (F.size, 1)), atol=1e-6)  # fmt: skip
    m = load_bytes(tangent_glb(V, F, T, node={"rotation": [0, 0, 0.7071068, 0.7071068]}), "t.glb")
    np.testing.assert_allclose(m.corner_attrs["tangent"].reshape(-1, 4),
                               np.tile([0, 1, 0, 1], (F.size, 1)), atol=1e-6)  # fmt: skip


def test_a_primitive_without_tangents_beside_one_with_gets_computed_ones() -> None:
    V, F = grid(2)
    b = GltfBuilder()
    N = np.tile(np.array([0, 0, 1], "<f4"), (V.shape[0], 1))
    pos = b.accessor(V.astype("<f4"), FLOAT, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    common = {"POSITION": pos, "NORMAL": b.accessor(N, FLOAT, "VEC3"),
              "TEXCOORD_0": b.accessor(V[:, :2].astype("<f4"), FLOAT, "VEC2")}  # fmt: skip
    odd = np.tile(np.array([0, 1, 0, -1], "<f4"), (V.shape[0], 1))
    idx = b.accessor(F.astype("<u2").ravel(), USHORT, "SCALAR")
    b.primitive(attributes={**common, "TANGENT": b.accessor(odd, FLOAT, "VEC4")}, indices=idx)
    b.primitive(attributes=common, indices=idx)
    m = load_bytes(b.glb(), "t.glb")
    t = np.asarray(m.corner_attrs["tangent"])
    np.testing.assert_array_equal(t[: F.shape[0]].reshape(-1, 4), odd[F.ravel()])
    np.testing.assert_allclose(t[F.shape[0] :].reshape(-1, 4),
                               np.tile([1, 0, 0, 1], (F.size, 1)), atol=1e-6)  # fmt: skip


def test_tangents_of_the_wrong_shape_are_refused() -> None:
    V, F = grid(1)
    assert _code(tangent_glb(V, F, np.zeros((V.shape[0] - 1, 4))), "t.glb") == "format.parse_error"


def test_tangents_without_normals_are_not_written_and_said_so(tmp_path: Path) -> None:
    V, F = grid(1)
    T = np.tile(np.array([1, 0, 0, 1], np.float32), (V.shape[0], 1))
    m = load_bytes(tangent_glb(V, F, T, normals=False), "t.glb")
    assert "tangent" in m.corner_attrs
    data = serialize(m, "glb")
    assert errors(validate(data, tmp_path)) == []
    tree, _ = split_glb(data)
    assert "TANGENT" not in tree["meshes"][0]["primitives"][0]["attributes"]
    assert left_out(m, "glb") == {"tangents (no normals to go with them)": 1}


def test_non_finite_tangents_are_refused_on_write() -> None:
    V, F = grid(1)
    T = np.tile(np.array([1, 0, 0, 1], np.float32), (V.shape[0], 1))
    T[0, 0] = np.nan
    m = load_bytes(tangent_glb(V, F, T), "t.glb")
    with pytest.raises(Exception) as ei:
        serialize(m, "glb")
    assert getattr(ei.value, "code", None) == "mesh.non_finite"


# ------------------------------------------------------------------ through operations
ODD = np.array([0, 1, 0, -1], np.float32)  # valid, and not what the texture gradient gives


def odd_mesh(n: int = 6) -> TriMesh:
    """A grid whose file tangents are all (0, 1, 0, -1): the texture gradient gives
    (1, 0, 0, 1), so a face whose tangents were computed anew is told from a kept one."""
    V, F = grid(n)
    return load_bytes(tangent_glb(V, F, np.tile(ODD, (V.shape[0], 1))), "t.glb")


@pytest.mark.parametrize("step", ["laplacian_smooth", "vertex_normals", "weld"])
def test_operations_that_keep_faces_keep_tangents_exactly(step: str, tmp_path: Path) -> None:
    m = odd_mesh()
    out = run(m, step).mesh
    np.testing.assert_array_equal(out.corner_attrs["tangent"].reshape(-1, 4),
                                  np.tile(ODD, (out.n_faces * 3, 1)))  # fmt: skip
    assert errors(validate(serialize(out, "glb"), tmp_path)) == []


@pytest.mark.parametrize(
    "step",
    [("subdivide", {"scheme": "midpoint"}), ("decimate", {"target_ratio": 0.5})],
)
def test_rebuilt_faces_get_tangents_computed_anew(step: tuple, tmp_path: Path) -> None:
    m = odd_mesh()
    result = run(m, step)
    out = result.mesh
    t = np.asarray(out.corner_attrs["tangent"])
    report = result.steps[-1].report["texture"]["tangents"]
    fresh = np.all(np.abs(t - np.array([1, 0, 0, 1], np.float32)) < 1e-5, axis=(1, 2))
    kept = np.all(t == ODD, axis=(1, 2))
    assert (fresh | kept).all()  # never an interpolated mixture
    assert report["recomputed_faces"] == int(fresh.sum()) > 0
    assert report["kept_faces"] == int(kept.sum())
    data = serialize(out, "glb")
    assert errors(validate(data, tmp_path)) == []


def test_rebuilt_faces_without_texture_coordinates_leave_tangents_out() -> None:
    V, F = grid(3)
    m = load_bytes(tangent_glb(V, F, np.tile(ODD, (V.shape[0], 1))), "t.glb")
    m.corner_attrs = {k: v for k, v in m.corner_attrs.items() if k != "uv"}
    result = run(m, ("subdivide", {"scheme": "midpoint"}))
    assert "tangent" not in result.mesh.corner_attrs
    assert result.steps[-1].report["texture"]["tangents"]["left_out"]
