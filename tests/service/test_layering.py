"""Who may talk to Redis: the API only through ``workers/queue/`` (no module under ``service/``
formats a key, touches a client's ``.r`` or imports the workers' internals), and no module
outside ``workers/queue/`` spells a key (``keys.py``: "Nothing else formats key strings")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

#: what the API must not import: the workers' own machinery, and the key names
WORKER_INTERNALS = {
    "workers.recovery",
    "workers.runner",
    "workers.supervisor",
    "workers.gpu_child",
    "workers.queue.keys",
}

#: a key's spelling (messages start "tessera: ", with a space)
KEY = re.compile(r"tessera:\S")


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _key_strings(tree: ast.AST) -> list[str]:
    """String literals (or the literal parts of f-strings) that look like a Redis key."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY.match(node.value)
    ]


def test_the_api_reaches_redis_only_through_the_queue_package():
    problems = []
    for path in _sources("service"):
        tree = ast.parse(path.read_text(), str(path))
        name = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "r":
                problems.append(f"{name}:{node.lineno}: .r")
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                problems += [f"{name}:{node.lineno}: {m}" for m in names & WORKER_INTERNALS]
            if isinstance(node, ast.Import):
                names = {a.name for a in node.names}
                problems += [f"{name}:{node.lineno}: {m}" for m in names & WORKER_INTERNALS]
        problems += [f"{name}: key {s!r}" for s in _key_strings(tree)]
    assert problems == []


def test_only_the_keys_module_spells_a_key():
    spelled = {
        str(path.relative_to(ROOT)): found
        for path in _sources("service", "workers", "tessera", "reliability")
        if (found := _key_strings(ast.parse(path.read_text())))
    }
    assert spelled == {}
    assert (ROOT / "workers" / "queue" / "keys.py").read_text().count('PREFIX = "tessera"') == 1
