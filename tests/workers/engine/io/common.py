"""Shared fixtures and file builders of the reading and writing tests."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.workers.engine.shapes import load
from workers.engine import FormatError, MeshError, TriMesh
from workers.engine.io import load_bytes, serialize

TRI = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def _code(data: bytes, name: str = "", **kw: object) -> str:
    with pytest.raises((FormatError, MeshError)) as ei:
        load_bytes(data, name, **kw)
    return ei.value.code


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _same_mesh(a: TriMesh, b: TriMesh) -> None:
    np.testing.assert_array_equal(a.V, b.V)
    np.testing.assert_array_equal(a.F, b.F)
    assert a.V.dtype == np.float32 and a.F.dtype == np.int32


def _ply_header(fmt: str, nv: int, nf: int) -> bytes:
    return (
        f"ply\nformat {fmt} 1.0\nelement vertex {nv}\nproperty float x\nproperty float y\n"
        f"property float z\nelement face {nf}\nproperty list uchar int vertex_indices\n"
        "end_header\n"
    ).encode()


def _binary_stl(n_declared: int, n_written: int, header: bytes = b"") -> bytes:
    tri = struct.pack("<12fH", 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0)
    return header.ljust(80, b" ") + struct.pack("<I", n_declared) + tri * n_written


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


ASCII_PLY = b"""ply
format ascii 1.0
comment quads, colours, normals, a vector and a face property
element vertex 5
property float x
property float y
property float z
property float nx
property float ny
property float nz
property uchar red
property uchar green
property uchar blue
property float quality
property float uv_0
property float uv_1
element face %d
property list uchar int vertex_indices
property int region
end_header
0 0 0 0 0 1 10 20 30 0.5 0 0
1 0 0 0 0 1 10 20 30 1.5 1 0
1 1 0 0 0 1 10 20 30 2.5 1 1
0 1 0 0 0 1 10 20 30 3.5 0 1
-1 0 0 0 0 1 10 20 30 4.5 -1 0
"""


def _same_read(a: TriMesh, b: TriMesh) -> None:
    """Same arrays and attributes, with the same dtypes (byte order aside)."""
    _same_mesh(a, b)
    assert list(a.vertex_attrs) == list(b.vertex_attrs)
    assert list(a.face_attrs) == list(b.face_attrs)
    for x, y in [*zip(a.vertex_attrs.values(), b.vertex_attrs.values(), strict=True)] + [
        *zip(a.face_attrs.values(), b.face_attrs.values(), strict=True)
    ]:
        assert x.dtype == y.dtype.newbyteorder("=") and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _owns_its_arrays(m: TriMesh) -> None:
    """No array is a view of the file's (read-only) bytes."""
    for a in [m.V, m.F, *m.vertex_attrs.values(), *m.face_attrs.values()]:
        assert np.asarray(a).flags.writeable and np.asarray(a).dtype.isnative


_PLY_TYPES = {"float": "f4", "double": "f8", "uchar": "u1", "char": "i1", "short": "i2"}


_PLY_TYPES |= {"ushort": "u2", "int": "i4", "uint": "u4"}


XYZ = [("float", "x"), ("float", "y"), ("float", "z")]


def _binary_ply(
    vertex: list[tuple[str, str]],
    k: int | list[int] = 3,
    face: list[tuple[str, str]] = (("int", "region"),),  # type: ignore[assignment]
    *,
    big: bool = False,
    count: str = "uchar",
    index: str = "int",
    name: str = "vertex_indices",
    face_first: bool = False,
) -> bytes:
    """A binary PLY of 7 vertices and 5 polygons of ``k`` corners (one ``k`` per polygon when a
    list), the properties filled with seeded random values."""
    rng = np.random.default_rng(3)
    e = ">" if big else "<"
    nv, ks = 7, [k] * 5 if isinstance(k, int) else k
    vrec = np.zeros(nv, [(n, e + _PLY_TYPES[t]) for t, n in vertex])
    for t, n in vertex:
        vrec[n] = rng.integers(0, 100, nv) if _PLY_TYPES[t][0] in "iu" else rng.random(nv)
    rows = []
    for kk in ks:
        fdt = [("c", e + _PLY_TYPES[count]), ("i", e + _PLY_TYPES[index], (kk,))]
        rec = np.zeros(1, fdt + [(n, e + _PLY_TYPES[t]) for t, n in face])
        rec["c"], rec["i"] = kk, rng.integers(0, nv, (1, kk))
        for _, n in face:
            rec[n] = rng.integers(0, 100)
        rows.append(rec.tobytes())
    fmt = "big" if big else "little"
    ve = f"element vertex {nv}\n" + "".join(f"property {t} {n}\n" for t, n in vertex)
    fe = f"element face {len(ks)}\nproperty list {count} {index} {name}\n"
    fe += "".join(f"property {t} {n}\n" for t, n in face)
    header = f"ply\nformat binary_{fmt}_endian 1.0\ncomment test\n"
    header += (fe + ve if face_first else ve + fe) + "end_header\n"
    body = [b"".join(rows), vrec.tobytes()] if face_first else [vrec.tobytes(), b"".join(rows)]
    return header.encode() + b"".join(body)


