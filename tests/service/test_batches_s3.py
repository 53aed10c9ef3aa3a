"""Batches over S3 prefixes (a real SeaweedFS): the API lists the input prefix, the workers read
each mesh from it and write each result, then the manifest, under the output prefix; the
prefixes a deployment allows, and the refusals with their codes."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator

import pytest

import tessera
import tessera.client
from service.cli import main as cli_main
from tests.conftest import Workers, mesh_path
from tests.s3 import ACCESS_KEY, BUCKET, SECRET_KEY
from tests.service.helpers import assert_problem, spec
from tests.service.test_batches import SPEC, members, wait_batch

pytestmark = pytest.mark.slow

GOOD = ["spot.obj", "rx-torus.obj", "rx-cube.obj"]


@pytest.fixture
def s3(s3_server):
    import boto3  # not at import: a host without boto3 leaves these tests out (conftest.py)
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}),
    )


@pytest.fixture
def s3_settings(s3_server, settings):
    return settings.model_copy(update=s3_server.options())


def _client(s) -> Iterator[object]:
    from fastapi.testclient import TestClient

    from service.main import create_app

    with TestClient(create_app(s)) as c:
        yield c


@pytest.fixture
def s3_client(s3_settings):
    yield from _client(s3_settings)


def put_tree(s3, prefix: str, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + path, Body=data)


def post(client, input_url: str, output_url: str | None = None, spec_text: str = SPEC):
    body: dict = {"spec": json.loads(spec_text), "input": {"s3_prefix": input_url}}
    if output_url is not None:
        body["output"] = {"s3_prefix": output_url}
    return client.post("/v1/batches", json=body)


def expected_obj(tree: dict[str, bytes]) -> list[str]:
    return sorted(p[:-4] + ".obj" for p in tree if p.endswith(".obj"))


def test_a_batch_reads_an_s3_prefix_and_writes_its_results_and_manifest_there(
    s3, s3_settings, s3_client, tmp_path, monkeypatch, capsys
):
    workers = Workers(s3_settings, tmp_path)
    workers.start("w1")
    try:
        run = uuid.uuid4().hex[:10]
        src, dst = f"in-{run}/", f"out-{run}/results/"
        tree = {f"meshes/{n}": mesh_path(n).read_bytes() for n in GOOD}
        tree["deep/er/spot.obj"] = tree["meshes/spot.obj"]
        tree["broken/truncated.ply"] = members()["broken/truncated.ply"]
        tree["notes.txt"] = b"not a mesh\n"  # left out by its extension
        put_tree(s3, src, tree)
        r = post(s3_client, f"s3://{BUCKET}/{src}", f"s3://{BUCKET}/{dst}")
        assert r.status_code == 202, r.text
        b = r.json()
        assert b["counts"]["total"] == 5
        done = wait_batch(s3_client, b["url"])
        assert done["state"] == "succeeded", done
        items = {
            i["path"]: i for i in s3_client.get(b["url"], params={"items": "true"}).json()["items"]
        }
        states = {p: (i["state"], i["error"]) for p, i in items.items()}
        log = (tmp_path / "w1.log").read_text(errors="replace")[-4000:]  # says why, if it fails
        assert done["counts"]["succeeded"] == 4 and done["counts"]["failed"] == 1, (states, log)
        assert sorted(items) == sorted(p for p in tree if p != "notes.txt")
        assert items["broken/truncated.ply"]["error"]["code"] == "format.count_exceeds_size"

        # the results under the output prefix: the same bytes as the result zip's
        zf = zipfile.ZipFile(io.BytesIO(s3_client.get(done["result"]).content))
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=dst)["Contents"]
        outputs = sorted(o["Key"][len(dst) :] for o in listed)
        expected = ["deep/er/spot.ply", *(f"meshes/{n[:-4]}.ply" for n in GOOD)]
        deadline = time.time() + 10  # the manifest is written just after the last item
        while "manifest.jsonl" not in outputs:
            assert time.time() < deadline, outputs
            time.sleep(0.1)
            listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=dst)["Contents"]
            outputs = sorted(o["Key"][len(dst) :] for o in listed)
        assert outputs == sorted([*expected, "manifest.jsonl"])
        for name in expected:
            body = s3.get_object(Bucket=BUCKET, Key=dst + name)["Body"].read()
            assert body == zf.read(name), name
        assert zf.read("deep/er/spot.ply") == zf.read("meshes/spot.ply")
        manifest = s3.get_object(Bucket=BUCKET, Key=dst + "manifest.jsonl")["Body"].read()
        assert manifest == zf.read("manifest.jsonl")
        lines = [json.loads(x) for x in manifest.decode().splitlines()]
        assert [x["path"] for x in lines] == sorted(p for p in tree if p != "notes.txt")
        states = {x["path"]: (x["state"], x["output"]) for x in lines}
        assert states["broken/truncated.ply"] == ("failed", None)
        assert states["meshes/rx-cube.obj"] == ("succeeded", "meshes/rx-cube.ply")

        # the Python client: the same batch again, to another output prefix
        with tessera.Client("http://testserver", http=s3_client) as tc:
            again = tc.submit_batch(
                spec=json.loads(SPEC),
                s3_prefix=f"s3://{BUCKET}/{src}",
                output_prefix=f"s3://{BUCKET}/{dst}again",  # read as a folder: again/
            )
            done = tc.wait_batch(again, timeout=120)
        assert done["counts"]["succeeded"] == 4, done
        body = s3.get_object(Bucket=BUCKET, Key=f"{dst}again/meshes/spot.ply")["Body"].read()
        assert body == zf.read("meshes/spot.ply")

        # the command, without an output prefix: the result archive's files in --out
        monkeypatch.setattr(
            tessera.client, "Client", lambda *a, **k: tessera.Client(a[0], http=s3_client)
        )
        pipeline = tmp_path / "p.json"
        pipeline.write_text(spec("weld", fmt="obj"))
        argv = ["batch", "--server-side", "--s3-input", f"s3://{BUCKET}/{src}", "--out"]
        with pytest.raises(SystemExit) as e:
            cli_main([*argv, str(tmp_path / "res"), "--pipeline", str(pipeline)])
        assert e.value.code == 1  # the broken file failed
        err = capsys.readouterr().err
        assert "broken/truncated.ply: format.count_exceeds_size" in err, err
        assert "4 succeeded, 1 failed" in err, err
        got = sorted(str(p.relative_to(tmp_path / "res")) for p in (tmp_path / "res").rglob("*"))
        assert [g for g in got if "." in g] == sorted([*expected_obj(tree), "manifest.jsonl"])
        # nothing more was written under the output prefixes (5 and 5 from the two batches)
        assert len(s3.list_objects_v2(Bucket=BUCKET, Prefix=dst)["Contents"]) == 10
    finally:
        workers.stop_all()


def test_s3_batches_refused(s3, s3_settings, s3_client):
    run = uuid.uuid4().hex[:10]
    put_tree(s3, f"in-{run}/", {"text/readme.txt": b"x", "a/cube.obj": b"v 0 0 0\n"})
    base = f"s3://{BUCKET}/in-{run}/"
    p = assert_problem(post(s3_client, base + "text/"), 422, "batch.s3_prefix_empty")
    assert p["context"]["other_objects"] == 1 and "obj" in p["context"]["extensions"]
    p = assert_problem(post(s3_client, base + "nothing/"), 422, "batch.s3_prefix_empty")
    assert p["context"]["other_objects"] == 0

    # the store's own keys (other jobs' files), the bucket's root holding them, another bucket
    store_url = s3_settings.blob_url + "/"
    for url in (store_url, store_url + "jobs/", f"s3://{BUCKET}/", "s3://another-bucket/x/"):
        p = assert_problem(post(s3_client, url), 403, "batch.s3_prefix_not_allowed")
        assert p["context"]["role"] == "input", url
    p = assert_problem(post(s3_client, base, store_url), 403, "batch.s3_prefix_not_allowed")
    assert p["context"]["role"] == "output"
    for out in (base, base + "a/out/", f"s3://{BUCKET}/in-{run}"):
        assert_problem(post(s3_client, base + "a/", out), 422, "batch.s3_prefixes_overlap")
    for url in ("gs://bucket/x/", "s3:///x/", f"s3://{BUCKET}/in/../{run}/", "meshes/"):
        assert_problem(post(s3_client, url), 422, "batch.s3_prefix_invalid")
    for body in ({"input": {}}, {"input": {"s3_prefix": base}, "other": 1}, [1]):
        assert_problem(s3_client.post("/v1/batches", json=body), 422, "batch.body_invalid")
    r = s3_client.post("/v1/batches", content=b"{", headers={"Content-Type": "application/json"})
    assert_problem(r, 422, "batch.body_invalid")
    assert s3_client.get("/v1/batches/none").status_code == 404

    # a deployment that lists its prefixes allows those only
    put_tree(s3, f"allowed-{run}/", {"x/cube.obj": mesh_path("rx-cube.obj").read_bytes()})
    listed = s3_settings.model_copy(
        update={
            "batch_s3_prefixes": [f"s3://{BUCKET}/allowed-{run}/", f"s3://no-bucket-{run}/"],
            "batch_max_items": 1,
        }
    )
    for c in _client(listed):
        p = assert_problem(post(c, base + "a/"), 403, "batch.s3_prefix_not_allowed")
        ok = post(c, f"s3://{BUCKET}/allowed-{run}/x/", f"s3://{BUCKET}/allowed-{run}/out/")
        assert ok.status_code == 202 and ok.json()["counts"]["total"] == 1, ok.text
        p = assert_problem(post(c, f"s3://no-bucket-{run}/a/"), 422, "batch.s3_prefix_unreadable")
        assert p["context"]["reason"] == "NoSuchBucket"
        put_tree(s3, f"allowed-{run}/", {"x/two.obj": b"v 0 0 0\n"})
        assert_problem(post(c, f"s3://{BUCKET}/allowed-{run}/"), 422, "batch.too_many_items")

    # a store at the bucket's root keeps its keys under jobs/: refused, the rest allowed
    for c in _client(s3_settings.model_copy(update={"blob_url": f"s3://{BUCKET}"})):
        p = assert_problem(post(c, f"s3://{BUCKET}/jobs/"), 403, "batch.s3_prefix_not_allowed")
        assert post(c, base + "a/").status_code == 202


def test_a_deployment_without_an_s3_store_refuses_s3_batches(client):
    r = post(client, "s3://bucket/meshes/")
    assert_problem(r, 422, "batch.s3_unavailable")


def test_a_chunk_reads_its_items_from_s3_each_failing_alone(s3, s3_settings):
    """An object deleted before its worker read it, or grown over the member limit, fails its
    item alone; the others' results reach the output prefix."""
    from workers.jobspec import JobSpec
    from workers.queue.blobs import open_store, store_config
    from workers.runner import execute_chunk

    run = uuid.uuid4().hex[:10]
    cube = mesh_path("rx-cube.obj").read_bytes()
    put_tree(s3, f"in-{run}/", {"a/cube.obj": cube, "big.obj": cube + b"# " + b"x" * 100})
    items = [
        {"index": 0, "path": "a/cube.obj", "output": "a/cube.ply"},
        {"index": 1, "path": "gone.obj", "output": "gone.ply"},
        {"index": 2, "path": "big.obj", "output": "big.ply"},
    ]
    outcomes: dict[int, dict] = {}
    execute_chunk(
        uuid.uuid4().hex,
        JobSpec.model_validate_json(spec("weld")),
        open_store(store_config(s3_settings)),
        items,
        lambda i, o: outcomes.__setitem__(i, o),
        s3={
            "input": {"bucket": BUCKET, "prefix": f"in-{run}/"},
            "output": {"bucket": BUCKET, "prefix": f"out-{run}/"},
        },
        max_member=len(cube) + 10,
    )
    assert outcomes[0]["state"] == "succeeded", outcomes[0]
    assert outcomes[1]["error"]["code"] == "batch.s3_object_missing"
    assert outcomes[2]["error"]["code"] == "batch.member_too_large"
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"out-{run}/")["Contents"]
    assert [o["Key"] for o in listed] == [f"out-{run}/a/cube.ply"]
