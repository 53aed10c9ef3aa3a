"""The page's helpers for a first hour, in real headless Chromium against a real API and worker
(the fixtures of test_page.py): the preview read in the browser before any job, vertex picking
on it, presets, the statistics and reports, recent jobs, copy as curl / Python, output options
shown only where they apply, and the Run button in view."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pytest

from service.schemas import JobCreate
from tests.conftest import ROOT, mesh_path
from tests.service import test_page
from tests.service.test_page import _add, _open, _pixels, _saturated
from workers.engine.io import load_path, save_path
from workers.engine.ops import OPS

pytestmark = pytest.mark.slow

STATIC = ROOT / "service" / "static"

# the API process, worker and Chromium page of test_page.py
base_url = test_page.base_url
page = test_page.page


def _counts(page) -> str:
    return page.inner_text("#input-counts")


def _choose(page, path: Path) -> None:
    page.set_input_files("#file", str(path))
    page.wait_for_function(
        "['shown', 'unsupported'].includes(document.body.dataset.local)", timeout=60_000
    )


def _centre(page, selector: str = "#view-input", dx: float = 0.0, dy: float = 0.0):
    box = page.locator(selector).bounding_box()
    return box["x"] + box["width"] * (0.5 + dx), box["y"] + box["height"] * (0.5 + dy)


def _field(page, op: str, name: str):
    return page.locator(f"#steps > li[data-op={op}] [name={name}]")


def _clear_steps(page) -> None:
    for button in page.locator("#steps button[aria-label^='Remove ']").all():
        button.click()


def _job(base_url: str, page) -> dict:
    return httpx.get(f"{base_url}/v1/jobs/{page.inner_text('#job-id')}").json()


# ---------------------------------------------------------------------------- instant preview
def test_the_chosen_file_is_previewed_in_the_browser_before_any_job(
    page, base_url, tmp_path, settings
):
    _open(page, base_url)
    spot = load_path(mesh_path("spot.obj"))
    _choose(page, mesh_path("spot.obj"))
    assert page.evaluate("document.body.dataset.local") == "shown"
    page.wait_for_selector("#view-input[data-rendered=true]")
    assert f"{spot.n_vertices:,} vertices, {spot.n_faces:,} faces" in _counts(page)
    assert "read in the browser" in _counts(page)
    img = _pixels(page, "#view-input")
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 200, "the preview is blank"
    # nothing was sent: no job, no stored blob
    assert page.inner_text("#job-id") == ""
    jobs = settings.blob_root / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())

    # every format the browser reads: the counts are the service's (same vertex numbering)
    for name in ("spot.ply", "spot.stl", "spot.off", "spot.glb"):
        path = tmp_path / name
        save_path(spot, path)
        want = load_path(path)
        _choose(page, path)
        assert page.evaluate("document.body.dataset.local") == "shown", page.inner_text(
            "#local-note"
        )
        assert f"{want.n_vertices:,} vertices, {want.n_faces:,} faces" in _counts(page), name
    gz = tmp_path / "spot.obj.gz"
    gz.write_bytes(gzip.compress(mesh_path("spot.obj").read_bytes()))
    _choose(page, gz)
    assert page.evaluate("document.body.dataset.local") == "shown"
    assert f"{spot.n_vertices:,} vertices" in _counts(page)

    # a format the browser leaves to the service: said politely, and the service's preview
    # of the stored input appears once the job is submitted
    zipped = tmp_path / "spot.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(mesh_path("spot.obj"), "spot.obj")
    _choose(page, zipped)
    assert page.evaluate("document.body.dataset.local") == "unsupported"
    note = page.inner_text("#local-note")
    assert "not read in the browser" in note and "once the job is submitted" in note
    assert page.get_attribute("#view-input", "data-rendered") == "false"
    _clear_steps(page)
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    page.wait_for_selector("#view-input[data-rendered=true]")
    assert f"{spot.n_vertices:,} vertices" in _counts(page)
    assert "read in the browser" not in _counts(page)

    # a file that is no mesh: said, nothing drawn
    page.set_input_files(
        "#file", files=[{"name": "broken.obj", "mimeType": "text/plain", "buffer": b"hello\n"}]
    )
    page.wait_for_function("document.body.dataset.local === 'unsupported'")
    assert "could not be read here" in page.inner_text("#local-note")


def test_the_input_attributes_come_with_the_service_preview(page, base_url, tmp_path):
    _open(page, base_url)
    mesh = load_path(mesh_path("spot.obj")).run(["gaussian_curvature"], device="cpu").mesh
    path = tmp_path / "curved.ply"
    save_path(mesh, path)
    _choose(page, path)
    assert page.evaluate("document.body.dataset.local") == "shown"
    options = page.eval_on_selector_all("#colour-by option", "os => os.map(o => o.value)")
    assert "vertex.gaussian_curvature" not in options  # the browser reads geometry only
    _clear_steps(page)
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    page.wait_for_function(
        "[...document.querySelectorAll('#colour-by option')]"
        ".some(o => o.value === 'vertex.gaussian_curvature')"
    )
    assert "read in the browser" not in _counts(page)  # the service's reading took over
    _add(page, "geodesic_distance")  # and picking goes on on it (not reduced, same ids)
    page.mouse.click(*_centre(page))
    v = int(page.get_attribute("#pick-status", "data-vertex"))
    where = json.loads(page.get_attribute("#pick-status", "data-position"))
    np.testing.assert_allclose(mesh.V[v], where, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- picking
def test_clicking_the_preview_picks_geodesic_sources(page, base_url):
    _open(page, base_url)
    V = load_path(mesh_path("spot.obj")).V
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "geodesic_distance")
    sources = _field(page, "geodesic_distance", "sources")
    assert sources.get_attribute("data-pick") == "vertices"
    assert "Click the model" in page.inner_text("#pick-status")

    picked = []
    for dx, dy in ((0.0, 0.0), (0.08, -0.05)):
        page.mouse.click(*_centre(page, dx=dx, dy=dy))
        v = int(page.get_attribute("#pick-status", "data-vertex"))
        where = json.loads(page.get_attribute("#pick-status", "data-position"))
        # the browser's vertex numbering is the service's: the picked id sits where it was picked
        np.testing.assert_allclose(V[v], where, rtol=1e-5, atol=1e-6)
        picked.append(v)
    assert picked[0] != picked[1]
    assert [int(t) for t in sources.input_value().split(",")] == picked
    assert page.get_attribute("#view-input", "data-markers") == "2"
    assert _saturated(_pixels(page, "#view-input")) > 20, "no markers drawn"
    # a drag turns the view and picks nothing
    x, y = _centre(page, dx=-0.1)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y + 10, steps=5)
    page.mouse.up()
    assert [int(t) for t in sources.input_value().split(",")] == picked
    # typing updates the markers too
    sources.fill(str(picked[0]))
    assert page.get_attribute("#view-input", "data-markers") == "1"

    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = _job(base_url, page)
    assert job["spec"]["pipeline"][0]["sources"] == [picked[0]]
    assert job["reports"][0]["report"]["sources"] == 1


def test_clicking_the_preview_sets_a_slice_plane_point(page, base_url):
    _open(page, base_url)
    V = load_path(mesh_path("spot.obj")).V
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "slice_plane")
    point = _field(page, "slice_plane", "point")
    normal = _field(page, "slice_plane", "normal")
    point.focus()
    page.mouse.click(*_centre(page))
    v = int(page.get_attribute("#pick-status", "data-vertex"))
    got = [float(t) for t in point.input_value().split(",")]
    np.testing.assert_allclose(got, V[v], rtol=1e-5, atol=1e-6)
    n = [float(t) for t in normal.input_value().split(",")]
    assert len(n) == 3 and abs(np.linalg.norm(n) - 1) < 1e-5  # the screen's up direction
    assert page.get_attribute("#view-input", "data-markers") == "1"
    # focusing the normal: a click sets it to the surface normal there
    normal.fill("")
    normal.focus()
    page.mouse.click(*_centre(page))
    n = [float(t) for t in normal.input_value().split(",")]
    assert abs(np.linalg.norm(n) - 1) < 1e-5
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = _job(base_url, page)
    np.testing.assert_allclose(job["spec"]["pipeline"][0]["point"], V[v], rtol=1e-5, atol=1e-6)
    assert job["stats_after"]["faces"] < job["stats_before"]["faces"]


# ---------------------------------------------------------------------------- reports
def test_statistics_and_reports_are_shown_as_tables(page, base_url):
    _open(page, base_url)
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "weld")
    _add(page, "decimate")
    _field(page, "decimate", "target_ratio").fill("0.5")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = _job(base_url, page)
    assert page.is_visible("#report-box")
    rows = page.eval_on_selector_all(
        "#stats-table tbody tr",
        "rs => rs.map(r => [...r.children].map(c => c.textContent))",
    )
    table = {r[0]: r[1:] for r in rows}
    before, after = job["stats_before"], job["stats_after"]
    assert set(table) == {k.replace("_", " ") for k in set(before) | set(after)}
    assert (
        table["faces"][0] == f"{before['faces']:,}" and table["faces"][1] == f"{after['faces']:,}"
    )
    assert table["faces"][2].startswith("−")  # decimation removed faces
    sections = page.locator("#step-reports .step-report")
    assert sections.count() == len(job["reports"]) == 2
    for i, r in enumerate(job["reports"]):
        text = sections.nth(i).inner_text()
        assert f"Step {i + 1} · {r['op']}" in text
        for key in r["report"]:
            assert key.replace("_", " ") in text
    assert "target_ratio = 0.5" in sections.nth(1).inner_text()


# ---------------------------------------------------------------------------- recent jobs
def test_recent_jobs_are_kept_and_reopen(page, base_url):
    _open(page, base_url)
    page.evaluate("localStorage.clear()")
    _open(page, base_url)
    assert page.is_visible("#recent-empty")
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "mean_curvature")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    first = page.inner_text("#job-id")
    stored = page.evaluate("JSON.parse(localStorage.getItem('tessera.recentJobs'))")
    assert stored[0]["id"] == first and stored[0]["file"] == "spot.obj"
    assert stored[0]["pipeline"] == ["mean_curvature"] and stored[0]["state"] == "succeeded"
    assert stored[0]["time"]

    # another job, then a fresh page: both listed, newest first
    page.goto(f"{base_url}/")
    page.wait_for_selector("body[data-ready=true]")
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "edge_lengths")
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    second = page.inner_text("#job-id")
    page.goto(f"{base_url}/")
    page.wait_for_selector("body[data-ready=true]")
    ids = page.eval_on_selector_all("#recent .recent-job", "bs => bs.map(b => b.dataset.id)")
    assert ids[:2] == [second, first]
    assert "mean_curvature" in page.inner_text(f"#recent .recent-job[data-id='{first}']")

    # a click opens the job: its state, downloads, report and previews
    page.click(f"#recent .recent-job[data-id='{first}']")
    page.wait_for_selector("body[data-job-state=succeeded]")
    assert page.inner_text("#job-id") == first
    assert page.is_visible("#download-result") and page.is_visible("#report-box")
    page.wait_for_selector("#view-result[data-rendered=true]")
    page.wait_for_selector("#view-input[data-rendered=true]")
    assert page.input_value("#colour-by") == "vertex.mean_curvature"
    assert page.get_attribute(f"#recent .recent-job[data-id='{first}']", "aria-current") == "true"
    # the address names it: a reload shows it again, and its settings can go back in the form
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.inner_text("#job-id") == first
    page.click("#reuse-spec")
    steps = page.eval_on_selector_all("#steps > li", "ls => ls.map(l => l.dataset.op)")
    assert steps == ["mean_curvature"]

    # a job the service no longer knows: said so, and the list marks it
    page.evaluate(
        """() => { const l = JSON.parse(localStorage.getItem('tessera.recentJobs'));
                   l.unshift({id: 'job_gone', file: 'old.obj', pipeline: [], state: 'succeeded',
                              time: new Date().toISOString()});
                   localStorage.setItem('tessera.recentJobs', JSON.stringify(l)); }"""
    )
    page.goto(f"{base_url}/")
    page.wait_for_selector("body[data-ready=true]")
    page.click("#recent .recent-job[data-id='job_gone']")
    page.wait_for_selector("body[data-job-state=expired]")
    assert "no longer known" in page.inner_text("#job-state")
    assert "expired" in page.inner_text("#recent .recent-job[data-id='job_gone']")


# ---------------------------------------------------------------------------- presets
def test_every_preset_is_a_valid_job_for_the_catalogue():
    presets = json.loads((STATIC / "presets.json").read_text())["presets"]
    assert len(presets) >= 3
    for p in presets:
        assert p["name"] and p["description"]
        JobCreate.model_validate(p["spec"])  # raises on an unknown op or parameter
        for step in p["spec"]["pipeline"]:
            assert step["op"] in OPS.names(), (p["name"], step)
            params = OPS.get(step["op"]).catalogue_entry()["params"]["properties"]
            assert set(step) - {"op"} <= set(params), (p["name"], step)


def test_presets_fill_the_form(page, base_url):
    _open(page, base_url)
    presets = json.loads((STATIC / "presets.json").read_text())["presets"]
    offered = page.eval_on_selector_all("#preset option", "os => os.map(o => o.textContent)")
    assert offered[1:] == [p["name"] for p in presets]
    _choose(page, mesh_path("spot.obj"))
    for p in presets:
        page.select_option("#preset", label=p["name"])
        page.click("#use-preset")
        steps = page.eval_on_selector_all("#steps > li", "ls => ls.map(l => l.dataset.op)")
        assert steps == [s["op"] for s in p["spec"]["pipeline"]]
        assert p["description"] in page.inner_text("#preset-about")
    # the last preset's job, as submitted, carries the preset's settings
    page.select_option("#preset", label="Decimate to 50 %")
    page.click("#use-preset")
    assert _field(page, "decimate", "target_ratio").input_value() == "0.5"
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = _job(base_url, page)
    want = next(p for p in presets if p["name"] == "Decimate to 50 %")["spec"]["pipeline"]
    for got, step in zip(job["spec"]["pipeline"], want, strict=True):
        assert got == {**got, **step}


# ---------------------------------------------------------------------------- copy as curl / Python
def test_copy_as_curl_and_python_run_the_same_job(page, base_url, tmp_path):
    _open(page, base_url)
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)
    _add(page, "vertex_normals")
    _field(page, "vertex_normals", "weighting").select_option("angle")
    _add(page, "mean_curvature")
    # the page's own submission is the reference
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    spec = _job(base_url, page)["spec"]

    shutil.copy(mesh_path("spot.obj"), tmp_path / "spot.obj")
    page.click("#copy-curl")
    curl = page.input_value("#request-text")
    assert curl.startswith("curl ") and "Tessera-Spec:" in curl and "filename=spot.obj" in curl
    assert f"{base_url}/v1/jobs" in curl
    assert shutil.which("curl"), "curl is needed to run the copied command"
    out = subprocess.run(["sh", "-c", curl], cwd=tmp_path, capture_output=True, check=True)
    job = json.loads(out.stdout)
    done = httpx.get(f"{base_url}/v1/jobs/{job['id']}", params={"wait": 60}, timeout=90).json()
    assert done["state"] == "succeeded", done
    assert done["spec"] == spec
    assert done["input"]["name"] == "spot.obj"

    page.click("#copy-python")
    script = page.input_value("#request-text")
    assert script.startswith("from tessera import Client")
    assert '"weighting": "angle"' in script and f'Client("{base_url}")' in script
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = load_path(tmp_path / "spot.ply")  # downloaded by the script
    assert result.n_faces == load_path(mesh_path("spot.obj")).n_faces
    assert "mean_curvature" in result.vertex_attrs and "vertex_normals" in result.vertex_attrs
    job_id = out.stdout.split()[0]
    assert httpx.get(f"{base_url}/v1/jobs/{job_id}").json()["spec"] == spec

    # several files: the multipart form, one `mesh` part each
    page.set_input_files("#file", [str(mesh_path("spot.obj")), str(mesh_path("spot.obj"))])
    page.click("#copy-curl")
    curl = page.input_value("#request-text")
    assert curl.count("-F 'mesh=@spot.obj'") == 2 and "-F 'spec=" in curl


# ---------------------------------------------------------------------------- expert options
def test_output_options_show_only_where_they_apply(page, base_url):
    _open(page, base_url)
    _choose(page, mesh_path("spot.obj"))
    _clear_steps(page)

    def shown(name: str) -> bool:
        return page.is_visible(f"#output-fields [name={name}]")

    assert not shown("polygons") and not shown("matrix_format") and shown("format")
    assert not shown("compression")  # Draco compresses GLB only
    page.select_option("#output-fields [name=format]", "glb")
    assert shown("compression")
    page.select_option("#output-fields [name=format]", "ply")
    assert not shown("compression")
    _add(page, "laplacian_matrix")
    assert shown("matrix_format") and not shown("polygons")
    _add(page, "subdivide")
    assert shown("polygons")  # PLY can write the quads
    page.select_option("#output-fields [name=format]", "stl")
    assert not shown("polygons")  # STL holds triangles only
    page.select_option("#output-fields [name=format]", "obj")
    assert shown("polygons")
    page.click("button[aria-label='Remove subdivide']")
    assert not shown("polygons")
    page.select_option("#output-fields [name=matrix_format]", "mtx")
    # hidden options are not sent (the service's default applies)
    page.click("#copy-curl")
    sent = page.input_value("#request-text")
    assert '"matrix_format":"mtx"' in sent and "polygons" not in sent
    page.click("#submit")
    page.wait_for_selector("body[data-job-state=succeeded]")
    job = _job(base_url, page)
    assert job["spec"]["output"]["matrix_format"] == "mtx"
    assert all(a["filename"].endswith(".mtx") for a in job["artifacts"].values())


# ---------------------------------------------------------------------------- the Run button
@pytest.mark.parametrize("width,height", [(1280, 720), (390, 844), (360, 640)])
def test_the_run_button_is_in_view_without_scrolling(page, base_url, width, height):
    page.set_viewport_size({"width": width, "height": height})
    _open(page, base_url)

    def in_view() -> bool:
        box = page.locator("#submit").bounding_box()
        return (
            box is not None
            and box["x"] >= 0
            and box["y"] >= 0
            and box["x"] + box["width"] <= width
            and box["y"] + box["height"] <= height
            and page.evaluate(
                """() => { const b = document.getElementById('submit').getBoundingClientRect();
                           const hit = document.elementFromPoint(b.x + b.width / 2,
                                                                 b.y + b.height / 2);
                           return hit && hit.closest('#submit') !== null; }"""
            )
        )

    assert page.evaluate("window.scrollY") == 0
    assert in_view()
    # a long pipeline makes the form taller than the window: still in view
    _choose(page, mesh_path("spot.obj"))
    for op in ("weld", "repair", "decimate", "vertex_normals", "isotropic_remesh"):
        _add(page, op)
    assert page.evaluate("document.documentElement.scrollHeight") > height
    assert in_view()
    # and reachable from the keyboard: the pipeline runs with Enter on it
    page.focus("#submit")
    assert page.evaluate("document.activeElement.id") == "submit"
