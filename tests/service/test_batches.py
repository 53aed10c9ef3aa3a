"""Batches end to end: ``POST /v1/batches`` with an archive (and with several files), real
workers and Redis; broken members failing alone; each item's result the same bytes as the
single job's; the result archive and its manifest; a worker killed mid-batch; cancel, auth,
404s and quotas."""

from __future__ import annotations

import io
import json
import os
import signal
import tarfile
import time
import zipfile

import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit, wait
from workers.queue import keys

pytestmark = pytest.mark.slow

SPEC = spec("weld", "repair", {"op": "vertex_normals", "weighting": "angle"}, "stats")
GOOD = ["spot.obj", "rx-torus.obj", "suzanne.obj", "teapot.obj", "rx-cube.obj"]


def archive(members: dict[str, bytes], kind: str = "zip") -> bytes:
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for name, data in members.items():
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def members() -> dict[str, bytes]:
    out = {f"meshes/{name}": mesh_path(name).read_bytes() for name in GOOD}
    out["meshes/deep/spot.obj"] = mesh_path("spot.obj").read_bytes()
    out["broken/truncated.ply"] = mesh_path("rx-torus.obj").read_bytes()[:0] + (
        b"ply\nformat binary_little_endian 1.0\nelement vertex 1000\nproperty float x\n"
        b"property float y\nproperty float z\nelement face 10\n"
        b"property list uchar int vertex_indices\nend_header\n" + b"\0" * 40
    )
    out["broken/notes.txt"] = b"these are not the meshes you are looking for\n" * 20
    return out


def post_archive(client, data: bytes, spec_text: str = SPEC, headers=None, **params):
    return client.post(
        "/v1/batches",
        content=data,
        params=params,
        headers={"Content-Type": "application/zip", "Tessera-Spec": spec_text} | (headers or {}),
    )


def wait_batch(client, url: str, timeout: float = 120.0, headers=None) -> dict:
    deadline = time.time() + timeout
    while True:
        b = client.get(url, headers=headers or {}).json()
        assert "state" in b, b
        if b["state"] in ("succeeded", "cancelled"):
            return b
        if time.time() > deadline:
            raise AssertionError(f"batch stuck: {b}")
        time.sleep(0.1)


def batch_story(client, url: str, workers=None, seen: dict | None = None) -> str:
    """What a failed batch assertion needs to be understood: the view it failed on (``seen``),
    the batch as it is now (counts, each item's state and error), the end of each worker's
    log."""
    b = client.get(url, params={"items": True}).json()
    lines = [f"seen: state {seen.get('state')}, counts {seen.get('counts')}"] if seen else []
    lines.append(f"now: state {b.get('state')}, counts {b.get('counts')}")
    for i in b.get("items") or []:
        err = (i.get("error") or {}).get("code")
        lines.append(f"  {i.get('index')} {i.get('path')}: {i.get('state')} {err or ''}")
    for name in getattr(workers, "procs", {}):
        lines.append(f"--- {name}'s log (end) ---\n{workers.log(name)[-4000:]}")
    return "\n".join(lines)


