"""The page's files: ``/``, ``/static/...`` and three.js from node_modules (``/vendor/three/...``).
What the page does is tested in Chromium (``test_page.py``)."""

from __future__ import annotations

import json
import re

from tests.service.helpers import assert_problem


def _import_map(html: str) -> dict[str, str]:
    m = re.search(r'<script type="importmap">(.*?)</script>', html, re.S)
    assert m, "the page has no import map"
    return json.loads(m.group(1))["imports"]  # type: ignore[no-any-return]


def test_page_is_served_at_the_root(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["cache-control"] == "no-cache"
    html = r.text
    assert '<script type="module" src="static/app.js"></script>' in html
    # nothing from elsewhere: every script, style and module is the service's own
    assert not re.search(r'(src|href)="(https?:)?//', html)
    for name in ("app.js", "form.js", "job.js", "viewer.js", "app.css"):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200, name
        kind = "text/css" if name.endswith(".css") else "javascript"
        assert kind in r.headers["content-type"], (name, r.headers["content-type"])
        assert "https://" not in r.text and "http://" not in r.text, name


def test_three_is_served_from_node_modules_through_the_import_map(client):
    imports = _import_map(client.get("/").text)
    module = client.get("/" + imports["three"].removeprefix("./"))
    assert module.status_code == 200, "three.js missing: ./dev.sh setup runs npm ci"
    assert "javascript" in module.headers["content-type"]
    for dep in re.findall(r"from '\./([\w.]+\.js)'", module.text):  # three.core.js
        assert client.get(f"/vendor/three/build/{dep}").status_code == 200, dep
    addons = "/" + imports["three/addons/"].removeprefix("./")
    addon = client.get(addons + "controls/OrbitControls.js")
    assert addon.status_code == 200 and "class OrbitControls" in addon.text
    # only three's build and addons are served, not the rest of node_modules
    assert_problem(client.get("/vendor/three/package.json"), 404, "route.not_found")
    assert_problem(client.get("/vendor/three/build/../package.json"), 404, "route.not_found")


def test_page_routes_stay_out_of_the_api_document(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith(("/static", "/vendor")) for p in paths)
    assert "/v1/jobs/{job_id}/events" in paths and "/v1/jobs/{job_id}/preview" in paths
