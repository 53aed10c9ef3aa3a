"""Binary glTF (GLB): our writers, and a reader for the files shaped like the ones they write.

A mesh with corner attributes or materials is written by :func:`textured_glb_chunks`: one
primitive per material, each with its own vertices split where corners differ (texture
coordinates, normals, tangents, colours), the materials, textures, samplers and images carried
as they were read. All primitives are laid out at once (:func:`_layout`: one sort of every
corner), each attribute in one buffer view shared by the primitives' accessors (a stride of one
row), and the accessors' and primitives' JSON rendered as byte rows (:mod:`._gltf_text`), so
the time grows with the faces, not with the number of primitives.

Any other mesh is written by :func:`glb_chunks`, which lays out one JSON chunk and one BIN
chunk: indices as ``UNSIGNED_INT``, ``POSITION`` (with the ``min``/``max`` the specification
requires), ``NORMAL`` when the mesh has ``vertex_normals`` (unitized, as trimesh's exporter
did), ``COLOR_0`` as normalized RGBA bytes for ``vertex_colors``, and every other vertex
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
from ..graph import unique
from ._gltf_text import accessor_rows, primitive_rows

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
        # glTF wants unit normals: a zero row (an unused vertex's, a degenerate fan's) or a
        # non-finite one is repaired as the textured writer does
        faces = np.arange(F.shape[0])
        unit = _unit_normals(normals, V, np.asarray(F, np.int64), faces, np.asarray(F).ravel())
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
    library = _library(materials)
    sets, filler = _texcoord_sets(corners, F.shape[0], _sets_read(library, material, materials))
    # a set all zeros on one primitive was not there (the reader fills a primitive's missing
    # set with zeros), unless the whole mesh's set is zeros: then it is the mesh's own (a
    # texture of no area), and written
    somewhere = [bool(np.asarray(uv).any()) for uv in sets]

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

    accessors: list[bytes] = []  # JSON text, a block of accessors of one kind each
    n_accessors = 0
    views: list[dict[str, int]] = []
    chunks: list[memoryview | bytes] = []
    at = 0

    def view(data: np.ndarray | bytes, target: int | None, stride: int = 0) -> int:
        nonlocal at
        size = len(data) if isinstance(data, bytes) else data.nbytes
        v = {"buffer": 0, "byteOffset": at, "byteLength": size}
        if stride:
            v["byteStride"] = stride
        if target is not None:
            v["target"] = target
        views.append(v)
        chunks.append(data if isinstance(data, bytes) else data.data)
        pad = -size % 4
        if pad:
            chunks.append(bytes(pad))
        at += size + pad
        return len(views) - 1

    L = _layout(F, flat, material if materials is not None else None)
    G = L.mats.shape[0]
    src = L.src
    # each attribute's accessor per primitive (-1: the primitive has none), in writing order
    per_prim: dict[str, np.ndarray] = {}

    def block(k: int, offsets: np.ndarray, counts: np.ndarray, fixed: dict[str, Any],
              bounds: tuple[np.ndarray, np.ndarray] | None = None) -> int:  # fmt: skip
        """Accessors into view ``k``, one per row of ``offsets`` and ``counts``; the first's
        index."""
        nonlocal n_accessors
        lo, hi = bounds if bounds is not None else (None, None)
        accessors.append(accessor_rows(k, offsets, counts, fixed, lo, hi))
        n_accessors += int(offsets.shape[0])
        return n_accessors - int(offsets.shape[0])

    def rows_of(
        name: str,
        a: np.ndarray,
        fixed: dict[str, Any],
        prims: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """One view of the vertex rows ``a`` (of the primitives ``prims``, in order), and an
        accessor of each primitive's run of rows in it (the view's stride is a row)."""
        a = np.ascontiguousarray(a)
        row = a.nbytes // max(a.shape[0], 1)
        k = view(a, _ARRAY_BUFFER, row if row % 4 == 0 and 4 <= row <= 252 else 0)
        start = np.cumsum(np.r_[0, L.nverts[prims]])[:-1] * row
        first = block(k, start, L.nverts[prims], fixed, bounds)
        per_prim[name] = np.full(G, -1, np.int64)
        per_prim[name][prims] = first + np.arange(prims.size)

    everyone = np.arange(G)
    # indices: UNSIGNED_SHORT where a primitive's vertices fit, else UNSIGNED_INT; a view each
    short = L.nverts <= 0xFFFF
    index_at = np.zeros(G, np.int64)
    for fits, (component, dtype) in ((True, (5123, "<u2")), (False, (5125, "<u4"))):
        prims = np.flatnonzero(short == fits)
        if not prims.size:
            continue
        keep = short[L.corner_prim] == fits
        data = L.local[keep].astype(dtype)
        k = view(data, _ELEMENT_ARRAY_BUFFER)
        size = np.dtype(dtype).itemsize
        start = np.cumsum(np.r_[0, 3 * L.nfaces[prims]])[:-1] * size
        fixed = {"componentType": component, "type": "SCALAR"}
        index_at[prims] = block(k, start, 3 * L.nfaces[prims], fixed) + np.arange(prims.size)
    position = np.ascontiguousarray(V[src], dtype="<f4")
    bounds = _bounds(position, L.vstart, L.nverts)
    rows_of("POSITION", position, {"componentType": 5126, "type": "VEC3"}, everyone, bounds)
    rows = L.rows
    normals = rows.get("NORMAL")
    if normals is None and vertex_normals is not None:
        normals = np.asarray(vertex_normals)[src]
    if normals is not None:
        unit = _unit_normals(normals, V, F, L.faces, L.local + L.vstart[L.corner_prim])
        rows_of("NORMAL", unit, {"componentType": 5126, "type": "VEC3"}, everyone)
        if "TANGENT" in rows:
            tangents = _unit_tangents(rows["TANGENT"], unit)
            rows_of("TANGENT", tangents, {"componentType": 5126, "type": "VEC4"}, everyone)
    # the texture coordinate sets of each primitive: a set at the end it never had and its
    # material does not read is left out
    n_sets = np.full(G, len(sets), np.int64)
    for k in range(len(sets) - 1, -1, -1):
        uv = rows[f"TEXCOORD_{k}"]
        if k in filler:
            absent = np.ones(G, dtype=bool)
        elif somewhere[k]:
            absent = ~_any_per_run(uv.any(axis=1), L.vstart, L.nverts)
        else:
            absent = np.zeros(G, dtype=bool)
        for g in np.flatnonzero((n_sets == k + 1) & absent).tolist():
            mat = int(L.mats[g])
            if mat < 0 or k not in _texcoords_used(library["materials"][mat]):
                n_sets[g] = k
    for k in range(len(sets)):
        prims = np.flatnonzero(n_sets > k)
        if prims.size:
            uv = rows[f"TEXCOORD_{k}"][np.repeat(n_sets > k, L.nverts)]
            rows_of(f"TEXCOORD_{k}", uv, {"componentType": 5126, "type": "VEC2"}, prims)
    colors = rows.get("COLOR_0")
    if colors is None and vertex_colors is not None:
        colors = _rgba_bytes(np.asarray(vertex_colors)[src])
    if colors is not None:
        rows_of("COLOR_0", colors, {"componentType": 5121, "type": "VEC4", "normalized": True},
                everyone)  # fmt: skip
    kinds = {(): "SCALAR", (1,): "SCALAR", (2, 2): "MAT2", (3, 3): "MAT3", (4, 4): "MAT4"}
    for name, a in attrs.items():
        a = np.ascontiguousarray(np.asarray(a)[src], dtype="<f4")
        kind = kinds.get(a.shape[1:], f"VEC{a.shape[1]}" if a.ndim == 2 else "SCALAR")
        rows_of("_" + name, a, {"componentType": 5126, "type": kind}, everyone)
    primitives = primitive_rows(index_at, per_prim, L.mats, _TRIANGLES)
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
        "meshes": [{"name": "mesh", "primitives": _RAW + "primitives"}],
    }
    for key in ("materials", "textures", "samplers"):
        if library[key]:
            tree[key] = library[key]
    if images:
        tree["images"] = images
    accessors_at = _RAW + "accessors"
    tree.update({"accessors": accessors_at, "bufferViews": views, "buffers": [{"byteLength": at}]})
    used_ext = sorted(_extensions({k: tree.get(k, []) for k in _MATERIAL_KEYS}))
    if used_ext:
        tree["extensionsUsed"] = used_ext
        required = [e for e in library["extensionsRequired"] if e in used_ext]
        if required:
            tree["extensionsRequired"] = required
    raw = {
        accessors_at: b"[" + b",".join(a for a in accessors if a) + b"]",
        _RAW + "primitives": b"[" + primitives + b"]",
    }
    return container(tree, at, chunks, raw)


def _texcoord_sets(
    corners: dict[str, np.ndarray], m: int, read: int = 0
) -> tuple[list[np.ndarray], set[int]]:
    """The corner attributes ``uv``, ``uv1``... as the list of ``TEXCOORD_n`` sets (glTF's
    are 2-vectors: a wider set gives its first two components, and :func:`~.writing.left_out`
    counts the rest), a set missing below the highest one, or below ``read`` (the sets the
    faces' materials read), filled with zeros (glTF numbers the sets without gaps, and wants
    every set a primitive's material reads); and the numbers of those fillers (a set the mesh
    has is written even when all zeros)."""
    found: dict[int, np.ndarray] = {}
    for name, a in corners.items():
        digits = name[2:]
        if name.startswith("uv") and (digits == "" or digits.isdigit()):
            found[int(digits or 0)] = np.asarray(a)[..., :2]
    top = max(max(found, default=-1) + 1, read)
    if not top:
        return [], set()
    filler = {k for k in range(top) if k not in found}
    return [found.get(k, np.zeros((m, 3, 2), np.float32)) for k in range(top)], filler


class _Layout(NamedTuple):
    """The primitives of a textured GLB, all at once: one per material (``mats``, -1 for
    glTF's default), each with its faces (``faces``: the mesh's faces, by primitive) and its
    own vertices, one per distinct (vertex, corner values) among its corners, ordered by
    vertex: ``src`` each vertex's mesh vertex, ``rows`` its corner values, ``vstart`` and
    ``nverts`` each primitive's run of them; ``local`` each corner's vertex within its
    primitive, ``corner_prim`` each corner's primitive, ``nfaces`` each primitive's count."""

    mats: np.ndarray
    faces: np.ndarray
    nfaces: np.ndarray
    src: np.ndarray
    rows: dict[str, np.ndarray]
    vstart: np.ndarray
    nverts: np.ndarray
    local: np.ndarray
    corner_prim: np.ndarray


def _layout(F: np.ndarray, flat: dict[str, np.ndarray], material: np.ndarray | None) -> _Layout:
    """:class:`_Layout` of the faces ``F`` grouped by ``material`` (None: one primitive), with
    one sort of every corner by (primitive, vertex, corner values): a primitive's vertices come
    out as a sort of its corners alone would give them, and the work does not grow with the
    number of primitives (200 000 one-face materials took 17 s a primitive at a time)."""
    m = F.shape[0]
    if material is None:
        faces = np.arange(m)
        mats = np.array([-1], np.int64)
        face_prim = np.zeros(m, np.int64)
    else:
        code = np.asarray(material).astype(np.int64)
        faces = np.argsort(code, kind="stable")
        mats, face_prim = np.unique(code[faces], return_inverse=True)
        face_prim = face_prim.ravel()
    G = mats.shape[0]
    nfaces = np.bincount(face_prim, minlength=G)
    corner = (faces[:, None] * 3 + np.arange(3)).reshape(-1)  # rows of ``flat``
    vid = F[faces].reshape(-1).astype(np.int64)
    corner_prim = np.repeat(face_prim, 3)
    # big-endian: the bytes sort by primitive, then by vertex, then by the values
    cols = [
        corner_prim.astype(">i8").view(np.uint8).reshape(-1, 8),
        vid.astype(">i8").view(np.uint8).reshape(-1, 8),
    ]
    for a in flat.values():
        r = np.ascontiguousarray(a[corner])
        cols.append(r.view(np.uint8).reshape(r.shape[0], -1))
    key = np.ascontiguousarray(np.concatenate(cols, axis=1))
    key = key.view(np.dtype((np.void, key.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    nverts = np.bincount(corner_prim[first], minlength=G)
    vstart = np.cumsum(np.r_[0, nverts])[:-1]
    local = inverse - vstart[corner_prim]
    rows = {k: a[corner[first]] for k, a in flat.items()}
    return _Layout(mats, faces, nfaces, vid[first], rows, vstart, nverts, local, corner_prim)


def _bounds(
    position: np.ndarray, start: np.ndarray, count: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's ``min`` and ``max`` of ``position`` ``(runs, 3)`` (zeros for an empty run)."""
    lo = np.zeros((start.shape[0], 3))
    hi = np.zeros((start.shape[0], 3))
    full = count > 0
    if full.any():
        lo[full] = np.minimum.reduceat(position, start[full], axis=0)
        hi[full] = np.maximum.reduceat(position, start[full], axis=0)
    return lo, hi


