"""The Redis round trips one small job costs, counted on the clients of the API and of a
supervisor: each command sent alone is one, each pipeline or transaction is one. The counts are
pinned: a change that adds a round trip back to a job's path fails here."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tests.service.helpers import spec, submit
from workers.queue.jobs import JobQueue


class RoundTrips:
    """Wraps Redis clients (sync or asyncio) so that every round trip they make is logged: a
    command by its name (a script by its file's name), a pipeline as ``pipeline[...]``."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.scripts: dict[str, str] = {}

    def name(self, args: tuple[Any, ...]) -> str:
        cmd = str(args[0]).upper()
        if cmd == "EVALSHA":
            return f"script:{self.scripts.get(str(args[1]), args[1])}"
        return cmd

    def _pipe_name(self, pipe: Any) -> str:
        return "pipeline[" + " ".join(self.name(args) for args, _ in pipe.command_stack) + "]"

    def watch(self, client: Any, scripts: dict[str, Any] | None = None) -> None:
        """Count ``client``'s round trips; ``scripts`` (name -> registered script) name them."""
        self.scripts.update({s.sha: name for name, s in (scripts or {}).items()})
        command, pipeline = client.execute_command, client.pipeline
        is_async = "asyncio" in type(client).__module__

        if is_async:

            async def counted(*args: Any, **kw: Any) -> Any:
                self.log.append(self.name(args))
                return await command(*args, **kw)

        else:

            def counted(*args: Any, **kw: Any) -> Any:
                self.log.append(self.name(args))
                return command(*args, **kw)

        def counted_pipeline(*args: Any, **kw: Any) -> Any:
            pipe = pipeline(*args, **kw)
            execute = pipe.execute
            if is_async:

                async def run(*a: Any, **k: Any) -> Any:
                    self.log.append(self._pipe_name(pipe))
                    return await execute(*a, **k)

            else:

                def run(*a: Any, **k: Any) -> Any:
                    self.log.append(self._pipe_name(pipe))
                    return execute(*a, **k)

            pipe.execute = run
            return pipe

        client.execute_command = counted
        client.pipeline = counted_pipeline

    def during(self, fn: Callable[[], Any]) -> tuple[Any, list[str]]:
        start = len(self.log)
        out = fn()
        return out, self.log[start:]


def _wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


def _blocked_readers(redis_client: Any) -> int:
    """Clients blocked in XREAD now (a long poll waiting on a job's event log)."""
    return sum(1 for c in redis_client.client_list() if c["cmd"] == "xread" and "b" in c["flags"])


def test_round_trips_of_a_small_job(client, settings, redis_client):
    from workers.supervisor import Supervisor

    api = RoundTrips()
    api.watch(client.app.state.queue.r, client.app.state.queue._s)
    api.watch(client.app.state.waiter.r)

    sup = Supervisor(settings.model_copy(update={"lease_seconds": 60.0, "warm_up": False}), "w")
    worker = RoundTrips()
    worker.watch(sup.client, sup.q._s)
    # housekeeping (heartbeats, reaping, sweeps) runs on timers, not per job: kept out
    sup._last_beat = sup._last_reap = sup._last_sweep = sup._last_recover = float("inf")

    def run_one() -> list[str]:
        def go() -> None:
            entries = sup.q.read_next("w", block_ms=1000)
            assert len(entries) == 1
            claim = sup.q.claim("w", *entries[0])
            assert claim is not None
            sup.run_claim(claim)

        _, log = worker.during(go)
        # a renewal is due every lease/4, and with progress every 0.5 s: none for a small job on
        # an idle machine, but time-bound, so they are left out of the pinned list
        return [c for c in log if c != "script:renew"]

    try:
        sup.start_child()
        # a first job loads the scripts and the child's engine: not counted
        submit(client, spec_text=spec("stats"))
        run_one()

        r, post = api.during(lambda: submit(client, spec_text=spec("stats")))
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["state"] == "queued"
        assert post == ["script:submit"]  # the script returns the record the API answers with

        # the claim returns the record (the spec); the commit returns the ended record, which is
        # kept as the job's outcome in the blob store
        assert run_one() == ["XREADGROUP", "script:claim", "script:finish"]

        r, poll = api.during(lambda: client.get(job["url"]))
        assert r.json()["state"] == "succeeded"
        assert poll == ["HGETALL"]
    finally:
        sup.kill_child()


def test_round_trips_of_a_long_poll(client, redis_client):
    """``GET /v1/jobs/{id}?wait=`` on a running job that reports progress once, then ends."""
    api = RoundTrips()
    api.watch(client.app.state.queue.r, client.app.state.queue._s)
    api.watch(client.app.state.waiter.r)
    job = submit(client, spec_text=spec("stats")).json()
    q = JobQueue(redis_client)  # the worker's side, not counted
    ((entry, job_id),) = q.read_next("w", block_ms=1000)
    c = q.claim("w", entry, job_id)
    assert c is not None

    answers: list[Any] = []
    start = len(api.log)
    poll = threading.Thread(target=lambda: answers.append(client.get(f"{job['url']}?wait=30")))
    poll.start()
    try:
        _wait_until(lambda: _blocked_readers(redis_client) == 1)
        assert q.renew("w", c, 0.5, "stats")  # progress: the poll wakes and waits again
        _wait_until(lambda: _blocked_readers(redis_client) == 1)
        assert q.finish("w", c, "succeeded", {})
    finally:
        poll.join(30)
    assert answers and answers[0].json()["state"] == "succeeded"
    assert api.log[start:] == [
        "HGETALL",  # the job as it is (404, its key, ended already?)
        "pipeline[XREVRANGE HGET]",  # where its event log is, and its state then (one instant)
        "XREAD",  # woken by the progress: the entry says running, no need to look
        "XREAD",  # woken by the end
        "HGETALL",  # the answer
    ]


def test_round_trips_of_a_submission_with_an_idempotency_key(client):
    api = RoundTrips()
    api.watch(client.app.state.queue.r, client.app.state.queue._s)
    submit(client, spec_text=spec("stats"))  # loads the scripts: not counted
    h = {"Idempotency-Key": "rt-1"}
    r, first = api.during(lambda: submit(client, spec_text=spec("stats"), headers=h))
    assert r.status_code == 202
    # is it a replay? (before parsing); did another request take the key meanwhile? (after)
    assert first == ["GET", "GET", "script:submit"]
    r, replay = api.during(lambda: submit(client, spec_text=spec("stats"), headers=h))
    assert r.status_code == 200
    assert replay == ["GET", "HGETALL"]


def test_round_trips_of_a_submission_under_quotas(settings, tmp_path):
    from fastapi.testclient import TestClient

    from service.main import create_app

    keys = {"q": {"secret": "quota-secret-0123456789", "requests_per_minute": 100}}
    keys["q"].update(concurrent_jobs=5, bytes_per_day=10**6)
    with TestClient(create_app(settings.model_copy(update={"api_keys": keys}))) as c:
        api = RoundTrips()
        api.watch(
            c.app.state.queue.r, {**c.app.state.queue._s, "quota_admit": c.app.state.quotas._admit}
        )
        h = {"Authorization": "Bearer quota-secret-0123456789"}
        assert submit(c, spec_text=spec("stats"), headers=h).status_code == 202
        r, log = api.during(lambda: submit(c, spec_text=spec("stats"), headers=h))
        assert r.status_code == 202
        assert log == [
            "pipeline[INCRBY EXPIRE]",  # requests this minute
            "ZRANGE",  # the key's jobs counted as queued or running
            "pipeline[HGET]",  # their states (the ended ones stop counting)
            "script:quota_admit",  # a place among them and the bytes, checked and taken at once
            "script:submit",
        ]


def test_round_trips_of_a_cancel(client):
    api = RoundTrips()
    api.watch(client.app.state.queue.r, client.app.state.queue._s)
    client.delete(submit(client, spec_text=spec("stats")).json()["url"])  # loads the scripts
    job = submit(client, spec_text=spec("stats")).json()
    r, log = api.during(lambda: client.delete(job["url"]))
    assert r.json()["state"] == "cancelled"
    # the script returns the record: the API keeps it as the outcome and answers with it
    assert log == ["HGETALL", "script:cancel"]
