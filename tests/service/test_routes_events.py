"""``GET /v1/jobs/{id}/events``: the job record as server-sent events until the job ends."""

from __future__ import annotations

import json

import pytest

from tests.service.helpers import assert_problem, spec, submit

ORDER = {"queued": 0, "running": 1, "succeeded": 2, "failed": 2, "cancelled": 2}


def events(client, url):
    """The (event, id, data) frames of a whole stream."""
    r = client.get(url + "/events")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["cache-control"] == "no-store"
    frames = []
    for block in r.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and ": " in line)
        if "data" in fields:
            frames.append((fields.get("event"), fields.get("id"), json.loads(fields["data"])))
    return frames, r.text


@pytest.mark.slow
def test_stream_follows_a_job_to_its_end(client, workers):
    workers.start("w1")
    job = submit(
        client,
        "spot.obj",
        spec({"op": "sleep", "seconds": 0.6}, "vertex_normals", "gaussian_curvature"),
    ).json()
    frames, text = events(client, job["url"])
    assert text.startswith("retry: 2000\n\n")
    states = [data["state"] for _, _, data in frames]
    assert states[-1] == "succeeded", states
    assert "running" in states, states
    assert [ORDER[s] for s in states] == sorted(ORDER[s] for s in states)
    assert [event for event, _, _ in frames] == ["job"] * len(frames)
    assert [int(i) for _, i, _ in frames] == list(range(1, len(frames) + 1))
    running = [d["progress"] for _, _, d in frames if d["state"] == "running"]
    assert running == sorted(running)
    # consecutive frames differ: a record is sent only when it changed
    assert all(a != b for (_, _, a), (_, _, b) in zip(frames, frames[1:], strict=False))
    final = client.get(job["url"]).json()
    assert frames[-1][2] == final
    assert final["result"]["url"].endswith("/result")


def test_stream_of_an_ended_job_is_its_record_once(client):
    job = submit(client).json()
    assert client.delete(job["url"]).json()["state"] == "cancelled"
    frames, _ = events(client, job["url"])
    assert len(frames) == 1
    event, event_id, data = frames[0]
    assert (event, event_id, data["state"], data["id"]) == ("job", "1", "cancelled", job["id"])


def test_stream_of_an_unknown_job_is_404(client):
    assert_problem(client.get("/v1/jobs/0123abcd/events"), 404, "job.not_found")
