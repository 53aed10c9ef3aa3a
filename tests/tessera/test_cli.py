"""``tessera submit`` and ``tessera batch`` against a live service, as a user runs them."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tessera.cli import (
    INPUT_SUFFIXES,
    OUTPUT_EXTENSIONS,
    OUTPUT_FORMATS,
    load_pipeline,
    parse_op,
    stem,
)
from tests.conftest import ROOT, _free_port, mesh_path
from workers.engine.io import FILE_EXTENSIONS, MESH_FORMATS, load_bytes
from workers.engine.io import OUTPUT_FORMATS as ENGINE_OUTPUTS


def tessera(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TESSERA_URL", "TESSERA_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_parse_op_reads_json_values_and_lists():
    assert parse_op("geodesic_distance:sources=[0,12],method=heat") == {
        "op": "geodesic_distance",
        "sources": [0, 12],
        "method": "heat",
    }
    assert parse_op("x:a=1e-3,b=null,c={\"k\": [1, 2]},d='q,r'") == {
        "op": "x",
        "a": 0.001,
        "b": None,
        "c": {"k": [1, 2]},
        "d": "'q,r'",
    }
    with pytest.raises(SystemExit):
        parse_op("weld:=1")


def test_load_pipeline_json_yaml_and_plain_lists(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "pipeline:\n  - weld\n  - op: vertex_normals\n    weighting: angle\n"
        "output:\n  format: obj\n"
    )
    assert load_pipeline(tmp_path / "p.yaml") == {
        "pipeline": [{"op": "weld"}, {"op": "vertex_normals", "weighting": "angle"}],
        "output": {"format": "obj"},
    }
    (tmp_path / "p.json").write_text(json.dumps(["weld", {"op": "stats"}]))
    assert load_pipeline(tmp_path / "p.json") == {"pipeline": [{"op": "weld"}, {"op": "stats"}]}
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SystemExit, match="not valid JSON"):
        load_pipeline(tmp_path / "bad.json")
    (tmp_path / "bad.yml").write_text("pipeline: 3\n")
    with pytest.raises(SystemExit, match="expected a list"):
        load_pipeline(tmp_path / "bad.yml")


def test_client_lists_match_the_engine():
    assert {s.lstrip(".") for s in INPUT_SUFFIXES} == set(MESH_FORMATS) | {"zip", "gz"}
    assert set(OUTPUT_FORMATS) == set(ENGINE_OUTPUTS)
    assert {f: OUTPUT_EXTENSIONS.get(f, f) for f in OUTPUT_FORMATS} == FILE_EXTENSIONS
    assert stem(mesh_path("rx-cube.obj")) == "rx-cube"
    assert stem(ROOT / "a.b.obj.gz") == "a.b"


@pytest.mark.slow
def test_triangulate_flag_asks_for_triangles():
    from service.cli import build_parser
    from tessera.cli import _spec

    for argv, polygons in (([], None), (["--triangulate"], False)):
        args = build_parser().parse_args(["submit", "m.obj", "--op", "subdivide", *argv])
        assert (_spec(args).get("output") or {}).get("polygons") == polygons


def test_submit_one_file(service, tmp_path):
    out = tmp_path / "cube.obj"
    r = tessera(
        "submit",
        str(mesh_path("rx-sphere3.obj")),
        "--op",
        "weld",
        "--op",
        "vertex_normals:weighting=angle",
        "-o",
        str(out),
        "--url",
        service.url,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    assert "1 succeeded, 0 failed, 0 skipped" in r.stdout
    assert out.read_bytes().count(b"\nvn ") == 386  # the format came from the suffix
    bad = tessera("submit", str(mesh_path("rx-cube.obj")), "--op", "weld:tolerance=-1", "-o",
                  str(tmp_path / "x.ply"), "--url", service.url)  # fmt: skip
    assert bad.returncode == 1 and "spec.invalid" in bad.stdout
    assert "tolerance" in bad.stdout  # where the spec is wrong, from the problem's errors
    assert not (tmp_path / "x.ply").exists()


def test_submit_several_files_apart_and_together(service, tmp_path):
    files = [str(mesh_path(n)) for n in ("rx-cube.obj", "rx-sphere3.obj")]
    out = tmp_path / "out"
    r = tessera("submit", *files, "--op", "face_areas", "-o", f"{out}/", "--format", "ply",
                "--url", service.url)  # fmt: skip
    assert r.returncode == 0, r.stderr + r.stdout
    assert "2 succeeded, 0 failed, 0 skipped" in r.stdout
    faces = {p.name: load_bytes(p.read_bytes(), p.name).n_faces for p in out.iterdir()}
    assert faces == {"rx-cube.ply": 12, "rx-sphere3.ply": 768}  # one job each
    both = tmp_path / "both.ply"
    r = tessera("submit", *files, "--together", "--op", "stats", "-o", str(both),
                "--url", service.url)  # fmt: skip
    assert r.returncode == 0, r.stderr + r.stdout
    assert "1 succeeded, 0 failed, 0 skipped" in r.stdout
    merged = load_bytes(both.read_bytes(), "both.ply")
    assert (merged.n_vertices, merged.n_faces) == (8 + 386, 12 + 768)  # one job, merged


@pytest.mark.slow
def test_batch_reports_failures_and_resumes(service, tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    shutil.copy(mesh_path("rx-cube.obj"), src / "cube.obj")
    shutil.copy(mesh_path("rx-sphere3.obj"), src / "sub" / "sphere.obj")
    shutil.copy(mesh_path("rx-torus.obj"), src / "torus.obj")
    (src / "broken.obj").write_text("v 0 0 0\nf 1 2 3\n")
    (src / "notes.txt").write_text("not a mesh")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("- weld\n- op: vertex_normals\n  weighting: angle\n- stats\n")
    out = src / "results"  # inside the input folder: never read as input
    args = ("batch", str(src), "--pipeline", str(pipeline), "--out", str(out),
            "--concurrency", "2", "--url", service.url)  # fmt: skip

    r = tessera(*args)
    assert r.returncode == 1, r.stderr
    assert "3 succeeded, 1 failed, 0 skipped" in r.stdout
    assert "mesh.index_out_of_range" in r.stdout
    assert r.stderr.count("] succeeded ") == 3  # a plain progress line per file off a terminal
    assert "HTTP Request" not in r.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert sorted(written) == sorted(
        ["cube.ply", "sub", "sub/sphere.ply", "torus.ply"]
        + [".cube.ply.tessera.json", "sub/.sphere.ply.tessera.json", ".torus.ply.tessera.json"]
    )  # each result with its record beside it
    sphere = load_bytes((out / "sub" / "sphere.ply").read_bytes(), "s.ply")
    assert sphere.n_vertices == 386 and "vertex_normals" in sphere.vertex_attrs

    before = (out / "cube.ply").stat().st_mtime_ns
    (out / "torus.ply").unlink()
    r = tessera(*args)
    assert r.returncode == 1
    assert "1 succeeded, 1 failed, 2 skipped" in r.stdout
    assert (out / "cube.ply").stat().st_mtime_ns == before
    assert (out / "torus.ply").is_file()

    (src / "broken.obj").unlink()
    r = tessera(*args)
    assert r.returncode == 0 and "0 succeeded, 0 failed, 3 skipped" in r.stdout


def test_a_run_submits_again_files_whose_earlier_job_is_dead(tmp_path):
    """The Idempotency-Key of a file is its bytes and the spec: a new run that finds the earlier
    run's job failed or cancelled submits a new one (under a key derived from the dead job), so
    a re-run is a new try; a live job found is reattached to."""
    import asyncio

    from tessera.cli import Board, Item, run_one

    class Stub:
        def __init__(self, first_state: str) -> None:
            self.first_state, self.keys = first_state, []

        async def submit(self, inputs, spec, idempotency_key):
            self.keys.append(idempotency_key)
            dead = len(self.keys) == 1
            return {
                "id": "a" * 32 if dead else "b" * 32,
                "state": self.first_state if dead else "queued",
            }

        async def wait(self, job_id, progress, timeout):
            return {"id": job_id, "state": "succeeded", "stats_after": {"faces": 12}}

        async def download(self, job_id, path):
            path.write_text(job_id)

    src = tmp_path / "cube.obj"
    shutil.copy(mesh_path("rx-cube.obj"), src)
    for state, submissions in (("failed", 2), ("cancelled", 2), ("running", 1)):
        out = tmp_path / f"{state}.ply"
        stub = Stub(state)
        board = Board(1, io.StringIO(), False)
        o = asyncio.run(run_one(stub, Item("cube", [src], out), {}, board, False, None))
        assert o.status == "succeeded" and len(stub.keys) == submissions
        assert out.read_text() == ("b" if submissions == 2 else "a") * 32
        if submissions == 2:
            assert stub.keys[1] == f"{stub.keys[0]}:{'a' * 12}"


def test_several_inputs_writing_one_file_are_refused(tmp_path):
    for d in ("c1", "c2"):
        (tmp_path / d).mkdir()
        shutil.copy(mesh_path("rx-cube.obj"), tmp_path / d / "m.obj")
    r = tessera("submit", str(tmp_path / "c1" / "m.obj"), str(tmp_path / "c2" / "m.obj"),
                "-o", f"{tmp_path}/outs/", "--url", "http://127.0.0.1:9")  # fmt: skip
    assert r.returncode != 0 and "would both write" in r.stderr
    assert not (tmp_path / "outs").exists()


@pytest.mark.parametrize("command", ["submit", "batch"])
def test_a_wrong_url_fails_at_once_naming_the_url_and_the_settings(tmp_path, command):
    shutil.copy(mesh_path("rx-cube.obj"), tmp_path / "cube.obj")
    (tmp_path / "p.yaml").write_text("- weld\n")
    url = f"http://127.0.0.1:{_free_port()}"
    args = (
        ["submit", str(tmp_path / "cube.obj"), "--op", "weld", "-o", str(tmp_path / "o.ply")]
        if command == "submit"
        else [
            "batch",
            str(tmp_path),
            "--pipeline",
            str(tmp_path / "p.yaml"),
            "--out",
            str(tmp_path / "out"),
        ]  # fmt: skip
    )
    t0 = time.monotonic()
    r = tessera(*args, "--url", url)
    assert time.monotonic() - t0 < 5  # the interpreter's start included; no 10 s of retries
    assert r.returncode == 1
    assert r.stderr.count(url) == 1, r.stderr  # said once, not once per file
    assert "--url" in r.stderr and "TESSERA_URL" in r.stderr
    assert "connection refused" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_batch_redoes_results_made_by_another_pipeline(service, tmp_path):
    """Each result has a record of the spec and input that made it: a re-run keeps only the
    results this spec and input made, makes the others again and says so."""
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(mesh_path("rx-cube.obj"), src / "cube.obj")
    shutil.copy(mesh_path("rx-sphere3.obj"), src / "sphere.obj")
    pipeline = tmp_path / "p.yaml"
    out = tmp_path / "out"

    def batch(steps: str, *extra: str) -> subprocess.CompletedProcess[str]:
        pipeline.write_text(steps)
        return tessera("batch", str(src), "--pipeline", str(pipeline), "--out", str(out),
                       "--url", service.url, *extra)  # fmt: skip

    def attrs(name: str) -> set[str]:
        return set(load_bytes((out / name).read_bytes(), name).vertex_attrs)

    r = batch("- weld\n- vertex_normals\n")
    assert r.returncode == 0 and "2 succeeded, 0 failed, 0 skipped" in r.stdout, r.stdout
    assert "made again" not in r.stdout
    rec = json.loads((out / ".cube.ply.tessera.json").read_text())
    assert rec["spec"]["pipeline"] == [{"op": "weld"}, {"op": "vertex_normals"}]
    assert rec["inputs"] == ["cube.obj"] and len(rec["job"]) > 0
    assert "gaussian_curvature" not in attrs("cube.ply")

    r = batch("- weld\n- vertex_normals\n")  # the same spec: nothing to do
    assert r.returncode == 0 and "0 succeeded, 0 failed, 2 skipped" in r.stdout, r.stdout

    r = batch("- weld\n- vertex_normals\n- gaussian_curvature\n")  # the pipeline changed
    assert r.returncode == 0 and "2 succeeded, 0 failed, 0 skipped" in r.stdout, r.stdout
    assert "2 existing result(s) made again" in r.stdout
    assert "made by another pipeline or from another input" in r.stdout
    assert "gaussian_curvature" in attrs("cube.ply") and "gaussian_curvature" in attrs("sphere.ply")
    new_key = json.loads((out / ".cube.ply.tessera.json").read_text())["key"]
    assert new_key != rec["key"]

    # an input that changed is made again; a result with no record is made again, saying so
    (src / "cube.obj").write_text((src / "cube.obj").read_text() + "\n# edited\n")
    (out / ".sphere.ply.tessera.json").unlink()
    r = batch("- weld\n- vertex_normals\n- gaussian_curvature\n")
    assert "2 succeeded, 0 failed, 0 skipped" in r.stdout, r.stdout
    assert "no record of what made it" in r.stdout
    assert (out / ".sphere.ply.tessera.json").is_file()

    # --keep-existing keeps every result, whatever made it
    before = (out / "cube.ply").stat().st_mtime_ns
    r = batch("- weld\n", "--keep-existing")
    assert r.returncode == 0 and "0 succeeded, 0 failed, 2 skipped" in r.stdout, r.stdout
    assert (out / "cube.ply").stat().st_mtime_ns == before
