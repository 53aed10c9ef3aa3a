"""A batch's first chunks queued while its body still comes (``service.early``): the same items,
results and manifest as a batch accepted at its end; a body that turns out bad, or is cut off,
leaves nothing queued or stored; a batch that is receiving has not ended."""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec
from tests.service.test_batches import batch_story, post_archive, wait_batch
from workers.queue import keys

pytestmark = pytest.mark.slow

SPEC = spec("weld", {"op": "vertex_normals", "weighting": "angle"}, "stats")
NAMES = ["rx-cube.obj", "rx-sphere3.obj", "suzanne.obj", "rx-torus.obj", "spot.obj", "woody.obj"]


def client_zip(files: list[tuple[Path, str]]) -> bytes:
    """The archive as the client sends a folder (stored, sizes and CRC-32s in the headers)."""
    from tessera._common import zip_pieces

    return b"".join(bytes(p) for p in zip_pieces(files, bare=True))


def dataset(tmp_path: Path) -> list[tuple[Path, str]]:
    bad = tmp_path / "bad.obj"
    bad.write_text("v 0 0 0\nf 1 2 3\n")
    files = [(mesh_path(n), f"m/{n}") for n in NAMES]
    # a broken member and a repeated path fail alone, wherever they come
    return files[:2] + [(bad, "m/bad.obj"), (mesh_path("rx-cube.obj"), "m/rx-cube.obj")] + files[2:]


@pytest.fixture
def early(monkeypatch):
    """Every body spooled, written in small pieces, chunks of two items: the first chunks go
    once two members have come (one live worker or none)."""
    from service import early as early_mod
    from service import spool

    monkeypatch.setattr(spool, "IN_MEMORY_BYTES", 4096)
    monkeypatch.setattr(spool, "WRITE_BYTES", 50_000)
    queued_early: list[int] = []
    queue = early_mod.EarlyChunks._queue

    def spy(self, fd, ready):
        queue(self, fd, ready)
        if self.writer is not None and not self.failed:
            queued_early.append(len(self.writer.chunks))

    monkeypatch.setattr(early_mod.EarlyChunks, "_queue", spy)
    return queued_early


def _archive(c, url: str) -> tuple[dict[str, bytes], list[dict]]:
    zf = zipfile.ZipFile(io.BytesIO(c.get(url).content))
    members = {n: zf.read(n) for n in zf.namelist() if n != "manifest.jsonl"}
    lines = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
    return members, [
        {k: x[k] for k in ("path", "output", "state", "bytes")}
        | {"error": (x["error"] or {}).get("code")}
        for x in lines
    ]


def test_chunks_queued_while_the_body_comes_give_the_batch_accepted_at_its_end(
    settings, workers, early, tmp_path, monkeypatch
):
    from fastapi.testclient import TestClient

    from service import spool
    from service.main import create_app

    body = client_zip(dataset(tmp_path))
    small = settings.model_copy(update={"batch_chunk_items": 2})
    with TestClient(create_app(small)) as c:
        workers.start("w1")
        r = post_archive(c, body, spec_text=SPEC, headers={"Idempotency-Key": "early"})
        assert r.status_code == 202, r.text
        assert early, "no chunk was queued before the body's end"
        done = wait_batch(c, r.json()["url"])
        assert done["counts"]["total"] == 8 and done["counts"]["succeeded"] == 6, batch_story(
            c, r.json()["url"], workers, seen=done
        )
        # the same request again is the same batch
        again = post_archive(c, body, spec_text=SPEC, headers={"Idempotency-Key": "early"})
        assert again.status_code == 200 and again.json()["id"] == r.json()["id"]
        got = _archive(c, done["result"])
        monkeypatch.setattr(spool, "IN_MEMORY_BYTES", 64 << 20)  # accepted at its end
        n_early = len(early)
        r2 = post_archive(c, body, spec_text=SPEC)
        assert r2.status_code == 202 and len(early) == n_early
        want = _archive(c, wait_batch(c, r2.json()["url"])["result"])
    assert got == want
    lines = got[1]
    assert [x["path"] for x in lines].count("m/rx-cube.obj") == 2
    assert [(x["state"], x["error"]) for x in lines if x["path"] != "m/bad.obj"].count(
        ("failed", "batch.duplicate_path")
    ) == 1
    assert [x for x in lines if x["path"] == "m/bad.obj"][0]["error"] == "mesh.index_out_of_range"


