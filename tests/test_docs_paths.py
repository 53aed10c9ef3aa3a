"""The documentation points at things that exist: every relative link in README.md and docs/
resolves, every repository path written in backticks in docs/ is there, and the functions and
names docs/adding-an-operation.md tells a contributor to use are still defined where it says.
A rename or a move then fails here instead of leaving the pages quietly wrong."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
#: top-level folders and files of the repository: a backticked token starting with one is a path
TOP = ("workers/", "service/", "tests/", "bench/", "docs/", "openapi/", "docker/", "examples/")
TOP += ("reliability/", "tessera/")
FILES = {"README.md", "dev.sh", "pyproject.toml", "package.json"}


def _links(page: Path) -> list[str]:
    out = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, mailto or an anchor in the same page
        out.append(target.split("#", 1)[0])
    return out


def _paths(page: Path) -> list[str]:
    """Backticked tokens that name a file or folder of the repository (``<name>`` placeholders
    stand for any name: the folder before them must exist)."""
    out = []
    for token in CODE.findall(page.read_text()):
        token = token.split("::", 1)[0].strip()
        if " " in token or not (token.startswith(TOP) or token in FILES):
            continue
        out.append(token)
    return out


def _exists(path: str) -> bool:
    if "<" in path:  # workers/engine/ops/<name>.py: the folder holding it
        path = path[: path.index("<")].rsplit("/", 1)[0]
    return (ROOT / path).exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path):
    missing = [t for t in _links(page) if not (page.parent / t).exists()]
    assert missing == []


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_backticked_paths_exist(page: Path):
    missing = [p for p in _paths(page) if not _exists(p)]
    assert missing == []


def test_the_scan_finds_the_paths_of_the_operation_page():
    """The page names many paths, placeholders among them (else the test above checks nothing),
    and a path that is not there is caught."""
    paths = _paths(ROOT / "docs" / "adding-an-operation.md")
    assert len(paths) > 30
    assert "workers/engine/ops/registry.py" in paths
    assert "workers/engine/ops/<name>.py" in paths and _exists("workers/engine/ops/<name>.py")
    assert not _exists("workers/engine/no_such_module.py")
    assert not _exists("workers/no_such_folder/<name>.py")


#: names docs/adding-an-operation.md tells a contributor to use, by the module defining them
NAMED = {
    "workers.engine.ops.registry": [
        "Operation",
        "OpKind",
        "OpParams",
        "OpResult",
        "Output",
        "Tolerance",
        "Operation.declaration_problems",
        "Operation.parse_params",
        "Operation.implementation",
    ],
    "workers.engine.ops": ["OPS"],
    "workers.engine.errors": ["OpParamsError", "MeshError", "KernelError", "InputError"],
    "workers.engine.kernels.loader": ["load_kernel", "launch"],
    "workers.engine.ops._device": ["positions"],
    "workers.engine.kernelgen": ["patched_kernel"],
    "workers.engine.queries": ["launch_patched"],
    "workers.engine.paths": ["patches_for", "PATCHED"],
    "workers.engine.patches": ["cached_patches"],
    "workers.engine.graph": [
        "scatter_min",
        "expand_counts",
        "compact_groups",
        "csr_from_pairs",
        "connected_components",
    ],
    "workers.engine.pipeline": ["run_pipeline"],
    "workers.engine.corners": ["run_carrying", "seam_edges", "ORIGIN"],
    "workers.engine.dynamic.seams": ["seam_keys", "record_kept"],
    "workers.engine.progress": ["report", "part", "rounds_done", "decay", "due"],
    "workers.engine.mesh": ["TriMesh.reindexed"],
    "tests.workers.engine.test_gpu_equivalence": ["compare_dynamic"],
}


@pytest.mark.parametrize("module", sorted(NAMED))
def test_named_functions_exist_and_are_on_the_page(module: str):
    text = (ROOT / "docs" / "adding-an-operation.md").read_text()
    mod = importlib.import_module(module)
    for dotted in NAMED[module]:
        owner = mod
        for part in dotted.split("."):
            assert hasattr(owner, part), f"{module}.{dotted} is not defined"
            owner = getattr(owner, part)
        name = dotted.rsplit(".", 1)[-1]
        assert re.search(rf"\b{re.escape(name)}\b", text), f"{name} is no longer on the page"
