"""Binary glTF (GLB): our writer, and a reader for the files shaped like the ones it writes.

The writer lays out one JSON chunk and one BIN chunk: indices as ``UNSIGNED_INT``, ``POSITION``
(with the ``min``/``max`` the specification requires), ``NORMAL`` when the mesh has
``vertex_normals`` (unitized, as trimesh's exporter did), ``COLOR_0`` as normalized RGBA bytes for
``vertex_colors``, and every other vertex attribute as a float32 ``_name`` accessor. The arrays
are joined into the file's bytes with one copy; nothing is formatted per element.

:func:`read_simple` reads the common case (one mesh of one triangle primitive, placed once, with
no transform) straight from the BIN chunk and gives what trimesh's reader leads to; anything else
(several meshes or primitives, node transforms, extensions, external buffers, sparse accessors,
colours other than bytes) returns None and goes through trimesh.
"""

from __future__ import annotations

import json
import struct
from typing import Any, NamedTuple

import numpy as np

from ..errors import FormatError

_MAGIC = 0x46546C67  # "glTF"
_JSON = 0x4E4F534A  # "JSON"
_BIN = 0x004E4942  # "BIN\0"
_TRIANGLES = 4
_TRIANGLE_FAN = 6  # trimesh reads strips, not fans: fans are read here
_CHUNK = 1 << 14
_COMPONENTS = {5120: "i1", 5121: "u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
_SHAPES: dict[str, tuple[int, ...]] = {
    "SCALAR": (),
    "VEC2": (2,),
    "VEC3": (3,),
    "VEC4": (4,),
    "MAT2": (2, 2),
    "MAT3": (3, 3),
    "MAT4": (4, 4),
}
_TRANSFORM_KEYS = ("matrix", "translation", "rotation", "scale")
_IDENTITY = {
    "matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
    "translation": [0, 0, 0],
    "rotation": [0, 0, 0, 1],
    "scale": [1, 1, 1],
}


# ----------------------------------------------------------------------------- writing
def write_glb(
    V: np.ndarray,
    F: np.ndarray,
    normals: np.ndarray | None,
    colors: np.ndarray | None,
    attrs: dict[str, np.ndarray],
) -> bytes:
    """GLB bytes of one mesh (see :func:`glb_chunks`)."""
    return b"".join(glb_chunks(V, F, normals, colors, attrs))


def glb_chunks(
    V: np.ndarray,
    F: np.ndarray,
    normals: np.ndarray | None,
    colors: np.ndarray | None,
    attrs: dict[str, np.ndarray],
) -> list[bytes | memoryview]:
    """The bytes of a GLB of one mesh in pieces (headers and JSON, then each array's own
    memory, not copied); ``attrs`` are the vertex attributes other than normals and colours,
    each of a shape glTF has an accessor type for (the caller checks)."""
    position = np.ascontiguousarray(V, dtype="<f4")
    blobs: list[tuple[dict[str, Any], np.ndarray]] = [
        ({"componentType": 5125, "type": "SCALAR"}, _indices(F)),
        (
            {
                "componentType": 5126,
                "type": "VEC3",
                "min": [float(position[:, k].min()) if len(position) else 0.0 for k in range(3)],
                "max": [float(position[:, k].max()) if len(position) else 0.0 for k in range(3)],
            },
            position,
        ),
    ]
    attributes = {"POSITION": 1}
    if normals is not None:
        unit = unit_rows(np.asarray(normals)).astype("<f4", copy=False)
        attributes["NORMAL"] = len(blobs)
        blobs.append(({"componentType": 5126, "type": "VEC3"}, unit))
    if colors is not None:
        attributes["COLOR_0"] = len(blobs)
        blobs.append(
            ({"componentType": 5121, "type": "VEC4", "normalized": True}, _rgba_bytes(colors))
        )
    for name, a in attrs.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        kind = {(): "SCALAR", (1,): "SCALAR", (2, 2): "MAT2", (3, 3): "MAT3", (4, 4): "MAT4"}.get(
            a.shape[1:], f"VEC{a.shape[1]}" if a.ndim == 2 else "SCALAR"
        )
        attributes["_" + name] = len(blobs)  # the reader takes one underscore off
        blobs.append(({"componentType": 5126, "type": kind}, a))
    accessors: list[dict[str, Any]] = []
    views: list[dict[str, int]] = []
    chunks: list[memoryview | bytes] = []
    at = 0
    for k, (accessor, a) in enumerate(blobs):
        size = a.nbytes
        views.append({"buffer": 0, "byteOffset": at, "byteLength": size})
        accessors.append({"bufferView": k, "byteOffset": 0, "count": a.shape[0], **accessor})
        chunks.append(a.data)
        pad = -size % 4
        if pad:
            chunks.append(bytes(pad))
        at += size + pad
    tree = {
        "asset": {"version": "2.0", "generator": "tessera"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "mesh", "mesh": 0}],
        "meshes": [
            {
                "name": "mesh",
                "primitives": [{"attributes": attributes, "indices": 0, "mode": _TRIANGLES}],
            }
        ],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": at}],
    }
    text = json.dumps(tree, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    total = 12 + 8 + len(text) + 8 + at
    if total >= 2**32:
        raise FormatError(
            "mesh too large for a GLB file", code="format.too_large", bytes=total, limit=2**32 - 1
        )
    head = struct.pack("<5I", _MAGIC, 2, total, len(text), _JSON)
    return [head, text, struct.pack("<2I", at, _BIN), *chunks]


def _indices(F: np.ndarray) -> np.ndarray:
    """The faces as flat little-endian uint32 (what ``astype`` gives: int32 reinterpreted)."""
    F = np.ascontiguousarray(F)
    if F.dtype == np.dtype("<i4"):
        return F.view("<u4").ravel()  # no copy
    return F.astype("<u4").ravel()


def _rgba_bytes(colors: np.ndarray) -> np.ndarray:
    """(n, 4) uint8 RGBA, as trimesh's ``to_rgba``: floats are 0..1 (scaled, clipped, rounded),
    non-finite floats are 0, RGB gets an opaque alpha."""
    c = np.asarray(colors)
    if c.dtype.kind == "f":
        c = np.clip(np.where(np.isfinite(c), c, 0.0) * 255, 0.0, 255).round()
    c = c.astype(np.uint8)
    if c.shape[1] == 3:
        c = np.concatenate([c, np.full((c.shape[0], 1), 255, np.uint8)], axis=1)
    return np.ascontiguousarray(c)


# ----------------------------------------------------------------------------- reading
class GlbMesh(NamedTuple):
    V: np.ndarray
    F: np.ndarray
    vertex_attrs: dict[str, np.ndarray]


def read_simple(data: bytes) -> GlbMesh | None:
    """The mesh of a GLB holding one triangle primitive placed once without a transform, with
    vertex normals (re-unitized, as on trimesh's path), RGBA byte colours and ``_name``
    attributes; None for any other GLB (and for broken ones: trimesh then says what is wrong).
    Returned arrays are copies, never views of ``data``."""
    try:
        return _read_simple(data)
    except (
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        OverflowError,
        RecursionError,
        struct.error,
    ):
        return None


def _read_simple(data: bytes) -> GlbMesh | None:
    magic, version, length, json_len, json_type = struct.unpack_from("<5I", data)
    if magic != _MAGIC or version != 2 or length != len(data) or json_type != _JSON:
        return None
    bin_at = 20 + json_len
    bin_len, bin_type = struct.unpack_from("<2I", data, bin_at)
    bin_at += 8
    if bin_type != _BIN or bin_at + bin_len != len(data):
        return None
    tree = json.loads(data[20 : 20 + json_len])
    if not _simple_tree(tree) or tree["buffers"][0]["byteLength"] > bin_len:
        return None
    primitive = tree["meshes"][0]["primitives"][0]
    attrs = primitive["attributes"]

    def accessor(index: int) -> np.ndarray | None:
        return _accessor(data, bin_at, tree, index)

    V = accessor(attrs["POSITION"])
    if V is None or V.dtype != np.float32 or V.shape[1:] != (3,):
        return None
    n = V.shape[0]
    if "indices" in primitive:
        flat = accessor(primitive["indices"])
        if flat is None or flat.ndim != 1 or flat.dtype.kind != "u":
            return None
    else:
        flat = np.arange(n, dtype=np.int64)
    fan = primitive.get("mode", _TRIANGLES) == _TRIANGLE_FAN
    if fan:  # (c0, c1, c2), (c0, c2, c3)...: as triangles
        if flat.shape[0] < 3:
            return None
        flat = np.stack([np.repeat(flat[:1], flat.shape[0] - 2), flat[1:-1], flat[2:]], 1).ravel()
    if flat.shape[0] % 3:
        return None
    va: dict[str, np.ndarray] = {}
    if "NORMAL" in attrs:
        N = accessor(attrs["NORMAL"])
        if N is None or N.shape != V.shape or N.dtype != np.float32:
            return None
        if not bool(np.isfinite(N).all()):
            # trimesh's path moves normals by the (here identity) inverse transform: a no-op,
            # except on rows holding NaN or infinity (inf * 0 is NaN), done here the same way
            bad = ~np.isfinite(N).all(axis=1)
            N = N.astype(np.float64)
            with np.errstate(invalid="ignore"):
                N[bad] = N[bad] @ np.eye(3)
        va["vertex_normals"] = unit_rows(N)
    if "COLOR_0" in attrs:
        C = accessor(attrs["COLOR_0"])
        if C is None or C.dtype != np.uint8 or C.shape[1:] not in ((3,), (4,)) or len(C) != n:
            return None
        if C.shape[1] == 3:
            C = np.concatenate([C, np.full((n, 1), 255, np.uint8)], axis=1)
        va["vertex_colors"] = C
    for name in attrs:
        if not name.startswith("_"):
            continue
        a = accessor(attrs[name])
        if a is None:
            return None
        if a.shape[0] == n:
            va[name[1:]] = a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a
    F = flat.reshape(-1, 3)
    return GlbMesh(_owned(V), _owned(F), {k: _owned(v) for k, v in va.items()})


def _simple_tree(tree: dict[str, Any]) -> bool:
    """Whether the glTF tree is one mesh of one triangle primitive, placed once, untransformed,
    stored in the GLB's own buffer, using no extension."""
    if "extensionsUsed" in tree or "extensionsRequired" in tree:
        return False
    buffers, meshes, nodes = tree.get("buffers", []), tree.get("meshes", []), tree.get("nodes", [])
    if len(buffers) != 1 or "uri" in buffers[0] or len(meshes) != 1:
        return False
    primitives = meshes[0].get("primitives", [])
    if len(primitives) != 1:
        return False
    p = primitives[0]
    if p.get("mode", _TRIANGLES) not in (_TRIANGLES, _TRIANGLE_FAN):
        return False
    if "targets" in p or "extensions" in p:
        return False
    for name in p.get("attributes", {}):
        if name not in ("POSITION", "NORMAL", "COLOR_0") and not (
            name.startswith("_") or name.startswith("TEXCOORD_")
        ):
            return False
    if "POSITION" not in p["attributes"]:
        return False
    scenes = tree.get("scenes", [])
    roots = scenes[tree.get("scene", 0)].get("nodes", []) if scenes else []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in seen:
            return False
        seen.add(i)
        stack.extend(nodes[i].get("children", []))
    placed = [i for i, node in enumerate(nodes) if "mesh" in node]
    if placed != [i for i in placed if i in seen] or len(placed) != 1:
        return False
    for node in nodes:
        if "skin" in node or "extensions" in node:
            return False
        for key in _TRANSFORM_KEYS:
            if key in node and [float(x) for x in node[key]] != _IDENTITY[key]:
                return False
    return True


def _accessor(data: bytes, bin_at: int, tree: dict[str, Any], index: int) -> np.ndarray | None:
    """The accessor's values as a read-only view (``(count,) + element shape``), or None when it
    is sparse, has no buffer view, or does not fit in its view."""
    a = tree["accessors"][index]
    if "bufferView" not in a or "sparse" in a:
        return None
    view = tree["bufferViews"][a["bufferView"]]
    if view.get("buffer", 0) != 0:
        return None
    dtype = np.dtype(_COMPONENTS[a["componentType"]])
    shape = _SHAPES[a["type"]]
    count = int(a["count"])
    row = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    stride = int(view.get("byteStride", row))
    start = int(view.get("byteOffset", 0)) + int(a.get("byteOffset", 0))
    view_end = int(view.get("byteOffset", 0)) + int(view["byteLength"])
    if count < 0 or stride < row or start + (count - 1) * stride + row > view_end:
        return None
    if view_end > tree["buffers"][0]["byteLength"] or (count and start < 0):
        return None
    if count == 0:
        return np.zeros((0, *shape), dtype=dtype)
    raw = np.ndarray((count, row), np.uint8, data, bin_at + start, (stride, 1))
    return raw.view(dtype).reshape((count, *shape))


def unit_rows(N: np.ndarray) -> np.ndarray:
    """(n, 3) float32 rows of ``N`` scaled to unit length in float64, zero rows left zero: the
    same values as ``geometry.unitize`` on float64, a cache-sized chunk at a time."""
    out = np.empty(N.shape, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows stay non-finite
        for s in range(0, N.shape[0], _CHUNK):
            v = N[s : s + _CHUNK].astype(np.float64)
            norm = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
            out[s : s + _CHUNK] = v / np.where(norm > 0, norm, 1.0)[:, None]
    return out


def _owned(a: np.ndarray) -> np.ndarray:
    """``a`` in native byte order and memory of its own."""
    if not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a if a.flags.owndata else a.copy()