def test_a_batch_with_broken_members_gives_each_item_its_single_job_result(client, workers):
    workers.start("w1")
    workers.start("w2")
    r = post_archive(client, archive(members()))
    assert r.status_code == 202, r.text
    b = r.json()
    assert r.headers["location"] == b["url"]
    assert b["counts"]["total"] == 8 and b["state"] in ("queued", "running")
    done = wait_batch(client, b["url"])
    assert done["state"] == "succeeded", done
    assert done["counts"] == {
        "total": 8,
        "queued": 0,
        "running": 0,
        "succeeded": 6,
        "failed": 2,
        "cancelled": 0,
    }
    assert done["progress"] == 1.0
    full = client.get(b["url"], params={"items": "true"}).json()
    by_path = {i["path"]: i for i in full["items"]}
    assert by_path["broken/truncated.ply"]["state"] == "failed"
    assert by_path["broken/truncated.ply"]["error"]["code"] == "format.count_exceeds_size"
    assert by_path["broken/notes.txt"]["error"]["code"].startswith("format.")
    assert by_path["meshes/spot.obj"]["output"] == "meshes/spot.ply"
    assert by_path["meshes/spot.obj"]["stats"]["faces"] > 0

    res = client.get(done["result"])
    assert res.status_code == 200 and res.headers["content-type"] == "application/zip"
    zf = zipfile.ZipFile(io.BytesIO(res.content))
    names = sorted(zf.namelist())
    assert names == sorted(
        [f"meshes/{n.rsplit('.', 1)[0]}.ply" for n in GOOD]
        + ["meshes/deep/spot.ply", "manifest.jsonl"]
    )
    lines = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
    assert [x["path"] for x in lines] == list(members())  # one line per input, in order
    states = {x["path"]: (x["state"], (x["error"] or {}).get("code")) for x in lines}
    assert states["broken/truncated.ply"] == ("failed", "format.count_exceeds_size")
    assert states["meshes/teapot.obj"] == ("succeeded", None)
    ok = next(x for x in lines if x["path"] == "meshes/teapot.obj")
    assert ok["stats"]["faces"] > 0 and ok["timings"]["serialize"] > 0 and ok["input"]["faces"]

    # every item's bytes are the single job's, for the same mesh and spec
    for name in GOOD:
        job = wait(client, submit(client, name, SPEC).json()["url"], timeout=60)
        assert job["state"] == "succeeded", job
        single = client.get(job["result"]["url"]).content
        assert zf.read(f"meshes/{name.rsplit('.', 1)[0]}.ply") == single, name
    assert zf.read("meshes/deep/spot.ply") == zf.read("meshes/spot.ply")


def test_several_files_in_a_form_and_a_tar(client, workers):
    workers.start("w1")
    files = [("files", (n, mesh_path(n).read_bytes())) for n in ("rx-cube.obj", "suzanne.obj")]
    tar = archive({"a/cow.obj": mesh_path("cow.obj").read_bytes()}, kind="tar")
    files.append(("files", ("more.tar.gz", tar)))
    r = client.post("/v1/batches", files=files, data={"spec": spec("weld", fmt="obj")})
    assert r.status_code == 202, r.text
    done = wait_batch(client, r.json()["url"])
    assert done["counts"]["succeeded"] == 3 and done["counts"]["failed"] == 0, done
    zf = zipfile.ZipFile(io.BytesIO(client.get(done["result"]).content))
    assert sorted(zf.namelist()) == ["a/cow.obj", "manifest.jsonl", "rx-cube.obj", "suzanne.obj"]


def test_a_member_too_large_and_a_repeated_path_fail_alone(settings, workers):
    from fastapi.testclient import TestClient

    from service.main import create_app

    small = settings.model_copy(update={"batch_max_member_bytes": 50_000})
    with TestClient(create_app(small)) as c:
        workers.start("w1")
        data = archive(
            {
                "big.obj": mesh_path("spot.obj").read_bytes(),  # about 400 KB
                "small.obj": mesh_path("rx-cube.obj").read_bytes(),
                "./small.obj": mesh_path("rx-cube.obj").read_bytes(),
            }
        )
        r = post_archive(c, data)
        assert r.status_code == 202, r.text
        done = wait_batch(c, r.json()["url"])
        items = c.get(r.json()["url"], params={"items": True}).json()["items"]
        got = [(i["path"], i["state"], (i["error"] or {}).get("code")) for i in items]
        assert got == [
            ("big.obj", "failed", "batch.member_too_large"),
            ("small.obj", "succeeded", None),
            ("small.obj", "failed", "batch.duplicate_path"),
        ]
        assert done["counts"]["succeeded"] == 1 and done["counts"]["failed"] == 2


