"""Bad uploads through the API: each a 422 (or 413) with its own code, never a 5xx, decided before
anything is stored or queued; size limits enforced by a real server before the body is read;
archive bombs refused fast and in bounded memory."""

from __future__ import annotations

import gzip
import io
import json
import socket
import struct
import threading
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from tests.conftest import mesh_path
from tests.service.helpers import assert_problem, spec, submit
from workers.engine.errors import InputError
from workers.engine.io import load_bytes

CUBE = mesh_path("rx-cube.obj").read_bytes()
HEAD = b"ply\nformat binary_little_endian 1.0\n"
XYZ = b"property float x\nproperty float y\nproperty float z\n"
FACE = b"property list uchar int vertex_indices\n"


@pytest.fixture
def nothing_left(redis_client, settings):
    yield
    assert redis_client.keys("tessera:job:*") == []
    jobs = settings.blob_root / "jobs"
    assert not jobs.exists() or list(jobs.iterdir()) == []


def zipped(*members: tuple[str, bytes], stored: bool = False) -> bytes:
    buf = io.BytesIO()
    mode = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w", mode) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def nested_zip(depth: int) -> bytes:
    data = zipped(("cube.obj", CUBE))
    for i in range(depth):
        data = zipped((f"level{i}.zip", data))
    return data


def glb(accessor: dict, json_text: bytes | None = None) -> bytes:
    """A GLB of one triangle whose POSITION accessor is ``accessor`` (or whose JSON chunk is
    ``json_text``)."""
    tree = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "accessors": [
            accessor,
            {"bufferView": 0, "componentType": 5125, "count": 3, "type": "SCALAR"},
        ],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 12}],
        "buffers": [{"byteLength": 12}],
    }
    j = json_text if json_text is not None else json.dumps(tree).encode()
    j += b" " * (-len(j) % 4)
    b = np.array([0, 1, 2], "<u4").tobytes()
    body = struct.pack("<2I", len(j), 0x4E4F534A) + j + struct.pack("<2I", len(b), 0x004E4942) + b
    return struct.pack("<3I", 0x46546C67, 2, 12 + len(body)) + body


def npy_header(shape: tuple[int, ...]) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        f, {"descr": "<f8", "fortran_order": False, "shape": shape}
    )
    return f.getvalue()


TRI = np.array([[0, 1, 2]], np.int32)
V3 = np.eye(3, dtype=np.float32)

