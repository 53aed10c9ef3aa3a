"""API keys: off by default; when configured, a missing, unknown or revoked key is a 401, and a
job belongs to the key that submitted it (any other key is told 404)."""

from __future__ import annotations

import json
import os
import time

import pytest
from fastapi.testclient import TestClient

import tessera
from service.main import create_app
from tests.service.helpers import assert_problem, spec, submit
from workers.apikeys import KeyRing, parse_keys

A = "alpha-secret-0123456789"
B = "bravo-secret-0123456789"
C = "charlie-secret-012345678"


@pytest.fixture
def keys_file(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"alpha": A, "bravo": {"secret": B}, "charlie": C}))
    return path


@pytest.fixture
def keyed(settings, keys_file):
    s = settings.model_copy(update={"api_keys_file": keys_file})
    with TestClient(create_app(s)) as c:
        yield c


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_missing_wrong_and_revoked_keys_are_401(keyed, keys_file):
    r = assert_problem(submit(keyed), 401, "auth.missing_key")
    assert r["type"] == "urn:tessera:problem:auth.missing_key"
    assert submit(keyed).headers["www-authenticate"].startswith("Bearer")
    assert_problem(submit(keyed, headers=bearer("nope-" + A)), 401, "auth.invalid_key")
    assert_problem(keyed.get("/v1/jobs/0123abcd"), 401, "auth.missing_key")
    assert submit(keyed, headers={"X-API-Key": C}).status_code == 202
    # revoking a key in the file takes effect without a restart
    keys_file.write_text(
        json.dumps({"alpha": A, "bravo": B, "charlie": {"secret": C, "revoked": True}})
    )
    os.utime(keys_file, ns=(time.time_ns(), time.time_ns() + 10**9))
    time.sleep(0.6)
    assert_problem(submit(keyed, headers=bearer(C)), 401, "auth.revoked_key")
    assert submit(keyed, headers=bearer(A)).status_code == 202
    # the catalogue and health stay open
    assert keyed.get("/v1/operations").status_code == 200
    assert keyed.get("/healthz").status_code == 200


def test_a_job_is_invisible_to_other_keys(keyed):
    job = submit(keyed, headers=bearer(A)).json()
    url = job["url"]
    assert keyed.get(url, headers=bearer(A)).json()["id"] == job["id"]
    for call in (
        lambda h: keyed.get(url, headers=h),
        lambda h: keyed.get(url + "/result", headers=h),
        lambda h: keyed.get(url + "/artifacts/laplacian", headers=h),
        lambda h: keyed.delete(url, headers=h),
    ):
        assert_problem(call(bearer(B)), 404, "job.not_found")
    assert keyed.get(url, headers=bearer(A)).json()["state"] == "queued"  # B's cancel did nothing
    assert_problem(keyed.get(url + "/result", headers=bearer(A)), 409, "job.not_ready")
    assert keyed.delete(url, headers=bearer(A)).json()["state"] == "cancelled"


def test_idempotency_keys_are_per_api_key(keyed):
    h = {"Idempotency-Key": "same"}
    a = submit(keyed, spec_text=spec("stats"), headers={**bearer(A), **h})
    b = submit(keyed, spec_text=spec("stats"), headers={**bearer(B), **h})
    assert a.status_code == b.status_code == 202
    assert a.json()["id"] != b.json()["id"]
    again = submit(keyed, spec_text=spec("stats"), headers={**bearer(A), **h})
    assert again.status_code == 200 and again.json()["id"] == a.json()["id"]


def test_the_client_raises_unauthorized(keyed):
    c = tessera.Client("http://testserver", http=keyed)
    with pytest.raises(tessera.Unauthorized) as e:
        c.get("0123abcd")
    assert (e.value.code, e.value.status) == ("auth.missing_key", 401)
    c = tessera.Client("http://testserver", http=keyed, api_key=A)
    job = c.submit(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", ["stats"], filename="t.obj")
    assert c.get(job)["id"] == job["id"]


def test_keys_off_by_default_and_inline_keys(settings):
    with TestClient(create_app(settings)) as c:
        assert submit(c).status_code == 202
    inline = settings.model_copy(update={"api_keys": {"ci": A}})
    with TestClient(create_app(inline)) as c:
        assert_problem(submit(c), 401, "auth.missing_key")
        assert submit(c, headers=bearer(A)).status_code == 202


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"a": "short"}, "shorter than 16"),  # placeholder-length secret
        ({"a b": A}, "must be 1-64"),  # key id with a space
        ({"a": {"revoked": True}}, "needs a secret"),  # no secret at all
        (["a", A], "expected an object"),  # not a mapping
    ],
)
def test_bad_key_configuration_fails_at_start(keys, message):
    with pytest.raises(ValueError, match=message):
        parse_keys(keys, "test")


