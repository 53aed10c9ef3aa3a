"""``/docs`` in real headless Chromium with every request off this machine blocked: Swagger UI
comes from ``node_modules`` (``swagger-ui-dist``), so the page works without internet."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.live import LiveApi, live_settings
from tests.service.helpers import assert_problem
from tests.service.test_page import ARGS, CHROMIUM, TIMEOUT_MS

pytestmark = pytest.mark.slow


@pytest.fixture
def api(redis_client, redis_url, tmp_path) -> Iterator[str]:
    live = LiveApi(live_settings(redis_url, tmp_path / "data")).start()
    try:
        yield live.url
    finally:
        live.stop()


def test_docs_render_every_operation_with_the_network_cut_off(api):
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} missing: ./dev.sh test installs it (apt-get install chromium)")
    blocked: list[str] = []
    errors: list[str] = []

    def only_local(route) -> None:
        host = urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:  # what a machine without internet would see
            blocked.append(route.request.url)
            route.abort("internetdisconnected")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            pg = browser.new_page()
            pg.set_default_timeout(TIMEOUT_MS)
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.route("**/*", only_local)
            pg.goto(api + "/docs")
            pg.wait_for_selector(".opblock")
            paths = pg.eval_on_selector_all(
                ".opblock .opblock-summary-path",
                "ps => ps.map(p => p.innerText.replace(/\u200b/g, '').trim())",
            )
            title = pg.inner_text(".info .title")
            # an operation opens with its parameters and responses
            pg.locator(".opblock-get .opblock-summary").first.click()
            pg.wait_for_selector(".opblock.is-open .responses-wrapper")
            opened = pg.inner_text(".opblock.is-open")
        finally:
            browser.close()

    assert not blocked, f"/docs asked for files off this machine: {blocked}"
    assert not errors, errors
    assert "Tessera" in title
    for route in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/result", "/v1/operations"):
        assert route in paths, paths
    assert "Responses" in opened and "200" in opened


def test_docs_load_only_the_service_own_files(client):
    html = client.get("/docs").text
    assert "/vendor/swagger-ui/swagger-ui-bundle.js" in html and "//cdn" not in html
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"):
        r = client.get(f"/vendor/swagger-ui/{name}")
        assert r.status_code == 200, f"{name} missing: ./dev.sh setup runs npm ci"
    assert client.get("/vendor/swagger-ui/swagger-ui-bundle.js").text.count("SwaggerUIBundle") > 0
    # only the files /docs loads, not the rest of the package
    assert_problem(client.get("/vendor/swagger-ui/package.json"), 404, "route.not_found")
    assert_problem(client.get("/vendor/swagger-ui/index.html"), 404, "route.not_found")
