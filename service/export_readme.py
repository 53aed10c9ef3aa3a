"""``python -m service.export_readme``: write README.md's operations table from the catalogue.

Only the text between ``<!-- operations:begin -->`` and ``<!-- operations:end -->`` is generated
(a table of every operation's name, kind, backends and summary, then each full description); the
rest of the README is written by hand. ``tests/service/test_readme_operations.py`` fails when the
committed section differs from what this renders.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workers.engine.ops import OPS, OpKind

TARGET = Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- operations:begin -->"
END = "<!-- operations:end -->"
COMMAND = "python -m service.export_readme"


class MarkersMissing(ValueError):
    """The README has no (or an unordered) pair of operations markers."""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The generated section, markers included."""
    lines = [
        BEGIN,
        f"<!-- generated from the operation registry by `{COMMAND}`: edit the operations -->",
        "",
        "| operation | kind | backends | what it does |",
        "|---|---|---|---|",
    ]
    for op in OPS:
        backends = ", ".join(op.catalogue_entry()["backends"])
        lines.append(f"| `{op.name}` | {op.kind.value} | {backends} | {_cell(op.summary)} |")
    lines += ["", "Kinds:", ""]
    lines += [f"- **{k.value}**: {k.meaning}" for k in OpKind if any(op.kind is k for op in OPS)]
    for op in OPS:
        lines += [
            "",
            f"<details><summary><code>{op.name}</code>: {op.summary}</summary>",
            "",
            op.description,
            "",
            "</details>",
        ]
    lines.append(END)
    return "\n".join(lines)


def update(readme: str) -> str:
    """``readme`` with the text between the markers (and the markers) replaced by :func:`render`."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise MarkersMissing(f"README.md needs the lines {BEGIN} and {END}, in that order")
    return readme[:start] + render() + readme[end + len(END) :]


def main() -> None:
    TARGET.write_text(update(TARGET.read_text()))
    sys.stdout.write(f"wrote the operations section of {TARGET}\n")


if __name__ == "__main__":
    main()
