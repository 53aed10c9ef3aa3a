"""A GLB of many materials is written in time linear in the primitives: the per-primitive
work is array work done once for all of them (one sort of every corner, one buffer view per
attribute, the accessors' and primitives' JSON laid out as byte rows), not Python work per
primitive. 200 000 one-face materials took 17 s (50 s on the 2-core test host) a primitive at
a time; 1.8 s of CPU now. The tests count operations (Python and C function calls, buffer
views), which cannot flake as timings do."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tests.workers.engine.io.common import errors, validate
from workers.engine import TriMesh
from workers.engine.io import load_bytes, serialize
from workers.engine.io.gltf import split_glb
from workers.engine.materials import Materials


def one_face_materials(n: int) -> TriMesh:
    """``n`` triangles, each with its own material and texture coordinates."""
    rng = np.random.default_rng(n)
    V = rng.random((3 * n, 3)).astype(np.float32)
    F = np.arange(3 * n, dtype=np.int32).reshape(n, 3)
    names = [f"m{i}" for i in range(n)]
    lib = Materials(names, {"materials": [{"name": x} for x in names]})
    return TriMesh(
        V,
        F,
        face_attrs={"material": np.arange(n, dtype=np.int32)[::-1].copy()},
        corner_attrs={"uv": rng.random((n, 3, 2)).astype(np.float32)},
        materials=lib,
    )


def calls(n: int) -> int:
    """Python and C function calls made while writing the GLB of :func:`one_face_materials`."""
    mesh = one_face_materials(n)
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        serialize(mesh, "glb")
    finally:
        sys.setprofile(None)
    return count


def test_the_work_per_primitive_is_small_and_does_not_grow() -> None:
    """Calls per added primitive: a handful (the library's check looks at each material), and
    the same from 400 to 800 primitives as from 1600 to 3200 (work per primitive that grows
    with their number would make the second larger; the writer a primitive at a time made 133
    per primitive)."""
    calls(100)  # imports and caches filled once
    c = {n: calls(n) for n in (400, 800, 1600, 3200)}
    first = (c[800] - c[400]) / 400
    second = (c[3200] - c[1600]) / 1600
    assert second < 10, c
    assert second <= first * 1.25 + 0.5, c


def test_many_materials_are_one_view_per_attribute_and_validator_clean(tmp_path: Path) -> None:
    mesh = one_face_materials(300)
    data = serialize(mesh, "glb")
    tree, _ = split_glb(data)
    assert len(tree["meshes"][0]["primitives"]) == 300
    assert len(tree["accessors"]) == 3 * 300  # indices, POSITION, TEXCOORD_0 of each
    assert len(tree["bufferViews"]) == 3  # shared: the views do not grow with the primitives
    assert errors(validate(data, tmp_path)) == []
    back = load_bytes(data, "back.glb")
    order = np.argsort(np.asarray(mesh.face_attrs["material"]), kind="stable")
    V, F = np.asarray(mesh.V), np.asarray(mesh.F)
    np.testing.assert_array_equal(np.asarray(back.V)[np.asarray(back.F)], V[F][order])
    np.testing.assert_array_equal(
        back.corner_attrs["uv"], np.asarray(mesh.corner_attrs["uv"])[order]
    )
    np.testing.assert_array_equal(back.face_attrs["material"], np.arange(300))