def test_a_large_batch_is_spooled_to_a_file_under_its_own_upload_limit(
    settings, workers, monkeypatch
):
    """A batch's body has its own limit, above a job's (a dataset's archive is gigabytes), and
    past a size it goes to an unlinked temporary file whose mapping the members are views of:
    the items run as from memory, each body is closed, and stored members do not count as
    expanded bytes (deflated ones do)."""
    from fastapi.testclient import TestClient

    from service import spool
    from service.main import create_app

    closed: list[bool] = []
    close = spool.Body.close

    def spy(self):
        closed.append(self.spooled)
        close(self)

    monkeypatch.setattr(spool, "IN_MEMORY_BYTES", 4096)  # every body here is spooled
    monkeypatch.setattr(spool.Body, "close", spy)
    names = ["spot.obj", "cow.obj", "rx-torus.obj", "teapot.obj", "alligator.obj"]
    data = {f"d/{n}": mesh_path(n).read_bytes() for n in names}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:  # as the client sends them
        for name, b in data.items():
            zf.writestr(name, b)
    stored = buf.getvalue()
    assert len(stored) > settings.max_upload_bytes / 8  # 1.1 MB; a job's limit below
    roomy = settings.model_copy(
        update={
            "max_upload_bytes": 1 << 20,
            "batch_max_upload_bytes": 2 << 20,
            "max_expanded_bytes": 64 << 10,
        }
    )
    with TestClient(create_app(roomy)) as c:
        workers.start("w1")
        r = post_archive(c, stored, spec_text=spec("weld", fmt="obj"))
        assert r.status_code == 202, r.text
        form = c.post(  # the same members as a form's files, spooled by the form too
            "/v1/batches",
            files=[("files", (n, b)) for n, b in data.items()],
            data={"spec": spec("weld", fmt="obj")},
        )
        assert form.status_code == 202, form.text
        assert closed == [True] * (1 + len(names)) and len(stored) > roomy.max_upload_bytes
        one = submit(c, data["d/cow.obj"], spec_text=spec("weld", fmt="obj"), filename="cow.obj")
        single = c.get(wait(c, one.json()["url"])["result"]["url"]).content
        for url in (r.json()["url"], form.json()["url"]):
            done = wait_batch(c, url)
            assert done["counts"]["succeeded"] == len(names), done
            zf = zipfile.ZipFile(io.BytesIO(c.get(done["result"]).content))
            [cow] = [n for n in zf.namelist() if n.endswith("cow.obj")]
            assert zf.read(cow) == single
        # the same members deflated expand past max_expanded_bytes; a body past the batch
        # limit is refused with that limit
        deflated = archive(data)
        assert_problem(post_archive(c, deflated), 422, "format.archive_too_large")
        big = stored + b"\0" * (roomy.batch_max_upload_bytes - len(stored) + 1)
        refused = post_archive(c, big)
        assert_problem(refused, 413, "upload.too_large")
        assert refused.json()["context"]["limit_bytes"] == roomy.batch_max_upload_bytes


def test_bad_batches_are_refused_with_their_codes(client):
    bad = '{"pipeline": [{"op": "nope"}]}'
    r = post_archive(client, archive({"a.obj": b"v 0 0 0\n"}), spec_text=bad)
    assert r.status_code == 422 and r.json()["code"].startswith("spec."), r.text
    assert_problem(post_archive(client, b"PK\x03\x04 truncated zip"), 422, "format.archive_invalid")
    assert_problem(post_archive(client, archive({})), 422, "batch.empty")
    assert_problem(
        client.post("/v1/batches", content=b"x", headers={"Content-Type": "application/zip"}),
        422,
        "spec.missing",
    )
    hook = spec("weld", callback_url="http://127.0.0.1:9/hook")
    assert_problem(  # as for jobs: nothing to sign it with
        post_archive(client, archive({"a.obj": b"x"}), spec_text=hook),
        422,
        "spec.webhook_unsigned",
    )
    assert_problem(client.get("/v1/batches/" + "0" * 32), 404, "batch.not_found")
    assert_problem(client.get("/v1/batches/bad-id!"), 404, "batch.not_found")


