"""Liveness, readiness (Redis and a live worker) and Prometheus metrics."""

from __future__ import annotations

from tests.service.helpers import submit


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_needs_a_worker(client):
    r = client.get("/readyz")
    assert r.status_code == 503
    assert r.json()["checks"]["redis"] == "ok" and r.json()["checks"]["workers"] == 0
    client.app.state.queue.heartbeat("w-test", {"pid": 0})
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json()["ready"] is True


def test_metrics_exposes_http_and_queue_figures(client):
    submit(client)
    text = client.get("/metrics").text
    assert 'tessera_http_requests_total{method="POST",route="/v1/jobs",status="202"} 1.0' in text
    assert "tessera_queue_waiting 1.0" in text
    assert 'tessera_jobs{event="submitted"} 1.0' in text
    assert "tessera_redis_up 1.0" in text
