"""The ``tessera`` command.

tessera up      [--host H] [--port P] [--data-dir D] [--workers N] [--api-workers N]
                                                                      everything on one machine
tessera api     [--host H] [--port P]                                 the HTTP API only
tessera worker  [--name N]                                            one worker (supervisor)
tessera ops     [NAME] [--json]                                       the operation catalogue
tessera run IN --op weld --op vertex_normals:weighting=angle -o OUT   no server at all
tessera submit FILE... --op weld -o OUT [--url URL]                    through a running service
tessera batch DIR --pipeline p.yaml --out DIR [--concurrency N]        a whole folder, resumable
tessera admin workers|jobs|stuck|dead|retry                            the operator's view
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.admin import REDIS_URL_FILE, add_admin
from tessera.cli import COMPRESSION_HELP, TRIANGULATE_HELP, add_commands, parse_op

__all__ = ["build_parser", "main", "parse_op"]

log = logging.getLogger("tessera")


# ----------------------------------------------------------------------------- helpers
def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def start_redis(data_dir: Path, host: str = "127.0.0.1") -> tuple[subprocess.Popen[bytes], str]:
    """A private redis-server with AOF persistence under ``data_dir/redis``."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit(
            "tessera: redis-server not found. Install it (Debian: apt-get install redis-server) "
            "or point TESSERA_REDIS_URL at a Redis you run."
        )
    rdir = data_dir / "redis"
    rdir.mkdir(parents=True, exist_ok=True)
    port = _free_port(host)
    proc = subprocess.Popen(
        [
            exe,
            "--bind",
            host,
            "--port",
            str(port),
            "--dir",
            str(rdir),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(rdir / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_own_group,
    )
    url = f"redis://{host}:{port}/0"
    import redis

    deadline = time.time() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            (data_dir / REDIS_URL_FILE).write_text(url + "\n")  # for `tessera admin`
            return proc, url
        except redis.ConnectionError:
            if proc.poll() is not None or time.time() > deadline:
                msg = f"tessera: redis-server did not start (see {rdir}/redis.log)"
                raise SystemExit(msg) from None
            time.sleep(0.05)


# ----------------------------------------------------------------------------- commands
#: how long the API may take to stop (open long polls and event streams are cut after this)
API_STOP_SECONDS = 5
#: on top of the workers' grace: the time a worker needs to hand its job back and exit
WORKER_STOP_MARGIN_SECONDS = 10.0
#: how long Redis may take to write its last appends and exit
REDIS_STOP_SECONDS = 10.0


def _own_group(nice: int = 0) -> None:
    """In a child of ``tessera up``, before exec: a process group of its own, so that a
    terminal's Ctrl-C (sent to the foreground group) reaches ``tessera up`` alone and it stops
    the components in order; and a SIGTERM when ``tessera up`` dies without stopping them.
    ``nice``: added to its niceness (the workers')."""
    os.setpgid(0, 0)
    if nice:
        os.nice(nice)
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _stop(procs: list[subprocess.Popen[bytes]], wait: float, what: str) -> None:
    """SIGTERM to each of ``procs``, then wait up to ``wait`` seconds for all; SIGKILL to any left
    (said in the log: it is not a clean stop)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + wait
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %s) did not stop within %.0fs: killed", what, p.pid, wait)
            p.kill()
            p.wait()


def _grace_seconds() -> float:
    from workers.settings import Settings

    try:
        return float(Settings().shutdown_grace_seconds)
    except ValueError:  # a malformed setting: the worker itself says so
        return 30.0


def cmd_up(args: argparse.Namespace) -> int:
    """Start Redis (unless one is configured), the workers and the API; stop them all on
    Ctrl-C or SIGTERM, also during the start. Exits non-zero when the API's port is taken or a
    component dies.

    The stop goes in order: the API first (no new jobs), then the workers (a running job may
    finish within ``TESSERA_SHUTDOWN_GRACE_SECONDS``, else it is handed back at no attempt's
    cost), then Redis, which they need until the end. The components run in process groups of
    their own, so a terminal's Ctrl-C reaches only this process; a second Ctrl-C while the
    workers stop tells them to hand their jobs back at once."""
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    _check_port_free(args.host, args.port)
    env = dict(os.environ, TESSERA_DATA_DIR=str(data_dir))
    # glibc then backs large allocations (an upload's bytes, parsed arrays, result pieces) with
    # huge pages: joining and parsing a 300 MB upload was bound by page faults without it
    env.setdefault("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    redis_procs: list[subprocess.Popen[bytes]] = []
    worker_procs: list[subprocess.Popen[bytes]] = []
    api_procs: list[subprocess.Popen[bytes]] = []
    signals = 0
    stopping_workers = False

    def on_signal(_s: int, _f: Any) -> None:
        nonlocal signals
        signals += 1
        if stopping_workers and signals > 1:  # a second Ctrl-C: jobs are handed back now
            for p in worker_procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    failed = False
    try:
        redis_url = os.environ.get("TESSERA_REDIS_URL") or os.environ.get("REDIS_URL")
        if redis_url:
            log.info("using Redis at %s", redis_url)
        else:
            rp, redis_url = start_redis(data_dir)
            redis_procs.append(rp)
            log.info(
                "started a private redis-server at %s (AOF under %s)", redis_url, data_dir / "redis"
            )
        env["TESSERA_REDIS_URL"] = redis_url
        py = sys.executable
        for i in range(args.workers):
            worker_procs.append(
                subprocess.Popen(
                    [py, "-m", "workers", "--name", f"{socket.gethostname()}-w{i}"],
                    env=env,
                    preexec_fn=functools.partial(_own_group, args.worker_nice),
                )
            )
        api_procs.append(
            subprocess.Popen(
                [
                    py,
                    "-m",
                    "uvicorn",
                    "--factory",
                    "service.main:create_app",
                    "--host",
                    args.host,
                    "--port",
                    str(args.port),
                    "--log-level",
                    "warning",
                    "--timeout-graceful-shutdown",
                    str(API_STOP_SECONDS),
                    *(["--workers", str(args.api_workers)] if args.api_workers > 1 else []),
                ],
                env=env,
                preexec_fn=_own_group,
            )
        )
        procs = [*redis_procs, *worker_procs, *api_procs]
        shown = "localhost" if args.host in ("0.0.0.0", "::") else args.host
        url = f"http://{shown}:{args.port}"
        if not _wait_http(url + "/healthz", procs, lambda: signals > 0):
            failed = signals == 0
            if failed:
                log.error("the API did not come up")
            return 1 if failed else 0
        print(
            f"Tessera is up: {url}  (API docs: {url}/docs, {args.workers} worker(s), "
            f"data in {data_dir}). Ctrl-C stops it.\n"
            f"The tessera command and the Python client find it with: export TESSERA_URL={url}",
            flush=True,
        )
        while not signals and not failed:
            for p in procs:
                if p.poll() is not None:
                    log.error("a component exited (%s, code %s); stopping", p.args, p.returncode)
                    failed = True
            time.sleep(0.2)
    finally:
        grace = _grace_seconds()
        if any(p.poll() is None for p in worker_procs):
            log.info(
                "stopping: the API, then the workers (a running job may finish within %.0fs; "
                "Ctrl-C again hands it back now), then Redis",
                grace,
            )
        _stop(api_procs, API_STOP_SECONDS + 5, "the API")
        stopping_workers = True
        signals = 1  # from here a further signal is a second Ctrl-C
        _stop(worker_procs, grace + WORKER_STOP_MARGIN_SECONDS, "a worker")
        _stop(redis_procs, REDIS_STOP_SECONDS, "redis-server")
        if worker_procs:
            log.info("stopped")
    return 1 if failed else 0


def _check_port_free(host: str, port: int) -> None:
    """Refuse to start when something already listens on the API's port (its health check would
    answer for ours)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            raise SystemExit(f"tessera: cannot serve on {host}:{port}: {exc.strerror}") from None


def _wait_http(
    url: str, procs: list[subprocess.Popen[bytes]], stopping: Callable[[], bool]
) -> bool:
    """Whether the API answered its health check before a component died, a minute passed or
    ``stopping()`` said so."""
    import httpx

    deadline = time.time() + 60
    while time.time() < deadline and not stopping():
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if any(p.poll() is not None for p in procs):
            return False
        time.sleep(0.2)
    return False


def cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run(
        "service.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        log_level="info",
        workers=args.workers if args.workers > 1 else None,
    )
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from workers.__main__ import main as worker_main

    worker_main((["--name", args.name] if args.name else []) + ["--log-level", args.log_level])
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from workers.engine.ops import OPS

    if args.name and args.name not in OPS:
        print(f'tessera: spec.unknown_op: no operation "{args.name}"', file=sys.stderr)
        return 2
    if args.json:
        entry = OPS.get(args.name).catalogue_entry() if args.name else OPS.catalogue()
        print(json.dumps(entry, indent=2))
        return 0
    for op in [OPS.get(args.name)] if args.name else OPS:
        entry = op.catalogue_entry()
        print(f"{op.name:<26} {op.summary}")
        for name, prop in entry["params"].get("properties", {}).items():
            arg = f"{name}={json.dumps(prop.get('default'))}"
            print(f"    {arg:<26} {param_type(prop):<22} {prop.get('description', '')}")
    if args.name:  # one operation: what it does in full, and what it produces
        op = OPS.get(args.name)
        backends = ", ".join(op.catalogue_entry()["backends"])
        print(f"\n{op.kind.value} operation ({backends})\n\n{op.description}")
        for name, out in op.outputs.items():
            about = f"{out.element.value} {out.shape} {out.dtype}: {out.description}"
            print(f"\noutput {name}: {about}")
        if op.reports:
            print(f"\nreport: {op.reports}")
    return 0


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e7 else f"{x:g}"


def param_type(prop: dict[str, Any]) -> str:
    """A parameter's JSON Schema in a few characters: ``number 0..1e6``, ``area|angle``."""
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(param_type(p) for p in prop["anyOf"])
    if "$ref" in prop:  # a nested object: its schema's name (``tessera ops NAME --json`` shows it)
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    kind = str(prop.get("type", "any"))
    if kind == "array":
        kind = f"[{param_type(prop.get('items', {}))}]"
    lo = prop.get("minimum", prop.get("exclusiveMinimum"))
    hi = prop.get("maximum", prop.get("exclusiveMaximum"))
    if lo is not None or hi is not None:
        left = "" if lo is None else ("(" if "exclusiveMinimum" in prop else "[") + _num(lo)
        right = "" if hi is None else _num(hi) + (")" if "exclusiveMaximum" in prop else "]")
        kind += f" {left}..{right}"
    return kind


def save_artifacts(artifacts: dict[str, Any], output: str) -> list[str]:
    """Artifacts beside the output file: ``<stem>.<name>.npz`` (SciPy sparse)."""
    from workers.engine.artifacts import serialize_matrix

    stem = str(Path(output).with_suffix(""))
    written = []
    for name, value in artifacts.items():
        path = f"{stem}.{name}.npz"
        Path(path).write_bytes(serialize_matrix(value, "npz"))
        written.append(path)
    return written


def cmd_run(args: argparse.Namespace) -> int:
    from workers.engine import EngineError, TriMesh

    steps = [parse_op(o) for o in args.op]
    try:
        t0 = time.perf_counter()
        if args.input == "-":  # no input: the first step makes the mesh (marching_cubes)
            import numpy as np

            from workers.engine.pipeline import run_pipeline

            mesh = TriMesh(np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.int32))
            t1 = time.perf_counter()
            result = run_pipeline(None, steps, device=args.device)
        else:
            mesh = TriMesh.load(args.input)
            t1 = time.perf_counter()
            result = mesh.run(steps, device=args.device)
        t2 = time.perf_counter()
        result.mesh.save(
            args.output,
            attributes=args.attribute or None,
            polygons=not args.triangulate,
            compression=args.compression,
        )
        written = save_artifacts(result.artifacts, args.output)
        t3 = time.perf_counter()
    except EngineError as exc:
        print(f"tessera: {engine_error_text(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tessera: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(
            f"{args.input}: {mesh.n_vertices} vertices, {mesh.n_faces} faces (read {t1 - t0:.3f}s)"
        )
        for s in result.steps:
            rep = f" {json.dumps(s.report)}" if s.report else ""
            print(f"  {s.op:<24} {s.seconds:8.3f}s{rep}")
        print(
            f"{args.output}: {result.mesh.n_vertices} vertices, {result.mesh.n_faces} faces "
            f"(write {t3 - t2:.3f}s, {result.backend})"
        )
        for path in written:
            print(f"{path}: artifact")
    return 0


