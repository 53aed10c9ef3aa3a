"""The worker registry: live workers, what each offers, and the rule that refuses a
``device: "gpu"`` job where the deployment has no GPU."""

from __future__ import annotations

import time

import pytest

from workers.queue.jobs import JobQueue
from workers.queue.registry import LIVE_SECONDS, REMEMBER_SECONDS, gpu_elsewhere, gpu_refusal
from workers.queue.registry import workers as registered


@pytest.fixture
def q(redis_client):
    return JobQueue(redis_client, lease_seconds=2.0)


CPU = {"backends": ["cpu"], "gpu": None, "state": "running", "version": "0.1.0"}
GPU = {"backends": ["cpu", "gpu"], "gpu": {"name": "NVIDIA H100", "memory_bytes": 80 << 30}}
STARTING = {"backends": None, "state": "running"}


def test_live_workers_and_those_remembered(q):
    now = time.time()
    q.heartbeat("fresh", CPU, now=now)
    q.heartbeat("quiet", GPU, now=now - LIVE_SECONDS - 5)
    q.heartbeat("stopped", {**CPU, "state": "stopped"}, now=now)
    live = registered(q, now=now)
    assert [w["name"] for w in live] == ["fresh"]
    assert live[0]["backends"] == ["cpu"] and live[0]["live"] is True
    every = {w["name"]: w for w in registered(q, live_only=False, now=now)}
    assert set(every) == {"fresh", "quiet", "stopped"}
    assert every["quiet"]["live"] is False and every["quiet"]["age"] == pytest.approx(
        LIVE_SECONDS + 5, abs=0.01
    )
    assert every["stopped"]["live"] is False
    # the record itself outlives the heartbeat by REMEMBER_SECONDS, then Redis drops it
    assert 0 < q.r.ttl("tessera:worker:fresh") <= REMEMBER_SECONDS


def test_gpu_refused_only_where_the_deployment_is_known_to_have_no_gpu(q):
    now = time.time()
    assert gpu_refusal(q, now=now) is None  # no worker seen: the job waits for one
    q.heartbeat("w-starting", STARTING, now=now)
    assert gpu_refusal(q, now=now) is None  # its compute child has not said yet: maybe a GPU
    assert gpu_refusal(q, now=now + LIVE_SECONDS + 1) is not None  # it died before saying
    q.heartbeat("w-starting", CPU, now=now)
    refused = gpu_refusal(q, now=now)
    assert refused == {"workers": [{"name": "w-starting", "backends": ["cpu"], "live": True}]}
    # a GPU worker seen five minutes ago (restarting, say) keeps GPU jobs coming
    q.heartbeat("w-gpu", GPU, now=now - 300)
    assert gpu_refusal(q, now=now) is None
    assert gpu_elsewhere(q, "w-starting", now=now) is True
    assert gpu_elsewhere(q, "w-gpu", now=now) is False
    # ... but not one gone longer than the registry remembers
    later = now + REMEMBER_SECONDS + 1
    assert gpu_refusal(q, now=later) is None  # nobody seen then: the job waits
    q.heartbeat("w-starting", CPU, now=later)
    assert gpu_refusal(q, now=later) is not None