NORMALS = [("float", "nx"), ("float", "ny"), ("float", "nz")]


COLORS = [("uchar", "red"), ("uchar", "green"), ("uchar", "blue"), ("uchar", "alpha")]


def _trimesh_glb(m: TriMesh, normals: np.ndarray | None = None, **kw: object) -> bytes:
    import trimesh

    tm = trimesh.Trimesh(np.asarray(m.V), np.asarray(m.F), vertex_normals=normals, **kw)
    return trimesh.exchange.gltf.export_glb(
        trimesh.Scene(tm), include_normals=normals is not None, unitize_normals=False
    )


def _glb_cases() -> list[bytes]:
    rng = np.random.default_rng(5)
    m = load("rx-sphere3.obj")
    n = m.n_vertices
    raw = rng.normal(size=(n, 3)) * 3  # not unit length; zero, NaN and infinite rows too
    raw[0], raw[1, 1], raw[2, 0] = 0, np.nan, np.inf
    rgb = rng.integers(0, 256, (n, 3)).astype(np.uint8)
    ours = m.with_attrs(
        vertex={"vertex_colors": rgb, "uv": rng.random((n, 2)), "frame": rng.random((n, 2, 2))}
    )
    return [
        serialize(ours, "glb"),
        _trimesh_glb(m, raw, process=False),
        _trimesh_glb(m, None, process=False, vertex_colors=rgb),
    ]


def _reference_obj(V: np.ndarray, F: np.ndarray, N: np.ndarray | None) -> bytes:
    """The OBJ writer as it was, a line at a time."""
    lines = ["# written by tessera"]
    lines += ["v" + " %.9g" * V.shape[1] % tuple(r) for r in V.astype(np.float64).tolist()]
    if N is not None:
        lines += ["vn" + " %.9g" * N.shape[1] % tuple(r) for r in N.astype(np.float64).tolist()]
    for a, b, c in (F + 1).tolist():
        lines.append(f"f {a}//{a} {b}//{b} {c}//{c}" if N is not None else f"f {a} {b} {c}")
    return ("\n".join(lines) + "\n").encode()


OBJ_BODY = (
    b"# a cube corner\nmtllib a.mtl\no thing\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
    b"v 0.5 0.5 1e-3\nvt 0 0\nvt 1 0\nvn 0 0 1\nvn 0 0.6 0.8\ng group\nusemtl red\n"
    b"f 1//1 2//1 3//1\nf 1//1 3//1 4//1\nvn 1 0 0\nf -5//-3 -3//-1 -1//-2\n"
)


OBJ_FACES = [
    (b"f 1 2 3\nf 1 3 4 5\nf 2 3 4 5 1\n", True),  # plain, polygons
    (b"f 1/1 2/2 3/1\nf 1/2 3/1 4/2\n", True),  # a/b
    (b"f 1/1/1 2/2/1 3/1/2\nf 1/2/2 3/1/1 4/2/2\n", True),  # a/b/c
    (b"f 1//1 2//2 3//1\nf 1 3//1 4/2\nf 5/1/ 1// 2/1\n", True),  # mixed forms
    (b"f -1 -2 -3\nf 5//-1 4//-2 1//1\n", True),  # negative indices
    (b"f 1 2\n", True),  # too few corners
    (b"f 1 2 0\n", True),  # index 0
    (b"f 1 2 6\n", True),  # past the end
    (b"f 1/x 2 3\n", False),  # not an integer
    (b"f /1 2 3\n", False),  # no vertex field
    (b"f 1 2 3 # comment\n", False),
]


