"""``python -m service.export_openapi``: write ``openapi/openapi.json`` from the app."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .config import Settings
from .main import create_app

TARGET = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"


def render() -> str:
    app = create_app(Settings())
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(render())
    sys.stdout.write(f"wrote {TARGET}\n")


if __name__ == "__main__":
    main()