def test_a_batch_chunk_is_not_a_job(client, redis_client):
    r = post_archive(client, archive({"a.obj": mesh_path("rx-cube.obj").read_bytes()}))
    assert r.status_code == 202, r.text
    rec = redis_client.hget(keys.batch(r.json()["id"]), "chunks")
    [[chunk, *_]] = json.loads(rec)
    assert_problem(client.get(f"/v1/jobs/{chunk}"), 404, "job.not_found")
    assert chunk not in [j["id"] for j in client.get("/v1/jobs").json()["data"]]
    # not run yet (no worker): its result is not ready, and it can be cancelled
    assert_problem(client.get(r.json()["url"] + "/result"), 409, "batch.not_ready")
    c = client.delete(r.json()["url"])
    assert c.status_code == 200 and c.json()["state"] == "cancelled", c.text
    assert c.json()["counts"]["cancelled"] == 1
    assert client.delete(r.json()["url"]).json()["state"] == "cancelled"  # again: the same
    zf = zipfile.ZipFile(io.BytesIO(client.get(r.json()["url"] + "/result").content))
    [line] = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
    assert line["state"] == "cancelled" and zf.namelist() == ["manifest.jsonl"]


def test_a_batch_is_seen_only_by_its_key_and_counts_as_one_job(settings, workers):
    from fastapi.testclient import TestClient

    from service.main import create_app

    keyed = settings.model_copy(
        update={
            "api_keys": {
                "alice": {"secret": "a" * 32, "concurrent_jobs": 1},
                "bob": {"secret": "b" * 32},
            }
        }
    )
    alice = {"Authorization": "Bearer " + "a" * 32}
    bob = {"Authorization": "Bearer " + "b" * 32}
    with TestClient(create_app(keyed)) as c:
        data = archive({f"m{i}.obj": mesh_path("rx-cube.obj").read_bytes() for i in range(3)})
        assert_problem(post_archive(c, data), 401, "auth.missing_key")
        r = post_archive(c, data, headers=alice)
        assert r.status_code == 202, r.text
        url = r.json()["url"]
        assert_problem(c.get(url, headers=bob), 404, "batch.not_found")
        assert_problem(c.delete(url, headers=bob), 404, "batch.not_found")
        # the batch takes alice's one concurrent job
        assert_problem(post_archive(c, data, headers=alice), 429, "quota.concurrent_jobs")
        workers.start("w1")
        done = wait_batch(c, url, headers=alice)
        assert done["counts"]["succeeded"] == 3
        assert post_archive(c, data, headers=alice).status_code == 202  # ended: counts no more


def test_idempotency_key_gives_the_same_batch(client):
    data = archive({"a.obj": mesh_path("rx-cube.obj").read_bytes()})
    a = post_archive(client, data, headers={"Idempotency-Key": "k1"})
    b = post_archive(client, data, headers={"Idempotency-Key": "k1"})
    assert (a.status_code, b.status_code) == (202, 200) and a.json()["id"] == b.json()["id"]
    other = archive({"b.obj": mesh_path("rx-cube.obj").read_bytes()})
    assert_problem(
        post_archive(client, other, headers={"Idempotency-Key": "k1"}), 409, "idempotency.conflict"
    )


def _child_pids(pid: int) -> list[int]:
    from tests.reliability.test_faults import child_pids

    return child_pids(pid)


def test_a_worker_killed_mid_batch_loses_no_item_and_repeats_none(client, workers, settings):
    # chunks of 4 items; each item sleeps, so the kill lands mid-chunk
    slow = spec("weld", {"op": "sleep", "seconds": 0.3}, "stats")
    names = {f"m{i:02d}.obj": mesh_path("rx-sphere3.obj").read_bytes() for i in range(12)}
    from fastapi.testclient import TestClient

    from service.main import create_app

    small = settings.model_copy(update={"batch_chunk_items": 4})
    with TestClient(create_app(small)) as c:
        w1 = workers.start("w1")
        r = post_archive(c, archive(names), spec_text=slow)
        assert r.status_code == 202, r.text
        url = r.json()["url"]
        deadline = time.time() + 60
        while c.get(url).json()["counts"]["succeeded"] < 2:
            assert time.time() < deadline
            time.sleep(0.05)
        os.killpg(w1.pid, signal.SIGKILL)  # supervisor and child, mid-chunk
        w1.wait(10)
        before = c.get(url, params={"items": True}).json()
        finished = {i["path"]: i["timings"] for i in before["items"] if i["state"] == "succeeded"}
        assert 2 <= len(finished) < 12
        workers.start("w2")  # reaps the chunk once its lease (2 s) runs out, runs what is left
        done = wait_batch(c, url, timeout=90)
        assert done["counts"]["succeeded"] == 12 and done["counts"]["failed"] == 0, batch_story(
            c, url, workers, seen=done
        )
        after = c.get(url, params={"items": True}).json()["items"]
        # an item that had finished kept its outcome (not run again: its timings are the same)
        for i in after:
            if i["path"] in finished:
                assert i["timings"] == finished[i["path"]]
        zf = zipfile.ZipFile(io.BytesIO(c.get(done["result"]).content))
        lines = zf.read("manifest.jsonl").decode().splitlines()
        assert len(lines) == 12 and len(zf.namelist()) == 13
        log2 = workers.log("w2")
        assert "recorded before" in log2


