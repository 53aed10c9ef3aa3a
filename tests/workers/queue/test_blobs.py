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


def test_chunks_are_streamed_into_one_blob(store):
    """``put_chunks`` writes pieces of any bytes-like kind, in order, as they come: 11 MiB in
    pieces of uneven sizes make one blob (on S3 a streamed multipart upload of three parts)."""
    data = os.urandom(11 << 20)
    cuts = [0, 1, 100, 5 << 20, (5 << 20) + 3, 9 << 20, len(data)]
    taken = []

    def pieces() -> Iterator[Any]:
        for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            taken.append(k)
            kind = (bytes, bytearray, memoryview)[k % 3]
            yield kind(data[a:b]) if kind is not memoryview else memoryview(data)[a:b]

    assert store.put_chunks("jobs/s/result-a1.stl", pieces()) == len(data)
    assert taken == list(range(len(cuts) - 1))
    assert store.get_bytes("jobs/s/result-a1.stl") == data
    assert store.put_chunks("jobs/s/empty.ply", iter([])) == 0
    assert store.get_bytes("jobs/s/empty.ply") == b""
    if not isinstance(store, LocalBlobStore):
        head = store.client.head_object(Bucket=store.bucket, Key=store._key("jobs/s/result-a1.stl"))
        assert head["ETag"].strip('"').endswith("-3")


def test_a_failing_writer_leaves_no_blob(store):
    def pieces() -> Iterator[bytes]:
        yield b"half a file"
        raise RuntimeError("the writer broke")

    store.put_bytes("jobs/f/result-a1.ply", b"the old one")
    with pytest.raises(RuntimeError):
        store.put_chunks("jobs/f/result-a1.ply", pieces())
    assert store.get_bytes("jobs/f/result-a1.ply") == b"the old one"
    with pytest.raises(RuntimeError):
        store.put_chunks("jobs/f/new.ply", pieces())
    assert not store.exists("jobs/f/new.ply")
    assert store.list_prefix("jobs/f") == ["jobs/f/result-a1.ply"]  # no temporary left


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


def unfinished_write(store: Any, key: str) -> None:
    if isinstance(store, LocalBlobStore):  # a killed writer leaves its temporary file
        (store.root / key).with_name(".tmp-result").write_bytes(b"half a file")
    else:  # ... or an open multipart upload with its parts
        up = store.client.create_multipart_upload(Bucket=store.bucket, Key=store._key(key))
        store.client.upload_part(
            Bucket=store.bucket,
            Key=store._key(key),
            UploadId=up["UploadId"],
            PartNumber=1,
            Body=b"x" * 100,
        )


def test_unfinished_writes_of_a_killed_writer_are_aborted(store):
    store.put_bytes("jobs/u/input.npz", b"in")
    unfinished_write(store, "jobs/u/result-a1.ply")
    assert store.abort_unfinished("jobs/none") == 0
    assert store.abort_unfinished("jobs/u") == 1
    assert store.abort_unfinished("jobs/u") == 0
    assert store.list_prefix("jobs/u") == ["jobs/u/input.npz"]
    if isinstance(store, LocalBlobStore):
        assert sorted(p.name for p in (store.root / "jobs/u").iterdir()) == ["input.npz"]
    else:
        left = store.client.list_multipart_uploads(Bucket=store.bucket, Prefix=store._key("jobs/u"))
        assert left.get("Uploads", []) == []
    unfinished_write(store, "jobs/u/result-a2.ply")
    assert store.delete_prefix("jobs/u") == 1  # the input; the unfinished write goes too
    assert store.abort_unfinished("jobs/u") == 0
