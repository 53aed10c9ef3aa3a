"""Draco-compressed GLB output (``output.compression: draco``): validator-clean, read back by our
reader and trimesh's, within the quantization error, materials and images as they were."""

from __future__ import annotations

import io

import numpy as np
import pytest
import trimesh

from tests.conftest import ASSETS, mesh_path
from tests.workers.engine.io.common import errors, validate
from workers.engine.errors import SpecError
from workers.engine.io import load_bytes, serialize
from workers.engine.io.draco import POSITION_BITS, TEXCOORD_BITS
from workers.engine.io.gltf import split_glb

ASSET_GLBS = sorted(p.name for p in ASSETS.glob("*.glb"))


def _step(a: np.ndarray, bits: int) -> float:
    """A quantization step of ``bits`` over the largest extent of ``a``'s columns."""
    return float((a.max(axis=0) - a.min(axis=0)).max()) / (2**bits - 1)


def _visible(mesh) -> np.ndarray:
    """Faces whose three corners are at three positions (Draco drops the others)."""
    V, F = np.asarray(mesh.V), np.asarray(mesh.F)
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    return ~((a == b).all(1) | (b == c).all(1) | (a == c).all(1))


def _corners(mesh, name: str | None = None) -> np.ndarray:
    """Every corner's position (and ``name``'s value) of the visible faces."""
    V, F = np.asarray(mesh.V, np.float64), np.asarray(mesh.F)
    keep = _visible(mesh)
    rows = V[F[keep]].reshape(-1, 3)
    if name is not None:
        values = np.asarray(mesh.corner_attrs[name])[keep].reshape(len(rows), -1)
        rows = np.concatenate([rows, values], 1)
    return rows


@pytest.mark.parametrize("name", ASSET_GLBS)
def test_assets_compress_validator_clean_within_the_quantization(name, tmp_path):
    src = load_bytes((ASSETS / name).read_bytes(), name)
    plain = serialize(src, "glb")
    packed = serialize(src, "glb", compression="draco")
    assert len(packed) < len(plain)
    report = validate(packed, tmp_path)
    assert errors(report) == []
    tree, _ = split_glb(packed)
    assert "KHR_draco_mesh_compression" in tree["extensionsRequired"]
    back = load_bytes(packed, name)
    # Draco drops the triangles with two corners at one position (invisible; 2CylinderEngine
    # has 11,160 of its 121,496), and only those
    keep = _visible(src)
    assert back.n_faces == keep.sum()
    assert back.materials.gltf["materials"] == src.materials.gltf["materials"]
    assert list(back.materials.files.values()) == list(src.materials.files.values())
    np.testing.assert_array_equal(
        np.bincount(back.face_attrs["material"]), np.bincount(src.face_attrs["material"][keep])
    )
    # each corner of the source has one in the result within half a quantization step per axis
    # (plus float32 rounding): matched by nearest neighbour over position and texture coordinate
    from scipy.spatial import cKDTree

    key = "uv" if "uv" in src.corner_attrs else None
    a, b = _corners(src, key), _corners(back, key)
    V = np.asarray(src.V, np.float64)
    tol_p = _step(V, POSITION_BITS)
    scale = np.ones(a.shape[1])
    if key is not None:
        uv = np.asarray(src.corner_attrs[key], np.float64).reshape(-1, 2)
        scale[3:] = tol_p / _step(uv, TEXCOORD_BITS)  # one step of each weighs the same
    d, _ = cKDTree(b * scale).query(a * scale)
    assert d.max() <= np.sqrt(a.shape[1]) * tol_p * 1.01


def test_a_plain_mesh_compresses_and_trimesh_reads_it():
    src = load_bytes(mesh_path("spot.obj").read_bytes(), "spot.obj").without_corners()
    src = src.run(["weld", "vertex_normals"], device="cpu").mesh  # one vertex per position
    packed = serialize(src, "glb", compression="draco")
    assert len(packed) * 5 < len(serialize(src, "glb"))
    back = trimesh.load(io.BytesIO(packed), file_type="glb", force="mesh")
    assert len(back.faces) == src.n_faces
    np.testing.assert_allclose(
        np.sort(np.asarray(back.vertices), axis=0),
        np.sort(np.asarray(src.V), axis=0),
        atol=_step(np.asarray(src.V), POSITION_BITS),
    )


def test_only_glb_is_compressed():
    src = load_bytes(mesh_path("rx-cube.obj").read_bytes(), "rx-cube.obj")
    with pytest.raises(SpecError) as e:
        serialize(src, "ply", compression="draco")
    assert e.value.code == "spec.compression_not_supported"
    with pytest.raises(SpecError) as e:
        serialize(src, "glb", compression="zstd")
    assert e.value.code == "spec.compression_not_supported"


@pytest.mark.parametrize("compression", ["none", "draco"])
@pytest.mark.parametrize(
    "pipeline",
    [
        ["weld", "vertex_normals", "gaussian_curvature"],  # normals and a custom attribute
        ["weld", ("subdivide", {"scheme": "catmull_clark"})],
    ],
    ids=["attributes", "quads"],
)
def test_every_glb_we_write_is_validator_clean(pipeline, compression, tmp_path):
    """Untextured meshes take the plain writer: it passes the validator too, compressed or not
    (a primitive with a custom attribute stays uncompressed, as the extension allows)."""
    src = load_bytes(mesh_path("spot.obj").read_bytes(), "spot.obj").without_corners()
    out = src.run(pipeline, device="cpu").mesh
    data = serialize(out, "glb", compression=compression)
    report = validate(data, tmp_path)
    assert errors(report) == [] and report["issues"]["numWarnings"] == 0
    assert load_bytes(data, "x.glb").n_faces == out.n_faces
