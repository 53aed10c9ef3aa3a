"""What every operation must declare, checked on the CPU (so CI, not only the GPU host, tells a
contributor who forgot): a description that says more than the summary, the parameter sets the
GPU equivalence test runs (valid for the op's model), and a tolerance for every output."""

from __future__ import annotations

import dataclasses

import pytest

from workers.engine.ops import OPS, Operation, OpKind, Tolerance, _testing
from workers.engine.ops.registry import DEFAULT_TOLERANCE

#: the queue's testing operation (registered only with TESSERA_TEST_OPS=1) is never compared
DECLARED = [op for op in OPS if op.name != _testing.OP.name]


@pytest.mark.parametrize("op", DECLARED, ids=lambda op: op.name)
def test_operation_is_fully_declared(op: Operation):
    assert op.declaration_problems() == []


def test_description_rule():
    """The rule: a description of at least two sentences, at least twice as long as the
    summary, that is not the summary again."""
    op = OPS.get("face_normals")
    for text in ("", op.summary, op.summary + " More."):
        bad = dataclasses.replace(op, description=text)
        assert any("description" in p for p in bad.declaration_problems()), text


def test_missing_variants_and_invalid_variants_are_reported():
    op = OPS.get("vertex_normals")
    assert "no test_variants" in " ".join(
        dataclasses.replace(op, test_variants=()).declaration_problems()
    )
    problems = dataclasses.replace(
        op, test_variants=({"weighting": "area"}, {"weighting": "nope"}, {"extra": 1})
    ).declaration_problems()
    assert len(problems) == 2
    assert problems[0].startswith("test_variants[1] ") and "op.params_invalid" in problems[0]
    assert problems[1].startswith("test_variants[2] ")


def test_contradicting_variant_is_reported():
    """A variant must also pass the op's cross-parameter check (``Operation.check``)."""
    op = OPS.get("decimate")
    bad = dataclasses.replace(op, test_variants=({"target_faces": 10, "target_ratio": 0.5},))
    assert "op.target_ambiguous" in " ".join(bad.declaration_problems())


def test_missing_and_stray_tolerances_are_reported():
    op = OPS.get("gaussian_curvature")
    problems = dataclasses.replace(op, tolerances={}).declaration_problems()
    assert problems == ["output gaussian_curvature has no tolerance"]
    problems = dataclasses.replace(
        op, tolerances={**op.tolerances, "curvature": Tolerance(1e-3)}
    ).declaration_problems()
    assert problems == ["tolerance for curvature, which is not an output"]
    problems = dataclasses.replace(
        op, tolerances={"gaussian_curvature": Tolerance(-1.0)}
    ).declaration_problems()
    assert problems == ["tolerance for gaussian_curvature is not finite and >= 0"]


def test_tolerance_of_a_carried_attribute():
    """An attribute the op does not produce (carried from the input or an earlier step) gets
    the tolerance of the op that produces it, else the default."""
    vn = OPS.get("vertex_normals").tolerances["vertex_normals"]
    assert OPS.tolerance(OPS.get("vertex_normals"), "vertex_normals") == vn
    assert OPS.tolerance(OPS.get("average_attribute"), "vertex_normals") == vn
    assert OPS.tolerance(OPS.get("subdivide"), "gaussian_curvature") == Tolerance(2e-4, 1e-4)
    assert OPS.tolerance(OPS.get("weld"), "colour") == DEFAULT_TOLERANCE


def test_dynamic_kind():
    """``dynamic``: connectivity changed by local operations in parallel rounds (compared by
    invariants on the GPU); ``remesh``: one deterministic pass (compared exactly)."""
    dynamic = {op.name for op in OPS if op.kind is OpKind.dynamic}
    assert dynamic == {"delaunay_flip", "isotropic_remesh", "collapse_short_edges", "decimate"}
    assert {op.name for op in OPS if op.kind is OpKind.remesh} >= {"subdivide", "cluster_coarsen"}
    assert all(k.meaning for k in OpKind)
    assert OpKind("dynamic") is OpKind.dynamic and OpKind.dynamic == "dynamic"
