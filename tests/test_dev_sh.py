"""``./dev.sh``: ``run`` installs what running needs, ``test`` adds the development extras, and
each installs again only when ``pyproject.toml`` changed. Run on a copy of the script with an
environment whose ``python`` and ``tessera`` only write down how they were called."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.conftest import ROOT

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
"""


def checkout(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("dev.sh", "pyproject.toml", "package.json", "package-lock.json"):
        shutil.copy2(ROOT / name, repo / name)
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / ".tessera-installed").touch()  # npm ci done
    log = tmp_path / "calls.log"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for exe in ("python", "tessera"):
        (venv / "bin" / exe).write_text(FAKE.format(log=log))
        (venv / "bin" / exe).chmod(0o755)
    # `test` installs Debian's chromium where it is missing (a host without it, as the offline
    # GPU host): an apt-get that only writes down its call
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin" / "apt-get").write_text(FAKE.format(log=log))
    (tmp_path / "sbin" / "apt-get").chmod(0o755)
    return repo, venv, log


def dev_sh(
    repo: Path, venv: Path, *args: str, processes: str = "2"
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TESSERA_VENV=str(venv), TESSERA_REDIS_URL="redis://127.0.0.1:1/0")
    env["TESSERA_TEST_PROCESSES"] = processes  # the test suite's (as on a 2-core machine)
    env["PATH"] = f"{venv.parent / 'sbin'}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["sh", str(repo / "dev.sh"), *args], env=env, capture_output=True, text=True, timeout=60
    )


def calls(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def installs(lines: list[str]) -> list[str]:
    return [line.split()[-1] for line in lines if " -e " in line]


def test_run_installs_only_what_running_needs_and_test_the_dev_extras(tmp_path):
    repo, venv, log = checkout(tmp_path)

    r = dev_sh(repo, venv, "run", "--port", "8123")
    assert r.returncode == 0, r.stderr
    lines = calls(log)
    assert installs(lines) == ["."]  # no [dev]: pytest, playwright, SeaweedFS... are not needed
    assert lines[-1] == "tessera up --port 8123"
    assert f"the tessera command is {venv}/bin/tessera" in r.stderr

    r = dev_sh(repo, venv, "run")  # installed: straight to the service
    assert r.returncode == 0 and installs(calls(log)) == []

    r = dev_sh(repo, venv, "test", "-x", "tests/x.py")
    assert r.returncode == 0, r.stderr
    lines = calls(log)
    assert installs(lines) == [".[dev]"]
    assert lines[-1] == "python -m pytest -n 2 --dist loadfile -x tests/x.py"
    # on every core, at most 4; one: in pytest's own process
    r = dev_sh(repo, venv, "test", "tests/x.py", processes="16")
    assert calls(log)[-1] == "python -m pytest -n 4 --dist loadfile tests/x.py"
    r = dev_sh(repo, venv, "test", "tests/x.py", processes="1")
    assert calls(log)[-1] == "python -m pytest tests/x.py"
    r = dev_sh(repo, venv, "test", processes="auto")
    assert r.returncode == 2 and "must be a number" in r.stderr and calls(log) == []

    r = dev_sh(repo, venv, "test")  # installed with the extras: nothing again, for either
    assert r.returncode == 0 and installs(calls(log)) == []
    assert dev_sh(repo, venv, "run").returncode == 0 and installs(calls(log)) == []

    time.sleep(0.01)
    later = time.time() + 5
    os.utime(repo / "pyproject.toml", (later, later))  # the dependencies changed
    assert dev_sh(repo, venv, "run").returncode == 0
    assert installs(calls(log)) == ["."]
    assert dev_sh(repo, venv, "test").returncode == 0
    assert installs(calls(log)) == [".[dev]"]
