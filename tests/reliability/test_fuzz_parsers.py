"""Property-based fuzzing of the parsers' wrapper (``load_bytes``): whatever the bytes and the
file name, it returns a usable mesh or raises an :class:`InputError` (a 422 with a code), never
anything else (which the API would answer with a 500)."""

from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import mesh_path
from workers.engine.errors import InputError
from workers.engine.io import load_bytes, serialize

_MESH = load_bytes(mesh_path("rx-sphere3.obj").read_bytes(), "s.obj")
_PLY_ASCII = (
    b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
    b"property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
    b"0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"
)
_STL_ASCII = (
    b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
    b"endloop\nendfacet\nendsolid x\n"
)


def _zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, data)
    return buf.getvalue()


SEEDS: dict[str, bytes] = {f: serialize(_MESH, f) for f in ("ply", "obj", "stl", "glb", "npz")}
SEEDS.update(
    {
        "off": b"OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 1 3 2\n",
        "ascii.ply": _PLY_ASCII,
        "ascii.stl": _STL_ASCII,
        "obj.gz": gzip.compress(SEEDS["obj"][:4000].rsplit(b"\n", 1)[0] + b"\n"),
        "zip": _zip("m/a.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"),
    }
)
NAMES = ["a.obj", "a.ply", "a.stl", "a.off", "a.glb", "a.npz", "a.zip", "a.obj.gz", "a", "a.bin"]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(SEEDS[kind])
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "digits"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "cut":
            data = data[:i]
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif data:  # numbers in headers and counts are where parsers trust the file
            j = min(i, 600)
            data[j] = draw(st.sampled_from(b"0123456789-.eE +nafi"))
    keep_name = draw(st.booleans())
    name = "a." + kind if keep_name else draw(st.sampled_from(NAMES))
    return bytes(data), name


def check(data: bytes, name: str) -> None:
    try:
        mesh = load_bytes(data, name, max_expanded=1 << 22)
    except InputError as exc:
        assert exc.code.split(".")[0] in ("mesh", "format"), exc.code
        return
    V, F = np.asarray(mesh.V), np.asarray(mesh.F)
    assert mesh.n_faces > 0 and np.isfinite(V).all()
    assert F.min() >= 0 and F.max() < V.shape[0]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_files_parse_or_fail_with_an_input_error(case):
    check(*case)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2048), st.sampled_from(NAMES))
def test_arbitrary_bytes_parse_or_fail_with_an_input_error(data, name):
    check(data, name)
