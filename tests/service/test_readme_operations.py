"""README.md's operations section is generated from the catalogue; this fails when it drifts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from service import export_readme
from tests.conftest import ROOT
from workers.engine.ops import OPS


def test_readme_operations_section_is_current():
    # rendered in a fresh process without the testing operation, as the export command sees it
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_TEST_OPS"}
    committed = (ROOT / "README.md").read_text()
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.export_readme import update; import sys; "
            "sys.stdout.write(update(sys.stdin.read()))",
        ],
        cwd=ROOT,
        env=env,
        input=committed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == committed, f"README.md's operations section is stale: run {export_readme.COMMAND}"


def test_section_lists_every_operation_and_its_description():
    section = export_readme.render()
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == OPS.names()
    for op in OPS:
        assert f"| `{op.name}` | {op.kind.value} |" in section
        assert op.description in section


def test_update_replaces_only_the_marked_section():
    readme = (
        f"# T\n\nbefore\n\n{export_readme.BEGIN}\n| old | table |\n{export_readme.END}\n\nafter\n"
    )
    out = export_readme.update(readme)
    assert out.startswith("# T\n\nbefore\n\n" + export_readme.BEGIN)
    assert out.endswith(export_readme.END + "\n\nafter\n")
    assert "| old | table |" not in out and export_readme.update(out) == out
    with pytest.raises(export_readme.MarkersMissing):
        export_readme.update("# T\n\nno markers\n")
