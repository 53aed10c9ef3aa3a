"""Tessera from Python: the HTTP clients, their errors, and the engine as a library.

``Client`` / ``AsyncClient`` talk to a running service; ``Mesh`` (the engine's ``TriMesh``) runs
the same operations in this process with no server at all, and is imported only when used.
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
]


def __getattr__(name: str) -> Any:
    if name == "Mesh":  # the engine pulls in NumPy and SciPy: only for library use
        from workers.engine.mesh import TriMesh

        return TriMesh
    raise AttributeError(f"module 'tessera' has no attribute {name!r}")
