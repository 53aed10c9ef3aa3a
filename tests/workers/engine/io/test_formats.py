"""Formats declared once (``io/formats.py``): every format declared read or written has its reader
and writer, the lists the job spec and the runner use come from the declaration, and what a
format says it holds is what comes back from its file."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from workers.engine import TriMesh
from workers.engine.io import (
    FORMATS,
    MEDIA_TYPES,
    MESH_FORMATS,
    OUTPUT_FORMATS,
    format_can_hold,
    load_bytes,
    reading,
    serialize,
    writing,
)


def test_every_declared_format_has_its_reader_and_writer() -> None:
    assert set(reading._READERS) | {"npz"} == set(MESH_FORMATS)  # NPZ: read as an archive
    assert set(writing._WRITERS) == set(OUTPUT_FORMATS)
    assert all(f.media_type and f.title for f in FORMATS.values())


def test_the_job_spec_and_the_runner_take_the_formats_from_the_declaration() -> None:
    from workers import runner
    from workers.jobspec import OutputSpec

    field = OutputSpec.model_fields["format"].annotation
    assert typing.get_args(field) == OUTPUT_FORMATS
    assert runner.MEDIA_TYPES is MEDIA_TYPES


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_a_file_keeps_the_attributes_its_format_says_it_holds(fmt: str) -> None:
    rng = np.random.default_rng(1)
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int32)
    vertex = {
        "vertex_normals": (V - 0.25) / np.linalg.norm(V - 0.25, axis=1, keepdims=True),
        "quality": rng.random(4).astype(np.float32),
    }
    face = {"region": np.arange(4, dtype=np.int32)}
    m = TriMesh(V, F, vertex, face)
    back = load_bytes(serialize(m, fmt), f"m.{fmt}")
    for name in vertex:
        assert (name in back.vertex_attrs) == format_can_hold(fmt, name, "vertex"), (fmt, name)
    for name in face:
        assert (name in back.face_attrs) == format_can_hold(fmt, name, "face"), (fmt, name)
