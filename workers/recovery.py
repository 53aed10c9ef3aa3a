"""Re-creating jobs that Redis lost, from the manifests in the blob store.

Every accepted job has ``jobs/{id}/manifest.json`` (spec, input description, creation time,
idempotency key) written before its record. When Redis loses data (restarted without its AOF, a
failover to a stale replica, a flush), the records and stream entries of accepted jobs are gone
but their manifests and inputs are not: :func:`recover_jobs` queues every such job again. A job
that had ended before the loss keeps its end: whoever ends a job (the worker, or the API for a
cancel) saves its record as ``jobs/{id}/outcome.json`` (:mod:`workers.queue.outcomes`), and
recovery puts that record back instead of queueing the job, so a cancelled job stays cancelled
and a finished one is not run again. Only a job whose end fell in the moment between its commit
and that save runs again. A job whose record still exists is left alone, so recovery may run at
any time, from any number of processes.

Supervisors run it when they start and whenever the marker key ``keys.EPOCH`` is missing
(Redis came back empty), and every few minutes for manifests at least a minute old: a Redis
killed with AOF fsynced every second may come back without its last second of writes, marker
intact. ``python -m workers --recover`` runs it once by hand.
"""

from __future__ import annotations

import json
import logging
import time

from .queue.blobs import BlobNotFound, BlobStore, find_input
from .queue.jobs import JobQueue
from .queue.outcomes import load_outcome

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"


def recover_jobs(
    q: JobQueue, store: BlobStore, now: float | None = None, min_age: float = 0.0
) -> list[str]:
    """Queue again every unexpired job whose manifest and input are stored but whose record is
    missing. ``min_age``: leave younger manifests alone (their submission may be in flight; a
    race with it is harmless, the submit script keeps a record it finds). Returns the ids."""
    now = time.time() if now is None else now
    restored = []
    for key in store.list_prefix("jobs"):
        parts = key.split("/")
        if len(parts) != 3 or parts[2] != MANIFEST:
            continue
        job_id = parts[1]
        if q.exists(job_id):
            continue
        try:
            manifest = json.loads(store.get_bytes(key))
        except (BlobNotFound, ValueError) as exc:
            log.warning("manifest of %s unreadable: %s", job_id, exc)
            continue
        if manifest.get("id") != job_id:
            continue
        created = float(manifest.get("created_at") or now)
        if now - created < min_age:
            continue
        if find_input(store, job_id) is None:
            continue  # never fully accepted
        outcome = load_outcome(store, job_id)
        # a job's time runs from its end once it has one
        end = float(outcome.get("finished_at") or created) if outcome is not None else created
        if end + q.job_ttl < now:
            continue  # expired: the sweep deletes it
        if outcome is not None:
            if q.restore_final(outcome, manifest, now):
                restored.append(job_id)
        elif q.restore(manifest, now):
            restored.append(job_id)
    return restored


def recover_if_lost(q: JobQueue, store: BlobStore) -> list[str] | None:
    """Run :func:`recover_jobs` when Redis holds no epoch marker (first start, or data lost), then
    set the marker. Returns the re-created ids, or None when nothing was lost."""
    if not q.data_lost():
        return None
    restored = recover_jobs(q, store)
    q.mark_epoch()
    if restored:
        log.warning("Redis had lost %d jobs: re-created from their manifests", len(restored))
    return restored
