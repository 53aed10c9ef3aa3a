"""The messages between a supervisor and its compute child, sent over a multiprocessing pipe.

The supervisor sends :class:`RunJob` (one at a time) and :class:`Stop`; the child says once, as
it starts, what it offers (:class:`Offers`), and answers a run with any number of
:class:`Progress` (and, for a batch chunk, :class:`ItemStart` and :class:`ItemDone`), then one
:class:`Done` or :class:`Failed`. They are plain frozen dataclasses (pickled by the pipe; the
child is started with ``spawn``), and this module imports nothing of the engine, so both sides
may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunJob:
    """Run attempt ``attempt`` of job ``id``: ``spec`` as stored in its record (the child parses
    it with ``JobSpec.from_stored``), ``input_name`` the uploaded file's name (it names the
    result), ``gpu_min_faces`` the size under which ``device: auto`` stays on the CPU."""

    id: str
    attempt: int
    spec: dict[str, Any]
    input_name: str
    gpu_min_faces: int
    #: a batch chunk's work: ``{"items": [{"index", "path", "output"}], "max_expanded": N,
    #: "s3": its S3 prefixes or None, "max_member": N}`` (the items not recorded yet); None
    #: for a job
    batch: dict[str, Any] | None = None


@dataclass(frozen=True)
class Stop:
    """Exit between jobs (the supervisor is shutting down)."""


@dataclass(frozen=True)
class Progress:
    """How far the run is (0 to 1, monotone within a run) and what it does now."""

    progress: float
    stage: str


@dataclass(frozen=True)
class ItemStart:
    """The child starts item ``index`` of a batch chunk (if it dies now, that item was running)."""

    index: int


@dataclass(frozen=True)
class ItemDone:
    """An item of a batch chunk ended (its result, if any, is stored): ``outcome`` is what the
    batch records for it (``state`` succeeded or failed, with its error)."""

    index: int
    outcome: dict[str, Any]


@dataclass(frozen=True)
class Done:
    """The run succeeded: ``fields`` are what the job's record gets (see ``runner.execute``)."""

    fields: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    """The run failed with ``error`` (an error of ``workers.engine.errors`` as its dict).
    ``retryable``: whether another attempt may succeed; ``poisoned``: a sticky CUDA error left
    the child's context unusable, and the supervisor must replace the child."""

    error: dict[str, Any]
    retryable: bool
    poisoned: bool = False


@dataclass(frozen=True)
class Offers:
    """What the child can run, sent once as it starts (before any answer to a run):
    ``backends`` (``cpu``, and ``gpu`` where CuPy sees a device) and ``gpu`` (the device's
    ``name`` and ``memory_bytes``; None without one)."""

    backends: list[str]
    gpu: dict[str, Any] | None = None


FromChild = Progress | ItemStart | ItemDone | Done | Failed | Offers