BAD = [
    # header count bombs: declared counts checked against the file size before allocating
    (
        HEAD + b"element vertex 4000000000\n" + XYZ + b"end_header\n",
        "a.ply",
        "format.count_exceeds_size",
    ),  # noqa: E501
    (
        HEAD
        + b"element vertex 3\n"
        + XYZ
        + b"element face 4000000000\n"
        + FACE
        + b"end_header\n"
        + bytes(36),
        "a.ply",
        "format.count_exceeds_size",
    ),  # noqa: E501
    (
        bytes(80) + (4_000_000_000).to_bytes(4, "little") + bytes(100),
        "a.stl",
        "format.count_exceeds_size",
    ),  # noqa: E501
    (b"OFF\n4000000000 1 0\n0 0 0\n", "a.off", "format.count_exceeds_size"),  # OFF counts
    # glTF accessors: a count with nothing behind it would be allocated as zeros
    (
        glb({"componentType": 5126, "count": 10**9, "type": "VEC3"}),
        "a.glb",
        "format.count_exceeds_size",
    ),
    (
        glb({"bufferView": 0, "componentType": 5126, "count": 10**9, "type": "VEC3"}),
        "a.glb",
        "format.count_exceeds_size",
    ),
    (
        glb({}, json.dumps({"accessors": [{"bufferView": 0, "count": 1e999}]}).encode()),
        "a.glb",
        "format.parse_error",
    ),  # a count of Infinity
    (glb({}, b"[" * 100_000 + b"]" * 100_000), "a.glb", "format.parse_error"),  # deep nesting
    (npy_header((100_000, 100_000, 100)) + bytes(64), "v.npy", "format.count_exceeds_size"),
    # numbers that overflow or are not integers where integers belong
    (
        b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 9223372036854775807\n",
        "a.off",
        "format.parse_error",
    ),
    (
        HEAD
        + b"element vertex 3\n"
        + XYZ
        + b"element face 1\n"
        + b"property list float int vertex_indices\nend_header\n"
        + V3.tobytes()
        + np.float32(np.nan).tobytes()
        + TRI.tobytes(),
        "a.ply",
        "format.parse_error",
    ),  # a list count of NaN
    (npz(V=V3, F=TRI, **{"vertex.k": np.float64(1)}), "a.npz", "mesh.bad_attribute"),  # 0-d
    # geometry that cannot be used
    (b"v 0 0 0\nv inf 0 0\nv 0 1 0\nf 1 2 3\n", "a.obj", "mesh.non_finite"),  # Inf
    (
        bytes(80) + (1).to_bytes(4, "little") + bytes(12) + b"\x00\x00\xc0\x7f" * 9 + bytes(2),
        "a.stl",
        "mesh.non_finite",
    ),  # NaN in binary STL  # noqa: E501
    (
        npz(V=np.array([[0, 0, 0], [1, 0, 0], [np.nan, 1, 0]], np.float32), F=TRI),
        "a.npz",
        "mesh.non_finite",
    ),  # noqa: E501
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -5\n", "a.obj", "mesh.index_out_of_range"),  # relative
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", "a.obj", "mesh.index_out_of_range"),  # one past
    (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "a.obj", "mesh.obj_zero_index"),  # zero-based OBJ
    (npz(V=V3, F=np.array([[0, 1, 3]], np.int32)), "a.npz", "mesh.index_out_of_range"),
    (npz(V=np.zeros((3, 3), "U3"), F=TRI), "a.npz", "mesh.bad_dtype"),  # strings as coordinates
    # empty meshes, point clouds, meshes with no faces
    (b"# nothing here\n", "a.obj", "mesh.empty"),
    (bytes(84), "a.stl", "mesh.empty"),  # binary STL with zero faces
    (b"solid x\nendsolid x\n", "a.stl", "mesh.empty"),
    (gzip.compress(b""), "a.obj.gz", "mesh.empty"),
    (HEAD + b"element vertex 1\n" + XYZ + b"end_header\n" + bytes(12), "a.ply", "mesh.no_faces"),
    (b"OFF\n3 0 0\n0 0 0\n1 0 0\n0 1 0\n", "a.off", "mesh.no_faces"),  # point cloud
    # wrong file types behind an extension
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "a.obj", "format.mismatch"),
    (b"hello world\n", "a.obj", "format.mismatch"),
    (CUBE, "a.stl", "format.mismatch"),
    # archives: nesting, traversal, many members
    (nested_zip(3), "a.zip", "format.archive_nested"),
    (gzip.compress(gzip.compress(gzip.compress(CUBE))), "a.obj.gz", "format.archive_nested"),
    (zipped(("../../etc/cron.d/x.obj", CUBE)), "a.zip", "format.archive_unsafe_name"),
    (zipped(("/abs/x.obj", CUBE)), "a.zip", "format.archive_unsafe_name"),
    (zipped(("dir\\..\\x.obj", CUBE)), "a.zip", "format.archive_unsafe_name"),
    (
        zipped(*[(f"{i}.txt", b"") for i in range(1001)], stored=True),
        "a.zip",
        "format.archive_too_many_members",
    ),  # noqa: E501
]


@pytest.mark.parametrize(
    ("data", "name", "code"), BAD, ids=[f"{c}-{i}" for i, (_, _, c) in enumerate(BAD)]
)  # noqa: E501
def test_bad_upload_is_a_422_with_its_code(client, nothing_left, data, name, code):
    assert_problem(submit(client, data, spec_text=spec("stats"), filename=name), 422, code)


def test_nested_archives_one_level_deep_are_fine():
    assert load_bytes(nested_zip(1), "a.zip").n_faces == 12  # zip in a zip
    assert load_bytes(zipped(("c.obj.gz", gzip.compress(CUBE))), "a.zip").n_faces == 12


def bounded(fn, *args, **kw) -> tuple[str, float, int]:
    """Run a parse expected to fail: its error code, seconds and peak Python allocation."""
    tracemalloc.start()
    t = time.perf_counter()
    try:
        fn(*args, **kw)
    except InputError as exc:
        code = exc.code
    else:
        code = "accepted"
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return code, time.perf_counter() - t, peak


