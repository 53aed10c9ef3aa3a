"""Tessera from Python: the HTTP clients, their errors, and the engine as a library.

``Client`` / ``AsyncClient`` talk to a running service; ``load``, ``run`` and ``save`` run the same
operations in this process with no server at all, on ``Mesh`` (the engine's ``TriMesh``); the
engine is imported only when one of them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from ._common import RetryPolicy
from .client import AsyncClient, Client
from .errors import (
    Conflict,
    ConnectionFailed,
    Gone,
    InvalidInput,
    JobCancelled,
    JobFailed,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    ServiceUnreachable,
    TesseraError,
    Unauthorized,
    WaitTimeout,
)

if TYPE_CHECKING:
    from workers.engine.library import load, run, save
    from workers.engine.mesh import TriMesh as Mesh

__all__ = [
    "AsyncClient",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "Gone",
    "InvalidInput",
    "JobCancelled",
    "JobFailed",
    "Mesh",
    "NotFound",
    "RateLimited",
    "RetryPolicy",
    "ServiceUnavailable",
    "ServiceUnreachable",
    "TesseraError",
    "Unauthorized",
    "WaitTimeout",
    "errors",
    "load",
    "run",
    "save",
]


def __getattr__(name: str) -> Any:
    if name == "Mesh":  # the engine pulls in NumPy and SciPy: only for library use
        from workers.engine.mesh import TriMesh

        return TriMesh
    if name in ("load", "run", "save"):
        from workers.engine import library

        return getattr(library, name)
    raise AttributeError(f"module 'tessera' has no attribute {name!r}")
