"""The README's snippets run as written: a newcomer pastes them in order into one terminal.

Every fenced block in the README preceded by ``<!-- readme-test -->`` is run, in order: the shell
blocks as one ``bash`` script (``set -euo pipefail``: any failing command fails the test), the
Python blocks each with the environment's Python, all in one folder holding the repository's
``examples/`` and ``.venv``. The service they talk to is started by the test the way
``./dev.sh run`` starts it (``tessera up``, its own Redis) on a free port: ``8000`` in the blocks
becomes that port, the one change made to them. A quick-start block that is not run must say why
(``<!-- readme-test: skip (...) -->``), so no untested snippet slips into the quick start.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, _free_port
from workers.engine.io import load_path

README = ROOT / "README.md"
MARK = re.compile(
    r"^<!-- readme-test(?P<skip>: skip \((?P<why>[^)]+)\))? -->\n"
    r"```(?P<lang>\w+)\n(?P<body>.*?)^```$",
    re.M | re.S,
)
FENCE = re.compile(r"^```(\w*)$", re.M)


def blocks() -> list[tuple[str, str]]:
    """The marked blocks to run: (language, text), in README order."""
    return [(m["lang"], m["body"]) for m in MARK.finditer(README.read_text()) if not m["skip"]]


def section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_every_quick_start_block_is_run_or_says_why_not():
    quick = section("Quick start")
    fences = FENCE.findall(quick)
    opened = fences[0::2]  # a block's opening fence has its language, the closing one none
    marked = MARK.findall(quick)
    assert opened and len(marked) == len(opened), "a quick-start block without <!-- readme-test -->"
    assert {lang for lang, _ in blocks()} == {"sh", "python"}
    assert "bunny.obj" not in README.read_text()  # not in the repository: examples/spot.obj is


@pytest.fixture
def service(tmp_path) -> Iterator[int]:
    """``tessera up`` (its own Redis, one worker) on a free port, as ``./dev.sh run`` starts it."""
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TESSERA_REDIS_URL", "REDIS_URL", "TESSERA_DATA_DIR", "TESSERA_URL")
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "up", "--port", str(port)]
        + ["--data-dir", str(tmp_path / "data")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        out: list[str] = []
        while not any("Tessera is up" in line for line in out):
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "tessera up exited:\n" + "".join(out)
            out.append(line)
        assert f"export TESSERA_URL=http://127.0.0.1:{port}" in proc.stdout.readline()
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does to the terminal's process group
        try:
            rest, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rest, _ = proc.communicate(timeout=10)
    # a stop is orderly: each worker told once (a second signal is a cold stop) and Redis last,
    # so nothing logs its disappearance
    assert proc.returncode == 0 and "Traceback" not in rest and "cold stop" not in rest, rest
    assert "worker down" in rest


def environment(tmp_path: Path) -> Path:
    """The environment the README's ``.venv`` stands for: the clone's own (CI: ``./dev.sh test``
    made it), else the one running the tests, else (a host whose Python is not a venv) a folder
    whose ``bin/tessera`` and ``bin/python3`` run this interpreter."""
    for venv in (ROOT / ".venv", Path(sys.prefix)):
        if (venv / "bin" / "tessera").is_file() and (venv / "bin" / "python3").exists():
            return venv
    bin_ = tmp_path / "env" / "bin"
    bin_.mkdir(parents=True)
    # scripts, not symlinks: a symlink to a venv's interpreter starts outside that venv (Python
    # looks for pyvenv.cfg beside the name it was started by) and misses its packages
    for name, run in (("python3", ""), ("python", ""), ("tessera", " -m service.cli")):
        (bin_ / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{run} "$@"\n')
        (bin_ / name).chmod(0o755)
    return bin_.parent


@pytest.mark.slow
def test_the_readme_runs_as_written(service, tmp_path):
    work = tmp_path / "newcomer"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    (work / ".venv").symlink_to(environment(tmp_path))  # where ./dev.sh puts it in a clone
    venv = work / ".venv"
    env = {k: v for k, v in os.environ.items() if k not in ("TESSERA_URL", "TESSERA_API_KEY")}
    # the checkout's code, whatever the environment installed (and what the host put there)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)

    def own_port(text: str) -> str:
        return text.replace("127.0.0.1:8000", f"127.0.0.1:{service}")

    shell = [body for lang, body in blocks() if lang == "sh"]
    script = "set -euo pipefail\n" + "\n".join(own_port(b) for b in shell)
    r = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"a README shell block failed:\n{r.stdout}\n{r.stderr}"
    # what the blocks say they make, they made
    spot = load_path(work / "spot.ply")
    assert spot.n_faces == 5856
    assert {"vertex_normals", "gaussian_curvature"} <= set(spot.vertex_attrs)
    assert "vertex_normals" in load_path(work / "spot-normals.ply").vertex_attrs
    assert "gaussian_curvature" in load_path(work / "spot-curvature.ply").vertex_attrs
    assert '"state":"succeeded"' in r.stdout.replace(" ", "")

    for lang, body in blocks():
        if lang != "python":
            continue
        (work / "spot.ply").unlink()
        r = subprocess.run(
            [str(venv / "bin" / "python"), "-c", own_port(body)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, f"a README Python block failed:\n{body}\n{r.stderr}"
        assert load_path(work / "spot.ply").n_faces == 5856