def test_a_broken_keys_file_keeps_the_keys_read_before(keys_file):
    ring = KeyRing(file=keys_file)
    assert ring.lookup(A).id == "alpha"
    keys_file.write_text("{not json")
    os.utime(keys_file, ns=(time.time_ns(), time.time_ns() + 10**9))
    time.sleep(0.6)
    assert ring.lookup(A).id == "alpha" and ring.lookup("x" * 20) is None


@pytest.fixture
def quota_client(settings, tmp_path):
    def make(**quotas):
        path = tmp_path / "quota-keys.json"
        path.write_text(json.dumps({"q": {"secret": A, **quotas}, "free": B}))
        s = settings.model_copy(update={"api_keys_file": path})
        return TestClient(create_app(s))

    return make


def test_requests_per_minute_quota_is_429_with_retry_after(quota_client):
    with quota_client(requests_per_minute=3) as c:
        for _ in range(3):
            assert c.get("/v1/jobs/0123abcd", headers=bearer(A)).status_code == 404
        r = c.get("/v1/jobs/0123abcd", headers=bearer(A))
        assert_problem(r, 429, "quota.requests")
        assert 1 <= int(r.headers["retry-after"]) <= 61
        # another key is not limited by it
        assert c.get("/v1/jobs/0123abcd", headers=bearer(B)).status_code == 404


def test_concurrent_jobs_quota_counts_jobs_until_they_end(quota_client):
    with quota_client(concurrent_jobs=2) as c:
        ids = [submit(c, headers=bearer(A)).json()["id"] for _ in range(2)]
        r = submit(c, headers=bearer(A))
        assert_problem(r, 429, "quota.concurrent_jobs")
        assert r.headers["retry-after"] == "5"  # a job's end is what frees a slot: try soon
        assert submit(c, headers=bearer(B)).status_code == 202  # no quota on this key
        assert c.delete(f"/v1/jobs/{ids[0]}", headers=bearer(A)).status_code in (200, 202)
        assert submit(c, headers=bearer(A)).status_code == 202  # a slot freed by the cancel


def test_bytes_per_day_quota(quota_client):
    with quota_client(bytes_per_day=800) as c:  # the cube is 521 bytes
        first = submit(c, headers=bearer(A))
        assert first.status_code == 202
        r = submit(c, headers=bearer(A))  # twice is more than 800
        assert_problem(r, 429, "quota.bytes")
        assert int(r.headers["retry-after"]) <= 86401


def test_quotas_count_new_valid_jobs_only(quota_client):
    """A replay (same Idempotency-Key and body) is answered whatever the quotas say, and an
    upload refused as invalid is not charged to the day's bytes."""
    with quota_client(concurrent_jobs=1, bytes_per_day=1100) as c:  # the cube is 521 bytes
        key = {**bearer(A), "Idempotency-Key": "k1"}
        first = submit(c, headers=key)
        assert first.status_code == 202
        again = submit(c, headers=key)  # the key is at its one job: a replay still answers
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
        bad = submit(c, b"\x00garbage" * 60, filename="x.obj", headers=bearer(A))
        assert_problem(bad, 422, "format.mismatch")  # 600 bytes refused, not charged
        assert c.delete(first.json()["url"], headers=bearer(A)).status_code == 200
        assert submit(c, headers=bearer(A)).status_code == 202  # 1042 bytes of 1100 used


def test_simultaneous_submissions_cannot_pass_the_concurrent_jobs_quota(quota_client):
    from concurrent.futures import ThreadPoolExecutor

    with quota_client(concurrent_jobs=2) as c, ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: submit(c, headers=bearer(A)).status_code, range(8)))
    assert sorted(codes) == [202, 202] + [429] * 6, codes


def test_bad_quota_values_are_refused():
    with pytest.raises(ValueError):
        parse_keys({"k": {"secret": A, "concurrent_jobs": 0}}, "test")
    with pytest.raises(ValueError):
        parse_keys({"k": {"secret": A, "bytes_per_day": "lots"}}, "test")


def test_cors_only_for_configured_origins(settings):
    s = settings.model_copy(update={"cors_origins": ["https://app.example"]})
    with TestClient(create_app(s)) as c:
        pre = {"Access-Control-Request-Method": "POST"}
        ok = c.options("/v1/jobs", headers={"Origin": "https://app.example", **pre})
        assert ok.headers.get("access-control-allow-origin") == "https://app.example"
        other = c.options("/v1/jobs", headers={"Origin": "https://evil.example", **pre})
        assert "access-control-allow-origin" not in other.headers
    with TestClient(create_app(settings)) as c:  # none configured: no CORS headers at all
        r = c.get("/v1/operations", headers={"Origin": "https://app.example"})
        assert "access-control-allow-origin" not in r.headers
