"""``python -m reliability chaos|redis|load [options]``: see each module's docstring."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from . import chaos, load, redis_faults


def _context() -> dict[str, str]:
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    cpus = len(__import__("os").sched_getaffinity(0))
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "machine": f"{platform.machine()}, {cpus} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}",
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m reliability", description=__doc__)
    ap.add_argument("--keep", action="store_true", help="keep the run's folder (logs, data)")
    ap.add_argument("--out", help="append the figures as one JSON line to this file")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chaos", help=chaos.__doc__.splitlines()[0])
    c.add_argument("--workers", type=int, default=4)
    c.add_argument("--jobs", type=int, default=50)
    c.add_argument("--child-kills", type=int, default=20)
    c.add_argument("--worker-kills", type=int, default=3)
    c.add_argument("--lease", type=float, default=20.0)
    c.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("redis", help=redis_faults.__doc__.splitlines()[0])
    r.add_argument("--workers", type=int, default=3)
    r.add_argument("--clients", type=int, default=8)
    r.add_argument("--before", type=float, default=10.0)
    r.add_argument("--down", type=float, default=5.0)
    r.add_argument("--after", type=float, default=10.0)
    r.add_argument("--settle", type=float, default=240.0)
    r.add_argument("--lease", type=float, default=20.0)
    ld = sub.add_parser("load", help=load.__doc__.splitlines()[0])
    ld.add_argument("--clients", type=int, default=300)
    ld.add_argument("--seconds", type=float, default=120.0)
    ld.add_argument("--workers", type=int, default=2)
    ld.add_argument("--api-processes", type=int, default=1)
    ld.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    ctx = _context()
    print(json.dumps(ctx), flush=True)
    mod = {"chaos": chaos, "redis": redis_faults, "load": load}[args.cmd]
    figures = mod.run(args)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(json.dumps({"run": args.cmd, **ctx, "figures": figures}) + "\n")


if __name__ == "__main__":
    main()