def test_a_batch_expires_with_its_chunks(client, workers, settings):
    from workers.queue.blobs import open_store
    from workers.queue.jobs import JobQueue
    from workers.supervisor import sweep_expired

    workers.start("w1")
    r = post_archive(client, archive({"a.obj": mesh_path("rx-cube.obj").read_bytes()}))
    done = wait_batch(client, r.json()["url"])
    assert done["state"] == "succeeded" and done["expires_at"]
    assert client.get(done["result"]).status_code == 200
    q = JobQueue(client.app.state.queue.r, job_ttl_seconds=settings.job_ttl_seconds)
    store = open_store(settings.blob_root)
    swept = sweep_expired(q, store, now=time.time() + settings.job_ttl_seconds + 60)
    assert swept  # the chunk's blobs are gone, and its record says it expired now
    time.sleep(0.05)
    b = client.get(r.json()["url"]).json()
    assert b["state"] == "expired" and b["result"] is None
    assert_problem(client.get(done["result"]), 410, "batch.expired")
    assert_problem(client.delete(r.json()["url"]), 410, "batch.expired")


def test_a_batch_calls_its_callback_url_once_when_it_ends(settings, tmp_path):
    from fastapi.testclient import TestClient

    from service.main import create_app
    from tessera.webhooks import verify
    from tests.conftest import Workers
    from tests.workers.test_webhooks import Receiver

    secret = "batch-webhook-secret-0123"
    signed = settings.model_copy(update={"webhook_secret": secret})
    receiver, ws = Receiver(), Workers(signed, tmp_path)
    try:
        with TestClient(create_app(signed)) as c:
            ws.start("w1")
            ws.start("w2")
            body = spec("weld", callback_url=receiver.url)
            data = archive({f"m{i}.obj": mesh_path("rx-cube.obj").read_bytes() for i in range(6)})
            data_bad = {"bad.obj": b"v 0 0 0\nf 1 2 3\n"}
            r = post_archive(c, archive({**zipfile_members(data), **data_bad}), spec_text=body)
            assert r.status_code == 202, r.text
            wait_batch(c, r.json()["url"])
            deadline = time.time() + 20
            while not (c.get(r.json()["url"]).json().get("webhook") or {}).get("delivered"):
                assert time.time() < deadline, c.get(r.json()["url"]).json()
                time.sleep(0.05)
            time.sleep(0.5)  # no second delivery follows
            [call] = receiver.calls
            ev = verify(secret, call["headers"]["Tessera-Signature"], call["body"])
            assert ev["type"] == "batch.succeeded" and ev["id"] == r.json()["id"]
            assert ev["counts"]["succeeded"] == 6 and ev["counts"]["failed"] == 1
            assert ev["links"]["result"] == r.json()["url"] + "/result"
            assert call["headers"]["Tessera-Delivery"] == r.json()["id"]
    finally:
        ws.stop_all()
        receiver.close()


