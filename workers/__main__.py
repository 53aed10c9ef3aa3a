"""``python -m workers``: run one supervisor (one per GPU, or one CPU worker)."""

from __future__ import annotations

import argparse
import logging

from .settings import Settings
from .supervisor import Supervisor


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m workers", description=__doc__)
    ap.add_argument("--name", help="consumer name (default host:pid)")
    ap.add_argument("--max-jobs", type=int, default=None, help="exit after this many jobs")
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument(
        "--recover",
        action="store_true",
        help="re-create the jobs Redis lost from the blob store's manifests, then exit",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.recover:
        from .recovery import recover_jobs

        sup = Supervisor(Settings(), name=args.name)
        restored = recover_jobs(sup.q, sup.store)
        print(f"re-created {len(restored)} jobs")  # noqa: T201
        for job_id in restored:
            print(job_id)  # noqa: T201
        return
    sup = Supervisor(Settings(), name=args.name)
    sup.install_signals()
    sup.run(max_jobs=args.max_jobs)


if __name__ == "__main__":
    main()
