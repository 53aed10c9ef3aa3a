"""Passes over large NumPy arrays split across the host's cores: the checks and the index
conversion every mesh handed over as arrays goes through.

Motivation: a mesh given as NumPy arrays (the engine as a library, the parsers) is checked
(finite positions, indices in range) and its indices narrowed to int32 on the host before it
moves to the GPU. Single-threaded, those passes took about 45 ms of a 0.22 s decimation of 4.4M
faces on the GPU host (int64 to int32 19 ms, the range 16 ms, finiteness 7 ms: a host profile of
``python -m bench.dynamic_profile``), more than some of the device's own stages. NumPy releases
the GIL inside casts, ufuncs and reductions on numeric types, so the same calls on slices of the
array run in parallel in a thread pool. Results are those of the single calls: a maximum of
maxima, an all of alls, a cast slice by slice.

Small arrays (below :data:`MIN_CHUNK` elements a thread) take the single call. The pool belongs
to the process that made it; its threads are joined before a fork (the child, and the parent
after it, make a new pool when they need one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

#: elements a thread gets at least: below this the threads cost more than they save
MIN_CHUNK = 1 << 20
#: threads at most
MAX_THREADS = 16

T = TypeVar("T")
_POOL: dict[int, ThreadPoolExecutor] = {}


def threads() -> int:
    """Threads the passes use: the cores this process may run on, at most :data:`MAX_THREADS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_THREADS))


def _pool() -> ThreadPoolExecutor:
    pid = os.getpid()
    pool = _POOL.get(pid)
    if pool is None:
        _POOL.clear()  # a forked child does not own its parent's threads
        pool = _POOL[pid] = ThreadPoolExecutor(threads(), thread_name_prefix="hostpar")
    return pool


def _before_fork() -> None:
    """Join the pool's threads before the process forks (made again on the next use): a fork
    of a process with threads may deadlock in the child, and Python 3.12 warns of it."""
    pool = _POOL.pop(os.getpid(), None)
    if pool is not None:
        pool.shutdown(wait=True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


def spans(n: int, min_chunk: int = MIN_CHUNK) -> list[slice]:
    """``[0, n)`` cut into at most :func:`threads` contiguous slices of at least ``min_chunk``
    (one slice for a short range)."""
    k = max(1, min(threads(), n // max(min_chunk, 1)))
    edges = [n * i // k for i in range(k + 1)]
    return [slice(edges[i], edges[i + 1]) for i in range(k)]


def map_spans(fn: Callable[[slice], T], n: int, min_chunk: int = MIN_CHUNK) -> list[T]:
    """``fn`` on each of :func:`spans`, in the pool when there are several."""
    parts = spans(n, min_chunk)
    if len(parts) == 1:
        return [fn(parts[0])]
    return list(_pool().map(fn, parts))


def all_finite(a: np.ndarray, min_chunk: int = MIN_CHUNK) -> bool:
    """``bool(np.isfinite(a).all())``."""
    flat = a.reshape(-1)
    return all(map_spans(lambda s: bool(np.isfinite(flat[s]).all()), flat.shape[0], min_chunk))


def max_unsigned(a: np.ndarray, min_chunk: int = MIN_CHUNK) -> int:
    """The largest value of the integer array ``a`` seen as unsigned (a negative value is larger
    than any non-negative one), 0 for an empty array."""
    flat = a.reshape(-1).view(np.dtype(f"u{a.dtype.itemsize}"))
    if flat.shape[0] == 0:
        return 0
    return max(map_spans(lambda s: int(flat[s].max()), flat.shape[0], min_chunk))


def astype(a: np.ndarray, dtype: Any, min_chunk: int = MIN_CHUNK) -> np.ndarray:
    """``a.astype(dtype, copy=False)`` (C order): ``a`` itself when it already has the type."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype and a.flags.c_contiguous:
        return a
    src = np.ascontiguousarray(a).reshape(-1)
    out = np.empty(a.shape, dtype=dtype)
    flat = out.reshape(-1)

    def cast(s: slice) -> None:
        np.copyto(flat[s], src[s], casting="unsafe")

    map_spans(cast, src.shape[0], min_chunk)
    return out
