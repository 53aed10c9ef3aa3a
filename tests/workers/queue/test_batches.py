"""A batch's view (``BatchQueue.get``): its counters and its chunks' states from one moment."""

from __future__ import annotations

from typing import Any

from workers.queue.batches import BatchQueue, Chunk
from workers.queue.jobs import JobQueue, JobState


class _EndsAfterFirstRead:
    """A Redis client that runs ``then()`` right after the first read of a batch's hash: the
    worst moment for a chunk to record its last item and end."""

    def __init__(self, r: Any, then: Any) -> None:
        self._r, self._then, self._done = r, then, False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._r, name)
        if name not in ("hget", "hgetall") or self._done:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            self._done = True
            self._then()
            return out

        return call


def test_a_chunk_ending_while_the_batch_is_read_is_seen_whole_or_not_at_all(redis_client):
    """The last chunk records its last item and ends between the view's reads: the view is the
    batch before (running, one item left) or after (ended, every item counted), never ended
    with an item counted as cancelled (as a client saw it, once, in CI)."""
    q = JobQueue(redis_client)
    bq = BatchQueue(q)
    items = [{"path": f"{i}.obj", "output": f"{i}.ply", "bytes": 1, "chunk": 0} for i in range(2)]
    bq.create("b1", {"spec": {}}, items, {})
    bq.add_chunks("b1", [Chunk("c0", 0, 2, 2)])
    q.submit_job("c0", {"input": {"name": "chunk 0"}, "batch": "b1", "chunk": 0}, listed=False)
    ((entry, job),) = q.read_next("w1")
    c = q.claim("w1", entry, job)
    assert c is not None
    ok = {"state": "succeeded"}
    assert bq.record_items("w1", "c0", c.entry, c.attempt, "b1", 0, [(0, ok)]) == 1

    def last_item_and_end() -> None:
        assert bq.record_items("w1", "c0", c.entry, c.attempt, "b1", 0, [(1, ok)]) == 1
        assert q.finish("w1", c, JobState.succeeded, {"result": None}) is not None

    bq.r = _EndsAfterFirstRead(redis_client, last_item_and_end)
    view = bq.get("b1")
    assert view is not None
    before = view.state == "running" and view.counts["succeeded"] == 1
    after = view.state == "succeeded" and view.counts["succeeded"] == 2
    assert before or after, (view.state, view.counts)
    assert view.counts["cancelled"] == 0
    bq.r = redis_client
    again = bq.get("b1", items=True)
    assert again is not None and again.state == "succeeded" and again.counts["succeeded"] == 2
    assert [i["state"] for i in again.items or []] == ["succeeded", "succeeded"]