def zipfile_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_an_item_that_kills_the_compute_process_fails_alone(client, workers):
    workers.start("w1")
    # the sphere (768 faces) kills the child; the cubes (12 faces) go through
    crash = spec({"op": "sleep", "fail": "crash", "only_faces": 768}, "stats")
    members = {f"c{i}.obj": mesh_path("rx-cube.obj").read_bytes() for i in range(3)}
    members["s.obj"] = mesh_path("rx-sphere3.obj").read_bytes()
    members["c9.obj"] = mesh_path("rx-cube.obj").read_bytes()
    r = post_archive(client, archive(members), spec_text=crash)
    assert r.status_code == 202, r.text
    done = wait_batch(client, r.json()["url"], timeout=90)
    items = client.get(r.json()["url"], params={"items": True}).json()["items"]
    got = {i["path"]: (i["state"], (i["error"] or {}).get("code")) for i in items}
    assert got == {
        "c0.obj": ("succeeded", None),
        "c1.obj": ("succeeded", None),
        "c2.obj": ("succeeded", None),
        "s.obj": ("failed", "worker.child_died"),
        "c9.obj": ("succeeded", None),
    }
    assert done["counts"]["succeeded"] == 4 and done["counts"]["failed"] == 1
    assert "killed its child twice" in workers.log("w1")


def test_a_batch_whose_chunks_are_dropped_answers_expired(client, redis_client, settings):
    r = post_archive(client, archive({"a.obj": mesh_path("rx-cube.obj").read_bytes()}))
    b = r.json()
    [[chunk, *_]] = json.loads(redis_client.hget(keys.batch(b["id"]), "chunks"))
    redis_client.delete(keys.job(chunk))  # not stored yet: the batch is young, so queued
    assert client.get(b["url"]).json()["state"] == "queued"
    old = time.time() - settings.job_ttl_seconds - 60
    redis_client.hset(keys.batch(b["id"]), "created_at", repr(old))  # now long gone: expired
    assert client.get(b["url"]).json()["state"] == "expired"
    assert_problem(client.get(b["url"] + "/result"), 410, "batch.expired")


