"""The client's batch methods and ``tessera batch --server-side`` against a live service."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Iterator

import pytest

import tessera
from tests.conftest import mesh_path
from tests.live import LiveService
from tests.tessera.test_cli import tessera as run_tessera
from workers.engine.io import load_bytes

pytestmark = pytest.mark.slow


@pytest.fixture
def tc(service: LiveService) -> Iterator[tessera.Client]:
    with tessera.Client(service.url) as c:
        yield c


def test_submit_wait_download_a_folder(tc, tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    shutil.copy(mesh_path("rx-cube.obj"), src / "cube.obj")
    shutil.copy(mesh_path("rx-sphere3.obj"), src / "sub" / "sphere.obj")
    (src / "bad.obj").write_text("v 0 0 0\nf 1 2 3\n")
    seen = []
    batch = tc.submit_batch(src, ["weld", "vertex_normals"], output="obj")
    assert batch["counts"]["total"] == 3
    done = tc.wait_batch(batch, progress=lambda b: seen.append(b["counts"]), items=True)
    # each item's state and error first: a failure then says which item failed and why
    states = {i["path"]: (i["state"], i["error"]) for i in done["items"]}
    assert {p: (st, (e or {}).get("code")) for p, (st, e) in states.items()} == {
        "bad.obj": ("failed", "mesh.index_out_of_range"),
        "cube.obj": ("succeeded", None),
        "sub/sphere.obj": ("succeeded", None),
    }, states
    assert done["state"] == "succeeded" and seen and seen[-1]["succeeded"] == 2
    path = tc.download_batch(done, tmp_path / "out.zip")
    zf = zipfile.ZipFile(path)
    assert sorted(zf.namelist()) == ["cube.obj", "manifest.jsonl", "sub/sphere.obj"]
    assert load_bytes(zf.read("sub/sphere.obj"), "s.obj").n_faces == 768
    lines = [json.loads(x) for x in zf.read("manifest.jsonl").decode().splitlines()]
    assert [x["path"] for x in lines] == ["bad.obj", "cube.obj", "sub/sphere.obj"]


def test_the_results_come_down_while_the_batch_runs(tc, service, tmp_path):
    """``follow``: the archive's first result arrives while the batch's other items still run,
    and the archive followed from the start holds what the ended batch's archive holds: the
    same results, the same manifest. ``process_batch`` does the same with progress."""
    import httpx

    files = [mesh_path(n) for n in ("rx-cube.obj", "rx-sphere3.obj", "rx-torus.obj")]
    pipeline = [{"op": "sleep", "seconds": 0.6}, "stats"]
    batch = tc.submit_batch(files, pipeline, output="obj")
    route = f"{service.url}/v1/batches/{batch['id']}/result"
    refused = httpx.get(route)
    assert refused.status_code == 409 and refused.json()["code"] == "batch.not_ready"
    with httpx.stream("GET", route, params={"follow": "true"}, timeout=60) as r:
        assert r.status_code == 200
        pieces = r.iter_raw()
        first = next(pieces)  # one item's result: the others are still sleeping
        now = tc.get_batch(batch)
        assert now["state"] == "running" and now["counts"]["succeeded"] < 3, now
        followed = first + b"".join(pieces)
    done = tc.wait_batch(batch)
    assert done["counts"]["succeeded"] == 3
    ended = tc.download_batch(done, tmp_path / "ended.zip").read_bytes()

    def members(data: bytes) -> dict[str, bytes]:
        zf = zipfile.ZipFile(io.BytesIO(data))
        assert zf.testzip() is None
        return {n: zf.read(n) for n in zf.namelist()}

    assert members(followed) == members(ended) and len(members(ended)) == 4

    seen: list[dict] = []
    out = tmp_path / "processed.zip"
    last = tc.process_batch(files, pipeline, out, output="obj", progress=seen.append)
    assert last["state"] == "succeeded" and seen[-1]["counts"] == last["counts"]
    assert seen[-1]["counts"]["succeeded"] == 3
    got = members(out.read_bytes())
    assert {n: v for n, v in got.items() if n != "manifest.jsonl"} == {
        n: v for n, v in members(ended).items() if n != "manifest.jsonl"
    }


def test_a_list_of_files_and_cancel(tc):
    batch = tc.submit_batch(
        [mesh_path("rx-cube.obj"), mesh_path("suzanne.obj")],
        [{"op": "sleep", "seconds": 5}],
    )
    gone = tc.cancel_batch(batch)
    assert gone["state"] == "cancelled"
    assert gone["counts"]["cancelled"] + gone["counts"]["succeeded"] == 2
    with pytest.raises(tessera.TesseraError) as exc:
        tc.get_batch("0" * 32)
    assert exc.value.code == "batch.not_found"


def test_batch_server_side_writes_results_and_records_and_resumes(service, tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    shutil.copy(mesh_path("rx-cube.obj"), src / "cube.obj")
    shutil.copy(mesh_path("rx-sphere3.obj"), src / "sub" / "sphere.obj")
    shutil.copy(mesh_path("rx-torus.obj"), src / "torus.obj")
    (src / "broken.obj").write_text("v 0 0 0\nf 1 2 3\n")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("- weld\n- op: vertex_normals\n  weighting: angle\n- stats\n")
    out = src / "results"
    args = ("batch", str(src), "--pipeline", str(pipeline), "--out", str(out),
            "--server-side", "--url", service.url)  # fmt: skip

    r = run_tessera(*args)
    assert r.returncode == 1, r.stderr
    assert "3 succeeded, 1 failed, 0 skipped" in r.stdout
    assert "mesh.index_out_of_range" in r.stdout
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert written == sorted(
        ["cube.ply", "sub", "sub/sphere.ply", "torus.ply"]
        + [".cube.ply.tessera.json", "sub/.sphere.ply.tessera.json", ".torus.ply.tessera.json"]
    )
    sphere = load_bytes((out / "sub" / "sphere.ply").read_bytes(), "s.ply")
    assert sphere.n_vertices == 386 and "vertex_normals" in sphere.vertex_attrs

    # the same records as the job-per-file run: that run keeps these results
    r = run_tessera("batch", str(src), "--pipeline", str(pipeline), "--out", str(out),
                    "--url", service.url)  # fmt: skip
    assert "0 succeeded, 1 failed, 3 skipped" in r.stdout, r.stdout + r.stderr

    before = (out / "cube.ply").stat().st_mtime_ns
    (out / "torus.ply").unlink()
    (src / "broken.obj").unlink()
    r = run_tessera(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 succeeded, 0 failed, 2 skipped" in r.stdout
    assert (out / "cube.ply").stat().st_mtime_ns == before and (out / "torus.ply").is_file()

    pipeline.write_text("- weld\n- stats\n")  # another pipeline: every result made again
    r = run_tessera(*args)
    assert "3 succeeded, 0 failed, 0 skipped" in r.stdout and "made again" in r.stdout
    assert "vertex_normals" not in load_bytes((out / "cube.ply").read_bytes(), "c.ply").vertex_attrs


@pytest.mark.parametrize("source", ["folder", "archive", "bytes"])
def test_a_batch_is_sent_in_pieces_again_on_a_retry(tmp_path, source):
    """One large ``bytes`` body is sent by httpx in time that grows with its square (32 s for
    950 MB): a folder goes as a zip made while it is sent, an archive file or bytes in pieces
    with their length; every try sends the same body."""
    import httpx

    from tessera._common import CHUNK_BYTES, RetryPolicy, zip_pieces

    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    big = b"v 0 0 0\n" * (3 * CHUNK_BYTES // 8)
    (src / "sub" / "big.obj").write_bytes(big)
    (src / "small.obj").write_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    archive = b"".join(zip_pieces([(src / "sub" / "big.obj", "sub/big.obj")]))
    (tmp_path / "in.zip").write_bytes(archive)
    given = {"folder": src, "archive": tmp_path / "in.zip", "bytes": archive}[source]
    tries: list[tuple[list[int], str | None, bytes]] = []

    class Transport(httpx.BaseTransport):  # unlike MockTransport, leaves the body's pieces be
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            pieces = [bytes(p) for p in request.stream]
            tries.append(
                ([len(p) for p in pieces], request.headers.get("content-length"), b"".join(pieces))
            )
            if len(tries) == 1:
                return httpx.Response(503, headers={"Retry-After": "0"})
            return httpx.Response(202, json={"id": "0" * 32, "state": "queued"})

    tc = tessera.Client(
        "http://tessera.invalid",
        http=httpx.Client(transport=Transport()),
        retry=RetryPolicy(retries=1),
    )
    assert tc.submit_batch(given, ["weld"])["id"] == "0" * 32
    assert len(tries) == 2 and tries[0][2] == tries[1][2]
    sizes, length, body = tries[1]
    assert len(sizes) >= 3 and max(sizes) <= CHUNK_BYTES
    if source == "folder":
        assert length is None  # chunked: made while sent
    else:
        assert length == str(len(body)) and body == archive
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        names = sorted(zf.namelist())
        assert zf.read("sub/big.obj") == big
    assert names == (["small.obj", "sub/big.obj"] if source == "folder" else ["sub/big.obj"])


def test_a_zip_made_while_sent_is_read_by_the_service_as_a_stored_zip(tmp_path):
    """The service reads a stored member as a view of the archive, its CRC checked: the
    streamed zip's members (sizes and CRC after the data) come out whole, a flipped byte is
    refused as an invalid archive."""
    from service.batches import archive_members
    from tessera._common import zip_pieces
    from workers.engine.errors import FormatError

    files = []
    for i, name in enumerate(["rx-cube.obj", "suzanne.obj", "spot.obj"]):
        files.append((mesh_path(name), f"d{i}/{name}"))
    data = b"".join(zip_pieces(files))
    got = archive_members(data, "zip", max_items=10, max_member=1 << 30, max_expanded=1 << 30)
    assert [m.path for m in got] == [n for _, n in files]
    assert [bytes(m.data) for m in got] == [p.read_bytes() for p, _ in files]
    spoilt = bytearray(data)
    spoilt[data.index(b"\nv ") + 2] ^= 1
    with pytest.raises(FormatError) as exc:
        archive_members(
            bytes(spoilt), "zip", max_items=10, max_member=1 << 30, max_expanded=1 << 30
        )
    assert exc.value.code == "format.archive_invalid"


def test_a_zip_of_files_older_than_1980_is_made_and_the_clis_holds_only_names_and_bytes(tmp_path):
    """zip cannot hold a time before 1980 (a Nix store's files, SOURCE_DATE_EPOCH=0): such a
    file's time is clamped, not a raw ValueError out of ``submit_batch`` or the CLI. The CLI's
    archive (``bare``) holds no times or modes: the same files touched since make the same body
    under the same Idempotency-Key."""
    import os

    from service.batches import archive_members
    from tessera._common import zip_pieces

    a = tmp_path / "a.obj"
    a.write_bytes(b"v 0 0 0\n")
    os.utime(a, (1, 1))
    data = b"".join(zip_pieces([(a, "a.obj")]))
    [m] = archive_members(data, "zip", max_items=10, max_member=1 << 20, max_expanded=1 << 20)
    assert (m.path, bytes(m.data)) == ("a.obj", b"v 0 0 0\n")
    bare = b"".join(zip_pieces([(a, "a.obj")], bare=True))
    os.utime(a, (2e9, 2e9))
    a.chmod(0o600)
    assert b"".join(zip_pieces([(a, "a.obj")], bare=True)) == bare
    assert b"".join(zip_pieces([(a, "a.obj")])) != data


def test_batch_server_side_run_again_after_a_timeout_reattaches_to_its_batch(service, tmp_path):
    """A run cut short (``--timeout``) and run again, its file touched meanwhile (the same
    bytes), reattaches to the batch it started instead of idempotency.conflict."""
    import os
    import re

    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(mesh_path("rx-cube.obj"), src / "cube.obj")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("- op: sleep\n  seconds: 1.5\n")
    args = ("batch", str(src), "--pipeline", str(pipeline), "--out", str(tmp_path / "out"),
            "--server-side", "--url", service.url)  # fmt: skip
    r = run_tessera(*args, "--timeout", "0.3")
    assert r.returncode == 1 and "client.timeout" in r.stderr, r.stdout + r.stderr
    first = re.findall(r"batch ([0-9a-f]{32}):", r.stderr)
    os.utime(src / "cube.obj", (2e9, 2e9))
    r = run_tessera(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.findall(r"batch ([0-9a-f]{32}):", r.stderr) == first != []
    assert "1 succeeded, 0 failed, 0 skipped" in r.stdout


def test_a_batch_source_that_is_not_there_is_a_value_error_naming_it(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "a.obj").write_text("v 0 0 0\n")
    tc = tessera.Client("http://tessera.invalid")  # nothing is sent: the error comes first
    for source, words in [
        (tmp_path / "missing", "no such file or folder"),
        ([tmp_path / "a.obj", tmp_path / "dir"], "a folder: give it as the source itself"),
        ([tmp_path / "a.obj", tmp_path / "gone.obj"], "no such file"),
    ]:
        with pytest.raises(ValueError, match=words):
            tc.submit_batch(source, ["weld"])
