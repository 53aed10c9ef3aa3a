"""Fixtures of the reading and writing tests."""

from __future__ import annotations

import pytest

from tests.workers.engine.shapes import load, run
from workers.engine import TriMesh


@pytest.fixture(scope="module")
def rich() -> TriMesh:
    """A closed mesh with vertex normals, curvature and face normals."""
    return run(
        load("rx-sphere3.obj"), "weld", "vertex_normals", "gaussian_curvature", "face_normals"
    ).mesh
