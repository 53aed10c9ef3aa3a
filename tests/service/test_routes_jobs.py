"""Submit, poll, download, cancel through HTTP, with real worker processes and a real Redis."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit, wait
from workers.engine.io import load_bytes
from workers.queue import keys

pytestmark = pytest.mark.slow


def test_submit_answers_202_with_location_and_queued_record(client, redis_client):
    r = submit(client, "rx-cube.obj")
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == job["url"]
    assert job["url"].endswith(f"/v1/jobs/{job['id']}")
    assert job["state"] == "queued" and job["attempts"] == 0
    cube_bytes = len(mesh_path("rx-cube.obj").read_bytes())
    assert job["input"] == {
        "name": "rx-cube.obj",
        "bytes": cube_bytes,
        "vertices": 8,
        "faces": 12,
        "parts": ["rx-cube.obj"],
        "dropped": {},  # the cube's OBJ holds nothing the mesh leaves out
    }
    assert set(job["timings"]) >= {"upload", "parse", "store_input"}
    assert redis_client.exists(keys.job(job["id"]))


def test_bunny_weld_normals_curvature_round_trip(client, workers):
    workers.start("w1")
    r = submit(
        client,
        "stanford-bunny.obj",
        spec(
            "weld",
            {"op": "vertex_normals", "weighting": "angle"},
            "gaussian_curvature",
            attributes=["vertex_normals", "gaussian_curvature"],
        ),
    )
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    assert job["attempts"] == 1 and job["progress"] == 1.0
    assert job["stats_before"]["unused_vertices"] == 1113
    after = job["stats_after"]
    assert (after["vertices"], after["edges"], after["boundary_edges"]) == (34834, 104288, 223)
    assert after["euler_characteristic"] == -3
    for stage in (
        "upload",
        "parse",
        "queued",
        "load",
        "0:weld",
        "1:vertex_normals",
        "2:gaussian_curvature",
        "serialize",
        "store",
        "run",
    ):
        assert stage in job["timings"], stage
    assert [s["op"] for s in job["reports"]] == ["weld", "vertex_normals", "gaussian_curvature"]

    res = client.get(job["result"]["url"])
    assert res.status_code == 200
    assert res.headers["content-disposition"] == 'attachment; filename="stanford-bunny.ply"'
    header = res.content[: res.content.index(b"end_header")].decode()
    for prop in (
        "property float nx",
        "property float ny",
        "property float nz",
        "property float gaussian_curvature",
    ):
        assert prop in header
    mesh = load_bytes(res.content, "result.ply")
    assert mesh.n_vertices == 34834 and mesh.n_faces == 69451
    n = mesh.vertex_attrs["vertex_normals"]
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    k = mesh.vertex_attrs["gaussian_curvature"].astype(np.float64)
    assert k.sum() == pytest.approx(2 * np.pi * -3, abs=1e-3)


@pytest.mark.parametrize("fmt", ["obj", "off", "stl", "glb", "npz"])
def test_every_output_format_reloads(client, workers, fmt):
    workers.start("w1")
    attrs = {"obj": ["vertex_normals"], "off": [], "stl": [], "glb": ["vertex_normals"]}.get(fmt)
    r = submit(client, "rx-sphere3.obj", spec("vertex_normals", fmt=fmt, attributes=attrs))
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    data = client.get(job["result"]["url"]).content
    mesh = load_bytes(data, f"result.{fmt}")
    if fmt == "stl":
        from workers.engine.reindex import weld

        mesh, _ = weld(mesh)
    assert (mesh.n_vertices, mesh.n_faces) == (386, 768)
    if fmt == "npz":
        assert mesh.vertex_attrs["vertex_normals"].shape == (386, 3)
    elif fmt == "obj":
        assert data.count(b"\nvn ") == 386
    elif fmt == "glb":
        n = int.from_bytes(data[12:16], "little")
        gltf = json.loads(data[20 : 20 + n])
        assert "NORMAL" in gltf["meshes"][0]["primitives"][0]["attributes"]


@pytest.mark.parametrize(
    ("steps", "fmt", "name", "element"),
    [
        # average_attribute stores its result under `output`
        (
            [
                "vertex_normals",
                {"op": "average_attribute", "attribute": "vertex_normals", "output": "smooth_n"},
            ],
            "npz",
            "smooth_n",
            "vertex",
        ),
        # after dual_mesh a face attribute is a vertex attribute, which GLB holds
        (["face_areas", "dual_mesh"], "glb", "face_areas", "vertex"),
        (["gaussian_curvature", "dual_mesh"], "ply", "gaussian_curvature", "face"),
        # Catmull-Clark makes quad_id
        ([{"op": "subdivide", "scheme": "catmull_clark"}], "npz", "quad_id", "face"),
    ],
)
def test_requested_attributes_follow_the_pipeline(client, workers, steps, fmt, name, element):
    """The attributes a job asks for are checked against what each step leaves on the mesh (the
    element it ends on too), and the result holds them there."""
    workers.start("w1")
    r = submit(client, "rx-sphere3.obj", spec(*steps, fmt=fmt, attributes=[name]))
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    mesh = load_bytes(client.get(job["result"]["url"]).content, f"result.{fmt}")
    attrs = mesh.vertex_attrs if element == "vertex" else mesh.face_attrs
    n = mesh.n_vertices if element == "vertex" else mesh.n_faces
    assert name in attrs and attrs[name].shape[0] == n


def test_everything_the_format_holds_is_written_when_no_attributes_are_named(client, workers):
    """Without an attribute list a job writes every attribute its format holds faithfully: after
    dual_mesh, PLY leaves out the normals that became face attributes (it would read them back
    as face_normals) and keeps the rest."""
    workers.start("w1")
    r = submit(client, "rx-sphere3.obj", spec("vertex_normals", "gaussian_curvature", "dual_mesh"))
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    mesh = load_bytes(client.get(job["result"]["url"]).content, "result.ply")
    assert "gaussian_curvature" in mesh.face_attrs and "polygon_id" in mesh.face_attrs
    assert "face_normals" not in mesh.face_attrs and "vertex_normals" not in mesh.face_attrs


def test_catmull_clark_job_downloads_quads(client, workers):
    workers.start("w1")
    cc = {"op": "subdivide", "scheme": "catmull_clark"}
    quads = submit(client, "rx-cube.obj", spec(cc, fmt="obj")).json()
    pipeline = [cc]
    tris = json.dumps({"pipeline": pipeline, "output": {"format": "obj", "polygons": False}})
    tris = submit(client, "rx-cube.obj", tris).json()
    lines = {}
    for name, job in (("quads", quads), ("tris", tris)):
        job = wait(client, job["url"])
        assert job["state"] == "succeeded", job
        assert job["spec"]["output"]["polygons"] is (name == "quads")
        res = client.get(job["result"]["url"])
        assert res.headers["content-type"].startswith("model/obj")
        lines[name] = [ln.split() for ln in res.content.splitlines() if ln.startswith(b"f ")]
    # the cube's 12 triangles make 36 quads, held as 72 triangles
    assert len(lines["quads"]) == 36 and all(len(f) == 5 for f in lines["quads"])
    assert len(lines["tris"]) == 72 and all(len(f) == 4 for f in lines["tris"])


def test_marching_cubes_job_needs_no_upload(client, workers):
    workers.start("w1")
    mc = {"op": "marching_cubes", "field": {"type": "sphere_distance", "resolution": 32}}
    r = client.post("/v1/jobs", data={"spec": spec(mc, "stats", attributes=["vertex_normals"])})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    assert job["stats_before"]["faces"] == 0
    after = job["stats_after"]
    assert after["closed"] and after["genus"] == 0 and after["duplicate_vertices"] == 0
    assert after["vertices"] == job["reports"][0]["report"]["sign_changing_edges"]
    mesh = load_bytes(client.get(job["result"]["url"]).content, "r.ply")
    assert mesh.n_faces == after["faces"] and "vertex_normals" in mesh.vertex_attrs


def test_uploaded_volume_job(client, workers):
    from workers.engine.marching_cubes import sphere_distance

    S, origin, spacing = sphere_distance(np, 24, (0.0, 0.0, 0.0))
    buf = io.BytesIO()
    np.save(buf, S.astype(np.float32))
    field = {"type": "volume", "origin": list(origin), "spacing": list(spacing)}
    mc = {"op": "marching_cubes", "field": field, "isovalue": 0.6}
    files = {"mesh": ("sphere.npy", buf.getvalue())}
    r = client.post("/v1/jobs", files=files, data={"spec": spec("stats")})
    assert r.status_code == 422 and r.json()["code"] == "upload.volume_needs_source"
    workers.start("w1")
    r = client.post("/v1/jobs", files=files, data={"spec": spec(mc)})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    assert job["stats_after"]["closed"] and job["stats_after"]["genus"] == 0


def test_uploaded_nrrd_and_raw_volume_jobs(client, workers):
    from tests.workers.engine.io.test_volumes import N, S, nrrd

    mc = {"op": "marching_cubes", "field": {"type": "volume"}, "isovalue": 0.6}
    raw_field = {"type": "volume", "shape": [N, N, N], "dtype": "float32", "order": "F"}
    raw_mc = {**mc, "field": raw_field}
    # the raw size is checked at submission, before anything is stored
    r = client.post(
        "/v1/jobs",
        files={"mesh": ("s.raw", S.tobytes(order="F")[:-4])},
        data={"spec": spec(raw_mc)},
    )
    assert_problem(r, 422, "format.raw_size_mismatch")
    r = client.post(
        "/v1/jobs", files={"mesh": ("s.raw", S.tobytes(order="F"))}, data={"spec": spec(mc)}
    )
    assert_problem(r, 422, "format.raw_needs_layout")
    r = client.post(
        "/v1/jobs",
        files={"mesh": ("s.nrrd", nrrd(extra="data file: s.raw"))},
        data={"spec": spec(mc)},
    )
    assert_problem(r, 422, "format.nrrd_detached")
    workers.start("w1")
    uploads = [(("s.nrrd", nrrd(encoding="gzip")), mc), (("s.raw", S.tobytes(order="F")), raw_mc)]
    jobs = [client.post("/v1/jobs", files={"mesh": f}, data={"spec": spec(m)}) for f, m in uploads]
    done = []
    for r in jobs:
        assert r.status_code == 202, r.text
        job = wait(client, r.json()["url"])
        assert job["state"] == "succeeded", job
        done.append(load_bytes(client.get(job["result"]["url"]).content, "r.ply"))
    assert done[0].n_faces == done[1].n_faces > 100
    # NRRD places the samples by its header; the raw job, told nothing, at unit spacing
    scale = (done[1].V.max(axis=0) - done[1].V.min(axis=0)) / (
        done[0].V.max(axis=0) - done[0].V.min(axis=0)
    )
    np.testing.assert_allclose(scale, (N - 1) / 2, rtol=1e-4)


def test_result_before_success_is_409(client):
    job = submit(client).json()
    assert_problem(client.get(job["url"] + "/result"), 409, "job.not_ready")


def test_result_ranges(client, workers):
    """Byte ranges of a result: 206 for a valid one, 416 when none fits, and the whole file (200)
    for a Range header that is not a valid byte-range set (RFC 9110 says to ignore it)."""
    workers.start("w1")
    job = wait(client, submit(client).json()["url"])
    url = job["result"]["url"]
    whole = client.get(url).content
    r = client.get(url, headers={"Range": "bytes=0-9"})
    assert r.status_code == 206 and r.content == whole[:10]
    r = client.get(url, headers={"Range": "bytes=-5"})
    assert r.status_code == 206 and r.content == whole[-5:]
    r = client.get(url, headers={"Range": "BYTES=0-9"})  # the unit in any case (RFC 9110)
    assert r.status_code == 206 and r.content == whole[:10]
    for none_fits in (f"bytes={len(whole) + 10}-", "bytes=-0"):
        r = assert_problem(
            client.get(url, headers={"Range": none_fits}), 416, "range.not_satisfiable"
        )
        assert r["context"]["size"] == len(whole)
    for bad in ("bytes=5-2", "items=0-5", "bytes=abc", "bytes=", "bytes=1-2,x"):
        r = client.get(url, headers={"Range": bad})
        assert r.status_code == 200 and r.content == whole, bad


def test_expiry_counts_from_the_end_of_a_job(client, redis_client):
    """A job still waiting past its submission's TTL has not expired (its result's time starts
    when it ends); an ended job past its expiry answers 410 everywhere, DELETE too."""
    job = submit(client).json()
    key = keys.job(job["id"])
    redis_client.hset(key, "expires_at", repr(time.time() - 1))
    assert client.get(job["url"]).json()["state"] == "queued"
    assert_problem(client.get(job["url"] + "/result"), 409, "job.not_ready")
    r = client.delete(job["url"])
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    assert (
        r.json()["expires_at"] is not None and client.get(job["url"]).json()["state"] == "cancelled"
    )
    redis_client.hset(key, "expires_at", repr(time.time() - 1))
    assert client.get(job["url"]).json()["state"] == "expired"
    assert_problem(client.get(job["url"] + "/result"), 410, "job.expired")
    assert_problem(client.delete(job["url"]), 410, "job.expired")
    assert_problem(client.get(job["url"] + "/preview?mesh=input"), 410, "job.expired")


def test_unknown_job_is_404(client):
    assert_problem(client.get("/v1/jobs/0123abcd"), 404, "job.not_found")
    assert_problem(client.get("/v1/jobs/../etc"), 404, "route.not_found")
    assert_problem(client.delete("/v1/jobs/nope"), 404, "job.not_found")


def test_cancel_queued_job(client, redis_client):
    job = submit(client).json()
    r = client.delete(job["url"])
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    assert client.delete(job["url"]).json()["state"] == "cancelled"  # idempotent
    assert redis_client.xlen(keys.STREAM) == 0


def test_cancel_running_job_and_worker_goes_on(client, workers):
    workers.start("w1")
    slow = submit(client, spec_text=spec({"op": "sleep", "seconds": 30})).json()
    wait(client, slow["url"], ("running",))
    r = client.delete(slow["url"])
    assert r.json()["state"] == "cancelled"
    # the worker kills the stuck run and takes the next job
    nxt = submit(client).json()
    assert wait(client, nxt["url"], timeout=30)["state"] == "succeeded"
    assert client.get(slow["url"]).json()["state"] == "cancelled"


def test_cancel_finished_job_is_409(client, workers):
    workers.start("w1")
    job = wait(client, submit(client).json()["url"])
    assert_problem(client.delete(job["url"]), 409, "job.already_finished")


def test_input_error_in_worker_fails_without_retry(client, workers):
    workers.start("w1")
    job = submit(client, spec_text=spec({"op": "sleep", "fail": "input"})).json()
    job = wait(client, job["url"])
    assert job["state"] == "failed" and job["attempts"] == 1
    assert job["error"]["code"] == "mesh.test_rejected"


@pytest.mark.parametrize(
    ("fail", "code"), [("error", "engine.internal"), ("crash", "worker.child_died")]
)
def test_internal_failures_retry_then_fail_and_worker_survives(client, workers, fail, code):
    workers.start("w1")
    job = submit(client, spec_text=spec({"op": "sleep", "fail": fail})).json()
    job = wait(client, job["url"], timeout=60)
    assert job["state"] == "failed" and job["attempts"] == 3, job
    assert job["error"]["code"] == code
    nxt = submit(client).json()
    assert wait(client, nxt["url"], timeout=30)["state"] == "succeeded"


def test_worker_killed_mid_job_finishes_elsewhere(client, workers, settings):
    workers.start("w1")
    workers.start("w2")
    job = submit(client, "rx-cube.obj", spec({"op": "sleep", "seconds": 2.0}, "stats")).json()
    running = wait(client, job["url"], ("running",))
    victim = running["worker"]
    assert victim in ("w1", "w2")
    time.sleep(0.3)
    workers.kill(victim)
    t0 = time.time()
    done = wait(client, job["url"], timeout=60)
    assert done["state"] == "succeeded", done
    assert done["attempts"] == 2
    assert done["worker"] != victim
    assert time.time() - t0 < 20
    assert client.get(done["result"]["url"]).status_code == 200
    # exactly one result blob: the killed attempt never finished writing one
    folder = settings.blob_root / "jobs" / job["id"]
    assert sorted(p.name for p in folder.glob("result-*")) == ["result-a2.ply"]


def test_idempotent_submission(client):
    body = spec("stats")
    a = submit(client, spec_text=body, headers={"Idempotency-Key": "abc"})
    b = submit(client, spec_text=body, headers={"Idempotency-Key": "abc"})
    assert a.status_code == 202 and b.status_code == 200
    assert a.json()["id"] == b.json()["id"]
    c = submit(client, spec_text=spec("weld"), headers={"Idempotency-Key": "abc"})
    assert_problem(c, 409, "idempotency.conflict")


def test_job_record_is_json_serialisable_and_complete(client, workers):
    workers.start("w1")
    job = wait(client, submit(client, spec_text=spec("weld", "stats")).json()["url"])
    assert job["state"] == "succeeded"
    assert job["reports"][1]["report"]["vertices"] == 8
    assert job["started_at"] and job["finished_at"] and job["created_at"]
    json.dumps(job)
    assert io.BytesIO(client.get(job["result"]["url"]).content).read(3) == b"ply"


@pytest.mark.gpu
def test_gpu_job_end_to_end(client, workers):
    workers.start("w1")
    body = spec("weld", "vertex_normals", "gaussian_curvature", device="gpu")
    gpu = wait(client, submit(client, "stanford-bunny.obj", body).json()["url"], timeout=120)
    assert gpu["state"] == "succeeded", gpu
    assert gpu["backend"] == "cupy" and "transfer" in gpu["timings"]
    assert {r["backend"] for r in gpu["reports"]} == {"cupy"}
    cpu_body = spec("weld", "vertex_normals", "gaussian_curvature", device="cpu")
    cpu = wait(client, submit(client, "stanford-bunny.obj", cpu_body).json()["url"], timeout=120)
    a = load_bytes(client.get(gpu["result"]["url"]).content, "g.ply")
    b = load_bytes(client.get(cpu["result"]["url"]).content, "c.ply")
    np.testing.assert_array_equal(a.F, b.F)
    for k, tol in (("vertex_normals", 2e-4), ("gaussian_curvature", 2e-4)):
        np.testing.assert_allclose(a.vertex_attrs[k], b.vertex_attrs[k], atol=tol)


def test_several_files_merge_into_one_mesh(client, workers):
    workers.start("w1")
    cube = mesh_path("rx-cube.obj").read_bytes()
    files = [("mesh", ("a.obj", cube)), ("mesh", ("b.obj", cube))]
    body = spec({"op": "merge", "keep_parts": True}, "stats", fmt="npz")
    r = client.post("/v1/jobs", files=files, data={"spec": body})
    assert r.status_code == 202, r.text
    assert r.json()["input"]["parts"] == ["a.obj", "b.obj"]
    job = wait(client, r.json()["url"])
    assert job["state"] == "succeeded", job
    merged = job["reports"][0]["report"]
    assert merged["parts"] == 2 and merged["vertices_after"] == 8  # the same cube twice
    mesh = load_bytes(client.get(job["result"]["url"]).content, "r.npz")
    assert sorted(set(mesh.face_attrs["part"].tolist())) == [0, 1]


def test_laplacian_matrix_artifacts(client, workers):
    from workers.engine.artifacts import load_matrix

    workers.start("w1")
    body = json.dumps(
        {
            "pipeline": [{"op": "laplacian_matrix"}],
            "output": {"format": "ply", "matrix_format": "mtx"},
        }
    )
    job = wait(client, submit(client, "rx-sphere3.obj", body).json()["url"])
    assert job["state"] == "succeeded", job
    assert set(job["artifacts"]) == {"laplacian", "mass"}
    art = job["artifacts"]["laplacian"]
    assert art["filename"] == "rx-sphere3.laplacian.mtx"
    L = load_matrix(client.get(art["url"]).content, "mtx")
    assert L.shape == (386, 386)
    assert abs(L @ np.ones(386)).max() < 1e-9  # constants are in the null space
    assert abs(L - L.T).max() < 1e-12
    M = load_matrix(client.get(job["artifacts"]["mass"]["url"]).content, "mtx")
    assert M.diagonal().sum() == pytest.approx(job["stats_after"]["area"], rel=1e-9)
    missing = client.get(job["url"] + "/artifacts/nope")
    assert_problem(missing, 404, "artifact.not_found")
