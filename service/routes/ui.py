"""The browser page at ``/``: plain HTML, CSS and JavaScript modules from ``service/static/``,
and three.js from the ``node_modules`` that ``./dev.sh`` installs with ``npm ci`` beside
``package.json`` (no copy in the repository, no CDN, no build step).

The page imports ``three`` and ``three/addons/`` through an import map that points at
``/vendor/three/``; only three's ``build/`` and ``examples/jsm/`` folders are served.

The interactive API documentation at ``/docs`` is Swagger UI from the same ``node_modules``
(``swagger-ui-dist``, served at ``/vendor/swagger-ui/``) in place of FastAPI's default page, which
loads it from a CDN and is blank without internet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

STATIC = Path(__file__).resolve().parent.parent / "static"


def _node_module(name: str, probe: str) -> Path:
    """An npm package's folder: beside ``package.json`` in a checkout, else in the working
    directory's ``node_modules`` (the API image puts it in ``/app``); ``probe`` is a path in the
    package that shows it is installed."""
    candidates = [Path(__file__).resolve().parents[2] / "node_modules", Path.cwd() / "node_modules"]
    for folder in candidates:
        if (folder / name / probe).exists():
            return folder / name
    return candidates[0] / name


def _three() -> Path:
    return _node_module("three", "build")


#: the files of swagger-ui-dist that /docs loads
SWAGGER = "/vendor/swagger-ui"
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")


router = APIRouter(include_in_schema=False)


@router.get("/")
def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


def _docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from ``node_modules``; the app is made with ``docs_url=None``."""
    swagger = _node_module("swagger-ui-dist", SWAGGER_FILES[0])

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        if not (swagger / SWAGGER_FILES[0]).is_file():
            return HTMLResponse(
                "<!doctype html><title>Tessera API</title><p>Swagger UI is not installed: run "
                "<code>npm ci</code> beside <code>package.json</code> (<code>./dev.sh setup</code>"
                ' does). The API document itself is at <a href="openapi.json">openapi.json</a>.',
                status_code=503,
            )
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        )

    for name in SWAGGER_FILES:  # only these files of the package, not its whole folder
        app.add_api_route(
            f"{SWAGGER}/{name}", _file(swagger / name), methods=["GET"], include_in_schema=False
        )


def _file(path: Path) -> Callable[[], FileResponse]:
    def serve() -> FileResponse:
        if not path.is_file():
            raise StarletteHTTPException(404, "Not Found")
        return FileResponse(path)

    return serve


def install(app: FastAPI) -> None:
    """Serve the page, its assets and three.js (when installed; the page says so when not), and
    the API documentation at ``/docs``."""
    app.include_router(router)
    _docs(app)
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