def test_a_batch_of_members_all_refused_at_submission_has_ended(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    tiny = settings.model_copy(update={"batch_max_member_bytes": 10})
    with TestClient(create_app(tiny)) as c:
        r = post_archive(c, archive({"a.obj": mesh_path("rx-cube.obj").read_bytes()}))
        b = r.json()
        assert b["state"] == "succeeded" and b["counts"]["failed"] == 1 and b["expires_at"]
        zf = zipfile.ZipFile(io.BytesIO(c.get(b["result"]).content))
        [line] = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
        assert line["error"]["code"] == "batch.member_too_large"


def test_result_paths_take_the_output_format_extension():
    from service.batches import output_paths

    assert output_paths(["a/x.obj", "y.ply"], "objzip") == ["a/x.zip", "y.zip"]
    assert output_paths(["a.obj", "a.stl"], "ply") == ["a.ply", "a.stl.ply"]


def _stored_zip(members: dict[str, bytes]) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return bytearray(buf.getvalue())


def _members_or_code(data: bytes) -> list[tuple[str, bytes]] | str:
    from service.batches import archive_members
    from workers.engine.errors import FormatError

    try:
        got = archive_members(data, "zip", max_items=100, max_member=1 << 20, max_expanded=1 << 20)
    except FormatError as exc:
        return exc.code
    return [(m.path, bytes(m.data or b"")) for m in got]


def test_a_zip_whose_headers_lie_is_refused_as_invalid_not_read_as_other_bytes():
    """A stored member is read as a view of the body (``_stored_member``): its local header must
    name it as the central directory does, as zipfile requires; an offset before the archive, a
    name not UTF-8 as its flag says or a member with no name are invalid archives, never a raw
    ValueError, UnicodeDecodeError or IndexError (a 500)."""
    import struct

    good = _stored_zip({"a.obj": b"hello", "b.obj": b"world"})
    assert _members_or_code(bytes(good)) == [("a.obj", b"hello"), ("b.obj", b"world")]

    renamed = bytearray(good)
    renamed[30:35] = b"c.obj"  # the first local header names another file
    assert _members_or_code(bytes(renamed)) == "format.archive_invalid"

    moved = _stored_zip({"a.obj": b"hello", "b.obj": b"hello"})
    # the first member's entry points at the second's header (the same bytes: the CRC holds)
    cd = moved.find(b"PK\x01\x02")
    struct.pack_into("<I", moved, cd + 42, moved.find(b"PK\x03\x04", 1))
    assert _members_or_code(bytes(moved)) == "format.archive_invalid"

    for store in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", store) as zf:
            zf.writestr("a.obj", b"hello" * 20)
        before = bytearray(buf.getvalue())  # the directory said to start 200 bytes further
        eocd = before.rfind(b"PK\x05\x06")
        struct.pack_into(
            "<I", before, eocd + 16, struct.unpack_from("<I", before, eocd + 16)[0] + 200
        )
        assert _members_or_code(bytes(before)) == "format.archive_invalid", store

    not_utf8 = bytearray(good)  # the UTF-8 flag on a name that is not
    cd = not_utf8.find(b"PK\x01\x02")
    not_utf8[cd + 8 : cd + 10] = struct.pack("<H", 0x800)
    not_utf8[cd + 46] = 0xFF
    assert _members_or_code(bytes(not_utf8)) == "format.archive_invalid"

    nameless = _stored_zip({"a": b"x"})  # a member with no name in the directory: skipped
    cd = nameless.find(b"PK\x01\x02")
    nameless[cd + 28 : cd + 30] = b"\0\0"
    del nameless[cd + 46]
    eocd = nameless.rfind(b"PK\x05\x06")
    struct.pack_into("<I", nameless, eocd + 12, 46)  # the directory's size, one byte less
    assert _members_or_code(bytes(nameless)) == []

    deflated = io.BytesIO()
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.obj", b"hello world " * 50)
    spoilt = bytearray(deflated.getvalue())
    spoilt[36] = 0  # the deflate stream itself: zlib.error
    assert _members_or_code(bytes(spoilt)) == "format.archive_invalid"


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_a_tar_compressed_or_not_is_an_archive_by_its_bytes_or_its_name(mode):
    """``submit_batch(bytes)`` names its body batch.zip and a path its own name: a compressed
    tar is told by its bytes (a .tar.gz sent as bytes was one item, format.unsupported), a
    .tar.bz2 by its name too; a gzipped mesh stays a file."""
    import gzip

    from service.batches import archive_members, is_archive

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        ti = tarfile.TarInfo("d/a.obj")
        ti.size = 8
        tf.addfile(ti, io.BytesIO(b"v 0 0 0\n"))
    data = buf.getvalue()
    assert is_archive(data, "batch.zip") == "tar"
    assert is_archive(b"", "m.tar.bz2") == is_archive(b"", "m.tbz2") == "tar"
    got = archive_members(data, "tar", max_items=10, max_member=1 << 20, max_expanded=1 << 20)
    assert [(m.path, bytes(m.data or b"")) for m in got] == [("d/a.obj", b"v 0 0 0\n")]
    assert is_archive(gzip.compress(b"v 0 0 0\n" * 100), "x.obj.gz") is None
    assert is_archive(data[:20], "batch.zip") is None  # too short to tell: a file


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_a_mapped_archive_gives_the_members_bytes_give(kind, tmp_path):
    import mmap

    from service.batches import archive_members

    data = archive({f"m/{n}": mesh_path(n).read_bytes() for n in GOOD}, kind=kind)
    path = tmp_path / "a"
    path.write_bytes(data)
    limits = {"max_items": 100, "max_member": 1 << 30, "max_expanded": 1 << 30}
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        mapped = [(m.path, bytes(m.data), m.size) for m in archive_members(mm, kind, **limits)]
    plain = [(m.path, bytes(m.data), m.size) for m in archive_members(data, kind, **limits)]
    assert mapped == plain and len(plain) == len(GOOD)


def test_a_large_body_is_hashed_by_pieces_on_threads_and_still_tells_bodies_apart(monkeypatch):
    from service import batches

    data = bytes(range(256)) * 4000  # 1 MB
    whole = batches.body_hash("{}", [("a.zip", data)])
    monkeypatch.setattr(batches, "HASH_PIECE", 4096)  # 250 pieces
    pieced = batches.body_hash("{}", [("a.zip", data)])
    assert pieced != whole and pieced == batches.body_hash("{}", [("a.zip", memoryview(data))])
    flipped = bytearray(data)
    flipped[700_001] ^= 1
    assert batches.body_hash("{}", [("a.zip", bytes(flipped))]) != pieced
    assert batches.body_hash("{}", [("b.zip", data)]) != pieced
    assert batches.body_hash('{"a": 1}', [("a.zip", data)]) != pieced
