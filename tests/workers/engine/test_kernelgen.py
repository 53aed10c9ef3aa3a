"""Patched kernels generated from a per-element body: the source compiles with nvcc (CI has
nvcc, no GPU), bad declarations are refused, and on a GPU every query's generated kernel sees
the answer the topology gives."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine.kernelgen import generate
from workers.engine.kernels.loader import HERE
from workers.engine.patched_ops import SMOOTH_BODY
from workers.engine.queries import QUERIES

COUNT_BODY = "  counts[g] = nb.size();"


@pytest.mark.parametrize("query", QUERIES)
def test_generated_source_compiles(query, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed on this machine (CI and the GPU host have it)")
    src = tmp_path / "k.cu"
    src.write_text(generate("count_rows", query, "int* counts", COUNT_BODY))
    if query == "VV":  # and a real body with several parameters
        src.write_text(
            src.read_text()
            + generate(
                "smooth",
                "VV",
                "const float* V, const bool* fixed, int use_fixed, float lambda, float* out",
                SMOOTH_BODY,
            ).replace('#include "patched.cuh"\n', "")
        )
    r = subprocess.run(
        [
            nvcc,
            "-std=c++17",
            "-arch=sm_90",
            f"-I{HERE}",
            "--ptx",
            "-o",
            str(tmp_path / "k.ptx"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("name", "query", "params"),
    [("bad name", "VV", "int* a"), ("ok", "XY", "int* a"), ("ok", "VV", "counts")],
)
def test_bad_declarations_are_refused(name, query, params):
    with pytest.raises(ValueError):
        generate(name, query, params, COUNT_BODY)


@pytest.mark.gpu
@pytest.mark.parametrize("mesh_name", ["rx-bumpy-cube.obj", "beetle.obj", "rx-cloth.obj"])
def test_generated_kernels_see_every_query_answer(mesh_name):
    from workers.engine.backend import to_numpy
    from workers.engine.kernelgen import patched_kernel
    from workers.engine.patches import build_patches
    from workers.engine.queries import launch_patched, reference_query

    mesh = shapes.load(mesh_name).to("cupy")
    patches = build_patches(mesh, 64, method="morton")
    cp = mesh.xp
    for q in QUERIES:
        off, _ = reference_query(mesh, q)
        expected = np.diff(to_numpy(off))
        counts = cp.full(expected.shape[0], -1, dtype=cp.int32)
        kernel = patched_kernel(f"count_{q.lower()}", q, params="int* counts", body=COUNT_BODY)
        launch_patched(kernel, patches, (counts,), op="test")
        got = to_numpy(counts)
        owned = got >= 0  # unused vertices are owned by no patch: their body never runs
        assert (owned | (expected == 0)).all(), q
        np.testing.assert_array_equal(got[owned], expected[owned], err_msg=q)
