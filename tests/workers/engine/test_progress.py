"""Progress from inside a step: the reporter (slices, clamping, never backwards, rate limit,
no cost unheard) and the reports of the long operations in a pipeline."""

from __future__ import annotations

import re

import pytest

from tests.workers.engine.shapes import CPU, cube, welded
from workers.engine import progress, run_pipeline

Seen = list[tuple[float, str]]


@pytest.fixture
def unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report passes (no interval): counts what the operations report."""
    monkeypatch.setattr(progress, "INTERVAL", 0.0)


class FakeClock:
    """A clock that moves only when the test says so, or by ``tick`` at every read."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now, self.tick = 100.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def _boom() -> float:
    raise AssertionError("the clock was read with nobody listening")


# ------------------------------------------------------------------------------ the reporter
def test_nobody_listening_costs_nothing_and_raises_nothing(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(progress, "clock", _boom)
    progress.report(0.5, "half")
    progress.report(float("nan"))
    assert progress.due() is False
    with progress.part(0.2, 0.4, "part"):
        progress.report(0.5, "inside")
    # a whole remesh and decimation without a listener: no reporter, never the clock
    r = run_pipeline(
        welded("rx-cube.obj"), ["isotropic_remesh", ("decimate", {"target_faces": 8})], device=CPU
    )
    assert r.mesh.n_faces > 0


def test_a_step_maps_into_its_slice_clamps_and_never_goes_back(unlimited: None) -> None:
    seen: Seen = []
    with progress.step(lambda p, s: seen.append((p, s)), 0.25, 0.5, "op"):
        progress.report(0.5, "half")
        progress.report(0.2, "an estimate that fell back")
        progress.report(-1.0)
        progress.report(float("nan"))
        progress.report(7.0, "too far")
        progress.report(1.0)
    assert seen == [
        (0.375, "op: half"),
        (0.375, "op: an estimate that fell back"),
        (0.375, "op"),
        (0.375, "op"),
        (0.5, "op: too far"),
        (0.5, "op"),
    ]
    progress.report(0.9)  # outside the step: nobody listens
    assert len(seen) == 6


def test_a_done_part_ends_exactly_where_the_next_begins(unlimited: None) -> None:
    seen: Seen = []
    with progress.step(lambda p, s: seen.append((p, s)), 1 / 3, 2 / 3, "op"):
        with progress.part(0.1, 0.7):
            progress.report(1.0)
        with progress.part(0.7, 1.0):
            progress.report(0.0)
            progress.report(1.0)
    assert [p for p, _ in seen] == [1 / 3 + (1 / 3) * 0.7] * 2 + [2 / 3]


def test_parts_nest_and_prefix_their_detail(unlimited: None) -> None:
    seen: Seen = []
    with progress.step(lambda p, s: seen.append((p, s)), 0.0, 1.0, "remesh"):
        with progress.part(0.5, 1.0, "iteration 2/2"):
            with progress.part(0.0, 0.5, "split"):
                progress.report(0.5, "round 3")
            progress.report(0.5)
        progress.report(0.0, "after the part: held at the highest")
    assert seen == [
        (0.625, "remesh: iteration 2/2, split, round 3"),
        (0.75, "remesh: iteration 2/2"),
        (0.75, "remesh: after the part: held at the highest"),
    ]


def test_an_inner_step_without_a_listener_hides_the_outer_one(unlimited: None) -> None:
    seen: Seen = []
    with progress.step(lambda p, s: seen.append((p, s)), 0.0, 1.0, "outer"):
        with progress.step(None, 0.0, 1.0, "inner"):
            progress.report(0.5, "unheard")
        progress.report(0.5, "heard")
    assert seen == [(0.5, "outer: heard")]


def test_reports_are_rate_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(progress, "clock", clock)
    monkeypatch.setattr(progress, "INTERVAL", 0.15)
    seen: Seen = []
    with progress.step(lambda p, s: seen.append((p, s)), 0.0, 1.0, "op"):
        progress.report(0.1)  # the step's start was just reported: too early
        assert not progress.due()
        clock.now += 0.1
        progress.report(0.2)
        clock.now += 0.06  # 0.16 s since the start
        assert progress.due()
        progress.report(0.3)
        progress.report(0.4)  # at once after: dropped
        clock.now += 0.149
        progress.report(0.5)
        clock.now += 0.001
        progress.report(0.6)
    assert seen == [(0.3, "op"), (0.6, "op")]


def test_decay_and_rounds_estimates() -> None:
    assert progress.decay(1000, 1000) == 0.0
    assert progress.decay(1000, 2000) == 0.0
    assert progress.decay(1000, 1) == 1.0
    assert progress.decay(1000, 0) == 1.0
    assert progress.decay(10_000, 100) == pytest.approx(0.5)
    assert progress.decay(1024, 128, end=32) == pytest.approx(0.6)
    assert progress.rounds_done(0, 30, 0, 0) == 0.0
    assert progress.rounds_done(0, 30, 500, 500) == 0.0
    assert progress.rounds_done(3, 30, 0, 0) == pytest.approx(0.1)  # nothing found yet
    assert progress.rounds_done(3, 30, 1024, 128, tail=1 / 32) == pytest.approx(0.6)
    assert progress.rounds_done(29, 30, 1024, 1000) == pytest.approx(29 / 30)
    assert progress.rounds_done(40, 30, 1024, 1000) == 1.0


# ------------------------------------------------------------------------------ in a pipeline
def _run(mesh_name: str, steps: list, seen: Seen) -> None:
    run_pipeline(welded(mesh_name), steps, device=CPU, progress=lambda p, s: seen.append((p, s)))


def _check_order_and_slices(seen: Seen, names: list[str]) -> dict[str, list[float]]:
    """Non-decreasing overall, each step's reports inside its slice; the values per step."""
    ps = [p for p, _ in seen]
    assert all(a <= b for a, b in zip(ps, ps[1:], strict=False)), ps
    assert seen[-1] == (1.0, "done")
    n = len(names)
    per: dict[str, list[float]] = {name: [] for name in names}
    for p, stage in seen[:-1]:
        op = stage.split(":")[0]
        i = names.index(op)
        assert i / n <= p <= (i + 1) / n, (p, stage)
        per[op].append(p)
    return per


def test_remesh_and_decimate_report_many_values_inside_their_slices(unlimited: None) -> None:
    seen: Seen = []
    steps = [("isotropic_remesh", {"iterations": 5}), ("decimate", {"target_ratio": 0.3})]
    _run("spot.obj", steps, seen)
    per = _check_order_and_slices(seen, ["isotropic_remesh", "decimate"])
    assert len(set(per["isotropic_remesh"])) >= 30
    assert len(set(per["decimate"])) >= 8
    stages = [s for _, s in seen]
    for it in range(1, 6):
        for sub in ("split", "collapse", "flip", "relax", "project"):
            assert any(s.startswith(f"isotropic_remesh: iteration {it}/5, {sub}") for s in stages)
    assert any(
        re.fullmatch(r"isotropic_remesh: iteration 1/5, collapse, round \d+", s) for s in stages
    )
    assert any(re.fullmatch(r"decimate: round \d+, \d+ faces", s) for s in stages)
    # decimate's fraction is the share of the faces to remove that went: it nears the end
    assert max(per["decimate"]) > 0.9


@pytest.mark.parametrize(
    ("mesh_name", "step", "detail", "later"),
    [
        ("spot.obj", "collapse_short_edges", r"round \d+, \d+ faces", "round 2,"),
        (
            "rx-giraffe.obj",  # 12 rounds of flips
            ("delaunay_flip", {"feature_angle": 180.0}),
            r"round \d+, \d+ to flip",
            "round 2,",
        ),
        ("rx-cube.obj", ("subdivide", {"levels": 3}), r"level [123]/3", "level 3/3"),
        ("rx-torus.obj", ("laplacian_smooth", {"iterations": 4}), r"iteration \d/4", "4/4"),
        ("rx-torus.obj", ("taubin_smooth", {"iterations": 4}), r"iteration \d/4", "4/4"),
        ("rx-torus.obj", ("bilateral_denoise", {"iterations": 3}), r"iteration \d/3", "3/3"),
        (
            "rx-torus.obj",
            ("geodesic_distance", {"method": "propagation", "sources": [0]}),
            r"iteration \d+",
            "iteration 50",
        ),
    ],
)
def test_iterative_operations_report_inside_their_slice(
    unlimited: None, mesh_name: str, step: str | tuple[str, dict], detail: str, later: str
) -> None:
    name = step if isinstance(step, str) else step[0]
    seen: Seen = []
    _run(mesh_name, ["stats", step], seen)
    per = _check_order_and_slices(seen, ["stats", name])
    assert len(set(per[name])) >= 3, seen
    inner = [s for _, s in seen if s.startswith(f"{name}: ")]
    assert all(re.fullmatch(f"{name}: {detail}", s) for s in inner), inner
    assert any(later in s for s in inner), inner


def test_rate_limited_reports_of_a_remesh_are_spaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a clock that moves 10 ms at every read, the remesh's reports (each of which reads
    the clock) pass at most every INTERVAL, far fewer than it makes."""
    clock = FakeClock(tick=0.01)
    monkeypatch.setattr(progress, "clock", clock)
    seen: list[tuple[float, float, str]] = []
    run_pipeline(
        cube().run([("subdivide", {"levels": 2})], device=CPU).mesh,
        [("isotropic_remesh", {"target_edge_length": 0.5, "iterations": 5})],
        device=CPU,
        progress=lambda p, s: seen.append((clock.now, p, s)),
    )
    inner = [(t, p) for t, p, s in seen if ":" in s]
    reads = (clock.now - 100.0) / 0.01
    assert 2 <= len(inner) < reads / 10
    times = [seen[0][0]] + [t for t, _ in inner]
    assert all(b - a >= progress.INTERVAL - 1e-9 for a, b in zip(times, times[1:], strict=False))


def test_the_interval_suits_the_pipe_and_redis() -> None:
    assert 0.1 <= progress.INTERVAL <= 0.2