def test_a_bad_member_after_the_first_chunks_undoes_them(settings, early, redis_client):
    """A member whose bytes are not its CRC-32, after chunks were queued: the batch is refused
    as before and nothing of it stays queued, recorded or stored."""
    import httpx

    from tests.live import LiveApi

    body = bytearray(client_zip([(mesh_path(n), n) for n in NAMES]))
    body[body.rfind(b"\nv ") + 3] ^= 0x01  # a byte of the last member (woody.obj)
    small = settings.model_copy(update={"batch_chunk_items": 2})
    api = LiveApi(small).start()
    try:
        r = httpx.post(
            api.url + "/v1/batches",
            content=(bytes(body[i : i + 8192]) for i in range(0, len(body), 8192)),
            headers={
                "Content-Type": "application/zip",
                "Tessera-Spec": SPEC,
                "Idempotency-Key": "bad",
            },
            timeout=60,
        )
    finally:
        api.stop()
    assert_problem(r, 422, "format.archive_invalid")
    assert early, "no chunk was queued before the bad member"
    assert redis_client.zcard(keys.BATCHES) == 0
    assert redis_client.get(keys.idempotency("batch:bad")) is None
    left = [p for p in Path(small.data_dir).rglob("*") if p.is_file()]
    assert not left, "files of the undone chunks stay"


def test_a_body_cut_off_after_its_first_chunks_leaves_nothing(
    settings, redis_client, tmp_path, monkeypatch
):
    """The client goes away while its body comes, after chunks were queued: they are
    cancelled, the batch's record, key and files deleted."""
    from service import spool
    from tests.live import LiveApi

    monkeypatch.setattr(spool, "IN_MEMORY_BYTES", 4096)
    monkeypatch.setattr(spool, "WRITE_BYTES", 20_000)
    small = settings.model_copy(update={"batch_chunk_items": 2})
    body = client_zip([(mesh_path(n), f"{i}-{n}") for i, n in enumerate(NAMES * 4)])
    api = LiveApi(small).start()
    try:
        s = socket.create_connection(("127.0.0.1", api.port))
        s.sendall(
            b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/zip\r\n"
            b"Idempotency-Key: cut\r\nTessera-Spec: " + SPEC.encode() + b"\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        half = body[: len(body) // 2]
        for i in range(0, len(half), 8192):
            piece = half[i : i + 8192]
            s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        deadline = time.time() + 20
        # the record comes first, its chunks once their files are stored
        chunks: list = []
        while not chunks:
            assert time.time() < deadline, "no chunk was queued while the body came"
            time.sleep(0.05)
            listed = redis_client.zrange(keys.BATCHES, 0, -1)
            if listed:
                [batch] = [x.decode() for x in listed]
                raw = redis_client.hget(keys.batch(batch), "chunks")
                assert raw is not None, f"batch {batch} went while its body still came"
                chunks = json.loads(raw)
        assert redis_client.hget(keys.batch(batch), "receiving") == b"1"
        s.close()  # gone, mid-body
        while redis_client.zcard(keys.BATCHES) or redis_client.exists(keys.batch(batch)):
            assert time.time() < deadline + 20, "the batch of a cut-off body stays"
            time.sleep(0.05)
        for job, *_ in chunks:
            assert redis_client.hget(keys.job(job), "state") == b"cancelled"
        assert redis_client.get(keys.idempotency("batch:cut")) is None
        data = Path(small.data_dir)
        assert not [p for p in data.rglob("*") if p.is_file() and "jobs" in p.parts]
    finally:
        api.stop()


def test_a_receiving_batch_has_not_ended_until_its_body_has_come(redis_client):
    from workers.queue.batches import BatchQueue, Chunk
    from workers.queue.jobs import JobQueue

    bq = BatchQueue(JobQueue(redis_client))
    bq.create("b1", {"spec": {}}, [{"path": "a.obj", "output": "a.ply", "bytes": 1, "chunk": -1}],
              {}, idempotency_key="k", body_hash="", receiving=True)  # fmt: skip
    assert bq.get("b1").finished is False  # no chunk yet, and more may come
    failed = {0: {"state": "failed", "error": {"code": "batch.duplicate_path", "message": "x"}}}
    items = [{"path": "a.obj", "output": "a.ply", "bytes": 1, "chunk": -1}]
    bq.extend("b1", json.dumps(items), 1, [], failed)
    view = bq.get("b1")
    assert view.finished is False and view.counts["failed"] == 1
    bq.received("b1", {"input": {"bytes": 1, "files": 1}}, "k", "abc")
    view = bq.get("b1")
    assert view.finished is True and view.record["input"] == {"bytes": 1, "files": 1}
    assert redis_client.get(keys.idempotency("batch:k")) == b"b1|abc"
    assert bq.drop("b1", "k") == [] and bq.get("b1") is None
    assert redis_client.get(keys.idempotency("batch:k")) is None
    assert Chunk  # the record's chunks are Chunk tuples (see BatchQueue.get)


def _local(name: bytes, data: bytes) -> bytes:
    return struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, zlib.crc32(data),
                       len(data), len(data), len(name), 0) + name + data  # fmt: skip


