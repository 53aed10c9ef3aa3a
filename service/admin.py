"""What an operator needs to see and do, without redis-cli (``tessera admin``).

    tessera admin workers [--all]            live workers (--all: also those seen in 10 minutes)
    tessera admin jobs [--state S] [--key K] jobs newest first (every key's, or one key's)
    tessera admin stuck [--running-longer-than S]
                                             running jobs whose lease expired or that run long
    tessera admin dead                       jobs that failed for good (dead letters)
    tessera admin retry ID...                queue dead-lettered jobs again, attempts from zero

It talks to Redis itself, through the queue package (``workers.queue``), not to the API: it is
the operator's tool on the deployment's own network, it works while the API is down or
overloaded, it needs no API key, and retrying a dead letter is an operator's act that the public
API does not offer. Redis is ``TESSERA_REDIS_URL`` (or ``--redis-url``), else the private one a
``tessera up`` with the same ``--data-dir`` started (its URL is kept in ``<data-dir>/redis/url``).
Every command takes ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: where ``tessera up`` notes the URL of the private Redis it started
REDIS_URL_FILE = Path("redis") / "url"


def redis_url(args: argparse.Namespace) -> str:
    url = args.redis_url or os.environ.get("TESSERA_REDIS_URL") or os.environ.get("REDIS_URL")
    if url:
        return str(url)
    noted = Path(args.data_dir) / REDIS_URL_FILE
    if noted.is_file():
        return noted.read_text().strip()
    raise SystemExit(
        f"tessera admin: no Redis: set TESSERA_REDIS_URL, pass --redis-url, or --data-dir of a "
        f"running `tessera up` ({noted} not found)"
    )


def _queue(args: argparse.Namespace) -> Any:
    import redis

    from workers.queue.jobs import JobQueue
    from workers.settings import Settings

    s = Settings()
    client = redis.Redis.from_url(redis_url(args), socket_timeout=10, socket_connect_timeout=5)
    return JobQueue(
        client,
        lease_seconds=s.lease_seconds,
        max_attempts=s.max_attempts,
        job_ttl_seconds=s.job_ttl_seconds,
        tombstone_seconds=s.tombstone_seconds,
    )


def _when(t: float | None) -> str:
    if not t:
        return "-"
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def _error_code(rec: dict[str, Any]) -> str:
    err = rec.get("error") or rec.get("last_error") or {}
    return str(err.get("code") or "-") if isinstance(err, dict) else "-"


def _attempts(rec: dict[str, Any]) -> str:
    counted = int(rec.get("attempt") or 0) - int(rec.get("releases") or 0)
    return f"{max(counted, 0)}/{rec.get('max_attempts') or '-'}"


def _show(
    found: list[dict[str, Any]],
    as_json: bool,
    empty: str,
    header: list[str],
    row: Any,
) -> int:
    """Print ``found`` as JSON, as a table of ``row(record)`` under ``header``, or ``empty``."""
    if as_json:
        print(json.dumps(found, indent=2))
    elif not found:
        print(empty)
    else:
        _table([row(r) for r in found], header)
    return 0


def cmd_workers(args: argparse.Namespace) -> int:
    from workers.queue.registry import workers

    found = workers(_queue(args), live_only=not args.all)

    def row(w: dict[str, Any]) -> list[str]:
        gpu = (w.get("gpu") or {}).get("name") or ""
        backends = ",".join(w.get("backends") or ["(starting)"])
        state = w.get("state") or "running"
        if not w.get("live") and state != "stopped":
            state = "lost"
        return [
            str(w.get("name")),
            state,
            backends + (f" ({gpu})" if gpu else ""),
            ",".join(w.get("jobs") or []) or "idle",
            str(w.get("jobs_done") or 0),
            _ago(float(w.get("age") or 0)),
            str(w.get("version") or "-"),
            f"{w.get('host')}:{w.get('pid')}",
        ]

    empty = "no live workers" if not args.all else "no workers seen in the last 10 minutes"
    header = ["worker", "state", "offers", "running", "done", "seen", "version", "host:pid"]
    return _show(found, args.json, empty, header, row)


def cmd_jobs(args: argparse.Namespace) -> int:
    from workers.queue.listing import list_jobs

    page = list_jobs(
        _queue(args),
        key_id=args.key,
        states=set(args.state) if args.state else None,
        limit=args.limit,
        cursor=args.cursor,
    )
    if args.json:
        print(json.dumps({"data": page.jobs, "next_cursor": page.next_cursor}, indent=2))
        return 0
    rows = [
        [
            str(r["id"]),
            str(r["state"]),
            _when(r.get("created_at")),
            _attempts(r),
            str(r.get("stage") or "-"),
            _error_code(r),
            str(r.get("key_id") or "-"),
        ]
        for r in page.jobs
    ]
    if rows:
        _table(rows, ["job", "state", "created (UTC)", "attempts", "stage", "error", "key"])
    else:
        print("no jobs")
    if page.next_cursor:
        print(f"more: --cursor {page.next_cursor}")
    return 0


def cmd_stuck(args: argparse.Namespace) -> int:
    from workers.queue.listing import stuck_jobs

    found = stuck_jobs(_queue(args), running_longer_than=args.running_longer_than)
    return _show(
        found,
        args.json,
        "no stuck jobs",
        ["job", "state", "held by", "idle", "why"],
        lambda r: [
            str(r["id"]),
            str(r.get("state") or "-"),
            str(r["consumer"]),
            f"{r['idle']:.0f}s",
            "; ".join(r["reasons"]),
        ],
    )


def cmd_dead(args: argparse.Namespace) -> int:
    from workers.queue.listing import dead_letters

    found = dead_letters(_queue(args), limit=args.limit)
    now = time.time()
    return _show(
        found,
        args.json,
        "no dead letters",
        ["job", "failed", "attempts", "error", "message"],
        lambda r: [
            str(r["id"]),
            _ago(now - float(r["dead_at"])),
            _attempts(r),
            _error_code(r),
            str((r.get("error") or {}).get("message") or "-")[:60],
        ],
    )


_RETRY_SAYS = {
    "queued": "queued again",
    "gone": "no such job",
    "not_failed": "not failed (only a job that failed for good is retried)",
    "expired": "expired (its input may be gone): submit it again",
}


def cmd_retry(args: argparse.Namespace) -> int:
    q = _queue(args)
    results = {job_id: q.retry_dead(job_id) for job_id in args.ids}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for job_id, outcome in results.items():
            print(f"{job_id}: {_RETRY_SAYS.get(outcome, outcome)}")
    return 0 if all(o == "queued" for o in results.values()) else 1


def add_admin(sub: Any) -> None:
    """The ``admin`` command and its subcommands."""
    from workers.queue.states import JobState

    adm = sub.add_parser(
        "admin",
        help="operator's view: workers, jobs, stuck jobs, dead letters, retry",
        description=__doc__.split("\n\n")[0],
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--redis-url", help="default: $TESSERA_REDIS_URL, else tessera up's")
    common.add_argument(
        "--data-dir",
        default=os.environ.get("TESSERA_DATA_DIR", "./tessera-data"),
        help="the data folder of the `tessera up` whose private Redis to use",
    )
    common.add_argument("--json", action="store_true", help="JSON instead of a table")
    asub = adm.add_subparsers(dest="admin_cmd", required=True)

    w = asub.add_parser("workers", parents=[common], help="live workers and what each offers")
    w.add_argument("--all", action="store_true", help="also workers seen in the last 10 minutes")
    w.set_defaults(admin_fn=cmd_workers, fn=run)

    j = asub.add_parser("jobs", parents=[common], help="jobs, newest first")
    j.add_argument(
        "--state", action="append", choices=[s.value for s in JobState], help="repeatable"
    )
    j.add_argument("--key", help="only the jobs of this API key id")
    j.add_argument("--limit", type=int, default=50)
    j.add_argument("--cursor", help="where the previous page said to go on")
    j.set_defaults(admin_fn=cmd_jobs, fn=run)

    s = asub.add_parser(
        "stuck", parents=[common], help="running jobs whose lease expired, or that run long"
    )
    s.add_argument("--running-longer-than", type=float, default=3600.0, metavar="SECONDS")
    s.set_defaults(admin_fn=cmd_stuck, fn=run)

    d = asub.add_parser("dead", parents=[common], help="jobs that failed for good")
    d.add_argument("--limit", type=int, default=100)
    d.set_defaults(admin_fn=cmd_dead, fn=run)

    r = asub.add_parser("retry", parents=[common], help="queue dead-lettered jobs again")
    r.add_argument("ids", nargs="+", metavar="ID")
    r.set_defaults(admin_fn=cmd_retry, fn=run)


def run(args: argparse.Namespace) -> int:
    """Run an admin subcommand; a Redis that cannot be reached is one line, not a traceback."""
    import redis

    try:
        return int(args.admin_fn(args))
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        print(f"tessera admin: Redis unavailable at {redis_url(args)}: {exc}", file=sys.stderr)
        return 2
