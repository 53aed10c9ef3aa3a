"""Malformed uploads, oversized bodies and bad specs: a 4xx problem with its code, and no job,
no queue entry and no blob left behind."""

from __future__ import annotations

import gzip
import io
import json
import zipfile

import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit

CUBE = mesh_path("rx-cube.obj").read_bytes()


@pytest.fixture
def nothing_left(redis_client, settings):
    yield
    assert redis_client.keys("tessera:job:*") == []
    assert (
        redis_client.exists("tessera:q:default") == 0 or redis_client.xlen("tessera:q:default") == 0
    )
    jobs = settings.blob_root / "jobs"
    assert not jobs.exists() or list(jobs.iterdir()) == []


def zipped(name: str, data: bytes) -> bytes:
    """A zip of one member, the same bytes whenever it is made (a fixed time: test ids that
    hold the bytes must be the same in every process that collects them)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


BAD_SPECS = [
    ("not json", "spec.invalid"),  # malformed JSON
    ('{"pipeline": [{"op": "nope"}]}', "spec.invalid"),  # unknown operation
    ('{"pipeline": [{"op": "weld", "tolerance": -1}]}', "spec.invalid"),  # out of bounds
    ('{"pipeline": [{"op": "weld", "tol": 1}]}', "spec.invalid"),  # unknown parameter
    ('{"pipeline": [{"weld": {}}]}', "spec.invalid"),  # no op name
    ('{"pipeline": [], "output": {"format": "fbx"}}', "spec.invalid"),  # unknown format
    ('{"pipeline": [], "extra": 1}', "spec.invalid"),  # unknown top-level key
    ('{"pipeline": [], "deadline_seconds": 0}', "spec.invalid"),  # deadline out of bounds
    ('{"pipeline": [], "deadline_seconds": "10"}', "spec.invalid"),  # a string, not an integer
    ('{"pipeline": [], "output": {"polygons": "yes"}}', "spec.invalid"),  # not a boolean
    ('{"pipeline": [], "output": {"compression": "zstd"}}', "spec.invalid"),  # unknown
    (
        '{"pipeline": [], "output": {"format": "ply", "compression": "draco"}}',
        "spec.compression_not_supported",
    ),  # Draco compresses GLB only
    (spec("weld", attributes=["vertex_normals"]), "spec.unknown_attribute"),  # not produced
    (
        spec("vertex_normals", fmt="stl", attributes=["vertex_normals"]),
        "spec.attribute_not_supported",
    ),  # STL holds no attributes
    (
        spec("face_normals", fmt="glb", attributes=["face_normals"]),
        "spec.attribute_not_supported",
    ),  # GLB: vertex attributes only
    # what the worker would refuse before running, refused before the job is stored
    (
        spec("weld", {"op": "marching_cubes", "field": {"type": "sphere_distance"}}),
        "spec.source_not_first",
    ),
    (spec({"op": "subdivide"}, attributes=["quad_id"]), "spec.unknown_attribute"),  # Loop
    (spec({"op": "merge"}, attributes=["part"]), "spec.unknown_attribute"),  # keep_parts off
    (
        spec({"op": "decimate", "target_faces": 5, "target_ratio": 0.5}),
        "op.target_ambiguous",
    ),
    (
        spec({"op": "collapse_short_edges", "threshold": 1, "max_edge_length": 0.5}),
        "op.max_edge_length_too_small",
    ),
    (spec({"op": "taubin_smooth", "lambda": 0.9, "pass_band": 0.1}), "op.taubin_unstable"),
    # dual_mesh makes vertex attributes face attributes: OBJ and GLB hold neither
    (
        spec("vertex_normals", "dual_mesh", fmt="obj", attributes=["vertex_normals"]),
        "spec.attribute_not_supported",
    ),
    (
        spec("vertex_normals", "dual_mesh", fmt="glb", attributes=["vertex_normals"]),
        "spec.attribute_not_supported",
    ),
    # ...and PLY would read normals in its face element back as face_normals
    (
        spec("vertex_normals", "dual_mesh", fmt="ply", attributes=["vertex_normals"]),
        "spec.attribute_not_supported",
    ),
    # a step naming an attribute the mesh does not have at that point
    (
        spec("face_areas", {"op": "average_attribute", "attribute": "face_areas", "output": "x"}),
        "op.unknown_attribute",
    ),  # a face attribute, not a vertex one
    (spec({"op": "average_attribute", "attribute": "nope"}), "op.unknown_attribute"),
    (
        spec(
            "gaussian_curvature",
            {"op": "submesh", "select": "attribute", "attribute": "gaussian_curvature"},
        ),
        "op.unknown_attribute",
    ),  # a vertex attribute, not a face one
]


@pytest.mark.parametrize(("text", "code"), BAD_SPECS)
def test_bad_spec(client, nothing_left, text, code):
    body = assert_problem(submit(client, spec_text=text), 422, code)
    if code == "spec.invalid":
        assert body["errors"], body


def textured_glb(change: dict) -> bytes:
    """A textured triangle's GLB, its glTF tree updated by ``change`` (keys of the tree, or of
    its first image or material under ``image.`` / ``material.``)."""
    import numpy as np

    from tests.workers.engine.io.common import GltfBuilder

    b = GltfBuilder()
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    position = b.accessor(V, 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    uv = b.accessor(np.array([[0, 0], [1, 0], [0, 1]], np.float32), 5126, "VEC2")
    b.primitive(attributes={"POSITION": position, "TEXCOORD_0": uv}, material=0)
    b.tree["images"] = [{"bufferView": b.view(b"\x89PNG\r\n\x1a\n" + bytes(24))}]
    b.tree["textures"] = [{"source": 0}]
    b.tree["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    for key, value in change.items():
        where, _, name = key.rpartition(".")
        target = {"": b.tree, "image": b.tree["images"][0], "material": b.tree["materials"][0]}
        target[where][name] = value
    return b.glb()


BAD_MESHES = [
    (b"", "x.obj", "mesh.empty"),  # empty file
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", "x.obj", "mesh.no_faces"),  # point cloud
    (b"v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\n", "x.obj", "mesh.non_finite"),  # NaN
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "x.obj", "mesh.obj_zero_index"),  # 0-based OBJ
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "x.obj", "mesh.index_out_of_range"),
    (b"\x00\x01\x02garbage" * 20, "x.bin", "format.unsupported"),  # unknown bytes
    (CUBE, "x.ply", "format.mismatch"),  # OBJ behind .ply
    (CUBE, "x.fbx", "format.unsupported"),  # unknown extension
    (
        b"ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\nproperty float x\n"
        b"property float y\nproperty float z\nend_header\n",
        "x.ply",
        "format.count_exceeds_size",
    ),
    (
        b"\x00" * 80 + (10**6).to_bytes(4, "little") + b"\x00" * 50,
        "x.stl",
        "format.count_exceeds_size",
    ),  # STL count lies
    (zipped("../../evil.obj", CUBE), "x.zip", "format.archive_unsafe_name"),
    (zipped("readme.txt", b"hello"), "x.zip", "format.archive_no_mesh"),
    (b"\x1f\x8b\x08\x00" + b"\x00" * 40, "x.obj.gz", "format.archive_corrupt"),
    # textured glTF with a malformed material library (each was a raw TypeError)
    (textured_glb({"image.mimeType": {"a": 1}}), "x.glb", "format.parse_error"),
    (textured_glb({"extensionsRequired": [{"a": 1}]}), "x.glb", "format.gltf_extension"),
    (
        textured_glb(
            {"material.pbrMetallicRoughness": {"baseColorTexture": {"index": 0, "texCoord": [1]}}}
        ),
        "x.glb",
        "format.parse_error",
    ),
    (textured_glb({"textures": [{"source": 7}]}), "x.glb", "format.parse_error"),
]


@pytest.mark.parametrize(
    ("data", "name", "code"),
    BAD_MESHES,
    ids=[f"{i}-{name}-{code}" for i, (_, name, code) in enumerate(BAD_MESHES)],
)
def test_bad_mesh(client, nothing_left, data, name, code):
    assert_problem(submit(client, data, spec_text=spec("stats"), filename=name), 422, code)


def test_gzip_bomb_is_rejected(client, nothing_left, settings):
    from service.main import create_app

    bomb = gzip.compress(b"v 0 0 0\n" * (1 << 20))  # 8 MiB of text in a few KiB
    small = settings.model_copy(update={"max_expanded_bytes": 1 << 20})
    from fastapi.testclient import TestClient

    with TestClient(create_app(small)) as c:
        assert_problem(submit(c, bomb, filename="x.obj.gz"), 422, "format.archive_too_large")


def test_missing_mesh_field(client, nothing_left):
    # a mesh is needed unless the pipeline starts with a source step (marching_cubes)
    r = client.post("/v1/jobs", data={"spec": spec("stats")})
    assert_problem(r, 422, "upload.no_mesh")
    r = client.post("/v1/jobs", data={"spec": spec("weld", {"op": "marching_cubes"})})
    assert_problem(r, 422, "spec.source_not_first")


def test_oversized_upload_by_content_length(client, nothing_left, settings):
    big = b"v 0 0 0\n" * (settings.max_upload_bytes // 8 + 1)
    body = assert_problem(submit(client, big, filename="big.obj"), 413, "upload.too_large")
    assert body["context"]["limit_bytes"] == settings.max_upload_bytes


def test_oversized_chunked_upload(client, nothing_left, settings):
    boundary = "tesserabound"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="mesh"; '
        f'filename="big.obj"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    chunk = b"v 0 0 0\n" * 8192

    def body():
        yield head
        for _ in range(settings.max_upload_bytes // len(chunk) + 2):
            yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    r = client.post(
        "/v1/jobs",
        content=body(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert "content-length" not in r.request.headers
    assert_problem(r, 413, "upload.too_large")


def test_deadline_above_service_limit(client, nothing_left, settings):
    text = json.dumps({"pipeline": [], "deadline_seconds": settings.default_deadline_seconds + 1})
    assert_problem(submit(client, spec_text=text), 422, "spec.deadline_too_long")


def test_good_zip_and_gz_are_accepted(client):
    assert submit(client, zipped("dir/cube.obj", CUBE), filename="cube.zip").status_code == 202
    assert submit(client, gzip.compress(CUBE), filename="cube.obj.gz").status_code == 202


def test_unknown_route_and_method(client):
    assert_problem(client.get("/v2/nothing"), 404, "route.not_found")
    r = client.put("/v1/jobs")
    assert_problem(r, 405, "method.not_allowed")
    assert r.headers["allow"] == "GET, POST"  # the job list, and submission
    r = client.put("/v1/jobs/0123abcd")
    assert_problem(r, 405, "method.not_allowed")
    assert r.headers["allow"] == "GET, DELETE"
    r = client.post("/static/app.js")  # the page's files: mounted, not routed per method
    assert_problem(r, 405, "method.not_allowed")
    assert r.headers["allow"] == "GET, HEAD"


def test_redis_down_is_503_not_500(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    dead = settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(dead)) as c:
        assert_problem(c.get("/v1/jobs/abc"), 503, "redis.unavailable")
        assert_problem(submit(c), 503, "redis.unavailable")
        assert c.get("/readyz").status_code == 503
        assert c.get("/healthz").status_code == 200