def _zip(entries: list[tuple[bytes, bytes]], listed: list[int], stop: int = -1) -> bytes:
    """A stored zip by hand: ``entries`` (name, bytes) as local headers (a fake directory
    header before entry ``stop``, where a scan of local headers ends), then a central directory
    listing the entries ``listed``, in that order."""
    out, at = bytearray(), []
    for k, (name, data) in enumerate(entries):
        if k == stop:
            out += b"PK\x01\x02" + b"\0" * 12
        at.append(len(out))
        out += _local(name, data)
    start = len(out)
    for j in listed:
        name, data = entries[j]
        crc, size = zlib.crc32(data), len(data)
        out += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, crc, size,
                           size, len(name), 0, 0, 0, 0, 0, at[j]) + name  # fmt: skip
    n = len(listed)
    return bytes(
        out + struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, len(out) - start, start, 0)
    )


def _cases() -> dict[str, bytes]:
    cube = mesh_path("rx-cube.obj").read_bytes()
    six = [(b"m/%d.obj" % i, cube + b"# %d\n" % i) for i in range(6)]
    other = cube.replace(b"v ", b"v  ", 1)[: len(cube)]  # the same size, other bytes
    three = [(b"m/0.obj", cube), (b"m/1.obj", cube), (b"m/2.obj", cube), (b"m/1.obj", other)]
    return {
        # valid zips whose directory lists the members in another order, or leaves one out
        "directory_reversed": _zip(six, [5, 4, 3, 2, 1, 0]),
        "directory_leaves_one_out": _zip(six, [0, 2, 3, 4, 5]),
        # the local headers run into a fake directory; the real one points m/1.obj at a
        # second header with other bytes: those are what the archive holds under that name
        "directory_points_elsewhere": _zip(three, [0, 3, 2], stop=3),
    }


@pytest.mark.parametrize("case", ["directory_reversed", "directory_leaves_one_out",
                                  "directory_points_elsewhere"])  # fmt: skip
