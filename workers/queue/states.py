"""A job's states, in a module of their own: what a command line needs to name them (``tessera
admin jobs --state``) without importing the queue (Redis, the engine)."""

from __future__ import annotations

from enum import Enum


class JobState(str, Enum):
    """A job's state: queued, running, then succeeded, failed or cancelled (a retried run goes
    from running back to queued). expired: a job that ended longer ago than the results are
    kept (shown by the API, never stored)."""

    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"
    expired = "expired"

    def __str__(self) -> str:
        return self.value


#: the states a job never leaves (the record keeps them until it expires)
TERMINAL = frozenset({JobState.succeeded, JobState.failed, JobState.cancelled})
