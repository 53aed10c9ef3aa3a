"""``openapi/openapi.json`` is generated from the app; this fails when it drifts."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_openapi_document_is_current():
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_TEST_OPS"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.export_openapi import render; import sys; sys.stdout.write(render())",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (ROOT / "openapi" / "openapi.json").read_text()
    assert out == committed, "openapi/openapi.json is stale: run python -m service.export_openapi"
