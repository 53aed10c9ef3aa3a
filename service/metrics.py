"""Prometheus metrics of the API: HTTP traffic, and queue figures read from Redis at scrape."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "tessera_http_requests", "HTTP requests", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "tessera_http_request_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.queue_waiting = Gauge(
            "tessera_queue_waiting", "Jobs queued, not yet claimed", registry=r
        )
        self.queue_running = Gauge("tessera_queue_running", "Jobs claimed by a worker", registry=r)
        self.workers_live = Gauge(
            "tessera_workers_live", "Workers with a recent heartbeat", registry=r
        )
        self.jobs = Gauge(
            "tessera_jobs", "Job events since the store was created", ["event"], registry=r
        )
        self.redis_up = Gauge(
            "tessera_redis_up", "1 when Redis answered the last scrape", registry=r
        )
        self.scraped = Gauge("tessera_last_scrape_timestamp", "Time of the last scrape", registry=r)


class MetricsMiddleware:
    """Counts requests and their latency per route template (not per raw path), and records
    when each request started (for the job's upload timing)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.m = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        scope.setdefault("state", {})["started"] = time.time()
        status = 500

        async def wrapped(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            await send(msg)

        try:
            await self.app(scope, receive, wrapped)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.m.requests.labels(scope["method"], path, str(status)).inc()
            self.m.latency.labels(scope["method"], path).observe(time.perf_counter() - t0)
