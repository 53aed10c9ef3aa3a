"""What an operator and a caller see of the deployment: ``GET /v1/workers``, ``GET /v1/jobs``,
and a ``device: "gpu"`` job refused at once where no worker offers a GPU."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service.main import create_app
from tests.service.helpers import assert_problem, spec, submit, wait
from workers.queue import keys

ADMIN = "admin-secret-0123456789"
ALPHA = "alpha-secret-0123456789"
BRAVO = "bravo-secret-0123456789"


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def keyed(settings):
    keys = {"ops": {"secret": ADMIN, "admin": True}, "alpha": ALPHA, "bravo": BRAVO}
    with TestClient(create_app(settings.model_copy(update={"api_keys": keys}))) as c:
        yield c


CPU = {"backends": ["cpu"], "gpu": None, "state": "running", "version": "0.1.0", "host": "h",
       "pid": 7, "jobs": ["j1"], "busy": True, "started_at": 1.0, "children": 1}  # fmt: skip
GPU = {**CPU, "backends": ["cpu", "gpu"], "gpu": {"name": "NVIDIA H100", "memory_bytes": 1 << 36}}


def test_workers_route_lists_live_workers_and_hides_their_jobs_from_plain_keys(keyed):
    q = keyed.app.state.queue
    q.heartbeat("w-gpu", GPU)
    q.heartbeat("w-gone", CPU, now=time.time() - 60)  # not live
    assert_problem(keyed.get("/v1/workers"), 401, "auth.missing_key")
    admin = keyed.get("/v1/workers", headers=bearer(ADMIN)).json()
    assert admin["count"] == 1 and admin["gpu"] is True
    [w] = admin["data"]
    assert w["name"] == "w-gpu" and w["backends"] == ["cpu", "gpu"]
    assert w["gpu"] == {"name": "NVIDIA H100", "memory_bytes": 1 << 36}
    assert w["jobs"] == ["j1"] and w["host"] == "h" and w["pid"] == 7
    [plain] = keyed.get("/v1/workers", headers=bearer(ALPHA)).json()["data"]
    assert plain["backends"] == ["cpu", "gpu"] and plain["busy"] is True
    assert plain["jobs"] is None and plain["host"] is None and plain["pid"] is None


def test_workers_route_without_keys_shows_everything(client):
    client.app.state.queue.heartbeat("w1", CPU)
    body = client.get("/v1/workers").json()
    assert body["gpu"] is False and body["data"][0]["jobs"] == ["j1"]


def test_job_list_each_key_sees_its_own_and_an_admin_all(keyed):
    ids = {}
    for who in ("alpha", "bravo", "alpha"):
        r = submit(keyed, headers=bearer(ALPHA if who == "alpha" else BRAVO))
        assert r.status_code == 202, r.text
        ids.setdefault(who, []).append(r.json()["id"])
    mine = keyed.get("/v1/jobs", headers=bearer(ALPHA)).json()
    assert [j["id"] for j in mine["data"]] == list(reversed(ids["alpha"]))
    assert mine["data"][0]["state"] == "queued" and mine["data"][0]["url"].endswith(ids["alpha"][1])
    assert [j["id"] for j in keyed.get("/v1/jobs", headers=bearer(BRAVO)).json()["data"]] == ids[
        "bravo"
    ]
    everyone = keyed.get("/v1/jobs", headers=bearer(ADMIN)).json()
    assert {j["id"] for j in everyone["data"]} == set(ids["alpha"] + ids["bravo"])
    keyed.delete(f"/v1/jobs/{ids['alpha'][0]}", headers=bearer(ALPHA))
    cancelled = keyed.get("/v1/jobs?state=cancelled", headers=bearer(ALPHA)).json()["data"]
    assert [j["id"] for j in cancelled] == [ids["alpha"][0]]
    page = keyed.get("/v1/jobs?limit=1", headers=bearer(ALPHA)).json()
    assert page["count"] == 1 and page["next_cursor"]
    rest = keyed.get(f"/v1/jobs?limit=1&cursor={page['next_cursor']}", headers=bearer(ALPHA))
    assert [j["id"] for j in rest.json()["data"]] == [ids["alpha"][0]]
    assert rest.json()["next_cursor"] is None
    assert_problem(keyed.get("/v1/jobs?cursor=x", headers=bearer(ALPHA)), 422, "request.invalid")
    assert_problem(keyed.get("/v1/jobs?state=lost", headers=bearer(ALPHA)), 422, "request.invalid")


def test_gpu_job_refused_at_once_only_where_no_worker_offers_a_gpu(client):
    gpu_spec = spec("stats", device="gpu")
    q = client.app.state.queue
    # no worker seen yet (not started, or restarting): the job is queued and waits
    assert submit(client, spec_text=gpu_spec).status_code == 202
    q.heartbeat("w-cpu", CPU)
    body = assert_problem(submit(client, spec_text=gpu_spec), 422, "backend.unavailable")
    assert body["context"]["workers"] == [{"name": "w-cpu", "backends": ["cpu"], "live": True}]
    assert "GPU" in body["detail"]
    assert submit(client, spec_text=spec("stats", device="auto")).status_code == 202
    q.heartbeat("w-gpu", GPU)
    assert submit(client, spec_text=gpu_spec).status_code == 202


def test_a_real_worker_registers_fails_an_impossible_gpu_job_once_and_logs_its_steps(
    client, workers
):
    queued = submit(client, spec_text=spec("weld", "stats", device="gpu")).json()
    ok = submit(client, spec_text=spec("weld", "stats")).json()
    workers.start("w1", cpu_only=True)
    job = wait(client, queued["url"], timeout=60)
    # no worker offers a GPU: failed at its first run, not retried max_attempts times
    assert job["state"] == "failed" and job["error"]["code"] == "backend.unavailable"
    assert job["attempts"] == 1
    assert wait(client, ok["url"], timeout=60)["state"] == "succeeded"
    deadline = time.time() + 10  # the registration follows the heartbeat (every 2 s)
    while (w := client.get("/v1/workers").json()["data"][0])["jobs_done"] < 2:
        assert time.time() < deadline, w
        time.sleep(0.2)
    assert w["name"] == "w1" and w["backends"] == ["cpu"] and w["state"] == "running"
    assert w["version"] and w["busy"] is False and w["jobs"] == []
    refused = submit(client, spec_text=spec("stats", device="gpu"))
    assert_problem(refused, 422, "backend.unavailable")
    log = workers.log("w1")
    assert f"job {ok['id']} step 1/2 weld:" in log and "faces 12 -> 12" in log
    assert f"job {ok['id']} step 2/2 stats:" in log


def test_a_cpu_worker_hands_a_gpu_job_back_while_a_gpu_worker_is_known(client, workers):
    q = client.app.state.queue
    q.heartbeat("w-gpu", GPU)  # a GPU worker (busy elsewhere, say): the job is accepted
    job = submit(client, spec_text=spec("stats", device="gpu")).json()
    workers.start("w1", cpu_only=True)
    deadline = time.time() + 30
    while int((rec := q.get(job["id"])).get("releases") or 0) < 1:
        assert time.time() < deadline, rec
        time.sleep(0.1)
    assert rec["last_error"]["code"] == "backend.unavailable"
    seen = client.get(job["url"]).json()
    assert seen["state"] in ("queued", "running") and seen["attempts"] == 0, seen
    q.r.delete(keys.worker("w-gpu"))  # the GPU worker is gone (and forgotten)
    q.r.zrem(keys.WORKERS, "w-gpu")
    done = wait(client, job["url"], timeout=30)
    assert done["state"] == "failed" and done["error"]["code"] == "backend.unavailable"
    assert done["attempts"] == 1
