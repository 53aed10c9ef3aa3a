"""The stored form of an accepted upload: the parsed arrays, laid out to be written and read at
memory speed.

The API parses an upload once (to refuse a bad file with a 422 before accepting the job) and
stores what it parsed; the worker reads that back without parsing anything. The layout is a fixed
header, a JSON table of the arrays, then each array's raw bytes at a 64-byte aligned offset::

    b"TESSARR1"  uint64 little-endian: length of the JSON table
    {"arrays": [{"name": "V", "dtype": "<f4", "shape": [n, 3], "offset": o}, ...]}
    padding, then the arrays

Writing hands the arrays' own memory to the blob store (no copy, no checksum pass: the store's
rename-into-place already guarantees whole blobs); reading takes one buffer and views it. NPZ, the
earlier stored form, costs a CRC pass and a copy each way and is still read for jobs stored
before.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FormatError
from ..mesh import TriMesh

if TYPE_CHECKING:
    from ..materials import Materials

MAGIC = b"TESSARR1"
ALIGN = 64
_HEAD = struct.Struct("<8sQ")
#: the media type of the stored form, for the blob store and the preview route
MEDIA_TYPE = "application/x-tessera-arrays"


def named_arrays(V: Any, F: Any, va: dict[str, Any], fa: dict[str, Any]) -> dict[str, Any]:
    """A mesh's arrays by the names our NPZ files and the stored form give them: ``V``, ``F``,
    ``vertex.<name>``, ``face.<name>``."""
    out = {"V": V, "F": F}
    out.update({f"vertex.{k}": v for k, v in va.items()})
    out.update({f"face.{k}": v for k, v in fa.items()})
    return out


def split_named(arrays: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The vertex and face attributes among arrays named as :func:`named_arrays` names them."""
    va = {k[len("vertex.") :]: v for k, v in arrays.items() if k.startswith("vertex.")}
    fa = {k[len("face.") :]: v for k, v in arrays.items() if k.startswith("face.")}
    return va, fa


def _arrays(mesh: TriMesh) -> list[tuple[str, np.ndarray]]:
    """The mesh's arrays; corner attributes as ``corner.<name>``, the material library as
    ``materials`` (its JSON) and ``file.<i>`` (its image files, in the library's order)."""
    from ..backend import to_numpy

    named = named_arrays(mesh.V, mesh.F, mesh.vertex_attrs, mesh.face_attrs)
    named.update({f"corner.{k}": v for k, v in mesh.corner_attrs.items()})
    out = [(k, to_numpy(v)) for k, v in named.items()]
    if mesh.materials is not None:
        out += list(library_arrays(mesh.materials).items())
    return out


def library_arrays(materials: Materials) -> dict[str, np.ndarray]:
    """A material library as arrays: ``materials`` (its JSON, :meth:`Materials.encode`, as
    bytes) and ``file.<i>`` (its image files, in the library's order)."""
    out = {"materials": np.frombuffer(materials.encode(), dtype=np.uint8)}
    for i, data in enumerate(materials.files.values()):
        out[f"file.{i}"] = np.frombuffer(data, dtype=np.uint8)
    return out


def library_of(arrays: dict[str, np.ndarray]) -> Materials | None:
    """The material library :func:`library_arrays` laid out (None without ``materials``)."""
    from ..materials import Materials

    if "materials" not in arrays:
        return None
    doc = json.loads(arrays["materials"].tobytes())
    names = doc.get("files", [])
    files = {n: arrays[f"file.{i}"].tobytes() for i, n in enumerate(names)}
    return Materials.from_json(doc, files)


def encode_chunks(mesh: TriMesh) -> Iterator[bytes | memoryview]:
    """The stored form of ``mesh`` as pieces to write in order: the header, then each array's own
    memory (C order) with zero padding between."""
    arrays = []
    for name, a in _arrays(mesh):
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject or a.dtype.kind not in "biufc":
            raise TypeError(f"array {name!r} of dtype {a.dtype} cannot be stored")
        arrays.append((name, a))
    table: list[dict[str, Any]] = []
    # offsets are relative to the end of the padded table, so the table's length cannot move them
    pos = 0
    for name, a in arrays:
        pos = -(-pos // ALIGN) * ALIGN
        table.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": pos})
        pos += a.nbytes
    text = json.dumps({"arrays": table}, separators=(",", ":")).encode()
    head = _HEAD.pack(MAGIC, len(text)) + text
    head += b"\0" * (-len(head) % ALIGN)
    yield head
    pos = 0
    for (_, a), entry in zip(arrays, table, strict=True):
        if entry["offset"] > pos:
            yield b"\0" * (entry["offset"] - pos)
        if a.nbytes:
            yield memoryview(a).cast("B")
        pos = entry["offset"] + a.nbytes


def encode(mesh: TriMesh) -> bytes:
    """The stored form as one ``bytes`` (tests, small meshes)."""
    return b"".join(bytes(c) for c in encode_chunks(mesh))


def decode(buf: bytes | bytearray | memoryview, source: str | None = None) -> TriMesh:
    """The mesh in a stored form (or in the NPZ form stored before): arrays that view ``buf``
    (writable when ``buf`` is). No check of the values: they were checked when the upload was
    accepted."""
    mv = memoryview(buf).cast("B")
    if bytes(mv[:4]) == b"PK\x03\x04":
        return _decode_npz(bytes(mv), source)
    if len(mv) < _HEAD.size or bytes(mv[:8]) != MAGIC:
        raise FormatError("not a stored mesh", code="format.stored_unreadable")
    _, n = _HEAD.unpack_from(mv)
    start = _HEAD.size + n
    try:
        table = json.loads(bytes(mv[_HEAD.size : start]))["arrays"]
    except (ValueError, KeyError, TypeError):
        raise FormatError(
            "stored mesh has a broken table", code="format.stored_unreadable"
        ) from None
    base = start + (-start % ALIGN)
    arrays: dict[str, np.ndarray] = {}
    for e in table:
        dtype = np.dtype(e["dtype"])
        shape = tuple(int(s) for s in e["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        off = base + int(e["offset"])
        if off + count * dtype.itemsize > len(mv):
            raise FormatError("stored mesh is truncated", code="format.stored_unreadable")
        arrays[e["name"]] = np.frombuffer(mv, dtype=dtype, count=count, offset=off).reshape(shape)
    return _mesh(arrays, source)


def _decode_npz(data: bytes, source: str | None) -> TriMesh:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return _mesh({k: z[k] for k in z.files}, source)


def _mesh(arrays: dict[str, np.ndarray], source: str | None) -> TriMesh:
    va, fa = split_named(arrays)
    ca = {k[len("corner.") :]: v for k, v in arrays.items() if k.startswith("corner.")}
    materials = library_of(arrays)
    return TriMesh(
        arrays["V"], arrays["F"], va, fa, source=source, corner_attrs=ca, materials=materials
    )
