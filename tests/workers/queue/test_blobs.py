"""The blob store contract, held by the local store and by the S3 store on a real SeaweedFS."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from workers.queue.blobs import BlobNotFound, LocalBlobStore, open_store, store_config
from workers.settings import Settings


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Any]:
    if request.param == "local":
        yield open_store(tmp_path / "blobs")
        return
    s3 = request.getfixturevalue("s3_server")
    opts = s3.options(s3_multipart_threshold_bytes=5 << 20)
    yield open_store(store_config(Settings(data_dir=tmp_path, **opts)))


def test_put_get_open_size_exists(store):
    assert store.put_bytes("jobs/a/input.npz", b"abc") == 3
    assert store.get_bytes("jobs/a/input.npz") == b"abc"
    with store.open("jobs/a/input.npz") as fh:
        assert fh.read() == b"abc"
    assert store.size("jobs/a/input.npz") == 3 and store.exists("jobs/a/input.npz")
    store.put_bytes("jobs/a/input.npz", b"xy")  # replaced whole
    assert store.get_bytes("jobs/a/input.npz") == b"xy"


def test_missing_blobs(store):
    for call in (store.get_bytes, store.open, store.size):
        with pytest.raises(BlobNotFound):
            call("jobs/none/result.ply")
    assert not store.exists("jobs/none/result.ply")
    store.delete("jobs/none/result.ply")  # deleting nothing is fine


def test_list_and_delete_prefix(store):
    for name in ("input.npz", "manifest.json", "result-a1.ply", "artifact-mass-a1.npz"):
        store.put_bytes(f"jobs/j1/{name}", name.encode())
    store.put_bytes("jobs/j10/input.npz", b"other job")  # shares a string prefix, not a folder
    assert store.list_prefix("jobs/j1") == [
        "jobs/j1/artifact-mass-a1.npz",
        "jobs/j1/input.npz",
        "jobs/j1/manifest.json",
        "jobs/j1/result-a1.ply",
    ]
    store.delete("jobs/j1/manifest.json")
    assert store.delete_prefix("jobs/j1") == 3
    assert store.list_prefix("jobs/j1") == [] and store.delete_prefix("jobs/j1") == 0
    assert store.get_bytes("jobs/j10/input.npz") == b"other job"


@pytest.mark.parametrize(
    "key",
    [
        "../escape",  # parent folder
        "/abs/path",  # absolute
        "jobs//double",  # empty segment
        "jobs/a b",  # space
        ".hidden",  # starts with a dot
    ],
)
def test_keys_are_checked(store, key):
    with pytest.raises(ValueError):
        store.put_bytes(key, b"x")


def test_large_blob_round_trips(store):
    data = os.urandom(11 << 20)  # above the 5 MiB multipart threshold set for S3: three parts
    store.put_bytes("jobs/big/result-a1.npz", data)
    assert store.size("jobs/big/result-a1.npz") == len(data)
    assert store.get_bytes("jobs/big/result-a1.npz") == data
    if not isinstance(store, LocalBlobStore):
        head = store.client.head_object(
            Bucket=store.bucket, Key=store._key("jobs/big/result-a1.npz")
        )
        assert head["ETag"].strip('"').endswith("-3")  # a multipart upload of three parts


def test_s3_presigned_url(s3_server, tmp_path):
    store = open_store(store_config(Settings(data_dir=tmp_path, **s3_server.options())))
    store.put_bytes("jobs/p/result-a1.ply", b"ply bytes")
    assert store.local_path("jobs/p/result-a1.ply") is None
    url = store.presigned_url(
        "jobs/p/result-a1.ply", expires=60, filename="bunny ü.ply", media_type="application/x-ply"
    )
    r = httpx.get(url)
    assert r.status_code == 200 and r.content == b"ply bytes"
    assert r.headers["content-type"] == "application/x-ply"
    assert "filename*=utf-8''bunny%20%C3%BC.ply" in r.headers["content-disposition"]
    assert httpx.get(url.replace("Signature=", "Signature=0")).status_code == 403
    unsigned = f"{s3_server.endpoint}/{store.bucket}/{store.prefix}jobs/p/result-a1.ply"
    assert httpx.get(unsigned).status_code == 403  # the bucket is not public


def test_unsupported_urls():
    with pytest.raises(ValueError, match="unsupported"):
        open_store("gs://bucket/x")
    with pytest.raises(ValueError, match="not an S3 URL"):
        open_store("s3:///no-bucket")
