"""A job's outcome: the record of a job that ended, kept in the blob store beside its manifest
(``jobs/{id}/outcome.json``), so that a job whose end Redis lost comes back ended instead of
running again (see :mod:`workers.recovery`).

Whoever ends a job saves it: the supervisor after a commit, the API after a cancel. The scripts
that end a job return the ended record, so saving it costs no Redis round trip; only the ends
that return no record (a job failing for good on a retry) read it with :meth:`JobQueue.snapshot`.
"""

from __future__ import annotations

import json
import logging

from .blobs import BlobNotFound, BlobStore, outcome_key
from .jobs import TERMINAL, JobQueue

log = logging.getLogger(__name__)


def save_outcome(
    q: JobQueue, store: BlobStore, job_id: str, record: dict[str, str] | None = None
) -> bool:
    """Keep the record of a job that has just ended in the blob store: ``record`` as stored in
    Redis (strings) when the caller has it, else read now. Called after the end is committed in
    Redis, so it cannot undo it: a failure is logged and the job would only run again if Redis
    later lost its record. Whether it was saved."""
    try:
        if record is None:
            record = q.snapshot(job_id)
        if record is None or record.get("state") not in TERMINAL:
            return False
        store.put_bytes(outcome_key(job_id), json.dumps(record).encode())
        return True
    except Exception as exc:  # the store or Redis, whatever their client raises
        log.warning("outcome of %s not saved: %s", job_id, exc)
        return False


def load_outcome(store: BlobStore, job_id: str) -> dict[str, str] | None:
    """The saved record of a job that ended, or None (none saved, or unreadable)."""
    try:
        record = json.loads(store.get_bytes(outcome_key(job_id)))
    except BlobNotFound:
        return None
    except ValueError as exc:
        log.warning("outcome of %s unreadable: %s", job_id, exc)
        return None
    if not isinstance(record, dict) or record.get("state") not in TERMINAL:
        return None
    return {str(k): str(v) for k, v in record.items()}