def test_an_archive_whose_directory_differs_from_its_headers_is_accepted_as_it_lists_them(
    case, settings, redis_client, monkeypatch, early
):
    """The same outcome with chunks queued as the body came and without: the items the
    archive's directory lists, in its order, with the bytes it points at (not those the local
    headers gave first)."""
    import hashlib

    import httpx

    from service import spool
    from tests.live import LiveApi
    from workers.queue.blobs import (
        members_key,
        open_store,
        read_buffer,
        store_config,
        unpack_members,
    )

    body = _cases()[case]
    small = settings.model_copy(update={"batch_chunk_items": 2})
    monkeypatch.setattr(spool, "WRITE_BYTES", 1000)
    store = open_store(store_config(small))
    api = LiveApi(small).start()
    seen = {}
    try:
        for mode, in_memory in (("at its end", 64 << 20), ("as it came", 500)):
            monkeypatch.setattr(spool, "IN_MEMORY_BYTES", in_memory)
            r = httpx.post(
                api.url + "/v1/batches",
                content=(body[i : i + 700] for i in range(0, len(body), 700)),
                headers={"Content-Type": "application/zip", "Tessera-Spec": SPEC},
                timeout=60,
            )
            assert r.status_code == 202, r.text
            b = httpx.get(r.json()["url"], params={"items": "true"}).json()
            chunks = json.loads(redis_client.hget(keys.batch(r.json()["id"]), "chunks"))
            content = {}
            for job, *_ in chunks:
                for i, v in unpack_members(read_buffer(store, members_key(job))).items():
                    content[i] = hashlib.sha256(bytes(v)).hexdigest()
            seen[mode] = ([(x["path"], x["output"], x["bytes"]) for x in b["items"]], content)
    finally:
        api.stop()
    assert seen["as it came"] == seen["at its end"]
    assert early, "no chunk was queued as the body came"
    assert redis_client.zcard(keys.BATCHES) == 2  # what was queued as it came is undone


def _slow(body: bytes, piece: int = 4096, pause: float = 0.0):
    for i in range(0, len(body), piece):
        yield body[i : i + piece]
        time.sleep(pause)


def _post(url: str, body, **headers: str):
    import httpx

    return httpx.post(
        url + "/v1/batches",
        content=body,
        headers={"Content-Type": "application/zip", "Tessera-Spec": SPEC, **headers},
        timeout=90,
    )


def test_the_same_request_sent_while_the_first_still_comes_is_the_same_batch(
    settings, redis_client, early
):
    """A second request under the same Idempotency-Key, whole while the first (its chunks
    queued) is still sending its body, waits for the first and is answered with its batch."""
    from tests.live import LiveApi

    body = client_zip([(mesh_path(n), f"{i}-{n}") for i, n in enumerate(NAMES)])
    small = settings.model_copy(update={"batch_chunk_items": 2})
    api = LiveApi(small).start()
    try:
        got: dict[str, object] = {}
        first = threading.Thread(
            target=lambda: got.setdefault("first", _post(api.url, _slow(body, 8192, 0.02),
                                                         **{"Idempotency-Key": "same"})),
        )  # fmt: skip
        first.start()
        deadline = time.time() + 30
        while redis_client.get(keys.idempotency("batch:same")) is None:
            assert time.time() < deadline, "the first request queued nothing as it came"
            time.sleep(0.02)
        assert redis_client.get(keys.idempotency("batch:same")).endswith(b"|")  # receiving
        second = _post(api.url, body, **{"Idempotency-Key": "same"})
        first.join(60)
    finally:
        api.stop()
    one = got["first"]
    assert one.status_code == 202, one.text
    assert second.status_code == 200, second.text
    assert second.json()["id"] == one.json()["id"]
    assert redis_client.zcard(keys.BATCHES) == 1


def test_a_refused_body_gives_back_the_quota_its_first_chunks_took(
    settings, redis_client, early, tmp_path
):
    """With a quota of one batch at a time, a body refused after its first chunks were
    queued does not hold the slot: the next good body is accepted."""
    from tests.live import LiveApi

    secret = "quota-secret-0123456789"
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({"q": {"secret": secret, "concurrent_jobs": 1}}))
    small = settings.model_copy(update={"batch_chunk_items": 2, "api_keys_file": keys_file})
    good = client_zip([(mesh_path(n), n) for n in NAMES])
    bad = bytearray(good)
    bad[bad.rfind(b"\nv ") + 3] ^= 0x01  # a byte of the last member
    auth = {"Authorization": f"Bearer {secret}"}
    api = LiveApi(small).start()
    try:
        refused = _post(api.url, _slow(bytes(bad)), **auth)
        assert_problem(refused, 422, "format.archive_invalid")
        assert early, "no chunk was queued before the bad member"
        accepted = _post(api.url, _slow(good), **auth)
    finally:
        api.stop()
    assert accepted.status_code == 202, accepted.text
