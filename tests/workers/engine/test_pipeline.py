"""Pipelines: the step forms, errors, reports, timings and progress."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import CPU, cube, load, soup, tetrahedron
from workers.engine import (
    MeshError,
    OpParamsError,
    SpecError,
    TriMesh,
    parse_pipeline,
    run_pipeline,
)
from workers.engine.ops import OPS


def test_step_forms_are_equivalent() -> None:
    m = soup(tetrahedron())
    forms = [
        ["weld", "vertex_normals"],
        [("weld", {}), ("vertex_normals", {"weighting": "area"})],
        [("weld", None), {"op": "vertex_normals"}],
        [{"op": "weld", "tolerance": 0.0}, {"op": "vertex_normals", "weighting": "area"}],
    ]
    results = [run_pipeline(m, f, device=CPU) for f in forms]
    for r in results:
        assert [s.op for s in r.steps] == ["weld", "vertex_normals"]
        assert r.mesh.n_vertices == 4
        np.testing.assert_array_equal(
            r.mesh.vertex_attrs["vertex_normals"], results[0].mesh.vertex_attrs["vertex_normals"]
        )


def test_pydantic_step_models_are_accepted() -> None:
    models = {m.model_fields["op"].annotation.__args__[0]: m for m in OPS.step_models()}
    step = models["weld"](op="weld", tolerance=0.5)
    r = run_pipeline(soup(tetrahedron()), [step], device=CPU)
    assert r.steps[0].params == {"tolerance": 0.5, "relative": False, "remove_unused": True}


def test_mesh_run_is_run_pipeline() -> None:
    m = load("teapot.obj")
    a = m.run(["weld", ("gaussian_curvature", {"per_area": False}), "stats"], device=CPU)
    b = run_pipeline(m, ["weld", "gaussian_curvature", "stats"], device=CPU)
    assert a.reports == b.reports
    np.testing.assert_array_equal(
        a.mesh.vertex_attrs["gaussian_curvature"], b.mesh.vertex_attrs["gaussian_curvature"]
    )
    assert a.reports["stats"]["vertices"] == 3241


def test_reports_timings_and_repeated_ops() -> None:
    r = run_pipeline(load("teapot.obj"), ["stats", "weld", "stats"], device=CPU)
    assert list(r.reports) == ["stats", "weld", "stats#2"]
    assert r.reports["stats"]["duplicate_vertices"] == 403
    assert r.reports["stats#2"]["duplicate_vertices"] == 0
    assert list(r.timings) == ["0:stats", "1:weld", "2:stats"]
    assert all(t >= 0 for t in r.timings.values())
    assert [s.backend for s in r.steps] == ["numpy"] * 3
    assert r.steps[1].params == {"tolerance": 0.0, "relative": False, "remove_unused": True}
    assert r.steps[1].report == r.reports["weld"]


def test_progress_is_reported_in_order() -> None:
    seen: list[tuple[float, str]] = []
    run_pipeline(
        tetrahedron(), ["weld", "stats"], device=CPU, progress=lambda p, s: seen.append((p, s))
    )
    assert seen == [(0.0, "weld"), (0.5, "stats"), (1.0, "done")]


def test_empty_pipeline_returns_the_mesh() -> None:
    m = tetrahedron()
    r = run_pipeline(m, [], device=CPU)
    assert r.mesh is m and r.steps == [] and r.reports == {}


def test_parse_pipeline_labels() -> None:
    steps = parse_pipeline([("weld", {"tolerance": 0.25})])
    assert steps[0].label() == "weld(tolerance=0.25,relative=False,remove_unused=True)"


@pytest.mark.parametrize(
    ("step", "code"),
    [
        ("smooth", "spec.unknown_op"),  # not an operation
        (("Weld", {}), "spec.unknown_op"),  # names are case-sensitive
        ({"tolerance": 1.0}, "spec.missing_op"),  # mapping without "op"
        ({"op": 3}, "spec.missing_op"),  # op is not a name
        (["weld", {}], "spec.bad_step"),  # a list is not a step
        (("weld", {}, {}), "spec.bad_step"),  # tuple of three
        (42, "spec.bad_step"),  # not a step at all
        (("weld", 5), "spec.bad_step"),  # params not a mapping (raised TypeError)
        ((3, {}), "spec.bad_step"),  # a name that is not text
    ],
)
def test_spec_errors(step: object, code: str) -> None:
    with pytest.raises(SpecError) as ei:
        run_pipeline(tetrahedron(), ["stats", step], device=CPU)
    assert ei.value.code == code
    if code == "spec.unknown_op":
        assert "weld" in ei.value.detail["known"]


@pytest.mark.parametrize(
    "step",
    [
        ("weld", {"tolerance": -1}),  # below the bound
        {"op": "weld", "bogus": 1},  # unknown parameter
        ("vertex_normals", {"weighting": "cotan"}),  # not one of the choices
        ("stats", {"verbose": True}),  # stats takes none
    ],
)
def test_params_errors(step: object) -> None:
    with pytest.raises(OpParamsError) as ei:
        run_pipeline(tetrahedron(), [step], device=CPU)
    assert ei.value.code == "op.params_invalid"
    assert ei.value.detail["op"] == (step[0] if isinstance(step, tuple) else step["op"])
    assert ei.value.detail["errors"] and "loc" in ei.value.detail["errors"][0]


def test_errors_are_raised_before_any_step_runs() -> None:
    seen: list[str] = []
    with pytest.raises(SpecError):
        run_pipeline(
            tetrahedron(), ["stats", "nope"], device=CPU, progress=lambda p, s: seen.append(s)
        )
    assert seen == []


def test_a_step_that_removes_every_face_is_a_clear_error():
    with pytest.raises(MeshError) as exc:
        cube().run(
            [("remove_degenerate_faces", {"area_threshold": 10.0}), "edge_lengths"], device="cpu"
        )
    assert exc.value.code == "mesh.no_faces_left"
    assert exc.value.detail == {"op": "remove_degenerate_faces", "step": 0}


def test_a_mesh_without_faces_is_refused_before_any_step():
    empty = TriMesh(np.zeros((4, 3), np.float32), np.zeros((0, 3), np.int32))
    with pytest.raises(MeshError) as exc:
        empty.run(["face_quality"], device="cpu")
    assert exc.value.code == "mesh.no_faces"


def test_path_choice_per_operation(monkeypatch):
    from bench.meshes import midpoint_subdivide
    from tests.workers.engine.shapes import welded
    from workers.engine import paths

    mesh = midpoint_subdivide(welded("spot.obj"))
    monkeypatch.setenv("TESSERA_GPU_PATH", "auto")
    assert paths.patches_for(mesh, "bilateral_denoise") is None  # measured faster global
    monkeypatch.setenv("TESSERA_GPU_PATH", "patched")
    got = paths.patches_for(mesh, "bilateral_denoise")
    assert got is not None and got.method == "morton"
    assert paths.patches_for(mesh, "bilateral_denoise") is got  # cached with the topology
    monkeypatch.setenv("TESSERA_GPU_PATH", "global")
    assert paths.patches_for(mesh, "bilateral_denoise") is None


@pytest.mark.parametrize("pipeline", [None, 5, {"op": "weld"}])
def test_a_pipeline_that_is_no_list_of_steps_is_refused(pipeline: object) -> None:
    """``tessera.run(mesh, None)`` raised a raw TypeError (not iterable)."""
    with pytest.raises(SpecError) as ei:
        run_pipeline(tetrahedron(), pipeline, device=CPU)  # type: ignore[arg-type]
    assert ei.value.code == "spec.bad_step"


def test_a_lone_name_is_a_pipeline_of_one_step() -> None:
    """``run(mesh, "weld")`` ran the steps "w", "e", "l", "d" (spec.unknown_op)."""
    m = soup(tetrahedron())
    assert run_pipeline(m, "weld", device=CPU).mesh.n_vertices == 4
