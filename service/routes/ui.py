"""The browser page at ``/``: plain HTML, CSS and JavaScript modules from ``service/static/``,
and three.js from the ``node_modules`` that ``./dev.sh`` installs with ``npm ci`` beside
``package.json`` (no copy in the repository, no CDN, no build step).

The page imports ``three`` and ``three/addons/`` through an import map that points at
``/vendor/three/``; only three's ``build/`` and ``examples/jsm/`` folders are served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent.parent / "static"


def _three() -> Path:
    """three's folder: beside ``package.json`` in a checkout, else in the working directory's
    ``node_modules`` (the API image puts it in ``/app``)."""
    candidates = [Path(__file__).resolve().parents[2] / "node_modules", Path.cwd() / "node_modules"]
    for folder in candidates:
        if (folder / "three" / "build").is_dir():
            return folder / "three"
    return candidates[0] / "three"


router = APIRouter(include_in_schema=False)


@router.get("/")
def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


def install(app: FastAPI) -> None:
    """Serve the page, its assets and three.js (when installed; the page says so when not)."""
    app.include_router(router)
    three = _three()
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount(
        "/vendor/three/build",
        StaticFiles(directory=three / "build", check_dir=False),
        name="three-build",
    )
    app.mount(
        "/vendor/three/examples/jsm",
        StaticFiles(directory=three / "examples" / "jsm", check_dir=False),
        name="three-addons",
    )
