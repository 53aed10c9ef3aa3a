"""Every error code the API answers or a failed job carries is in the README's list."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

#: codes only the testing operation raises (registered with TESSERA_TEST_OPS=1 alone)
TESTING = {"mesh.test_rejected", "mesh.test_needs_gpu"}
CODE = re.compile(r"^[a-z_]+\.[a-z0-9_]+$")  # e.g. batch.s3_prefix_empty


def _codes() -> dict[str, str]:
    """Each code literal in service/ and workers/ -> a file that raises it: ``code=...``,
    ``code = ...`` in a class, the code argument of ProblemError, problem, _too_many and
    _unauthorized, and the codes of the error handlers."""
    found: dict[str, str] = {}
    for path in sorted([*(ROOT / "service").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]):
        tree = ast.parse(path.read_text())
        name = str(path.relative_to(ROOT))
        literals: list[ast.AST] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "code":
                literals.append(node.value)
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "code" for t in stmt.targets
                    ):
                        literals.append(stmt.value)
            elif isinstance(node, ast.Call):
                fn = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if fn in ("ProblemError", "problem") and len(node.args) >= 2:
                    literals.append(node.args[1])
                elif fn in ("_too_many", "_unauthorized") and node.args:
                    literals.append(node.args[0])
        if name == "service/errors.py":  # the handlers' own codes
            literals += [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        for lit in literals:
            value = lit.value if isinstance(lit, ast.Constant) else None
            if isinstance(value, str) and (CODE.match(value) or value == "internal"):
                found.setdefault(value, name)
    return found


def _listed(readme: str) -> tuple[set[str], list[str]]:
    """The codes the README names in backticks, and its wildcards (``op.*``, ``format.obj_*``)."""
    names = set(re.findall(r"`([a-z_]+(?:\.[a-z0-9_*]+)?)`", readme))
    return {n for n in names if "*" not in n}, [n[:-1] for n in names if n.endswith("*")]


def test_every_code_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("Errors are `application/problem+json`") :]
    section = section[: section.index("### Python client")]
    exact, prefixes = _listed(section)
    codes = _codes()
    assert len(codes) > 60  # the scan finds them (it would pass vacuously otherwise)
    missing = {
        code: where
        for code, where in codes.items()
        if code not in TESTING and code not in exact and not code.startswith(tuple(prefixes))
    }
    assert missing == {}
