"""Webhooks end to end: real workers deliver signed events to a real HTTP server the test runs,
retry a failing endpoint until it recovers, and survive a worker killed between attempts."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

import tessera
from service.main import create_app
from tessera.webhooks import InvalidSignature, verify
from tests.conftest import _free_port, mesh_path
from tests.live import LiveService, flush, live_settings
from tests.service.helpers import assert_problem, spec, submit
from workers.apikeys import keyring_from
from workers.queue import keys
from workers.webhooks import Dispatcher, sign

SECRET = "default-webhook-secret-0123"


class Receiver:
    """An HTTP server that records every POST and answers 500 to the first ``fail`` of them."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.calls.append(
                    {"at": time.monotonic(), "headers": dict(self.headers), "body": body}
                )
                status = 500 if len(outer.calls) <= outer.fail else 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def other_db(url: str) -> str:
    """The same Redis, another database: the live stack never meets the per-test flushes."""
    base, _, db = url.rpartition("/")
    return f"{base}/{(int(db or 0) + 1) % 16}"


@pytest.fixture(scope="module")
def live(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    url = other_db(redis_url)
    flush(url)
    tmp = tmp_path_factory.mktemp("webhooks")
    s = live_settings(
        url,
        tmp / "data",
        webhook_secret=SECRET,
        webhook_backoff_seconds=0.3,
        webhook_max_attempts=3,
        webhook_timeout_seconds=2.0,
    )
    svc = LiveService(s, tmp, n_workers=1)
    try:
        svc.wait_ready()
        yield svc
    finally:
        svc.stop()
        flush(url)


def delivered(tc: tessera.Client, job: dict[str, Any], timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.time() + timeout
    while True:
        rec = tc.get(job)
        hook = rec.get("webhook") or {}
        if hook.get("delivered") or hook.get("gave_up"):
            return rec
        assert time.time() < deadline, f"no webhook delivered: {rec.get('webhook')}"
        time.sleep(0.05)


def test_signature_helpers_agree():
    body = b'{"id":"x"}'
    header = sign(SECRET, 1700000000, body)
    assert verify(SECRET, header, body, now=1700000010)["id"] == "x"
    for bad in (
        lambda: verify("another-secret-0123456", header, body, now=1700000010),  # wrong secret
        lambda: verify(SECRET, header, body + b" ", now=1700000010),  # altered body
        lambda: verify(SECRET, header, body, now=1700000000 + 301),  # too old: a replay
        lambda: verify(SECRET, None, body),  # unsigned
        lambda: verify(SECRET, "v1=abc", body),  # no timestamp
    ):
        with pytest.raises(InvalidSignature):
            bad()


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://127.0.0.1/hook", "spec.invalid"),  # not http(s)
        ("http:///hook", "spec.invalid"),  # no host
        ("http://127.0.0.1:99999/hook", "spec.invalid"),  # port out of range
        ("https://example.invalid/hook", "spec.webhook_unsigned"),  # fine, but nothing to sign
    ],
)
def test_callback_url_is_checked(client, url, code):
    assert_problem(submit(client, spec_text=spec("stats", callback_url=url)), 422, code)


@pytest.mark.slow
def test_a_keys_webhook_is_signed_with_that_keys_secret(settings, redis_client, receiver):
    keyed = settings.model_copy(
        update={"api_keys": {"k1": {"secret": "k1-api-secret-0123456", "webhook_secret": SECRET}}}
    )
    with TestClient(create_app(keyed)) as c:
        h = {"Authorization": "Bearer k1-api-secret-0123456"}
        job = submit(c, spec_text=spec("stats", callback_url=receiver.url), headers=h).json()
        assert redis_client.zscore(keys.WEBHOOKS_DUE, job["id"]) is None
        c.delete(job["url"], headers=h)  # cancelled: an ended job
        assert redis_client.zscore(keys.WEBHOOKS_DUE, job["id"]) is not None
        d = Dispatcher(redis_client, keyed, keyring_from(keyed))
        try:
            assert d.run_once() == 1
        finally:
            d.close()
        rec = c.get(job["url"], headers=h).json()
    assert rec["webhook"]["delivered"] and rec["webhook"]["attempts"][0]["status"] == 204
    call = receiver.calls[0]
    event = verify(SECRET, call["headers"]["Tessera-Signature"], call["body"])
    assert (event["type"], event["id"], event["state"]) == ("job.cancelled", job["id"], "cancelled")
    assert event["links"] == {"job": job["url"]}
    assert redis_client.zcard(keys.WEBHOOKS_DUE) == 0