def _any_per_run(flags: np.ndarray, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Whether any of ``flags`` is set in each run (False for an empty run)."""
    out = np.zeros(start.shape[0], dtype=bool)
    full = count > 0
    if full.any():
        out[full] = np.logical_or.reduceat(flags, start[full])
    return out


def _unit_normals(
    normals: np.ndarray, V: np.ndarray, F: np.ndarray, faces: np.ndarray, inverse: np.ndarray
) -> np.ndarray:
    """Unit normals for a primitive's vertices (``inverse``: the vertex of each corner of the
    faces ``faces``); a row of zero or non-finite length takes the normal of a face it is a
    corner of, or ``+z`` (no such face, or one of no area)."""
    unit = unit_rows(np.asarray(normals)).astype("<f4", copy=False)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(np.einsum("ij,ij->i", unit, unit) - 1.0) < 1e-3)
    if bad.any():
        unit = np.array(unit)
        corner_of = np.full(unit.shape[0], -1, np.int64)
        corner_of[inverse] = np.repeat(faces, 3)  # a face each vertex is a corner of
        face = corner_of[bad]
        tri = V[F[np.maximum(face, 0)]].astype(np.float64)
        n = unit_rows(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]))
        n[face < 0] = 0.0  # a vertex of no face (unused): +z below
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


#: texture coordinate sets a material may read that the writer fills with zeros where the
#: mesh has none (a larger ``texCoord`` is left as the file had it)
_MAX_FILLED_SETS = 8


def _sets_read(
    library: dict[str, list[Any]], material: np.ndarray | None, materials: Materials | None
) -> int:
    """How many texture coordinate sets the materials of the faces read (one more than the
    highest ``texCoord``, at most :data:`_MAX_FILLED_SETS`; 0 for glTF's default material):
    a mesh whose corners lost their texture coordinates (parts concatenated, some without)
    still gives each textured primitive the sets its material reads."""
    if materials is None or material is None or not np.asarray(material).size:
        return 0
    mats = library["materials"]
    used = [mats[i] for i in unique(np, np.asarray(material)).tolist()]  # checked: in range
    if "Texture" not in json.dumps(used):  # one call, not one walk per material
        return 0
    read = {k for m in used for k in _texcoords_used(m)}
    return min(max(read, default=-1) + 1, _MAX_FILLED_SETS)


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
    if isinstance(node, dict | list) and '"extensions"' not in json.dumps(node):
        return set()  # one pass in C: a library of many plain materials has none
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
    non-finite floats are 0, RGB gets an opaque alpha. 16-bit channels (PLY ``ushort``) are
    0..65535, scaled; other integers are clipped to 0..255 (a cast wrapped 300 to 44)."""
    c = np.asarray(colors)
    if c.dtype.kind == "f":
        c = np.clip(np.where(np.isfinite(c), c, 0.0) * 255, 0.0, 255).round()
    elif c.dtype == np.uint16:
        c = (c.astype(np.float64) * (255 / 65535)).round()
    elif c.dtype != np.uint8:
        c = np.clip(c, 0, 255)
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


#: the start of a placeholder value in a tree, which :func:`container` replaces with JSON text
_RAW = "\x00raw:"


def container(
    tree: dict[str, Any], at: int, chunks: list[Any], raw: dict[str, bytes] | None = None
) -> list[Any]:
    """The pieces of a GLB file: its header, the JSON chunk of ``tree`` and the BIN chunk made
    of ``chunks`` (``at`` bytes in all, a multiple of 4). ``raw``: JSON text for each
    placeholder (a string starting with :data:`_RAW`) the tree holds as a value (accessors and
    primitives rendered by :mod:`._gltf_text`)."""
    pieces = [json.dumps(tree, separators=(",", ":")).encode()]
    for placeholder, value in (raw or {}).items():  # the text put in, never copied whole
        key = json.dumps(placeholder).encode()
        i = next(i for i, p in enumerate(pieces) if key in p)
        before, _, after = pieces[i].partition(key)
        pieces[i : i + 1] = [before, value, after]
    length = sum(len(p) for p in pieces)
    pieces.append(b" " * (-length % 4))
    length += len(pieces[-1])
    total = 12 + 8 + length + 8 + at
    if total >= 2**32:
        raise FormatError(
            "mesh too large for a GLB file", code="format.too_large", bytes=total, limit=2**32 - 1
        )
    head = struct.pack("<5I", _MAGIC, 2, total, length, _JSON)
    return [head, *pieces, struct.pack("<2I", at, _BIN), *chunks]
