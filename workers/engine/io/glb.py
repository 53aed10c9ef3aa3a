"""Binary glTF (GLB): our writers, and a reader for the files shaped like the ones they write.

A mesh with corner attributes or materials is written by :func:`textured_glb_chunks`: one
primitive per material, each with its own vertices split where corners differ (texture
coordinates, normals, colours), the materials, textures, samplers and images carried as they
were read. Any other mesh is written by :func:`glb_chunks`, which lays out one JSON chunk
and one BIN chunk: indices as ``UNSIGNED_INT``, ``POSITION`` (with the ``min``/``max`` the
specification requires), ``NORMAL`` when the mesh has ``vertex_normals`` (unitized, as trimesh's
exporter did), ``COLOR_0`` as normalized RGBA bytes for ``vertex_colors``, and every other vertex
attribute as a float32 ``_name`` accessor. The arrays are joined into the file's bytes with one
copy; nothing is formatted per element.

:func:`read_simple` reads the common case (one mesh of one triangle primitive, placed once, with
no transform) straight from the BIN chunk and gives what trimesh's reader leads to; anything else
(several meshes or primitives, node transforms, extensions, external buffers, sparse accessors,
colours other than bytes, texture coordinates, materials) returns None and goes through the
general reader (:mod:`.gltf`).
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import FormatError

if TYPE_CHECKING:
    from ..materials import Materials

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
    return container(tree, at, chunks)


_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
#: the arrays of a glTF document a mesh's materials carry (``Materials.gltf``)
_MATERIAL_KEYS = ("materials", "textures", "samplers", "images")


def textured_glb_chunks(
    V: np.ndarray,
    F: np.ndarray,
    attrs: dict[str, np.ndarray],
    corners: dict[str, np.ndarray],
    material: np.ndarray | None,
    materials: Materials | None,
    *,
    vertex_normals_first: bool = False,
) -> list[bytes | memoryview]:
    """The bytes of a GLB of one mesh with one primitive per material, in pieces.

    Faces are grouped by ``material`` (an index into ``materials.names``; None: one primitive
    with glTF's default material). Each primitive has its own vertices: one per distinct
    (vertex, corner values) among its corners, so a vertex is split where its corners' texture
    coordinates, normals or colours differ (a seam). ``corners`` are the corner attributes to
    write, ``(m, 3, k)``: ``uv``, ``uv1``... as ``TEXCOORD_0``, ``TEXCOORD_1``...; ``normal`` as
    ``NORMAL`` (else the vertex attribute ``vertex_normals``, which ``vertex_normals_first``
    prefers); ``tangent`` as ``TANGENT`` (only where ``NORMAL`` is written, as glTF wants);
    ``color`` as ``COLOR_0`` (else ``vertex_colors``). Every other vertex attribute in
    ``attrs`` is a float32 ``_name`` accessor. Indices are ``UNSIGNED_SHORT`` where a
    primitive's vertices fit, else ``UNSIGNED_INT``. The materials, textures, samplers and images
    are written as ``materials`` holds them, each image's file embedded in the buffer with its
    media type. A normal of zero or non-finite length (glTF wants unit normals) is replaced by
    its face's normal, or ``+z`` when the face has none.
    """
    from .gltf import image_mime_type

    V = np.asarray(V)
    F = np.asarray(F, dtype=np.int64)
    attrs = dict(attrs)
    corners = dict(corners)
    vertex_normals = attrs.pop("vertex_normals", None)
    if vertex_normals is not None and (vertex_normals_first or "normal" not in corners):
        corners.pop("normal", None)
    else:
        vertex_normals = None
    vertex_colors = attrs.pop("vertex_colors", None)
    if "color" in corners:
        vertex_colors = None
    sets, filler = _texcoord_sets(corners, F.shape[0])
    # a set all zeros on one primitive was not there (the reader fills a primitive's missing
    # set with zeros), unless the whole mesh's set is zeros: then it is the mesh's own (a
    # texture of no area), and written
    somewhere = [bool(np.asarray(uv).any()) for uv in sets]

    def _absent(k: int, rows: np.ndarray) -> bool:
        return k in filler or (somewhere[k] and not rows.any())

    # corner values, flat (3 m, k), in the order the key is built from
    flat: dict[str, np.ndarray] = {}
    for n, uv in enumerate(sets):
        flat[f"TEXCOORD_{n}"] = np.ascontiguousarray(uv, dtype="<f4").reshape(-1, 2)
    if "normal" in corners:
        flat["NORMAL"] = np.ascontiguousarray(corners["normal"], dtype="<f4").reshape(-1, 3)
    if "color" in corners:
        c = corners["color"]
        flat["COLOR_0"] = _rgba_bytes(np.asarray(c).reshape(-1, c.shape[-1]))
    if "tangent" in corners and ("normal" in corners or vertex_normals is not None):
        # glTF allows TANGENT only beside NORMAL; without normals it is not written
        flat["TANGENT"] = np.ascontiguousarray(corners["tangent"], dtype="<f4").reshape(-1, 4)

    library = _library(materials)
    groups: list[tuple[int | None, np.ndarray]]
    if material is None or materials is None:
        groups = [(None, np.arange(F.shape[0]))]
    else:
        m = np.asarray(material).astype(np.int64)
        order = np.argsort(m, kind="stable")
        values, starts = np.unique(m[order], return_index=True)
        ends = [*starts[1:], order.shape[0]]
        groups = [(int(v), order[a:b]) for v, a, b in zip(values, starts, ends, strict=True)]

    blobs: list[tuple[dict[str, Any], np.ndarray, int | None]] = []
    primitives: list[dict[str, Any]] = []

    def add(accessor: dict[str, Any], a: np.ndarray, target: int | None) -> int:
        blobs.append((accessor, a, target))
        return len(blobs) - 1

    for mat, faces in groups:
        vid = F[faces].reshape(-1)
        src, inverse, rows = _split(vid, flat, faces)
        position = np.ascontiguousarray(V[src], dtype="<f4")
        n = position.shape[0]
        index_type = (5123, "<u2") if n <= 0xFFFF else (5125, "<u4")
        prim: dict[str, Any] = {
            "indices": add(
                {"componentType": index_type[0], "type": "SCALAR"},
                inverse.astype(index_type[1]),
                _ELEMENT_ARRAY_BUFFER,
            ),
            "mode": _TRIANGLES,
        }
        attributes: dict[str, int] = {
            "POSITION": add(
                {
                    "componentType": 5126,
                    "type": "VEC3",
                    "min": [float(position[:, k].min()) if n else 0.0 for k in range(3)],
                    "max": [float(position[:, k].max()) if n else 0.0 for k in range(3)],
                },
                position,
                _ARRAY_BUFFER,
            )
        }
        normals = rows.get("NORMAL")
        if normals is None and vertex_normals is not None:
            normals = np.asarray(vertex_normals)[src]
        if normals is not None:
            unit = _unit_normals(normals, V, F, faces, inverse)
            attributes["NORMAL"] = add({"componentType": 5126, "type": "VEC3"}, unit, _ARRAY_BUFFER)
            if "TANGENT" in rows:
                attributes["TANGENT"] = add(
                    {"componentType": 5126, "type": "VEC4"},
                    _unit_tangents(rows["TANGENT"], unit),
                    _ARRAY_BUFFER,
                )
        used = _texcoords_used(library["materials"][mat]) if mat is not None else set()
        uv_rows = [rows[f"TEXCOORD_{k}"] for k in range(len(sets))]
        while uv_rows and len(uv_rows) - 1 not in used and _absent(len(uv_rows) - 1, uv_rows[-1]):
            uv_rows.pop()  # a set this primitive never had and its material does not read
        for k, uv in enumerate(uv_rows):
            attributes[f"TEXCOORD_{k}"] = add(
                {"componentType": 5126, "type": "VEC2"}, uv, _ARRAY_BUFFER
            )
        colors = rows.get("COLOR_0")
        if colors is None and vertex_colors is not None:
            colors = _rgba_bytes(np.asarray(vertex_colors)[src])
        if colors is not None:
            attributes["COLOR_0"] = add(
                {"componentType": 5121, "type": "VEC4", "normalized": True}, colors, _ARRAY_BUFFER
            )
        for name, a in attrs.items():
            a = np.ascontiguousarray(np.asarray(a)[src], dtype="<f4")
            kind = {(): "SCALAR", (1,): "SCALAR", (2, 2): "MAT2", (3, 3): "MAT3", (4, 4): "MAT4"}
            attributes["_" + name] = add(
                {
                    "componentType": 5126,
                    "type": kind.get(a.shape[1:], f"VEC{a.shape[1]}" if a.ndim == 2 else "SCALAR"),
                },
                a,
                _ARRAY_BUFFER,
            )
        prim["attributes"] = attributes
        if mat is not None:
            prim["material"] = mat
        primitives.append(prim)

    accessors: list[dict[str, Any]] = []
    views: list[dict[str, int]] = []
    chunks: list[memoryview | bytes] = []
    at = 0

    def view(data: np.ndarray | bytes, target: int | None) -> int:
        nonlocal at
        size = len(data) if isinstance(data, bytes) else data.nbytes
        v = {"buffer": 0, "byteOffset": at, "byteLength": size}
        if target is not None:
            v["target"] = target
        views.append(v)
        chunks.append(data if isinstance(data, bytes) else data.data)
        pad = -size % 4
        if pad:
            chunks.append(bytes(pad))
        at += size + pad
        return len(views) - 1

    for accessor, a, target in blobs:
        k = view(np.ascontiguousarray(a), target)
        accessors.append({"bufferView": k, "byteOffset": 0, "count": a.shape[0], **accessor})
    images = []
    embedded: dict[str, int] = {}  # a file several images name is embedded once
    for image in library["images"]:
        image = dict(image)
        uri = image.get("uri", "")
        data = materials.files.get(uri) if materials is not None else None
        mime = (image_mime_type(data) or image.get("mimeType")) if data is not None else None
        if data is not None and mime:
            image.pop("uri")
            if uri not in embedded:
                embedded[uri] = view(data, None)
            image["bufferView"] = embedded[uri]
            image["mimeType"] = mime
        images.append(image)
    tree: dict[str, Any] = {
        "asset": {"version": "2.0", "generator": "tessera"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "mesh", "mesh": 0}],
        "meshes": [{"name": "mesh", "primitives": primitives}],
    }
    for key in ("materials", "textures", "samplers"):
        if library[key]:
            tree[key] = library[key]
    if images:
        tree["images"] = images
    tree.update({"accessors": accessors, "bufferViews": views, "buffers": [{"byteLength": at}]})
    used_ext = sorted(_extensions({k: tree.get(k, []) for k in _MATERIAL_KEYS}))
    if used_ext:
        tree["extensionsUsed"] = used_ext
        required = [e for e in library["extensionsRequired"] if e in used_ext]
        if required:
            tree["extensionsRequired"] = required
    return container(tree, at, chunks)


def _texcoord_sets(corners: dict[str, np.ndarray], m: int) -> tuple[list[np.ndarray], set[int]]:
    """The corner attributes ``uv``, ``uv1``... as the list of ``TEXCOORD_n`` sets (glTF's
    are 2-vectors: a wider set gives its first two components, and :func:`~.writing.left_out`
    counts the rest), a set missing below the highest one filled with zeros (glTF numbers the
    sets without gaps); and the numbers of those fillers (a set the mesh has is written even
    when all zeros)."""
    found: dict[int, np.ndarray] = {}
    for name, a in corners.items():
        digits = name[2:]
        if name.startswith("uv") and (digits == "" or digits.isdigit()):
            found[int(digits or 0)] = np.asarray(a)[..., :2]
    if not found:
        return [], set()
    top = max(found) + 1
    filler = {k for k in range(top) if k not in found}
    return [found.get(k, np.zeros((m, 3, 2), np.float32)) for k in range(top)], filler


def _split(
    vid: np.ndarray, flat: dict[str, np.ndarray], faces: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The vertices of one primitive: one per distinct (vertex, corner values) row among its
    corners (``vid``: the corners' vertex indices; ``flat``: every corner's values), ordered by
    vertex. Returns each new vertex's source vertex, the corners' new vertex indices and the new
    vertices' corner values."""
    corner = (faces[:, None] * 3 + np.arange(3)).reshape(-1)  # rows of ``flat``
    if not flat:
        src, inverse = np.unique(vid, return_inverse=True)
        return src, inverse.reshape(-1), {}
    cols = [vid.astype(">i8").view(np.uint8).reshape(-1, 8)]  # big-endian: sorts by vertex
    for a in flat.values():
        rows = np.ascontiguousarray(a[corner])
        cols.append(rows.view(np.uint8).reshape(rows.shape[0], -1))
    key = np.ascontiguousarray(np.concatenate(cols, axis=1))
    key = key.view(np.dtype((np.void, key.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return vid[first], inverse.reshape(-1), {k: a[corner[first]] for k, a in flat.items()}


def _unit_normals(
    normals: np.ndarray, V: np.ndarray, F: np.ndarray, faces: np.ndarray, inverse: np.ndarray
) -> np.ndarray:
    """Unit normals for a primitive's vertices; a row of zero or non-finite length takes the
    normal of a face it is a corner of, or ``+z``."""
    unit = unit_rows(np.asarray(normals)).astype("<f4", copy=False)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(np.einsum("ij,ij->i", unit, unit) - 1.0) < 1e-3)
    if bad.any():
        unit = np.array(unit)
        corner_of = np.empty(unit.shape[0], np.int64)
        corner_of[inverse] = np.repeat(faces, 3)  # a face each vertex is a corner of
        tri = V[F[corner_of[bad]]].astype(np.float64)
        n = unit_rows(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]))
        n[~(np.abs(np.einsum("ij,ij->i", n, n) - 1.0) < 1e-3)] = (0.0, 0.0, 1.0)
        unit[bad] = n
    return unit


def _unit_tangents(tangents: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """glTF tangents for a primitive's vertices: ``xyz`` unitized (a row of zero length takes a
    unit vector perpendicular to the vertex's normal), ``w`` exactly +1 or -1."""
    from ..tangents import perpendicular

    xyz = unit_rows(np.asarray(tangents[:, :3]))
    bad = ~(np.abs(np.einsum("ij,ij->i", xyz, xyz) - 1.0) < 1e-3)
    if bad.any():
        xyz = np.array(xyz)
        xyz[bad] = perpendicular(normals[bad])
    w = np.where(np.asarray(tangents[:, 3]) < 0, -1.0, 1.0).astype("<f4")
    return np.ascontiguousarray(np.concatenate([xyz, w[:, None]], axis=1), dtype="<f4")


def _library(materials: Materials | None) -> dict[str, list[Any]]:
    """The materials' glTF arrays (a material for each name, at least), never None."""
    gltf = materials.gltf if materials is not None else {}
    out = {k: list(gltf.get(k, [])) for k in (*_MATERIAL_KEYS, "extensionsRequired")}
    if materials is not None:
        out["materials"] += [{"name": n} for n in materials.names[len(out["materials"]) :]]
    return out


def _texcoords_used(node: Any, key: str = "") -> set[int]:
    """The texture coordinate sets a material's textures read (``texCoord``, 0 when absent; a
    ``KHR_texture_transform`` may name another)."""
    out: set[int] = set()
    if isinstance(node, dict):
        if key.endswith("Texture") and "index" in node:
            sets = [node.get("texCoord", 0)]
            ext = node.get("extensions")
            t = ext.get("KHR_texture_transform") if isinstance(ext, dict) else None
            if isinstance(t, dict) and "texCoord" in t:
                sets.append(t["texCoord"])
            out |= {k for k in sets if isinstance(k, int) and not isinstance(k, bool)}
        for k, v in node.items():
            out |= _texcoords_used(v, str(k))
    elif isinstance(node, list):
        for v in node:
            out |= _texcoords_used(v, key)
    return out


def _extensions(node: Any) -> set[str]:
    """The names of the extensions used anywhere in a piece of glTF JSON."""
    out: set[str] = set()
    if isinstance(node, dict):
        ext = node.get("extensions")
        if isinstance(ext, dict):
            out |= {str(k) for k in ext}
        for v in node.values():
            out |= _extensions(v)
    elif isinstance(node, list):
        for v in node:
            out |= _extensions(v)
    return out


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
        if name not in ("POSITION", "NORMAL", "COLOR_0") and not name.startswith("_"):
            return False  # texture coordinates, tangents, skins: the general reader's
    if "material" in p or any(tree.get(k) for k in ("materials", "textures", "images")):
        return False  # materials and their textures: the general reader's
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


def container(tree: dict[str, Any], at: int, chunks: list[Any]) -> list[Any]:
    """The pieces of a GLB file: its header, the JSON chunk of ``tree`` and the BIN chunk made
    of ``chunks`` (``at`` bytes in all, a multiple of 4)."""
    text = json.dumps(tree, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    total = 12 + 8 + len(text) + 8 + at
    if total >= 2**32:
        raise FormatError(
            "mesh too large for a GLB file", code="format.too_large", bytes=total, limit=2**32 - 1
        )
    head = struct.pack("<5I", _MAGIC, 2, total, len(text), _JSON)
    return [head, text, struct.pack("<2I", at, _BIN), *chunks]
