"""The browser page, in real headless Chromium (Debian's ``chromium``, which ``./dev.sh test``
installs) driven by Playwright, against a real API process, a worker and a private Redis."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT, _free_port, mesh_path, settings_env
from workers.engine.io import load_bytes, load_path

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebGL on the CPU: SwiftShader through ANGLE (no GPU, no display)
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]
TIMEOUT_MS = 30_000


@pytest.fixture
def base_url(settings, workers, tmp_path) -> Iterator[str]:
    """The API as its own process (uvicorn, as in production) and one worker."""
    port = _free_port()
    with open(tmp_path / "api.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "service.main:create_app", "--factory"]
            + ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
            env=settings_env(settings),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    workers.start("w1")
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "api.log").read_text()
            assert time.time() < deadline, "the API did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def page(base_url) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} missing: ./dev.sh test installs it (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.errors = errors  # type: ignore[attr-defined]
        yield pg
        context.close()
        browser.close()
    assert not errors, errors


def _open(page, base_url: str, query: str = "") -> None:
    page.goto(f"{base_url}/{query}")
    page.wait_for_selector("body[data-ready=true]")


def _add(page, op: str) -> None:
    page.select_option("#op-select", op)
    page.click("#add-step")


def _pixels(page, selector: str) -> np.ndarray:
    png = page.locator(selector).screenshot()
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _saturated(img: np.ndarray) -> int:
    """Pixels far from grey: the colours of an attribute, not the plain shading."""
    return int(((img.max(axis=2) - img.min(axis=2)) > 40).sum())


def test_page_runs_a_pipeline_and_previews_it(page, base_url, tmp_path):
    _open(page, base_url)
    # the form comes from the catalogue: every operation is offered
    ops = httpx.get(base_url + "/v1/operations").json()["data"]
    offered = page.eval_on_selector_all("#op-select option", "os => os.map(o => o.value)")
    assert sorted(offered) == sorted(op["name"] for op in ops)

    page.set_input_files("#file", str(mesh_path("spot.obj")))
    assert "spot.obj" in page.inner_text("#file-list")
    # build it out of order, then fix it: reorder and remove
    _add(page, "gaussian_curvature")
    _add(page, "stats")
    _add(page, "vertex_normals")
    page.click("button[aria-label='Move vertex_normals up']")
    page.click("button[aria-label='Move vertex_normals up']")
    page.click("button[aria-label='Remove stats']")
    steps = page.eval_on_selector_all("#steps > li", "ls => ls.map(l => l.dataset.op)")
    assert steps == ["vertex_normals", "gaussian_curvature"]
    # a field generated from the schema: its enum, default and description
    weighting = page.locator("#steps > li[data-op=vertex_normals] select[name=weighting]")
    assert weighting.input_value() == "area"
    options = weighting.locator("option").all_inner_texts()
    assert options == ["area", "angle", "uniform", "max"]
    assert "weighted" in page.inner_text("#steps > li[data-op=vertex_normals] .help >> nth=1")
    weighting.select_option("angle")
    page.check("#attr-some")
    assert page.is_checked("#attr-vertex_normals") and page.is_checked("#attr-gaussian_curvature")

    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    assert page.evaluate("document.body.dataset.transport") == "events"
    assert page.evaluate("document.getElementById('upload-progress').value") == 1
    assert "accepted" in page.inner_text("#upload-text")
    assert page.inner_text("#job-state").startswith("Succeeded in")
    timings = page.inner_text("#timings")
    for stage in ("upload", "parse", "step 1 · vertex_normals", "step 2 · gaussian_curvature"):
        assert stage in timings
    assert "run" in timings
    assert page.is_hidden("#error")

    job_id = page.inner_text("#job-id")
    job = httpx.get(f"{base_url}/v1/jobs/{job_id}").json()
    assert job["spec"]["pipeline"] == [
        {"op": "vertex_normals", "weighting": "angle"},
        {"op": "gaussian_curvature", "per_area": False},
    ]
    assert job["spec"]["output"]["attributes"] == ["vertex_normals", "gaussian_curvature"]

    # both previews drawn; the result coloured by the curvature it now has, with a legend
    page.wait_for_selector("#view-input[data-rendered=true]")
    page.wait_for_selector("#view-result[data-rendered=true]")
    assert page.input_value("#colour-by") == "vertex.gaussian_curvature"
    assert page.is_visible("#legend") and page.inner_text("#legend-name") == "gaussian_curvature"
    assert "2,930 vertices, 5,856 faces" in page.inner_text("#result-counts")
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    result = _pixels(page, "#view-result")
    source = _pixels(page, "#view-input")
    for img in (result, source):
        assert img.reshape(-1, 3).std(axis=0).max() > 10, "blank canvas"
        assert len(np.unique(img.reshape(-1, 3), axis=0)) > 200, "uniform canvas"
    assert _saturated(result) > 1000, "the result shows no attribute colours"
    assert _saturated(source) < 50, "the input (no curvature) should be plain"
    page.check("#wireframe")
    wire = _pixels(page, "#view-result")
    assert np.abs(wire - result).sum(axis=2).astype(bool).mean() > 0.05
    page.select_option("#colour-by", "")
    assert page.is_hidden("#legend") and _saturated(_pixels(page, "#view-result")) < 50

    with page.expect_download() as info:
        page.click("#download-result")
    download = info.value
    assert download.suggested_filename == "spot.ply"
    got = load_bytes(Path(download.path()).read_bytes(), download.suggested_filename)
    want = (
        load_path(mesh_path("spot.obj"))
        .run([("vertex_normals", {"weighting": "angle"}), "gaussian_curvature"], device="cpu")
        .mesh
    )
    np.testing.assert_array_equal(got.F, want.F)
    np.testing.assert_allclose(got.V, want.V)
    for name in ("vertex_normals", "gaussian_curvature"):
        np.testing.assert_allclose(got.vertex_attrs[name], want.vertex_attrs[name], atol=1e-6)


def test_page_shows_errors_in_plain_words_and_cancels(page, base_url):
    _open(page, base_url, "?poll=1")  # polling, the fallback for browsers without EventSource

    # a file that is no mesh: refused at upload, nothing queued
    page.set_input_files(
        "#file", files=[{"name": "broken.obj", "mimeType": "text/plain", "buffer": b"hello\n"}]
    )
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=rejected]")
    error = page.inner_text("#error")
    assert "The file could not be read as a mesh." in error
    assert "format.mismatch" in error

    # a step whose settings do not fit the mesh: the job fails in the worker
    page.set_input_files("#file", str(mesh_path("spot.obj")))
    _add(page, "geodesic_distance")
    page.fill("#steps > li[data-op=geodesic_distance] input[name=sources]", "0, 999999")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=failed]")
    assert page.evaluate("document.body.dataset.transport") == "polling"
    error = page.inner_text("#error")
    assert "A pipeline step refused its settings for this mesh." in error
    assert "op.source_out_of_range" in error
    assert page.is_visible("#error") and page.inner_text("#job-state") == "Failed."
    assert page.is_disabled("#cancel")

    # a long job, cancelled from the page
    page.click("button[aria-label='Remove geodesic_distance']")
    _add(page, "sleep")
    page.fill("#steps > li[data-op=sleep] input[name=seconds]", "60")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=running]")
    page.click("#cancel")
    page.wait_for_selector("body[data-job-state=cancelled]")
    assert page.inner_text("#job-state") == "Cancelled."
    assert page.is_hidden("#error")


def test_page_takes_a_dropped_file_colours_geodesics_and_orbits(page, base_url):
    import base64

    _open(page, base_url)
    data = base64.b64encode(mesh_path("spot.obj").read_bytes()).decode()
    dropped = page.evaluate_handle(
        """(b64) => {
            const bin = atob(b64);
            const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], "spot.obj", {type: "text/plain"}));
            return dt;
        }""",
        data,
    )
    page.dispatch_event("#drop", "drop", {"dataTransfer": dropped})
    assert "has-file" in page.get_attribute("#drop", "class")
    assert page.inner_text("#file-list .file-name") == "spot.obj"
    for label in page.locator("#steps button[aria-label^='Remove ']").all():
        label.click()  # only the step this test adds
    _add(page, "geodesic_distance")
    page.fill("#steps > li[data-op=geodesic_distance] input[name=sources]", "0")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = httpx.get(f"{base_url}/v1/jobs/{page.inner_text('#job-id')}").json()
    assert job["input"]["name"] == "spot.obj"
    assert job["spec"]["pipeline"][0]["op"] == "geodesic_distance"

    page.wait_for_selector("#view-result[data-rendered=true]")
    assert page.input_value("#colour-by") == "vertex.geodesic_distance"
    assert page.inner_text("#legend-name") == "geodesic_distance"
    page.select_option("#colour-range", "full")
    assert float(page.inner_text("#legend-lo")) == 0  # the source
    assert float(page.inner_text("#legend-hi")) > 0
    still = _pixels(page, "#view-result")
    assert _saturated(still) > 1000, "the result shows no distance colours"

    box = page.locator("#view-result").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 120, cy + 40, steps=8)  # orbit
    page.mouse.up()
    turned = _pixels(page, "#view-result")
    assert np.abs(turned - still).sum(axis=2).astype(bool).mean() > 0.05, "orbit drew nothing"
    before = _saturated(turned)
    page.mouse.wheel(0, -600)  # zoom in: the mesh covers more of the canvas
    time.sleep(0.3)
    assert _saturated(_pixels(page, "#view-result")) > before * 1.2, "zoom drew nothing"


def test_page_shows_upload_progress_and_cancels_an_upload(page, base_url, settings):
    _open(page, base_url)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    # a slow link (the bunny, 2.4 MB, takes about 4 s at 600 kB/s): progress shows mid-way
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 600_000},
    )
    page.evaluate(
        """() => { window.seen = [];
                   setInterval(() => window.seen.push(
                     document.getElementById('upload-progress').value), 20); }"""
    )
    page.set_input_files("#file", str(mesh_path("stanford-bunny.obj")))
    page.click("#submit")
    page.wait_for_function("window.seen.some((v) => v > 0.2 && v < 0.8)")
    assert " of " in page.inner_text("#upload-text")  # "1.1 MB of 2.4 MB"
    page.click("#cancel")  # mid-upload: aborted, nothing queued
    page.wait_for_selector("body[data-job-state=cancelled]")
    assert "nothing was queued" in page.inner_text("#job-state")
    time.sleep(0.5)
    jobs = settings.blob_root / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())  # no job, no blob
