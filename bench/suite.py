"""``python -m bench.suite`` (``./dev.sh gpu``): on a GPU host, the whole test suite with the GPU
required (a skipped GPU test is a failure there), then the benchmarks (``python -m bench``: every
operation against its baselines; ``python -m bench.patched``: patched vs global kernels); the
tables last.

Arguments after ``--`` go to ``python -m bench`` (``--sizes`` also to ``bench.patched``).
``TESSERA_SUITE=tests|bench`` runs only that half. Exits non-zero when a test or a benchmark
failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_tests(report: Path) -> dict[str, int]:
    env = dict(os.environ, TESSERA_REQUIRE_GPU="1")
    rc = subprocess.call(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x" if os.environ.get("TESSERA_SUITE_FAIL_FAST") else "-q",
            f"--junitxml={report}",
        ],
        cwd=ROOT,
        env=env,
    )
    counts = {"returncode": rc, "tests": 0, "failures": 0, "errors": 0, "skipped": 0, "gpu": 0}
    if report.is_file():
        root = ET.parse(report).getroot()
        for suite in root.iter("testsuite"):
            for k in ("tests", "failures", "errors", "skipped"):
                counts[k] += int(suite.get(k, 0))
        counts["gpu"] = sum(
            1
            for case in root.iter("testcase")
            if "gpu" in (case.get("name", "") + case.get("classname", ""))
            and case.find("skipped") is None
        )
    return counts


def main() -> None:
    args = sys.argv[1:]
    bench_args = args[args.index("--") + 1 :] if "--" in args else []
    out = Path(os.environ.get("OUT", ROOT / "bench" / "results"))
    out.mkdir(parents=True, exist_ok=True)
    only = os.environ.get("TESSERA_SUITE", "")
    counts = {"returncode": 0, "tests": 0, "failures": 0, "errors": 0, "skipped": 0, "gpu": 0}
    if only != "bench":
        counts = run_tests(out / "junit.xml")
    brc = 0
    if only != "tests":
        brc = subprocess.call([sys.executable, "-m", "bench", *bench_args], cwd=ROOT)
        i = bench_args.index("--sizes") if "--sizes" in bench_args else len(bench_args)
        sizes = bench_args[i : i + 2]
        brc |= subprocess.call([sys.executable, "-m", "bench.patched", *sizes], cwd=ROOT)
    print("\n" + "=" * 78)
    print(
        f"tests: {counts['tests']} run, {counts['failures']} failed, {counts['errors']} errors, "
        f"{counts['skipped']} skipped (GPU tests run: {counts['gpu']}); "
        f"benchmarks exit {brc}"
    )
    for name in ("RESULTS.md", "PATCHED.md"):
        results = ROOT / "bench" / "results" / name
        if only != "tests" and results.is_file():
            print(results.read_text())
    sys.exit(1 if counts["returncode"] != 0 or brc != 0 else 0)


if __name__ == "__main__":
    main()
