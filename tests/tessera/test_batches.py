"""The client's batch methods and ``tessera batch --server-side`` against a live service."""

from __future__ import annotations

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


def test_a_batch_archive_is_sent_in_pieces_with_its_length_again_on_a_retry(tmp_path):
    """One large ``bytes`` body is sent by httpx in time that grows with its square (32 s for
    950 MB): the archive goes in pieces, with its Content-Length, rebuilt for a retried try."""
    import httpx

    from tessera._common import CHUNK_BYTES, RetryPolicy

    src = tmp_path / "in"
    src.mkdir()
    (src / "big.obj").write_bytes(b"v 0 0 0\n" * (3 * CHUNK_BYTES // 8))
    tries: list[tuple[int, int, int]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        pieces = list(request.stream)
        body = b"".join(pieces)
        tries.append((len(pieces), int(request.headers["content-length"]), len(body)))
        assert "transfer-encoding" not in request.headers
        if len(tries) == 1:
            return httpx.Response(503, headers={"Retry-After": "0"})
        batch = {"id": "0" * 32, "state": "queued", "counts": {"total": 1}}
        return httpx.Response(202, json=batch)

    class Transport(httpx.BaseTransport):  # unlike MockTransport, leaves the body's pieces be
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return handler(request)

    http = httpx.Client(transport=Transport())
    tc = tessera.Client("http://tessera.invalid", http=http, retry=RetryPolicy(retries=1))
    assert tc.submit_batch(src, ["weld"])["id"] == "0" * 32
    assert len(tries) == 2
    for n_pieces, declared, sent in tries:
        assert n_pieces >= 3 and declared == sent > 3 * CHUNK_BYTES
