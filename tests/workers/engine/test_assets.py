"""Every shared asset (textured and multi-material glTF, OBJ + MTL + texture in a zip) through a
weld, a decimation to half and an isotropic remesh comes back with its materials, textures and
UVs, as a GLB the Khronos validator passes and as an OBJ zip, and still looks right: colours
seen through the result's UVs and materials match the colours at the nearest point of the input
(found by libigl), and every face keeps the material of the surface it lies on."""

from __future__ import annotations

import io
import zipfile
from functools import cache
from typing import Any

import igl
import numpy as np
import pytest
import trimesh
from PIL import Image

from tests.conftest import ASSETS
from tests.workers.engine.io.common import errors, validate
from workers.engine.io import load_bytes, serialize
from workers.engine.mesh import TriMesh

pytestmark = pytest.mark.slow

NAMES = sorted(p.name for p in ASSETS.iterdir() if p.suffix in (".glb", ".zip"))
#: the pipelines of the goal
PIPELINES = {
    "weld": ["weld"],
    "decimate": ["weld", ("decimate", {"target_ratio": 0.5})],
    "remesh": ["weld", "isotropic_remesh"],
}
#: remeshing 2CylinderEngine (121,496 triangles of CAD parts) takes the CPU twin 90 s at three
#: times the mean edge length and 6 minutes at the default: too long for the suite; the GPU
#: host runs it (test_engine_asset_remeshed_on_the_gpu)
CASES = [
    (name, kind)
    for name in NAMES
    for kind in PIPELINES
    if (name, kind) != ("2CylinderEngine.glb", "remesh")
]


@cache
def _input(name: str) -> TriMesh:
    return load_bytes((ASSETS / name).read_bytes(), name)


@cache
def _run(name: str, kind: str, device: str = "cpu") -> TriMesh:
    return _input(name).run(PIPELINES[kind], device=device).mesh.to("numpy")


@cache
def _image(name: str, uri: str) -> np.ndarray:
    data = _input(name).materials.files[uri]
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.float64)


def _textures(name: str) -> dict[int, tuple[str, int]]:
    """Material index -> (image file, texture coordinate set) of its base colour texture."""
    m = _input(name).materials
    out = {}
    for k, mat in enumerate(m.gltf.get("materials", [])):
        ref = (mat.get("pbrMetallicRoughness") or {}).get("baseColorTexture")
        if ref is None:
            continue
        source = m.gltf["textures"][ref["index"]].get("source")
        if source is None:
            continue
        uri = m.gltf["images"][source].get("uri")
        if uri in m.files:
            out[k] = (uri, int(ref.get("texCoord", 0)))
    return out


def _colour(name: str, material: np.ndarray, uv: dict[int, np.ndarray]) -> np.ndarray:
    """The base colour texture of each point's material at its UV (nearest texel, repeating);
    NaN where the material has no texture."""
    out = np.full((material.shape[0], 3), np.nan)
    for k, (uri, tc) in _textures(name).items():
        at = material == k
        if not at.any():
            continue
        image = _image(name, uri)
        h, w = image.shape[:2]
        u = uv[tc][at]
        x = np.clip(((u[:, 0] % 1.0) * w).astype(int), 0, w - 1)
        y = np.clip(((u[:, 1] % 1.0) * h).astype(int), 0, h - 1)
        out[at] = image[y, x]
    return out


def _uv_sets(mesh: TriMesh) -> list[str]:
    return sorted(k for k in mesh.corner_attrs if k.startswith("uv"))


