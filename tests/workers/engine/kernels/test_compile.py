"""Every ``.cu`` file compiles with ``nvcc`` for Hopper (CI has nvcc but no GPU), so a syntax error
in a kernel never lands; on a GPU host every kernel also compiles through NVRTC."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from workers.engine.kernels.loader import HERE

CU_FILES = sorted(p.name for p in HERE.glob("*.cu"))


def test_there_are_kernels():
    assert "vertex_normals.cu" in CU_FILES


@pytest.mark.parametrize("name", CU_FILES)
def test_cu_file_compiles_with_nvcc(name, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed on this machine (CI and the GPU host have it)")
    r = subprocess.run(
        [
            nvcc,
            "-std=c++17",
            "-arch=sm_90",
            f"-I{HERE}",
            "--ptx",
            "-o",
            str(tmp_path / "k.ptx"),
            str(HERE / name),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr.lower(), r.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("name", CU_FILES)
def test_cu_file_compiles_with_nvrtc(name):
    from workers.engine.kernels.loader import _module

    mod = _module(name[:-3], (), 0)
    assert mod is not None
