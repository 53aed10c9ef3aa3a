"""The job state machine table in docs/operations.md, played cell by cell against Redis: from
each state, each event, the state the scripts leave the job in."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from workers.queue.jobs import Claim, JobQueue, JobState

ERR = {"code": "engine.internal", "message": "x"}


def _table() -> dict[tuple[str, str], str]:
    """``(state, event) -> cell`` from the table under "The job state machine"."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("## The job state machine") :]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    cells = {}
    for row in rows[2:]:
        values = [c.strip() for c in row.strip("|").split("|")]
        for event, value in zip(header[1:], values[1:], strict=True):
            cells[(values[0], event)] = value
    return cells


TABLE = _table()


def _claim_of(q: JobQueue, job_id: str, owner: str = "w1") -> Claim:
    rec = q.get(job_id)
    return Claim(job_id, rec.get("entry", ""), int(rec.get("attempt") or 0), rec)


def _in_state(q: JobQueue, state: str, job_id: str = "j") -> None:
    q.submit(job_id, {"spec": {}})
    if state == "queued":
        return
    if state == "cancelled":
        q.cancel(job_id)
        return
    [(entry, jid)] = q.read_next("w1", block_ms=100)
    c = q.claim("w1", entry, jid)
    assert c is not None
    if state == "succeeded":
        q.finish("w1", c, JobState.succeeded, {})
    elif state == "failed":
        q.finish("w1", c, JobState.failed, {"error": ERR})
    assert q.get(job_id)["state"] == state


def _event(q: JobQueue, event: str, job_id: str = "j") -> None:
    c = _claim_of(q, job_id)
    if event == "claim":
        q.claim("w2", c.entry, job_id)
    elif event == "commit success":
        q.finish("w1", c, JobState.succeeded, {})
    elif event == "commit failure":
        q.finish("w1", c, JobState.failed, {"error": ERR})
    elif event == "retryable failure":
        q.requeue(job_id, c.entry, ERR, owner="w1", attempt=c.attempt)
    elif event == "lease expired":  # what the reaper does with each entry it took
        q.requeue(job_id, c.entry, ERR)
    elif event == "hand back":
        q.requeue(job_id, c.entry, ERR, owner="w1", attempt=c.attempt, release=True)
    elif event == "child died":
        q.retry_here("w1", c, ERR)
    elif event == "cancel":
        q.cancel(job_id)
    elif event == "operator retry":
        q.retry_dead(job_id)
    else:
        raise AssertionError(f"the table names an event the test does not know: {event}")


def _expected(cell: str, before: str, last_attempt: bool) -> str:
    if cell == "–":
        return before
    outcomes = [o.strip() for o in cell.split("/")]
    pick = outcomes[-1] if last_attempt else outcomes[0]
    state = pick.split()[0]
    assert state in {s.value for s in JobState}, cell
    return state


def test_the_table_covers_every_stored_state():
    assert {s for s, _ in TABLE} == {s.value for s in JobState} - {"expired"}
    assert len({e for _, e in TABLE}) == 9


@pytest.mark.parametrize("last_attempt", [False, True], ids=["attempts-left", "last-attempt"])
@pytest.mark.parametrize(("state", "event"), sorted(TABLE))
def test_each_cell_is_what_the_scripts_do(redis_client, state, event, last_attempt):
    q = JobQueue(redis_client, lease_seconds=5.0, max_attempts=1 if last_attempt else 3)
    _in_state(q, state)
    _event(q, event)
    after = q.get("j")["state"]
    assert after == _expected(TABLE[(state, event)], state, last_attempt), TABLE[(state, event)]
    # failed for good after its last attempt: a dead letter (a failure not retried is not one)
    dead = redis_client.zscore("tessera:dead", "j") is not None
    assert dead == ("/" in TABLE[(state, event)] and last_attempt and after == "failed")


def test_the_scripts_named_in_the_table_exist():
    text = (ROOT / "docs" / "operations.md").read_text()
    named = set(re.findall(r"`(\w+)\.lua`", text))
    present = {p.stem for p in (ROOT / "workers" / "queue" / "scripts").glob("*.lua")}
    assert named and named <= present, named - present
    assert present - {"_prelude"} - named <= {"quota_admit", "webhook_take", "webhook_record"}
