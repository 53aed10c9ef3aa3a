"""laplacian_matrix: the sparse Laplacian and mass matrices as artifacts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine import shapes
from workers.engine.artifacts import load_matrix, serialize_matrix
from workers.engine.ops.laplacian_matrix import OP, Params


@pytest.mark.parametrize("weights", ["cotangent", "uniform"])
@pytest.mark.parametrize("name", ["rx-sphere3.obj", "rx-cloth.obj", "beetle.obj"])
def test_symmetric_psd_with_constants_in_the_null_space(weights, name):
    mesh = shapes.welded(name)
    out = OP.numpy(mesh, Params(weights=weights))
    L = out.artifacts["laplacian"]
    assert abs(L @ np.ones(mesh.n_vertices)).max() < 1e-9
    assert abs(L - L.T).max() < 1e-12
    x = np.random.default_rng(0).normal(size=mesh.n_vertices)
    assert x @ (L @ x) >= -1e-9  # positive semidefinite
    assert out.report["nnz"] == L.nnz


@pytest.mark.parametrize("mass", ["barycentric", "mixed"])
def test_mass_sums_to_the_area(mass):
    mesh = shapes.welded("rx-torus.obj")
    M = OP.numpy(mesh, Params(mass=mass)).artifacts["mass"]
    assert M.diagonal().sum() == pytest.approx(shapes.stats(mesh)["area"], rel=1e-12)


def test_no_mass_and_both_file_formats():
    mesh = shapes.welded("rx-cube.obj")
    out = OP.numpy(mesh, Params(mass="none"))
    assert set(out.artifacts) == {"laplacian"}
    L = out.artifacts["laplacian"]
    assert abs(load_matrix(serialize_matrix(L, "npz"), "npz") - L).max() == 0
    assert abs(load_matrix(serialize_matrix(L, "mtx"), "mtx") - L).max() < 1e-12