def test_archive_bombs_are_refused_fast_with_bounded_memory():
    limit = 16 << 20
    # high ratio: 400 MiB of zeros in about 400 KiB, gzip and zip
    zeros = gzip.compress(bytes(400 << 20), 9)
    code, secs, peak = bounded(load_bytes, zeros, "a.obj.gz", max_expanded=limit)
    # stopped at the limit: inflating all 400 MiB would take seconds (a bound, not a timing)
    assert code == "format.archive_too_large" and peak < 3 * limit and secs < 1.0
    zbomb = zipped(("a.obj", bytes(400 << 20)))
    code, secs, peak = bounded(load_bytes, zbomb, "a.zip", max_expanded=limit)
    assert code == "format.archive_too_large" and peak < 3 * limit and secs < 1.0
    # many members: refused from the end record, before the central directory is parsed
    many = zipped(*[(f"{i}", b"") for i in range(100_000)], stored=True)
    code, secs, peak = bounded(load_bytes, many, "a.zip")
    assert code == "format.archive_too_many_members" and peak < (1 << 20) and secs < 1.0
    # ...also when the end record declares one member but the directory holds 100,000
    one = zipped(("m.obj", CUBE))
    end = one.rfind(b"PK\x05\x06")
    size, off = struct.unpack_from("<II", one, end + 12)
    entries = one[off : off + size] * 100_000
    tail = bytearray(one[end:])
    struct.pack_into("<HHII", tail, 8, 1, 1, len(entries), off)
    lying = one[:off] + entries + bytes(tail)
    code, secs, peak = bounded(load_bytes, lying, "a.zip")
    assert code == "format.archive_too_many_members" and peak < (1 << 20) and secs < 1.0
    # a header count bomb allocates nothing
    ply = HEAD + b"element vertex 4000000000\n" + XYZ + b"end_header\n"
    code, secs, peak = bounded(load_bytes, ply, "a.ply")
    assert code == "format.count_exceeds_size" and peak < (1 << 20)


def test_upload_limit_is_exact(client, nothing_left, settings):
    limit = settings.max_upload_bytes
    at = client.post("/v1/jobs", content=b"x" * limit, headers={"content-type": "text/plain"})
    assert at.status_code == 422  # read (and refused for what it is), not too large
    over = client.post(
        "/v1/jobs", content=b"x" * (limit + 1), headers={"content-type": "text/plain"}
    )  # noqa: E501
    assert_problem(over, 413, "upload.too_large")


@pytest.fixture
def live_server(settings):
    """The app behind a real uvicorn on loopback (the TestClient bypasses the HTTP layer)."""
    import uvicorn

    from service.main import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=port, log_level="warning", ws="none"
        )  # noqa: E501
    )
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    deadline = time.time() + 10
    while not server.started:
        assert time.time() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield port
    server.should_exit = True
    t.join(10)


def raw_request(port: int, head: bytes, body_chunks: list[bytes]) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(head)
            for c in body_chunks:
                s.sendall(c)
        except OSError:  # the server answered and closed before the whole body was sent
            pass
        data = b""
        while b"\r\n\r\n" not in data:
            part = s.recv(65536)
            if not part:
                break
            data += part
        return data


@pytest.mark.slow
def test_declared_oversize_is_refused_before_the_body_is_sent(live_server, settings):
    head = (
        b"POST /v1/jobs HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        b"Content-Length: %d\r\n\r\n" % (settings.max_upload_bytes + 1)
    )
    t = time.perf_counter()
    answer = raw_request(live_server, head, [])  # not one byte of the body sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert time.perf_counter() - t < 5


@pytest.mark.slow
def test_chunked_oversize_is_cut_off_at_the_limit(live_server, settings, nothing_left):
    head = (
        b"POST /v1/jobs HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    part = (
        b'--b\r\nContent-Disposition: form-data; name="mesh"; filename="big.obj"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n"
    )
    chunk = b"v 0 0 0\n" * 65536
    n = settings.max_upload_bytes // len(chunk) + 1
    framed = [b"%x\r\n%s\r\n" % (len(c), c) for c in [part] + [chunk] * n]
    answer = raw_request(live_server, head, framed)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_member_count_is_the_central_directory_walked_entry_by_entry():
    """The limit counts the entries zipfile will read, not signature bytes: a last member whose
    data ends with the entry signature, or a stored zip inside, does not count twice."""
    tail = b"# ends like an entry: PK\x01\x02\n"
    members = [(f"{i}.txt", b"") for i in range(999)] + [("m.obj", CUBE + tail)]
    assert load_bytes(zipped(*members, stored=True), "a.zip").n_faces == 12
    inner = zipped(("cube.obj", CUBE), stored=True)
    assert load_bytes(zipped(("in.zip", inner), stored=True), "a.zip").n_faces == 12
    # 1001 entries are refused, whatever the end record declares
    too_many = zipped(*[(f"{i}.txt", b"") for i in range(1001)], stored=True)
    end = too_many.rfind(b"PK\x05\x06")
    lying = bytearray(too_many)
    struct.pack_into("<HH", lying, end + 8, 1, 1)
    with pytest.raises(InputError) as e:
        load_bytes(bytes(lying), "a.zip")
    assert e.value.code == "format.archive_too_many_members"
