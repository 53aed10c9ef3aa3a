"""``python -m bench.suite`` (``./dev.sh gpu``): on a GPU host, the whole test suite with the GPU
required (a skipped GPU test is a failure there), then the benchmarks (``python -m bench``: every
operation against its baselines; ``python -m bench.patched``: patched vs global kernels;
``python -m bench.service``: the service end to end, upload to download); the tables last.

Arguments after ``--`` go to ``python -m bench`` (``--sizes`` also to ``bench.patched``).
``TESSERA_SUITE=tests|bench`` runs only that half, and ``engine`` or ``rest`` only that part of
the tests (the engine's tests, or the service's and the rest: for a host that limits how long
one command may run). Exits non-zero when a test or a benchmark failed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def host_exclusions() -> tuple[list[str], list[str]]:
    """pytest arguments that leave out the tests needing a tool this host lacks (the GPU host
    is offline: no Chromium, no SeaweedFS, no schemathesis), and a line for each; CI runs
    them."""
    args, why = [], []
    if not Path("/usr/bin/chromium").exists() or importlib.util.find_spec("playwright") is None:
        args.append("--ignore=tests/service/test_page.py")
        args.append("--ignore=tests/service/test_page_tools.py")
        args.append("--ignore=tests/service/test_docs_page.py")
        why.append("page and /docs tests (no Chromium/Playwright)")
    elif not (ROOT / "node_modules" / "swagger-ui-dist").is_dir():
        args.append("--ignore=tests/service/test_docs_page.py")
        why.append("/docs tests (Swagger UI from node_modules: no npm)")
    if not (ROOT / "node_modules" / "three").is_dir():
        args.append(
            "--deselect=tests/service/test_routes_ui.py"
            "::test_three_is_served_from_node_modules_through_the_import_map"
        )
        why.append("three.js served from node_modules (no npm)")
    if shutil.which("node") is None or not (ROOT / "node_modules" / "gltf-validator").is_dir():
        args.append("--ignore=tests/workers/engine/io/test_gltf_materials.py")
        args.append("--ignore=tests/workers/engine/io/test_draco.py")
        args.append("--ignore=tests/workers/engine/io/test_gltf_tangents.py")
        args.append("--ignore=tests/workers/engine/io/test_glb_many_materials.py")
        args.append("--ignore=tests/workers/engine/test_combined_libraries.py")
        for test in (
            "test_asset_comes_back_with_its_materials_textures_and_uvs",
            "test_asset_as_an_obj_zip_keeps_its_library_and_textures",
        ):  # the CPU's runs: CI validates them; the GPU test of the file stays
            args.append(f"--deselect=tests/workers/engine/test_assets.py::{test}")
        # the plain GLB writer's normals, validated (host code: CI runs it)
        args.append(
            "--deselect=tests/workers/engine/io/test_writing.py"
            "::test_a_glb_of_zero_or_non_finite_normals_has_unit_normals"
        )
        why.append("textured glTF checked by the Khronos validator (no npm)")
    if shutil.which("curl") is None:
        args.append("--ignore=tests/test_readme.py")
        why.append("the README's snippets (no curl)")
    if importlib.util.find_spec("meshoptimizer") is None:
        # PyPI has no wheel of it for this host's Python: built from source where pip can
        args.append(
            "--deselect=tests/workers/engine/io/test_gltf.py::test_meshopt_views_are_decoded"
        )
        why.append("meshopt-compressed glTF (no meshoptimizer wheel)")
    if importlib.util.find_spec("gpytoolbox") is None:
        # its wheel and what it needs (scikit-image, scs) are more than travels to the host
        for test in (
            "test_face_areas_match_libigl_and_gpytoolbox",
            "test_laplacian_and_mass_match_libigl_gpytoolbox_potpourri3d",
        ):
            args.append(f"--deselect=tests/workers/engine/test_references.py::{test}")
        why.append("the gpytoolbox comparisons (no gpytoolbox)")
    if importlib.util.find_spec("schemathesis") is None:
        args.append("--ignore=tests/reliability/test_api_schema.py")
        why.append("OpenAPI fuzzing (no schemathesis)")
    if shutil.which("weed") is None or importlib.util.find_spec("boto3") is None:
        os.environ["TESSERA_LEAVE_OUT_S3"] = "1"
        why.append("S3 store tests (no SeaweedFS/boto3)")
    return args, why


def _pytest(args: list[str], report: Path) -> int:
    env = dict(os.environ, TESSERA_REQUIRE_GPU="1")
    fail_fast = ["-x"] if os.environ.get("TESSERA_SUITE_FAIL_FAST") else []
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *fail_fast]
    return subprocess.call([*cmd, f"--junitxml={report}", *args], cwd=ROOT, env=env)


def run_tests(out: Path, half: str = "") -> dict[str, Any]:
    """The whole suite with the GPU required; the engine's tests on 8 processes when
    pytest-xdist is installed (they share the one GPU), the rest (processes, Redis) in one.
    ``half`` ("engine" or "rest") runs only that part, for hosts that limit a command's time."""
    excl, why = host_exclusions()
    engine = "tests/workers/engine"
    if importlib.util.find_spec("xdist") is not None:
        reports = [out / "junit-engine.xml", out / "junit-rest.xml"]
        rc = 0
        if half != "rest":
            rc |= _pytest(["-n", "8", "-p", "no:benchmark", *excl, engine], reports[0])
        if half != "engine":
            rc |= _pytest([*excl, f"--ignore={engine}"], reports[1])
    else:
        reports = [out / "junit.xml"]
        rc = _pytest(excl, reports[0])
    counts: dict[str, Any] = {"returncode": rc, "tests": 0, "failures": 0, "errors": 0}
    counts.update({"skipped": 0, "gpu": 0, "left_out": why})
    for report in reports:
        if not report.is_file():
            continue
        root = ET.parse(report).getroot()
        for suite in root.iter("testsuite"):
            for k in ("tests", "failures", "errors", "skipped"):
                counts[k] += int(suite.get(k, 0))
        counts["gpu"] += sum(
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
    counts: dict[str, Any] = {"returncode": 0, "tests": 0, "failures": 0, "errors": 0}
    counts.update({"skipped": 0, "gpu": 0, "left_out": []})
    if only != "bench":
        counts = run_tests(out, only if only in ("engine", "rest") else "")
    brc = 0
    if only not in ("tests", "engine", "rest"):
        brc = subprocess.call([sys.executable, "-m", "bench", *bench_args], cwd=ROOT)
        i = bench_args.index("--sizes") if "--sizes" in bench_args else len(bench_args)
        sizes = bench_args[i : i + 2]
        brc |= subprocess.call([sys.executable, "-m", "bench.patched", *sizes], cwd=ROOT)
        brc |= subprocess.call([sys.executable, "-m", "bench.service"], cwd=ROOT)
    print("\n" + "=" * 78)
    print(
        f"tests: {counts['tests']} run, {counts['failures']} failed, {counts['errors']} errors, "
        f"{counts['skipped']} skipped (GPU tests run: {counts['gpu']}); "
        f"benchmarks exit {brc}"
    )
    if counts["left_out"]:
        print("left out here (CI runs them): " + "; ".join(counts["left_out"]))
    for name in ("RESULTS.md", "PATCHED.md", "SERVICE.md"):
        results = out / name
        if only not in ("tests", "engine", "rest") and results.is_file():
            print(results.read_text())
    sys.exit(1 if counts["returncode"] != 0 or brc != 0 else 0)


if __name__ == "__main__":
    main()