def _obj_variants() -> list[tuple[bytes, bool]]:
    out = []
    for faces, fast in OBJ_FACES:
        d = OBJ_BODY + faces
        out += [(d, fast), (d.replace(b"\n", b"\r\n"), fast), (d.replace(b"\n", b" \t\n"), fast)]
        out += [(d.rstrip(b"\n"), fast), (d.replace(b" ", b"  "), fast)]
        out += [(d.replace(b"\nv ", b"\n  v\t").replace(b"\nf ", b"\n\tf  "), fast)]
    out += [(OBJ_BODY.replace(b"v 0 0 0", b"v 0 0 0 1"), False)]  # a w coordinate
    out += [(OBJ_BODY.replace(b"vn 1 0 0", b"vn 1 0"), False)]  # a short normal
    out += [(OBJ_BODY.replace(b"v 1 0 0", b"v 1 0 zero"), False)]
    out += [(OBJ_BODY.replace(b"\n", b"\r", 2), False)]  # old Mac line ends
    return out


def _outcome(read: Any, data: bytes) -> Any:
    try:
        return read(data)
    except (FormatError, MeshError) as exc:
        return exc.code, exc.detail


def _same_outcome(a: Any, b: Any) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def glb_bytes(tree: dict, binary: bytes) -> bytes:
    """A GLB of the glTF ``tree`` and its binary chunk (both padded to 4 bytes)."""
    text = json.dumps(tree).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    return (
        struct.pack("<3I", 0x46546C67, 2, 28 + len(text) + len(binary))
        + struct.pack("<2I", len(text), 0x4E4F534A)
        + text
        + struct.pack("<2I", len(binary), 0x004E4942)
        + binary
    )


class GltfBuilder:
    """A glTF tree and its binary buffer, one view and accessor at a time."""

    def __init__(self) -> None:
        self.binary = b""
        self.tree: dict = {
            "asset": {"version": "2.0"},
            "scene": 0,
            "scenes": [{"nodes": [0]}],
            "nodes": [{"mesh": 0}],
            "meshes": [{"primitives": []}],
            "accessors": [],
            "bufferViews": [],
            "buffers": [{"byteLength": 0}],
        }

    def view(self, data: bytes, **extra: object) -> int:
        self.binary += b"\0" * (-len(self.binary) % 4)
        self.tree["bufferViews"].append(
            {"buffer": 0, "byteOffset": len(self.binary), "byteLength": len(data), **extra}
        )
        self.binary += data
        self.tree["buffers"][0]["byteLength"] = len(self.binary)
        return len(self.tree["bufferViews"]) - 1

    def accessor(self, array: np.ndarray | None, component: int, kind: str, **extra: object) -> int:
        a: dict = {"componentType": component, "type": kind, **extra}
        if array is not None:
            a.setdefault("count", len(array))
            a["bufferView"] = self.view(np.ascontiguousarray(array).tobytes())
        self.tree["accessors"].append(a)
        return len(self.tree["accessors"]) - 1

    def primitive(self, **p: object) -> None:
        self.tree["meshes"][0]["primitives"].append(p)

    def glb(self) -> bytes:
        return glb_bytes(self.tree, self.binary)


#: the Khronos glTF validator, run by node (npm ``gltf-validator``, a dev dependency)
VALIDATOR = ROOT / "tests" / "tools" / "validate_gltf.mjs"


def validate(data: bytes, tmp_path: Path) -> dict[str, Any]:
    """The Khronos validator's report on a GLB. The validator is a dev dependency
    (``./dev.sh setup`` runs ``npm ci``): missing, it is a failure, not a skip (hosts without
    npm leave this file out, see ``bench/suite.py``)."""
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "gltf-validator").is_dir():
        pytest.fail("node or node_modules/gltf-validator missing: ./dev.sh setup installs them")
    path = tmp_path / "out.glb"
    path.write_bytes(data)
    done = subprocess.run(
        [node, str(VALIDATOR), str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in report["issues"]["messages"] if m["severity"] == 0]