@pytest.mark.slow
def test_succeeded_job_delivers_a_signed_event(live, receiver):
    with tessera.Client(live.url) as tc:
        job = tc.submit(mesh_path("rx-cube.obj"), ["laplacian_matrix"], callback_url=receiver.url)
        tc.wait(job, timeout=30)
        rec = delivered(tc, job)
    assert rec["webhook"]["delivered"] is True and len(rec["webhook"]["attempts"]) == 1
    assert rec["webhook"]["attempts"][0]["status"] == 204
    [call] = receiver.calls
    assert call["headers"]["Content-Type"] == "application/json"
    assert call["headers"]["Tessera-Event"] == "job.succeeded"
    assert call["headers"]["Tessera-Delivery"] == job["id"]
    event = verify(SECRET, call["headers"]["Tessera-Signature"], call["body"])
    assert event["state"] == "succeeded" and event["error"] is None
    assert event["links"]["job"] == job["url"]
    assert event["links"]["result"] == job["url"] + "/result"
    assert set(event["links"]["artifacts"]) == {"laplacian", "mass"}
    with pytest.raises(InvalidSignature):
        verify("not-the-secret-0123456", call["headers"]["Tessera-Signature"], call["body"])


@pytest.mark.slow
def test_failing_endpoint_is_retried_with_backoff_until_it_recovers(live, receiver):
    receiver.fail = 2
    with tessera.Client(live.url) as tc:
        job = tc.submit(
            mesh_path("rx-cube.obj"), [{"op": "sleep", "fail": "input"}], callback_url=receiver.url
        )
        with pytest.raises(tessera.JobFailed):
            tc.wait(job, timeout=30)
        rec = delivered(tc, job)
    hook = rec["webhook"]
    assert hook["delivered"] is True
    assert [a["status"] for a in hook["attempts"]] == [500, 500, 204]
    t = [c["at"] for c in receiver.calls]
    assert t[1] - t[0] >= 0.3 * 0.8 and t[2] - t[1] >= 0.6 * 0.8  # doubling backoff
    event = json.loads(receiver.calls[-1]["body"])
    assert event["state"] == "failed" and event["error"]["code"] == "mesh.test_rejected"
    assert "result" not in event["links"]


@pytest.mark.slow
def test_unreachable_endpoint_gives_up_after_the_last_attempt(live):
    url = f"http://127.0.0.1:{_free_port()}/hook"
    with tessera.Client(live.url) as tc:
        job = tc.submit(mesh_path("rx-cube.obj"), ["stats"], callback_url=url)
        tc.wait(job, timeout=30)
        rec = delivered(tc, job)
    hook = rec["webhook"]
    assert hook["delivered"] is False and hook["gave_up"] is True
    assert hook.get("next_attempt_at") is None  # no attempt is due any more
    assert len(hook["attempts"]) == 3
    assert all(a["status"] is None and "Connect" in a["error"] for a in hook["attempts"])


@pytest.mark.slow
def test_delivery_survives_a_worker_killed_between_attempts(live, receiver):
    receiver.fail = 1
    with tessera.Client(live.url) as tc:
        job = tc.submit(mesh_path("rx-cube.obj"), ["stats"], callback_url=receiver.url)
        tc.wait(job, timeout=30)
        deadline = time.time() + 10
        while not (tc.get(job).get("webhook") or {}).get("attempts"):  # the 500 is recorded
            assert time.time() < deadline
            time.sleep(0.02)
        live.workers.kill("w0")  # its retry is now due in about 0.3 s, with no one to send it
        live.workers.start("w1")
        rec = delivered(tc, job, timeout=30)
    assert [a["status"] for a in rec["webhook"]["attempts"]] == [500, 204]
    assert len(receiver.calls) == 2
    # w1 logs the attempt just after it saves the record the client saw: wait for the line
    deadline = time.time() + 10
    while f"webhook {job['id']} attempt 2" not in live.workers.log("w1"):
        assert time.time() < deadline, live.workers.log("w1")
        time.sleep(0.02)