def _samples(mesh: TriMesh, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A random point on each face: position, unit normal of its face, material, and UV of
    each set there."""
    rng = np.random.default_rng(seed)
    V, F = np.asarray(mesh.V, np.float64), np.asarray(mesh.F)
    w = rng.dirichlet([1, 1, 1], size=F.shape[0])
    p = (V[F] * w[:, :, None]).sum(1)
    n = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    uv = {
        i: (np.asarray(mesh.corner_attrs[k], np.float64) * w[:, :, None]).sum(1)
        for i, k in enumerate(_uv_sets(mesh))
    }
    material = np.asarray(mesh.face_attrs.get("material", np.zeros(F.shape[0], np.int32)))
    return p, n, material, uv


def _reference(src: TriMesh, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each point, the input face closest to it (libigl) and the point's barycentric
    coordinates there."""
    V0, F0 = np.asarray(src.V, np.float64), np.asarray(src.F, np.int64)
    _, tid, cp = igl.point_mesh_squared_distance(p, V0, F0)
    with np.errstate(divide="ignore", invalid="ignore"):  # degenerate input faces
        bc = trimesh.triangles.points_to_barycentric(V0[F0[tid]], cp)
    bc[~np.isfinite(bc).all(1)] = (1.0, 0.0, 0.0)
    return tid, bc


def _look(name: str, out: TriMesh) -> dict[str, Any]:
    """How the result looks against the input: the share of its faces whose material is the
    one of the input face nearest to a point on them, and the mean colour difference (0-255 per
    channel) of textured points."""
    p, n, material, uv = _samples(out)
    same, diff = compare_looks(name, _input(name), p, material, uv)
    return {"same_material": same.mean(), "colour": diff.mean() if diff.size else 0.0}


def compare_looks(
    name: str, src: TriMesh, p: np.ndarray, material: np.ndarray, uv: dict[int, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Points ``p`` of a result with their ``material`` and texture coordinates ``uv`` (per UV
    set) against the input ``src`` at its nearest points: whether each point's material is the
    one under it, and the mean colour difference (0-255 per channel) of each point that has the
    same material and a colour on both sides."""
    tid, bc = _reference(src, p)
    F0 = np.asarray(src.F)
    ref_material = np.asarray(src.face_attrs.get("material", np.zeros(F0.shape[0], np.int32)))[tid]
    ref_uv = {
        i: (np.asarray(src.corner_attrs[k], np.float64)[tid] * bc[:, :, None]).sum(1)
        for i, k in enumerate(_uv_sets(src))
    }
    same = material == ref_material
    got = _colour(name, material, uv)
    want = _colour(name, ref_material, ref_uv)
    both = same & ~np.isnan(got).any(1) & ~np.isnan(want).any(1)
    diff = np.abs(got[both] - want[both]).mean(1) if both.any() else np.zeros(0)
    return same, diff


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_asset_comes_back_with_its_materials_textures_and_uvs(name, kind, tmp_path):
    src = _input(name)
    assert src.materials is not None and _uv_sets(src) or name == "2CylinderEngine.glb"
    out = _run(name, kind)
    assert out.materials is src.materials
    assert _uv_sets(out) == _uv_sets(src)
    assert out.face_attrs["material"].shape == (out.n_faces,)

    glb = serialize(out, "glb")
    assert errors(validate(glb, tmp_path)) == []
    back = load_bytes(glb, f"{name}.glb")
    assert back.n_faces == out.n_faces
    assert back.materials.gltf["materials"] == src.materials.gltf["materials"]
    assert sorted(back.materials.files.values()) == sorted(src.materials.files.values())
    assert _uv_sets(back) == _uv_sets(src)

    _looks_right(name, kind, out)


def _looks_right(name: str, kind: str, out: TriMesh) -> None:
    look = _look(name, out)
    # measured: after a weld 0.9994 (2CylinderEngine: where two parts' faces coincide the
    # nearest input face may be the other part's), 1.0 elsewhere; after decimation and
    # remeshing 0.989 (2CylinderEngine) to 1.0
    assert look["same_material"] >= (0.999 if kind == "weld" else 0.98), look
    # measured: after a weld 0.03 (CesiumMilkTruck: coincident faces with other texture
    # coordinates, the same ambiguity) and 0 elsewhere; after decimation and remeshing at
    # most 1.75 (fuze decimated)
    assert look["colour"] <= (0.1 if kind == "weld" else 2.5), look


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["decimate", "remesh"])
def test_engine_asset_remeshed_on_the_gpu(kind):
    name = "2CylinderEngine.glb"
    """The GPU host (no npm there: the validator runs in CI on the CPU's results) remeshes and
    decimates the engine, which the CPU twin takes minutes to remesh."""
    out = _run(name, kind, "gpu")
    assert out.materials is _input(name).materials
    back = load_bytes(serialize(out, "glb"), "engine.glb")
    assert back.n_faces == out.n_faces and len(back.materials) == len(out.materials)
    _looks_right(name, kind, out)


@pytest.mark.parametrize("name", NAMES)
def test_asset_as_an_obj_zip_keeps_its_library_and_textures(name):
    out = _run(name, "decimate")
    data = serialize(out, "objzip")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = z.namelist()
        assert any(n.endswith(".obj") for n in members) and any(n.endswith(".mtl") for n in members)
        images = {z.read(n) for n in members if not n.endswith((".obj", ".mtl"))}
    textured = {out.materials.files[uri] for uri, _ in _textures(name).values()}
    assert textured <= images
    back = load_bytes(data, f"{name}.zip")
    assert back.n_faces == out.n_faces
    assert len(back.materials) == len(out.materials)
    if "uv" in out.corner_attrs:
        np.testing.assert_allclose(
            np.asarray(back.corner_attrs["uv"]), np.asarray(out.corner_attrs["uv"]), atol=1e-6
        )
