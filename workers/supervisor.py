"""The per-GPU supervisor: claims jobs, keeps their leases, drives the compute child.

It never imports CuPy, so it can always kill a stuck child and start another: of the engine it
needs only the operation registry (the job spec's model) and the error tree, which import none.
Its loop reads like a classic worker's: check stop, heartbeat, reap expired leases, claim with a
short block, hand the job to the child, renew the lease while it runs, then commit, retry or give
up.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import socket
import time
from collections.abc import Callable
from functools import partial
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import redis

from .engine.errors import BackendUnavailable, ChildDied, JobTimeout, SpecError, WorkerShutdown
from .jobspec import JobSpec
from .messages import (
    Done,
    Failed,
    FromChild,
    ItemDone,
    ItemStart,
    Offers,
    Progress,
    RunJob,
    Stop,
)
from .queue.batches import BatchQueue
from .queue.blobs import BlobStore, job_prefix, open_store, store_config
from .queue.jobs import Claim, JobQueue, JobState
from .queue.listing import backfill
from .queue.outcomes import save_outcome
from .queue.registry import gpu_elsewhere
from .queue.s3batch import write_manifest
from .recovery import recover_if_lost, recover_jobs
from .settings import Settings
from .webhooks import WebhookThread

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
SWEEP_SECONDS = 60.0
#: how often every supervisor looks for jobs Redis lost (see workers.recovery), and how old a
#: manifest must be for that
RECOVER_SECONDS = 120.0
RECOVER_MIN_AGE = 30.0
#: the shortest time between two starts of an idle worker's compute child
CHILD_RESTART_SECONDS = 5.0
#: Redis errors a worker rides out (a restart, a failover, a network blip); LOADING is a
#: ConnectionError in redis-py
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
#: after handing back a ``device: "gpu"`` job this worker cannot run, it waits this long before
#: reading the queue again, so that a worker with a GPU takes the job
HAND_BACK_PAUSE_SECONDS = 1.0
T = TypeVar("T")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tessera")
    except Exception:  # run from a source tree that was never installed
        return "unknown"


def sweep_expired(q: JobQueue, store: BlobStore, now: float | None = None) -> list[str]:
    """Delete the blobs of jobs past their TTL (cancelling any that never ended). Any number of
    supervisors may sweep at once: every step is idempotent."""
    now = time.time() if now is None else now
    swept = []
    for job_id in q.expired_jobs(now):
        q.cancel(job_id)  # a no-op for finished jobs
        store.delete_prefix(job_prefix(job_id))
        q.forget(job_id)
        swept.append(job_id)
    return swept


class Supervisor:
    def __init__(self, settings: Settings, name: str | None = None) -> None:
        self.settings = settings
        self.name = name or settings.worker_name or f"{socket.gethostname()}:{os.getpid()}"
        self.client = redis.Redis.from_url(
            settings.redis_url,
            socket_timeout=10,
            socket_connect_timeout=5,
            health_check_interval=30,
        )
        self.q = JobQueue(
            self.client,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
            job_ttl_seconds=settings.job_ttl_seconds,
            tombstone_seconds=settings.tombstone_seconds,
        )
        self.batches = BatchQueue(self.q)
        #: a batch chunk's items that ended and are not recorded yet: [(index, outcome)]
        self._items: list[tuple[int, dict[str, Any]]] = []
        self._items_flushed = 0.0
        #: the batch item the child runs now, and how often each item was in flight at a death
        self._in_flight: int | None = None
        self._deaths: dict[tuple[str, int], int] = {}
        self.store = open_store(store_config(settings))
        self.renew_every = settings.lease_seconds / 4
        self.reap_every = max(settings.lease_seconds / 4, 0.5)
        self.stopping = False
        self.stop_requested = 0.0
        self.cold_stop = False
        self.child: Any = None
        self.conn: Connection | None = None
        self._last_beat = 0.0
        self._last_reap = 0.0
        self._last_sweep = 0.0
        self._last_recover = time.monotonic()
        self._child_started = 0.0
        self.current: Claim | None = None
        self.jobs_done = 0
        #: what the compute child said it can run (None until it has said)
        self.offers: Offers | None = None
        self.started_at = time.time()
        self.version = _version()

    # ----------------------------------------------------------------- child
    def start_child(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        from .gpu_child import child_main

        # glibc then backs large allocations with huge pages: building a result file's bytes
        # was bound by page faults (about 1 ms per MB) without it
        os.environ.setdefault("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
        self.child = ctx.Process(
            target=child_main,
            args=(
                child,
                store_config(self.settings),
                logging.getLogger().level,
                self.settings.warm_up,
            ),
            name="tessera-child",
            daemon=True,
        )
        # a SIGTERM or SIGINT sent to the whole process group while the child is still starting
        # would kill it: an ignored signal stays ignored across exec, so it starts ignoring both
        # (for the few milliseconds of the fork a signal to the supervisor is lost too)
        held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.child.start()
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler)
        child.close()
        self.conn = parent
        self._child_started = time.monotonic()
        log.info("%s started child pid %s", self.name, self.child.pid)

    def kill_child(self) -> None:
        if self.child is not None and self.child.is_alive():
            os.kill(self.child.pid, signal.SIGKILL)
            self.child.join(5)
        if self.conn is not None:
            self.conn.close()
        self.child, self.conn = None, None

    def ensure_child(self) -> None:
        if self.child is None or not self.child.is_alive():
            self.kill_child()
            self.start_child()

    def warm_child(self) -> None:
        """Between jobs: replace a child that died or was killed (a cancel, a timeout, a sticky
        CUDA error) now, so that the next job does not wait for its start (the engine's import,
        and on a GPU host the CUDA context). At most one start every few seconds: a child that
        cannot start is not restarted in a tight loop (the next job still tries)."""
        if time.monotonic() - self._child_started >= CHILD_RESTART_SECONDS:
            self.ensure_child()
        self.read_offers()

    def read_offers(self) -> None:
        """Between jobs: take what the child said it offers, if it has (a child says it once,
        as it starts, before answering any run)."""
        try:
            while self.conn is not None and self.conn.poll(0):
                msg = self.conn.recv()
                if isinstance(msg, Offers):
                    self._took_offers(msg)
        except (EOFError, OSError):
            pass  # a dead child: the next job, or the next warm_child, replaces it

    def _took_offers(self, offers: Offers) -> None:
        first = self.offers is None
        self.offers = offers
        if first:
            gpu = f" ({offers.gpu.get('name')})" if offers.gpu else ""
            log.info("%s offers %s%s", self.name, ", ".join(offers.backends), gpu)
            with contextlib.suppress(*REDIS_DOWN):  # else the next heartbeat says it
                self.housekeeping(beat_only=True)

    # ----------------------------------------------------------------- loop
    def install_signals(self) -> None:
        def on_term(signum: int, _frame: Any) -> None:
            if self.stopping:
                log.warning("%s: second signal, cold stop", self.name)
                self.cold_stop = True
            else:
                if self.current is not None:
                    log.info(
                        "%s: stopping: %s may finish within %.0fs, else it is handed back",
                        self.name,
                        self.current.job_id,
                        self.settings.shutdown_grace_seconds,
                    )
                self.stopping = True
                self.stop_requested = time.monotonic()

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)

    def run(self, max_jobs: int | None = None) -> None:
        log.info(
            "%s: worker up (redis %s, lease %.1fs)",
            self.name,
            self.settings.redis_url,
            self.settings.lease_seconds,
        )
        self.ensure_child()
        with contextlib.suppress(*REDIS_DOWN):  # jobs from before the job lists existed
            if n := backfill(self.q):
                log.info("%s: listed %d jobs submitted before the job lists", self.name, n)
        hooks = WebhookThread(self.settings, self.name)  # delivers webhooks of ended jobs
        hooks.start()
        try:
            while not self.stopping and (max_jobs is None or self.jobs_done < max_jobs):
                try:
                    self.housekeeping()
                    self.warm_child()
                    for entry, job_id in self.q.read_next(self.name, block_ms=1000):
                        claim = self.q.claim(self.name, entry, job_id)
                        if claim is not None:
                            self.run_claim(claim)
                except REDIS_DOWN as exc:
                    log.warning("%s: redis unavailable (%s); retrying", self.name, exc)
                    time.sleep(1.0)
        finally:
            hooks.stop()
            if self.conn is not None and self.child is not None and self.child.is_alive():
                try:
                    self.conn.send(Stop())
                    self.child.join(5)
                except (OSError, BrokenPipeError):
                    pass
            self.kill_child()
            # no longer live: the API stops counting on this worker at once
            with contextlib.suppress(*REDIS_DOWN):
                self.q.heartbeat(self.name, self.registration("stopped"))
            log.info("%s: worker down", self.name)

    def registration(self, state: str | None = None) -> dict[str, Any]:
        """What this worker tells the registry (:mod:`workers.queue.registry`)."""
        offers = self.offers
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "version": self.version,
            "started_at": self.started_at,
            "state": state or ("stopping" if self.stopping else "running"),
            "backends": list(offers.backends) if offers else None,
            "gpu": offers.gpu if offers else None,
            "children": 1,
            "busy": self.current is not None,
            "jobs": [self.current.job_id] if self.current else [],
            "jobs_done": self.jobs_done,
            "lease_seconds": self.settings.lease_seconds,
        }

    def housekeeping(self, force: bool = False, beat_only: bool = False) -> None:
        now = time.monotonic()
        if force or beat_only or now - self._last_beat >= HEARTBEAT_SECONDS:
            self.q.heartbeat(self.name, self.registration())
            self._last_beat = now
        if beat_only:
            return
        if force or now - self._last_reap >= self.reap_every:
            recover_if_lost(self.q, self.store)
            for job_id, outcome in self.q.reap(self.name):
                log.warning("%s: reaped %s (lease expired) -> %s", self.name, job_id, outcome)
                if outcome == JobState.failed:
                    save_outcome(self.q, self.store, job_id)
                    batch_id = (self.q.get(job_id) or {}).get("batch")
                    if batch_id:
                        self._batch_may_have_ended(batch_id)
            self._last_reap = now
        if force or now - self._last_recover >= RECOVER_SECONDS:
            restored = recover_jobs(self.q, self.store, min_age=RECOVER_MIN_AGE)
            if restored:
                log.warning("%s: re-created %d jobs Redis had lost", self.name, len(restored))
            self._last_recover = now
        if force or now - self._last_sweep >= SWEEP_SECONDS:
            swept = sweep_expired(self.q, self.store)
            if swept:
                log.info("%s: swept %d expired jobs", self.name, len(swept))
            self._last_sweep = now

    # ----------------------------------------------------------------- one job
    def run_claim(self, c: Claim) -> None:
        again: Claim | None = c
        while again is not None:
            again = self._run_attempt(again)
        if c.record.get("batch"):  # the chunk may have been its batch's last to end
            self._batch_may_have_ended(c.record["batch"])

    def _batch_may_have_ended(self, batch_id: str) -> None:
        try:
            # the manifest first: a batch's webhook tells its results are all in place
            write_manifest(self.batches, self.store, batch_id)
            if self.batches.notify_if_ended(batch_id):
                log.info("%s: batch %s ended; its webhook is due", self.name, batch_id)
        except REDIS_DOWN as exc:  # the batch's webhook is late, not lost: logged
            log.warning("%s: could not check batch %s: %s", self.name, batch_id, exc)
        except Exception as exc:  # the S3 output prefix refused the manifest: logged
            log.error("%s: could not write batch %s's manifest: %s", self.name, batch_id, exc)

    def _run_attempt(self, c: Claim) -> Claim | None:
        """Run one attempt; returns the next attempt when it is to run here at once."""
        self.current = c
        started = time.monotonic()
        released = int(c.record.get("releases") or 0)  # runs handed back, at no attempt's cost
        if released:
            log.info("→ %s attempt %d (handed back %d times before)", c.job_id,
                     c.attempt - released, released)  # fmt: skip
        else:
            log.info("→ %s attempt %d", c.job_id, c.attempt)
        try:
            try:
                spec = JobSpec.from_stored(c.record.get("spec"))
            except SpecError as exc:  # stored by a version whose specs this one cannot read
                self._end(c, JobState.failed, {"error": exc.to_dict()})
                log.info("← %s failed (%s), not retried", c.job_id, exc.code)
                return None
            offers = self.offers
            if spec.device == "gpu" and offers is not None and "gpu" not in offers.backends:
                self._no_gpu(c, BackendUnavailable("no GPU on this worker").to_dict())
                return None
            deadline = spec.deadline(self.settings.default_deadline_seconds)
            batch = None
            if c.record.get("batch"):  # a batch chunk: the items not recorded yet
                items, recorded = self._redis(
                    partial(
                        self.batches.chunk_work,
                        c.record["batch"],
                        int(c.record["start"]),
                        int(c.record["end"]),
                    )
                )
                todo = [i for i in items if i["index"] not in recorded]
                batch = {
                    "items": todo,
                    "max_expanded": self.settings.max_expanded_bytes,
                    "s3": c.record.get("s3"),
                    "max_member": self.settings.batch_max_member_bytes,
                }
                log.info("  %s: %d items, %d recorded before", c.job_id, len(todo), len(recorded))
            self._items = []
            self._in_flight = None
            self._items_flushed = time.monotonic()
            self.ensure_child()
            assert self.conn is not None
            self.conn.send(
                RunJob(
                    id=c.job_id,
                    attempt=c.attempt,
                    spec=c.record.get("spec") or {},
                    input_name=(c.record.get("input") or {}).get("name", ""),
                    gpu_min_faces=self.settings.gpu_min_faces,
                    batch=batch,
                )
            )
            return self._drive(c, started, deadline)
        except BaseException:
            # the child may still be running this job and would later answer the next one with
            # this job's messages: it goes, and the job is reaped once its lease runs out
            self.kill_child()
            raise
        finally:
            self.current = None
            self.jobs_done += 1

    def _drive(self, c: Claim, started: float, deadline: float) -> Claim | None:
        assert self.conn is not None
        last_renew = time.monotonic()
        progress: tuple[float, str] | None = None
        while True:
            msg: FromChild | None = None
            died = False
            try:
                if self.conn.poll(0.1):
                    msg = self.conn.recv()
            except (EOFError, OSError):
                died = True
            if msg is None and not self.child.is_alive():
                died = True
            now = time.monotonic()
            if isinstance(msg, ItemStart):
                self._in_flight = msg.index
            if isinstance(msg, ItemDone):
                self._items.append((msg.index, msg.outcome))
                self._in_flight = None
            flush = len(self._items) >= 64 or now - self._items_flushed >= 0.25 or died
            if self._items and flush and self.flush_items(c) < 0 and not died:
                log.warning("%s: lost chunk %s; stopping its run", self.name, c.job_id)
                self.kill_child()
                return None
            if isinstance(msg, Progress):
                progress = (float(msg.progress), str(msg.stage))
            elif isinstance(msg, Offers):
                self._took_offers(msg)
            elif isinstance(msg, Done):
                self.flush_items(c)
                self._commit(c, msg.fields, started)
                return None
            elif isinstance(msg, Failed):
                self.flush_items(c)
                if msg.poisoned:
                    log.error("%s: the child's GPU context is unusable; replacing it", self.name)
                    self.kill_child()
                if msg.error.get("code") == BackendUnavailable.code:
                    self._no_gpu(c, msg.error)
                else:
                    self._failed(c, msg.error, msg.retryable)
                return None
            elif died:
                code = self.child.exitcode if self.child is not None else None
                log.error("%s: child died (exit %s) running %s", self.name, code, c.job_id)
                self.kill_child()
                self.delete_own_result(c, temporaries=True)
                error = ChildDied(exitcode=code).to_dict()
                self._item_killed_child(c, error)
                # this supervisor is fine: the job runs again here, on a new child, at once
                outcome, again = self._redis(partial(self.q.retry_here, self.name, c, error))
                log.warning("← %s failed (%s): %s", c.job_id, ChildDied.code, outcome)
                if outcome == JobState.failed:
                    save_outcome(self.q, self.store, c.job_id)
                return again
            if now - last_renew >= self.renew_every or (progress and now - last_renew >= 0.5):
                p, stage = progress if progress else (None, "")
                try:
                    renewed = self.q.renew(self.name, c, p, stage)
                except REDIS_DOWN as exc:
                    # keep computing while the lease may still hold; past it the job is reaped
                    if now - last_renew > self.settings.lease_seconds:
                        raise
                    log.warning("%s: renewing %s failed (%s); retrying", self.name, c.job_id, exc)
                    time.sleep(0.2)
                    continue
                if not renewed:
                    log.warning(
                        "%s: lost %s (cancelled or lease taken); stopping its run",
                        self.name,
                        c.job_id,
                    )
                    self.kill_child()
                    self.delete_own_result(c)
                    return None
                last_renew, progress = now, None
            if now - started > deadline:
                log.warning("%s: %s ran past its deadline of %.0fs", self.name, c.job_id, deadline)
                self.kill_child()
                timeout = JobTimeout(deadline_seconds=deadline)
                self._end(c, JobState.failed, {"error": timeout.to_dict()})
                self.delete_own_result(c)
                return None
            grace_over = (
                self.stopping and now - self.stop_requested > self.settings.shutdown_grace_seconds
            )
            if self.cold_stop or grace_over:
                self.kill_child()
                self.delete_own_result(c, temporaries=True)
                stopped = WorkerShutdown().to_dict()
                outcome = self._redis(
                    partial(
                        self.q.requeue,
                        c.job_id,
                        c.entry,
                        stopped,
                        owner=self.name,
                        attempt=c.attempt,
                        release=True,
                    )
                )
                log.info("%s: handed %s back on shutdown: %s", self.name, c.job_id, outcome)
                return None
            try:
                self.housekeeping()
            except REDIS_DOWN as exc:
                log.warning("%s: housekeeping failed (%s)", self.name, exc)

    def _item_killed_child(self, c: Claim, error: dict[str, Any]) -> None:
        """A batch chunk's child died running an item: the second time the same item was in
        flight at a death, it fails alone (with ``worker.child_died``), so that the rest of the
        chunk goes on; the first time, it is run again with the rest (the death may have come
        from outside)."""
        index, self._in_flight = self._in_flight, None
        if not c.record.get("batch") or index is None:
            return
        key = (c.job_id, index)
        self._deaths[key] = self._deaths.get(key, 0) + 1
        if self._deaths[key] >= 2:
            log.warning(
                "%s: item %d of %s killed its child twice: it fails", self.name, index, c.job_id
            )
            self._items.append((index, {"state": JobState.failed.value, "error": error}))
            self.flush_items(c)

    def flush_items(self, c: Claim) -> int:
        """Record the batch items that ended (fenced by the chunk's attempt): how many were
        new, or -1 when this attempt no longer owns the chunk."""
        if not self._items:
            return 0
        items, self._items = self._items, []
        self._items_flushed = time.monotonic()
        return self._redis(
            partial(
                self.batches.record_items,
                self.name,
                c.job_id,
                c.entry,
                c.attempt,
                c.record["batch"],
                int(c.record["chunk"]),
                items,
            )
        )

    def _commit(self, c: Claim, fields: dict[str, Any], started: float) -> None:
        # the API's stages (upload, parse, store_input) stay; the worker's are added
        fields["timings"] = {
            **(c.record.get("timings") or {}),
            **fields["timings"],
            "run": time.monotonic() - started,
        }
        if self._end(c, JobState.succeeded, fields):
            log.info("← %s succeeded in %.2fs", c.job_id, time.monotonic() - started)
            self.delete_other_results(c, keep=(fields.get("result") or {}).get("key", ""))
        else:
            log.warning(
                "%s: %s finished but its attempt %d can no longer commit",
                self.name,
                c.job_id,
                c.attempt,
            )
            self.delete_own_result(c)

    def _no_gpu(self, c: Claim, error: dict[str, Any]) -> None:
        """A ``device: "gpu"`` job on a worker without one: handed back at no attempt's cost
        when another worker offers a GPU (or is live and has not said yet), else failed at once,
        not retried (no attempt anywhere could run it)."""
        if gpu_elsewhere(self.q, self.name):
            outcome = self._redis(
                partial(
                    self.q.requeue,
                    c.job_id,
                    c.entry,
                    error,
                    owner=self.name,
                    attempt=c.attempt,
                    release=True,
                )
            )
            log.info("← %s needs a GPU: handed back for a worker with one (%s)", c.job_id, outcome)
            time.sleep(HAND_BACK_PAUSE_SECONDS)
            return
        detail = {**(error.get("detail") or {}), "reason": "no worker offers a GPU"}
        failed = BackendUnavailable("no worker offers a GPU", **detail).to_dict()
        if self._end(c, JobState.failed, {"error": failed}):
            log.info("← %s failed (%s), not retried", c.job_id, BackendUnavailable.code)

    def _failed(self, c: Claim, error: dict[str, Any], retryable: bool) -> None:
        if retryable:
            outcome = self._redis(
                lambda: self.q.requeue(c.job_id, c.entry, error, owner=self.name, attempt=c.attempt)
            )
            log.warning("← %s failed (%s): %s", c.job_id, error.get("code"), outcome)
            if outcome == JobState.failed:
                save_outcome(self.q, self.store, c.job_id)
        elif self._end(c, JobState.failed, {"error": error}):
            log.info("← %s failed (%s), not retried", c.job_id, error.get("code"))

    def _end(self, c: Claim, state: JobState, fields: dict[str, Any]) -> bool:
        """Commit the end of this attempt (if it still may) and keep the ended record in the
        blob store for recovery. Whether it was committed."""
        ended = self._redis(partial(self.q.finish, self.name, c, state, fields))
        if ended is None:
            return False
        save_outcome(self.q, self.store, c.job_id, ended)
        return True

    def _redis(self, fn: Callable[[], T]) -> T:
        """A commit-like call, retried through a Redis outage for about a lease (the fencing in
        the scripts makes a repeated call harmless); then the error goes up and the job is
        reaped and run again once Redis is back."""
        give_up = time.monotonic() + self.settings.lease_seconds
        while True:
            try:
                return fn()
            except REDIS_DOWN as exc:
                if time.monotonic() > give_up:
                    raise
                log.warning("%s: redis unavailable (%s); retrying", self.name, exc)
                time.sleep(0.5)

    def _delete_temporaries(self, job_id: str) -> None:
        """Half-written blobs: a write cut short by a kill leaves a temporary file (local store)
        or an open multipart upload (S3)."""
        n = self.store.abort_unfinished(job_prefix(job_id))
        if n:
            log.info("%s: removed %d unfinished writes of %s", self.name, n, job_id)

    def delete_own_result(self, c: Claim, temporaries: bool = False) -> None:
        """Remove what this attempt wrote (it will never be visible); other attempts' results,
        possibly committed or being written, are not ours to touch. ``temporaries``: our child is
        dead, so half-written files are ours or a fenced attempt's."""
        mine = f"-a{c.attempt}."
        try:
            for key in self.store.list_prefix(job_prefix(c.job_id)):
                name = key.rsplit("/", 1)[-1]
                if name.startswith(("result-", "artifact-")) and mine in name:
                    self.store.delete(key)
            if temporaries:
                self._delete_temporaries(c.job_id)
        except OSError as exc:
            log.warning("cleanup of %s failed: %s", c.job_id, exc)

    def delete_other_results(self, c: Claim, keep: str) -> None:
        """After a commit: results and artifacts of other attempts of the job are orphans."""
        mine = f"-a{c.attempt}."
        try:
            for key in self.store.list_prefix(job_prefix(c.job_id)):
                name = key.rsplit("/", 1)[-1]
                if name.startswith(("result-", "artifact-")) and key != keep and mine not in name:
                    self.store.delete(key)
            self._delete_temporaries(c.job_id)
        except OSError as exc:
            log.warning("cleanup of %s failed: %s", c.job_id, exc)
