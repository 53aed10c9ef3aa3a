"""The deployment files (``docker/``) against the code they deploy.

No Docker engine runs here, so the images are not built; these checks catch what drifts
silently instead: a file the images copy that moved, an extra or an entry point that was
renamed, an environment variable that no setting reads (settings ignore unknown variables), a
secret written into the compose file, a service without a health check, two workers on one GPU,
and a worker health check that looks for another name than the one the worker heartbeats as.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices

from workers.queue import keys
from workers.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))


def instructions(path: Path) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


def setting_variables() -> set[str]:
    """Every environment variable a :class:`Settings` field is read from."""
    names = set()
    for field, info in Settings.model_fields.items():
        names.add(f"TESSERA_{field.upper()}")
        if isinstance(info.validation_alias, AliasChoices):
            names.update(str(c) for c in info.validation_alias.choices)
    return names


def declared_extras() -> set[str]:
    """The extras pyproject.toml declares (read from the file, not from an installed package's
    metadata: the GPU host runs the suite from the working tree, without installing it)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[)", text, re.M | re.S)
    assert section, "pyproject.toml declares optional dependencies"
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=", section.group(1), re.M))


def test_extras_are_read_from_pyproject() -> None:
    assert declared_extras() >= {"gpu", "gpu-cuda12", "s3", "bench", "dev"}


def test_there_are_an_api_and_a_worker_image() -> None:
    assert [p.name for p in DOCKERFILES] == ["api.Dockerfile", "worker.Dockerfile"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_copy_what_exists_and_install_known_extras(dockerfile: Path) -> None:
    extras = declared_extras()
    assert {"gpu", "s3"} <= extras
    found = re.search(r"^include = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert found, "pyproject.toml names the packages to install"
    packages = re.findall(r'"([^"]+)"', found.group(1))
    assert packages
    copied = set()
    for word, args in instructions(dockerfile):
        if word == "COPY" and not args.startswith("--from"):
            *sources, _ = args.split()
            for src in sources:
                assert (ROOT / src).exists(), f"{dockerfile.name} copies {src}, which is not here"
                copied.add(src.rstrip("/"))
        if word == "RUN" and "pip install" in args:
            for group in re.findall(r'"\.\[([a-z0-9,-]+)\]"', args):
                assert set(group.split(",")) <= extras, f"{dockerfile.name}: extras {group}"
    # every package the project installs is in the image
    assert {p.rstrip("*") for p in packages} <= copied
    assert {"pyproject.toml", "README.md"} <= copied


def test_entry_points_exist() -> None:
    api = dict(instructions(DOCKER / "api.Dockerfile"))
    cmd = json.loads(api["CMD"])
    assert cmd[:2] == ["uvicorn", "--factory"]
    module, attr = cmd[2].split(":")
    assert callable(getattr(importlib.import_module(module), attr))
    worker = dict(instructions(DOCKER / "worker.Dockerfile"))
    # exec form: the supervisor is PID 1, which the worker health check relies on
    assert json.loads(worker["CMD"]) == ["python", "-m", "workers"]
    assert importlib.util.find_spec("workers.__main__") is not None


def test_compose_services_are_checked_and_configured_by_known_settings() -> None:
    c = compose()
    services = c["services"]
    assert {"redis", "s3", "api"} <= set(services)
    for name, svc in services.items():
        assert "healthcheck" in svc and svc["healthcheck"]["test"], f"{name} has no health check"
    assert services["redis"]["command"][:3] == ["redis-server", "--appendonly", "yes"]
    known = setting_variables()
    for name, svc in services.items():
        if name in ("redis", "s3"):
            continue
        env = svc["environment"]
        unknown = {k for k in env if k.startswith("TESSERA_")} - known
        assert not unknown, f"{name} sets variables no setting reads: {sorted(unknown)}"


def test_compose_holds_no_secret() -> None:
    """Every credential in the compose file comes from the environment (``docker/.env``)."""
    text = (DOCKER / "compose.yml").read_text()
    c = compose()
    for name, svc in c["services"].items():
        for k, v in (svc.get("environment") or {}).items():
            if re.search(r"SECRET|KEY|PASSWORD|TOKEN", k):
                assert re.fullmatch(r"\$\{[A-Z0-9_]+(:[?-].*)?\}", str(v)), (name, k, v)
    for cfg in (c.get("configs") or {}).values():
        for value in re.findall(r'"(?:accessKey|secretKey)":\s*"([^"]*)"', cfg["content"]):
            assert value.startswith("${"), value
    assert "BEGIN PRIVATE KEY" not in text


def test_each_worker_has_its_own_gpu_and_a_matching_health_check() -> None:
    services = compose()["services"]
    workers = {n: s for n, s in services.items() if n.startswith("worker")}
    assert workers
    gpus = []
    for name, svc in workers.items():
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["capabilities"] == ["gpu"]
        (gpu,) = device["device_ids"]
        gpus.append(gpu)
        check = " ".join(svc["healthcheck"]["test"])
        # the supervisor heartbeats as host:pid into this sorted set; in the container it is PID 1
        assert f"zscore('{keys.WORKERS}', socket.gethostname() + ':1')" in check, name
    assert len(set(gpus)) == len(gpus), f"workers share a GPU: {gpus}"


def test_worker_heartbeat_name_is_host_and_pid(tmp_path: Path) -> None:
    """What the compose health check assumes of a supervisor started without a name."""
    import os
    import socket

    from workers.supervisor import Supervisor

    sup = Supervisor(Settings(data_dir=tmp_path, worker_name=None))
    assert sup.name == f"{socket.gethostname()}:{os.getpid()}"
    sup.client.close()