def engine_error_text(exc: Any) -> str:
    """An engine error in words: its code and message, where the parameters are wrong (the
    same words as the client's) and any other detail as JSON."""
    from tessera.errors import where_wrong

    detail = dict(exc.detail or {})
    where = where_wrong(detail.pop("errors", None))
    op = detail.pop("op", None) if where else None
    head = f"{exc.code}: {exc.message}" + (f" ({op})" if op else "")
    return "; ".join([head, *where]) + (f" {json.dumps(detail)}" if detail else "")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tessera", description="GPU mesh processing.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    up = sub.add_parser("up", help="run Redis (unless TESSERA_REDIS_URL), the API and workers")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--port", type=int, default=8000)
    up.add_argument("--data-dir", default=os.environ.get("TESSERA_DATA_DIR", "./tessera-data"))
    up.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (each with its own compute child); several per GPU let small "
        "jobs pass a long one",
    )
    up.add_argument("--api-workers", type=int, default=1, help="API processes (uvicorn --workers)")
    up.add_argument(
        "--worker-nice",
        type=int,
        default=10,
        help="niceness added to the workers: where they keep every core busy, the API still "
        "gets its share (a batch's upload runs beside its first chunks; 0: as the API)",
    )
    up.set_defaults(fn=cmd_up)

    api = sub.add_parser("api", help="run the HTTP API")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    api.add_argument("--workers", type=int, default=1, help="API processes")
    api.set_defaults(fn=cmd_api)

    w = sub.add_parser("worker", help="run one worker")
    w.add_argument("--name")
    w.add_argument("--log-level", default="INFO")
    w.set_defaults(fn=cmd_worker)

    ops = sub.add_parser("ops", help="list the operations and their parameters")
    ops.add_argument("name", nargs="?", help="one operation: its parameters and full description")
    ops.add_argument("--json", action="store_true", help="the catalogue entry as JSON")
    ops.set_defaults(fn=cmd_ops)

    run = sub.add_parser("run", help="process a file locally, no server")
    run.add_argument(
        "input", help="mesh file; '-' for none, when the first step makes the mesh (marching_cubes)"
    )
    run.add_argument("--op", action="append", default=[], metavar="NAME[:k=v,...]")
    run.add_argument("-o", "--output", required=True)
    run.add_argument(
        "--attribute", action="append", metavar="NAME", help="attribute to write (default: all)"
    )
    run.add_argument("--triangulate", action="store_true", help=TRIANGULATE_HELP)
    run.add_argument(
        "--compression", choices=["none", "draco"], default="none", help=COMPRESSION_HELP
    )
    run.add_argument("--device", default="auto", choices=["auto", "gpu", "cpu"])
    run.add_argument("-q", "--quiet", action="store_true")
    run.set_defaults(fn=cmd_run)

    add_admin(sub)
    add_commands(sub)
    return ap


#: commands that print their own results: their log shows warnings only (the services' show info)
QUIET_LOG = frozenset({"run", "ops", "submit", "batch"})


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    level = logging.WARNING if args.cmd in QUIET_LOG else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns progress
    sys.exit(args.fn(args))


if __name__ == "__main__":
    main()
