"""Every Redis key Tessera uses. Nothing else formats key strings."""

from __future__ import annotations

PREFIX = "tessera"
GROUP = "workers"
STREAM = f"{PREFIX}:q:default"  # one stream per priority; only the default one so far
WORKERS = f"{PREFIX}:workers"  # sorted set: worker name -> last heartbeat (unix seconds)
JOBS = f"{PREFIX}:jobs"  # sorted set: job id -> created, then ended (unix seconds): the sweep's
CREATED = f"{PREFIX}:jobs:created"  # sorted set: job id -> created (unix seconds): the job list
COUNTERS = f"{PREFIX}:counters"  # hash: monotone counters for metrics
WEBHOOKS_DUE = f"{PREFIX}:webhooks:due"  # sorted set: job id -> when to deliver its webhook
DEAD = f"{PREFIX}:dead"  # sorted set: job id -> when it failed for good after its last attempt
EPOCH = f"{PREFIX}:epoch"  # set once per Redis dataset: its absence means the data was lost


def job(job_id: str) -> str:
    return f"{PREFIX}:job:{job_id}"


def events(job_id: str) -> str:
    return f"{PREFIX}:events:{job_id}"


def idempotency(key: str) -> str:
    return f"{PREFIX}:idem:{key}"


def jobs_of(key_id: str) -> str:
    """Sorted set: the jobs an API key submitted -> when each was created (its job list)."""
    return f"{PREFIX}:jobs:key:{key_id}"


def worker(name: str) -> str:
    return f"{PREFIX}:worker:{name}"


def quota_requests(key_id: str, minute: int) -> str:
    """Counter: requests of an API key in one clock minute (unix seconds // 60)."""
    return f"{PREFIX}:quota:{key_id}:rpm:{minute}"


def quota_running(key_id: str) -> str:
    """Sorted set: the jobs an API key has queued or running -> when each was admitted."""
    return f"{PREFIX}:quota:{key_id}:running"


def quota_bytes(key_id: str, day: int) -> str:
    """Counter: bytes an API key uploaded in one UTC day (unix seconds // 86400)."""
    return f"{PREFIX}:quota:{key_id}:bytes:{day}"


BATCHES = f"{PREFIX}:batches"  # sorted set: batch id -> created (unix seconds)


def batch(batch_id: str) -> str:
    """Hash: a batch (spec, chunks, counters of items that ended)."""
    return f"{PREFIX}:batch:{batch_id}"


def batch_items(batch_id: str) -> str:
    """String: the batch's items as JSON (path, output path, bytes, chunk), in input order."""
    return f"{PREFIX}:batch:{batch_id}:items"


def batch_done(batch_id: str) -> str:
    """Hash: item index -> its outcome (JSON), written once per item."""
    return f"{PREFIX}:batch:{batch_id}:done"
