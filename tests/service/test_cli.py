"""The ``tessera`` command: ``run`` with no server, ``ops``, and ``up`` (all on one machine)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from service.cli import parse_op
from tests.conftest import ROOT, mesh_path
from tests.service.helpers import spec
from workers.engine.io import load_bytes
from workers.engine.ops import OPS


def tessera(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_parse_op():
    assert parse_op("weld") == {"op": "weld"}
    assert parse_op("weld:tolerance=0.01,relative=true") == {
        "op": "weld",
        "tolerance": 0.01,
        "relative": True,
    }
    assert parse_op("vertex_normals:weighting=angle") == {
        "op": "vertex_normals",
        "weighting": "angle",
    }
    with pytest.raises(SystemExit):
        parse_op("weld:tolerance")


def test_run_writes_ply_with_attributes(tmp_path):
    out = tmp_path / "bunny.ply"
    r = tessera(
        "run",
        str(mesh_path("stanford-bunny.obj")),
        "--op",
        "weld",
        "--op",
        "vertex_normals:weighting=angle",
        "--op",
        "gaussian_curvature",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert "weld" in r.stdout and "34834 vertices" in r.stdout
    mesh = load_bytes(out.read_bytes(), "bunny.ply")
    assert mesh.n_vertices == 34834
    assert set(mesh.vertex_attrs) == {"vertex_normals", "gaussian_curvature"}
    assert mesh.vertex_attrs["gaussian_curvature"].astype(np.float64).sum() == pytest.approx(
        2 * np.pi * -3, abs=1e-3
    )


def test_run_writes_quads_unless_asked_to_triangulate(tmp_path):
    out = tmp_path / "cc.off"
    for flags, corners, faces in (([], 4, 36), (["--triangulate"], 3, 72)):
        cmd = ("run", str(mesh_path("rx-cube.obj")), "--op", "subdivide:scheme=catmull_clark")
        r = tessera(*cmd, "-o", str(out), *flags)
        assert r.returncode == 0, r.stderr
        lines = out.read_bytes().splitlines()
        assert lines[1].split()[1] == str(faces).encode()
        assert all(ln.split()[0] == str(corners).encode() for ln in lines[-faces:])


def test_run_keeps_a_textured_asset_as_a_draco_glb_or_an_obj_zip(tmp_path):
    from tests.conftest import ASSETS

    duck = str(ASSETS / "Duck.glb")
    glb = tmp_path / "duck.glb"
    r = tessera("run", duck, "--op", "weld", "-o", str(glb), "--compression", "draco")
    assert r.returncode == 0, r.stderr
    assert b"KHR_draco_mesh_compression" in glb.read_bytes()[:4000]
    back = load_bytes(glb.read_bytes(), "duck.glb")
    assert back.n_faces == 4212 and "uv" in back.corner_attrs and len(back.materials) == 1
    zipped = tmp_path / "duck.zip"  # .zip: the OBJ with its library and texture
    r = tessera("run", duck, "--op", "weld", "-o", str(zipped))
    assert r.returncode == 0, r.stderr
    assert load_bytes(zipped.read_bytes(), "duck.zip").materials.files
    r = tessera("run", duck, "-o", str(tmp_path / "d.ply"), "--compression", "draco")
    assert r.returncode == 2 and "spec.compression_not_supported" in r.stderr


def test_run_without_input_from_a_source_step(tmp_path):
    out = tmp_path / "sphere.ply"
    mc = 'marching_cubes:field={"resolution":24},isovalue=0.6'
    r = tessera("run", "-", "--op", mc, "--op", "repair", "-o", str(out))
    assert r.returncode == 0, r.stderr
    mesh = load_bytes(out.read_bytes(), "sphere.ply")
    assert mesh.n_faces > 0 and "vertex_normals" in mesh.vertex_attrs
    r = tessera("run", "-", "--op", "weld", "-o", str(out))
    assert r.returncode == 2 and "mesh.empty" in r.stderr


def test_run_reports_errors_with_their_code(tmp_path):
    r = tessera("run", str(mesh_path("rx-cube.obj")), "--op", "nope", "-o", str(tmp_path / "x.ply"))
    assert r.returncode == 2 and "spec.unknown_op" in r.stderr
    r = tessera(
        "run",
        str(mesh_path("rx-cube.obj")),
        "--op",
        "weld:tolerance=-1",
        "-o",
        str(tmp_path / "x.ply"),
    )
    assert r.returncode == 2 and "op.params_invalid" in r.stderr
    # which parameter and why, in words
    r = tessera("run", str(mesh_path("rx-cube.obj")), "--op", "vertex_normals:weighting=bogus",
                "-o", str(tmp_path / "x.ply"))  # fmt: skip
    assert r.returncode == 2
    assert "(vertex_normals); weighting: Input should be 'area', 'angle'" in r.stderr, r.stderr


def test_run_quiet_prints_nothing_on_a_machine_without_cupy(tmp_path):
    """``-q`` means silence: no notice that CuPy is missing (a CPU machine's normal state) on
    either stream; an installed CuPy that cannot run is still worth its warning."""
    from workers.engine import backend

    out = tmp_path / "spot.ply"
    r = tessera("run", str(mesh_path("spot.obj")), "--op", "weld", "-o", str(out), "-q")
    assert r.returncode == 0 and out.is_file()
    assert r.stdout == ""
    if backend._cupy_installed() and not backend.gpu_available():
        assert "device=auto runs on the CPU" in r.stderr
    else:
        assert r.stderr == ""


def test_the_cpu_fallback_is_a_warning_only_where_cupy_is_installed(monkeypatch, caplog):
    import logging

    from workers.engine import backend

    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    for installed, level in ((False, logging.INFO), (True, logging.WARNING)):
        monkeypatch.setattr(backend, "_warned_fallback", False)
        monkeypatch.setattr(backend, "_cupy_installed", lambda i=installed: i)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger=backend.log.name):
            assert backend.resolve("auto") == "numpy"
        assert [r.levelno for r in caplog.records] == [level]


def test_ops_lists_the_catalogue_with_parameters():
    r = tessera("ops")
    assert r.returncode == 0
    blocks: dict[str, list[str]] = {}
    for line in r.stdout.splitlines():
        if line.startswith("    "):  # a parameter of the operation above
            blocks[next(reversed(blocks))].append(line.split()[0])
        else:
            blocks[line.split()[0]] = []
    assert list(blocks) == list(OPS.names())
    for op in OPS:
        params = op.catalogue_entry()["params"].get("properties", {})
        assert blocks[op.name] == [f"{k}={json.dumps(v.get('default'))}" for k, v in params.items()]
    assert "SphereDistance or UploadedVolume" in r.stdout  # nested schemas by name
    one = json.loads(tessera("ops", "vertex_normals", "--json").stdout)
    assert one["name"] == "vertex_normals" and "weighting" in one["params"]["properties"]


def test_ops_name_shows_the_full_description():
    op = OPS.get("geodesic_distance")
    r = tessera("ops", op.name)
    assert r.returncode == 0
    assert r.stdout.startswith(f"{op.name:<26} {op.summary}\n    sources=")
    assert op.description in r.stdout and len(op.description) > 3 * len(op.summary)
    assert "output geodesic_distance: vertex (n_vertices,) float32" in r.stdout
    r = tessera("ops", "nope")
    assert r.returncode == 2 and "spec.unknown_op" in r.stderr and "Traceback" not in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_up_serves_api_with_private_redis_and_a_worker(tmp_path):
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TESSERA_REDIS_URL", "REDIS_URL", "TESSERA_DATA_DIR")
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "up",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        line = ""
        deadline = time.time() + 60
        while "Tessera is up" not in line and time.time() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            assert line or proc.poll() is None, "tessera up exited"
        assert f"http://127.0.0.1:{port}" in line
        # the workers run at a lower priority than the API (--worker-nice 10)
        nice = {}
        for d in Path("/proc").iterdir():
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError):
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[1] == str(proc.pid) and b"-m" in cmd:  # ppid, then "python -m ..."
                nice[cmd[cmd.index(b"-m") + 1].decode()] = int(fields[16]) - os.nice(0)
        assert nice == {"workers": 10, "uvicorn": 0}, nice
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30) as c:
            r = c.post(
                "/v1/jobs",
                files={"mesh": ("bunny.obj", mesh_path("stanford-bunny.obj").read_bytes())},
                data={"spec": spec("weld", "vertex_normals", "gaussian_curvature")},
            )
            assert r.status_code == 202, r.text
            url = r.json()["url"]
            for _ in range(600):
                job = c.get(url).json()
                if job["state"] in ("succeeded", "failed"):
                    break
                time.sleep(0.1)
            assert job["state"] == "succeeded", job
            mesh = load_bytes(c.get(url + "/result").content, "r.ply")
            assert {"vertex_normals", "gaussian_curvature"} <= set(mesh.vertex_attrs)
            assert c.get("/readyz").status_code == 200
        assert (tmp_path / "data" / "redis" / "appendonlydir").is_dir()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


def _up(
    port: int, data: Path, extra_env: dict[str, str] | None = None, **kw: Any
) -> subprocess.Popen[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TESSERA_REDIS_URL", "REDIS_URL", "TESSERA_DATA_DIR")
    }
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "service.cli", "up", "--port", str(port), "--data-dir", str(data)]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
    )


@pytest.mark.slow
def test_up_refuses_a_port_in_use_and_stops_its_components_when_told_during_start(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _up(port, tmp_path / "a")
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "cannot serve on" in out and "Tessera is up" not in out
    # SIGTERM while Redis and the workers start: nothing is left running
    proc = _up(_free_port(), tmp_path / "b", start_new_session=True)
    # once it handles signals (it says so when its Redis is up), while the workers start
    deadline = time.time() + 30
    seen = ""
    while "started a private redis-server" not in seen:
        assert time.time() < deadline and proc.poll() is None, seen
        seen += proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    deadline = time.time() + 15  # a worker's compute child ends just after its supervisor
    while left := subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True).stdout:
        assert time.time() < deadline, f"left running in its session: {left!r}"
        time.sleep(0.2)


def _until_up(proc: subprocess.Popen[str]) -> str:
    deadline = time.time() + 60
    line = ""
    while "Tessera is up" not in line:
        assert time.time() < deadline, "tessera up did not come up"
        line = proc.stdout.readline() if proc.stdout else ""
        assert line or proc.poll() is None, "tessera up exited"
    return line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("grace", "seconds", "after_stop"),
    [(30.0, 3.0, "succeeded"), (2.0, 8.0, "queued")],
    ids=["finishes-within-grace", "handed-back"],
)
def test_ctrl_c_stops_api_then_workers_then_redis_quietly(tmp_path, grace, seconds, after_stop):
    """Ctrl-C (SIGINT to the terminal's foreground group) with a job running: the job finishes
    within the grace or is handed back at no attempt's cost, the command exits within the grace
    and a few seconds, with a few lines and no traceback; the next `tessera up` finishes it."""
    port, data = _free_port(), tmp_path / "data"
    env = {"TESSERA_SHUTDOWN_GRACE_SECONDS": str(grace), "TESSERA_WARM_UP": "false"}
    # a CPU worker, also on a GPU host: a cold GPU compiles the job's kernels (the statistics
    # after its steps included) for 20 s and more, which is not what the grace is about
    env["CUDA_VISIBLE_DEVICES"] = ""
    proc = _up(port, data, env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _until_up(proc)
        job_spec = {
            "pipeline": [
                {"op": "marching_cubes", "field": {"resolution": 16}},
                {"op": "sleep", "seconds": seconds},
            ]
        }
        with httpx.Client(base_url=base, timeout=30) as c:
            url = c.post("/v1/jobs", json=job_spec).json()["url"]
            deadline = time.time() + 30  # the sleep step under way
            while not (c.get(url).json()["stage"] or "").startswith("sleep"):
                assert time.time() < deadline, "the job's sleep step never started"
                time.sleep(0.1)
        time.sleep(0.5)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, _ = proc.communicate(timeout=grace + 30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == 0, out
    assert took < min(grace, seconds) + 6, (took, out)
    assert "Traceback" not in out and "ERROR" not in out, out
    # after the signal: tessera's two lines and the worker's few (the job's own steps aside)
    tail = [ln for ln in out[out.index("stopping:") :].splitlines() if " child[" not in ln]
    assert len(tail) <= 6, out
    assert "killed" not in out, out
    if after_stop == "queued":
        assert "handed" in out and "back on shutdown: queued" in out
    else:
        assert "succeeded" in out
    # the next start: the job is finished, or runs to its end, and the hand-back cost nothing
    proc = _up(port, data, env, start_new_session=True)
    try:
        _until_up(proc)
        with httpx.Client(base_url=base, timeout=60) as c:
            job = c.get(url).json()
            assert job["state"] == after_stop or job["state"] == "running", job
            job = c.get(url, params={"wait": 30}).json()
        assert job["state"] == "succeeded", job
        assert job["attempts"] == 1, job
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=grace + 30)
