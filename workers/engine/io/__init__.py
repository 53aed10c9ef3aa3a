"""Reading and writing mesh files.

Inputs: OBJ, PLY (ASCII and binary), STL (ASCII and binary), OFF, GLB/glTF, NPZ (our own arrays),
and any of them inside a ``.zip`` or ``.gz``. The format is recognised from the bytes; a file name
whose extension says otherwise is rejected rather than guessed around. Read by us: OBJ
(``obj.py``), PLY in ASCII and the common binary shapes (``ply.py``), STL (``stl.py``), plain
OFF (``off.py``), glTF (``glb.py`` for the files shaped like ours, ``gltf.py`` for every scene,
compressed ones included), NPZ by NumPy; trimesh reads the rarer PLY and OFF shapes after our
own header checks. Polygons are split into triangles by ear clipping where a fan would be wrong
(``polygons.triangulate``). Text in UTF-16 or with a byte order mark is re-encoded first.

Outputs, all written by us: binary PLY (attributes as properties), OBJ (vertex normals as ``vn``),
OFF (no attributes), binary STL, GLB (vertex normals as ``NORMAL``, colours as ``COLOR_0``, other
vertex attributes as ``_name`` accessors), NPZ (every array). OBJ, PLY and OFF write the quads of
Catmull-Clark and the polygons of the dual mesh as polygons, rebuilt from the triangles' ``quad_id``
or ``polygon_id`` (``polygons.py``); the other formats, and these when asked to triangulate,
write the triangles the engine holds.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import posixpath
import re
import warnings
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import FormatError, MeshError, SpecError
from ..mesh import TriMesh
from . import glb, gltf, ply, stl, volumes
from .archive import check_member_count, gunzip, unzip_members
from .obj import obj_dropped, read_obj, write_obj
from .off import read_off, without_comments, write_off
from .polygons import GROUP_ATTRIBUTES, Polygons, group_polygons, triangles_as_polygons
from .stored import named_arrays, split_named
from .volumes import RawLayout as RawLayout

logger = logging.getLogger(__name__)

MESH_FORMATS = ("obj", "ply", "stl", "off", "glb", "gltf", "npz")
OUTPUT_FORMATS = ("ply", "obj", "off", "stl", "glb", "npz")
#: output formats that hold polygons (the others are written as triangles)
POLYGON_FORMATS = ("ply", "obj", "off")
#: which attributes each output format can hold
OUTPUT_HOLDS: dict[str, str] = {
    "ply": "every vertex and face attribute but vertex attributes named face_normals or "
    "face_colors and face attributes named vertex_normals or vertex_colors",
    "npz": "every vertex and face attribute",
    "glb": "vertex attributes",
    "obj": "vertex_normals only",
    "off": "no attributes",
    "stl": "no attributes",
}
DEFAULT_MAX_EXPANDED = 2 << 30
#: archives inside archives: a ``.obj.gz`` or ``.npz`` in a zip is fine, deeper nesting is refused
#: (a zip or gzip quine would otherwise recurse for ever, each level inflating to the limit)
MAX_ARCHIVE_DEPTH = 2
MAX_ARCHIVE_MEMBERS = 1000


def format_can_hold(fmt: str, name: str, element: str) -> bool:
    if fmt == "ply":  # a face element's nx ny nz / red green blue read as face_normals/colors
        renamed = ply.FACE_RENAMES if element == "face" else ply.FACE_RENAMES.values()
        return name not in renamed
    if fmt == "npz":
        return True
    if fmt == "glb":
        return element == "vertex"
    if fmt == "obj":
        return name == "vertex_normals" and element == "vertex"
    return False


# ----------------------------------------------------------------------------- detection
def sniff(data: bytes) -> str | None:
    """The format the bytes are in, or None when they match none we read."""
    head = data[:4096]
    if head[:2] == b"\x1f\x8b":
        return "gz"
    if head[:6] == b"\x93NUMPY":
        return "npy"  # a scalar volume for marching_cubes, not a mesh
    if volumes.is_nrrd(head):
        return "nrrd"  # a volume too
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"  # also NPZ: told apart by its members
    if head[:3] == b"ply":
        return "ply"
    if head[:4] == b"glTF":
        return "glb"
    if len(data) >= 84:
        n = int.from_bytes(data[80:84], "little")
        if 84 + 50 * n == len(data):
            return "stl"
    stripped = head.lstrip()
    if stripped[:5].lower() == b"solid":
        return "stl"
    header = _LEADING_COMMENTS.sub(b"", stripped).lstrip()  # OFF may open with comment lines
    if header[:3] in (b"OFF", b"COF", b"NOF", b"STO", b"4OF") or header[:4] == b"CNOF":
        return "off"
    if stripped[:1] == b"{" and b'"asset"' in data[:65536]:
        return "gltf"
    if b"\x00" not in head and (head.startswith(b"#") or _OBJ_LINE.search(data[: 1 << 20])):
        return "obj"
    return None


#: comment lines before a header
_LEADING_COMMENTS = re.compile(rb"\A(?:[ \t]*#[^\n]*\n\s*)+")
#: a line of OBJ geometry (``v``, ``vt``, ``vn`` or ``f`` and a blank), indented or not, after
#: any line ending (``\r`` alone too)
_OBJ_LINE = re.compile(rb"(?:\A|[\r\n])[ \t]*(?:v|vt|vn|f)[ \t]")


def _ext(filename: str) -> str:
    return posixpath.splitext(filename.lower())[1].lstrip(".")


def load_bytes(
    data: bytes,
    filename: str = "",
    *,
    dtype: str = "float32",
    max_expanded: int = DEFAULT_MAX_EXPANDED,
    raw: RawLayout | None = None,
    _depth: int = 0,
) -> TriMesh:
    """Parse a mesh file held in memory. Raises :class:`FormatError` or :class:`MeshError`.

    Volumes (``.npy``, NRRD, and ``.raw`` laid out as ``raw`` says) come back as the faceless
    mesh that carries a volume to ``marching_cubes`` (:mod:`.volumes`)."""
    if not data:
        raise MeshError("file is empty", code="mesh.empty")
    data = _as_utf8(data)
    kind = sniff(data)
    ext = _ext(filename)
    if ext == "raw" and kind not in ("gz", "zip"):
        mesh = volumes.read_raw(data, raw)
        mesh.source = filename or None
        return mesh
    if kind in ("gz", "zip"):
        if _depth >= MAX_ARCHIVE_DEPTH:
            raise FormatError(
                "archives nested too deeply", code="format.archive_nested", limit=MAX_ARCHIVE_DEPTH
            )
        if kind == "gz":
            inner = filename[:-3] if filename.lower().endswith(".gz") else ""
            mesh = load_bytes(
                gunzip(data, max_expanded),
                inner,
                dtype=dtype,
                max_expanded=max_expanded,
                raw=raw,
                _depth=_depth + 1,
            )
        else:
            mesh = _load_zip(data, ext, dtype=dtype, max_expanded=max_expanded, depth=_depth + 1)
        mesh.source = filename or None  # the name the caller gave, not the member's
        return mesh
    if kind == "npy":
        if ext not in ("npy", ""):
            raise FormatError(
                f"file named .{ext} holds a NumPy array",
                code="format.mismatch",
                extension=ext,
                detected="npy",
            )
        mesh = read_volume(data)
        mesh.source = filename or None
        return mesh
    if kind == "nrrd":
        if ext not in ("nrrd", ""):
            raise FormatError(
                f"file named .{ext} holds an NRRD volume",
                code="format.mismatch",
                extension=ext,
                detected="nrrd",
            )
        mesh = volumes.read_nrrd(data, max_expanded)
        mesh.source = filename or None
        return mesh
    if kind is None and ext == "stl":
        kind = "stl"  # binary STL has no magic: its size check below decides
    if kind is None:
        if ext in MESH_FORMATS:
            raise FormatError(
                f"file is not a valid {ext.upper()} file", code="format.mismatch", extension=ext
            )
        raise FormatError("unrecognised file format", code="format.unsupported", extension=ext)
    if ext and ext != kind:
        if ext in MESH_FORMATS or ext in ("gz", "zip"):
            raise FormatError(
                f"file named .{ext} holds {kind.upper()} data",
                code="format.mismatch",
                extension=ext,
                detected=kind,
            )
        if ext not in ("bin", "dat", "mesh", ""):
            raise FormatError(
                "unsupported file extension", code="format.unsupported", extension=ext
            )
    mesh = _parse(data, kind, dtype=dtype)
    mesh.source = filename or None
    return mesh


_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")
_TEXT_FORMATS = ("obj", "ply", "off", "stl", "gltf")


def _as_utf8(data: bytes) -> bytes:
    """Text files as the readers take them: a UTF-8 byte order mark dropped, UTF-16 text (as some
    Windows tools save OBJ) re-encoded as UTF-8 when it holds one of the text formats. Binary
    files are returned as they are."""
    if data.startswith(b"\xef\xbb\xbf") and sniff(data[3:]) in _TEXT_FORMATS:
        return data[3:]
    if data[:2] in _UTF16_MARKS:
        try:
            text = data.decode("utf-16").encode("utf-8")
        except UnicodeError:
            return data
        if sniff(text) in _TEXT_FORMATS:
            return text
    return data


def read_volume(data: bytes) -> TriMesh:
    """A scalar volume from ``.npy`` bytes (see :mod:`.volumes`)."""
    return volumes.read_npy(data)


def _load_zip(data: bytes, ext: str, *, dtype: str, max_expanded: int, depth: int) -> TriMesh:
    check_member_count(data, MAX_ARCHIVE_MEMBERS)
    names_only = zipfile.ZipFile(io.BytesIO(data)).namelist() if _is_zip(data) else []
    if ext == "npz" or (names_only and all(n.endswith(".npy") for n in names_only)):
        return _read_npz(data, dtype=dtype, max_expanded=max_expanded)
    wanted = {"." + f for f in MESH_FORMATS} | {".gz", ".zip"}
    members = unzip_members(data, wanted, max_expanded, MAX_ARCHIVE_MEMBERS)
    meshes = [n for n in members if posixpath.splitext(n)[1].lower() in wanted]
    if len(meshes) > 1:
        raise FormatError(
            "archive holds more than one mesh file",
            code="format.archive_multiple_meshes",
            members=sorted(meshes)[:20],
        )
    name = meshes[0]
    if name.lower().endswith(".gltf"):
        return _parse(members[name], "gltf", dtype=dtype, resources=members, base=name)
    mesh = load_bytes(members[name], name, dtype=dtype, max_expanded=max_expanded, _depth=depth)
    others = [n for n in names_only if not n.endswith("/") and n != name]
    if others:  # an OBJ's .mtl and textures, say: not read yet
        mesh.dropped = {**mesh.dropped, "other files in the archive": len(others)}
    return mesh


def _is_zip(data: bytes) -> bool:
    try:
        zipfile.ZipFile(io.BytesIO(data))
        return True
    except Exception:  # any malformed central directory: not a zip we read
        return False


def _ascii_stl(data: bytes) -> bool:
    """ASCII STL starts with ``solid`` and is text. Many exporters also begin the free-form 80-byte
    header of a binary STL with ``solid``; the binary face count that follows it has a zero high
    byte for any file under 800 MB, so a NUL in the first block marks binary."""
    return data.lstrip()[:5].lower() == b"solid" and b"\x00" not in data[:4096]


def _check_counts(data: bytes, kind: str, available: int = 0) -> None:
    if kind == "ply":
        ply.check_header(data)
    elif kind == "stl" and not _ascii_stl(data):
        n = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
        if n < 0 or 84 + 50 * n != len(data):
            raise FormatError(
                "binary STL face count does not match the file size",
                code="format.count_exceeds_size",
                declared=n,
                file_bytes=len(data),
            )
    elif kind == "off":
        toks = []
        for line in data[:65536].splitlines():
            line = line.split(b"#", 1)[0].strip()
            if line:
                toks += line.split()
            if len(toks) >= 4:
                break
        try:
            nv, nf = int(toks[1]), int(toks[2])
        except (IndexError, ValueError):
            raise FormatError("bad OFF header", code="format.off_bad_header") from None
        if nv < 0 or nf < 0 or 6 * nv + 8 * nf > len(data):
            raise FormatError(
                "header declares more data than the file holds",
                code="format.count_exceeds_size",
                vertices=nv,
                faces=nf,
            )
        # every vertex has at least three numbers and every face at least four (its size and
        # three corners): fewer words than that is a file that ends early
        words = len(without_comments(data).split())
        if words < 4 + 3 * nv + 4 * nf:
            raise FormatError(
                f"the file ends before the {nv} vertices and {nf} faces its header declares",
                code="format.truncated",
                vertices=nv,
                faces=nf,
                words=words,
            )


def _parse(
    data: bytes, kind: str, *, dtype: str, resources: dict[str, bytes] | None = None, base: str = ""
) -> TriMesh:
    _check_counts(data, kind, sum(len(r) for r in (resources or {}).values()))
    if kind == "obj":
        V, F, N = read_obj(data)
        va_obj = {"vertex_normals": N} if N is not None else None
        mesh = TriMesh.from_arrays(V, F, dtype=dtype, vertex_attrs=va_obj)
        mesh.dropped = obj_dropped(data, has_normals=N is not None)
        return mesh
    if kind == "stl":
        V, F = stl.read_binary(data) if not _ascii_stl(data) else stl.read_ascii(data)
        return TriMesh.from_arrays(V, F, dtype=dtype)
    if kind == "ply":
        p = ply.read_binary(data) or ply.read_ascii(data)
        if p is not None:
            return TriMesh.from_arrays(
                p.V, p.F, dtype=dtype, vertex_attrs=p.vertex_attrs, face_attrs=p.face_attrs
            )
    if kind == "off":
        data = without_comments(data)  # for our reader and trimesh's (which loses faces to them)
        o = read_off(data)
        if o is not None:
            return TriMesh.from_arrays(o[0], o[1], dtype=dtype)
    if kind == "glb":
        g = glb.read_simple(data)
        if g is not None:
            mesh = TriMesh.from_arrays(g.V, g.F, dtype=dtype, vertex_attrs=g.vertex_attrs)
            mesh.dropped = gltf.dropped_by_simple(data)
            return mesh
    if kind in ("glb", "gltf"):
        s = gltf.read_scene(data, resources, base)
        mesh = TriMesh.from_arrays(s.V, s.F, dtype=dtype, vertex_attrs=s.vertex_attrs)
        mesh.dropped = s.dropped
        return mesh
    return _parse_trimesh(data, kind, dtype=dtype, resources=resources, base=base)


def _parse_trimesh(
    data: bytes, kind: str, *, dtype: str, resources: dict[str, bytes] | None = None, base: str = ""
) -> TriMesh:
    """Read through trimesh: the shapes of PLY and OFF our own readers leave to it (binary PLY
    with other elements or lists, OFF variants with colours or normals)."""
    import trimesh  # heavy import, kept off the API's start-up path

    kwargs: dict[str, Any] = {"process": False, "skip_materials": True}
    if resources is not None:
        folder = posixpath.dirname(base)
        kwargs["resolver"] = {
            posixpath.relpath(k, folder) if folder else k: v for k, v in resources.items()
        }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scene = trimesh.load_scene(io.BytesIO(data), file_type=kind, **kwargs)
            tm = scene.to_mesh()
    except (MeshError, FormatError):
        raise
    except Exception as exc:  # trimesh raises many types on malformed input
        raise FormatError(
            f"could not read the file as {kind.upper()}",
            code="format.parse_error",
            reason=_reason(exc),
        ) from None
    V = np.asarray(getattr(tm, "vertices", np.zeros((0, 3))), dtype=np.float64)
    if V.shape[0] == 0:  # to_mesh keeps meshes only: say so when the file held just points
        points = sum(len(getattr(g, "vertices", ())) for g in scene.geometry.values())
        if points:
            raise MeshError("mesh has no faces", code="mesh.no_faces", n_vertices=points)
    F = np.asarray(getattr(tm, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    va: dict[str, Any] = {}
    fa: dict[str, Any] = {}
    raw = getattr(tm, "metadata", {}).get("_ply_raw")
    if raw is not None:
        # a property no longer lines up when trimesh has triangulated polygons (one value per
        # polygon, several triangles each): the mesh is read, such properties are left out
        va = {k: v for k, v in ply.extra_vertex_properties(raw).items() if v.shape[0] == V.shape[0]}
        fa = {k: v for k, v in ply.extra_face_properties(raw).items() if v.shape[0] == F.shape[0]}
    mesh = TriMesh.from_arrays(V, F, dtype=dtype, vertex_attrs=va, face_attrs=fa)
    return mesh


#: exceptions that say a reader met a structure it did not expect: their text (a missing key, a
#: variable name) means nothing to the person who sent the file
_STRUCTURE_ERRORS = (KeyError, IndexError, TypeError, AttributeError, NameError, AssertionError)


def _reason(exc: Exception) -> str:
    """Plain words for a reader's exception: its own message when it has one meant for people,
    never a Python exception's name or a bare key."""
    logger.info("reader raised %s: %s", type(exc).__name__, exc)
    text = str(exc).strip()
    if isinstance(exc, _STRUCTURE_ERRORS) or not text:
        return (
            "the file's structure is not what the format requires "
            "(a part is missing or of the wrong kind)"
        )
    return text[:300]


def _read_npz(data: bytes, *, dtype: str, max_expanded: int) -> TriMesh:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        if sum(i.file_size for i in zf.infolist()) > max_expanded:
            raise FormatError(
                "archive expands beyond the limit",
                code="format.archive_too_large",
                limit=max_expanded,
            )
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            # members that are not .npy arrays (a README, say) come back as bytes: ignored
            arrays = {k: a for k in z.files if isinstance(a := z[k], np.ndarray)}
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError(
            "could not read the NPZ file",
            code="format.parse_error",
            reason=_reason(exc),
        ) from None
    if "V" not in arrays or "F" not in arrays:
        raise FormatError(
            "NPZ needs arrays V and F", code="format.npz_missing_arrays", arrays=sorted(arrays)[:20]
        )
    for k, v in arrays.items():
        if v.dtype.kind not in "biuf":  # strings, bytes, datetimes: not mesh data
            raise MeshError(
                "array is not numeric", code="mesh.bad_dtype", array=k[:100], dtype=str(v.dtype)
            )
    va, fa = split_named(arrays)
    F = arrays["F"]
    if F.ndim != 2 or F.shape[1] != 3:
        raise MeshError("faces must be (m, 3)", code="mesh.bad_shape", shape=list(F.shape))
    return TriMesh.from_arrays(arrays["V"], F, dtype=dtype, vertex_attrs=va, face_attrs=fa)


def load_path(path: str | os.PathLike[str], *, dtype: str = "float32") -> TriMesh:
    with open(path, "rb") as fh:
        data = fh.read()
    return load_bytes(data, os.fspath(path), dtype=dtype)


# ----------------------------------------------------------------------------- writing
def select_attributes(
    mesh: TriMesh, names: Iterable[str] | None, host: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Host copies of the attributes to write: all of them (``names is None``) or those named;
    with ``host=False`` the arrays where they are."""
    from ..backend import to_numpy

    conv = to_numpy if host else _same

    if names is None:
        return (
            {k: conv(v) for k, v in mesh.vertex_attrs.items()},
            {k: conv(v) for k, v in mesh.face_attrs.items()},
        )
    va, fa = {}, {}
    for n in names:
        if n in mesh.vertex_attrs:
            va[n] = conv(mesh.vertex_attrs[n])
        elif n in mesh.face_attrs:
            fa[n] = conv(mesh.face_attrs[n])
        else:
            raise SpecError(
                "requested attribute not on the mesh",
                code="spec.unknown_attribute",
                attribute=n,
                available=sorted([*mesh.vertex_attrs, *mesh.face_attrs]),
            )
    return va, fa


def _same(a: Any) -> Any:
    return a


def serialize(
    mesh: TriMesh, fmt: str, attributes: Iterable[str] | None = None, polygons: bool = True
) -> bytes:
    """The mesh as file bytes in ``fmt`` (one of :data:`OUTPUT_FORMATS`); see
    :func:`serialize_chunks`."""
    return b"".join(serialize_chunks(mesh, fmt, attributes, polygons))


def serialize_chunks(
    mesh: TriMesh, fmt: str, attributes: Iterable[str] | None = None, polygons: bool = True
) -> Iterable[bytes | memoryview]:
    """The mesh's file in ``fmt`` (one of :data:`OUTPUT_FORMATS`) as pieces to write one after
    the other (binary PLY, STL and GLB: about a megabyte each, or the arrays' own memory, so a
    large file is never assembled in memory; each piece stays valid after the next is made).
    Every refusal (format, attributes) is raised before this returns. With ``polygons``, the
    formats of :data:`POLYGON_FORMATS` write the polygons the triangles' ``quad_id`` or
    ``polygon_id`` describe (see :func:`mesh_polygons`); otherwise, and for the other formats,
    the triangles."""
    from ..backend import to_numpy

    if fmt not in OUTPUT_FORMATS:
        raise SpecError(
            "unsupported output format",
            code="spec.unknown_format",
            format=fmt,
            supported=list(OUTPUT_FORMATS),
        )
    explicit = attributes is not None
    # binary PLY of triangles on the GPU: the rows are packed there and only bytes come back
    on_device = (
        fmt == "ply"
        and mesh.backend == "cupy"
        and not (polygons and any(g in mesh.face_attrs for g in GROUP_ATTRIBUTES))
    )
    va, fa = select_attributes(mesh, attributes, host=not on_device)
    if not explicit:  # everything the format holds (PLY: not what it would read back renamed)
        va = {k: v for k, v in va.items() if format_can_hold(fmt, k, "vertex")}
        fa = {k: v for k, v in fa.items() if format_can_hold(fmt, k, "face")}
    if explicit:
        for n, element in [(k, "vertex") for k in va] + [(k, "face") for k in fa]:
            if not format_can_hold(fmt, n, element):
                raise SpecError(
                    "output format cannot hold this attribute",
                    code="spec.attribute_not_supported",
                    format=fmt,
                    attribute=n,
                    holds=OUTPUT_HOLDS[fmt],
                )
    if on_device:
        return ply.ply_chunks(mesh.V, mesh.F, va, fa)
    V, F = to_numpy(mesh.V), to_numpy(mesh.F)
    poly = mesh_polygons(mesh) if polygons and fmt in POLYGON_FORMATS else None
    if poly is not None:
        V = V[poly.vertices]
        va = {k: v[poly.vertices] for k, v in va.items()}
        fa = {k: v[poly.first_face] for k, v in fa.items()}
        if fmt == "off":
            return [write_off(V, poly.corners, poly.offsets)]
        if fmt == "obj":
            return [write_obj(V, poly.corners, va.get("vertex_normals"), offsets=poly.offsets)]
        return ply.ply_chunks(V, poly.corners, va, fa, offsets=poly.offsets)
    if fmt == "off":
        tri = triangles_as_polygons(F, V.shape[0])
        return [write_off(V, tri.corners, tri.offsets)]
    if fmt == "ply":
        return ply.ply_chunks(V, F, va, fa)
    if fmt == "obj":
        return [write_obj(V, F, va.get("vertex_normals"))]
    if fmt == "npz":
        buf = io.BytesIO()
        np.savez(buf, **named_arrays(V, F, va, fa))
        return [buf.getvalue()]
    if fmt == "stl":
        return stl.stl_chunks(V, F)
    # glb
    normals = va.pop("vertex_normals", None)
    colors = va.pop("vertex_colors", None)
    for k, v in [("vertex_normals", normals), ("vertex_colors", colors), *va.items()]:
        if v is not None and not _gltf_accessor_shape(k, v):
            raise FormatError(
                "attribute cannot be written as a glTF accessor",
                code="format.unsupported_attribute",
                attribute=k,
                shape=list(v.shape),
            )
    return glb.glb_chunks(V, F, normals, colors, va)


def mesh_polygons(mesh: TriMesh) -> Polygons | None:
    """The polygons the mesh's triangles form according to its face attribute ``quad_id`` (from
    ``subdivide`` with ``catmull_clark``) or else ``polygon_id`` (from ``dual_mesh``), or None:
    no such attribute, or some group is not one triangulated simple polygon, and then the whole
    mesh is written as triangles (see :mod:`.polygons`)."""
    from ..backend import to_numpy

    for name in GROUP_ATTRIBUTES:
        if name in mesh.face_attrs:
            group = to_numpy(mesh.face_attrs[name])
            return group_polygons(to_numpy(mesh.F), group, mesh.n_vertices)
    return None


def _gltf_accessor_shape(name: str, a: np.ndarray) -> bool:
    """Whether glTF has an accessor type for per-vertex values of this shape."""
    if name == "vertex_normals":
        return a.shape[1:] == (3,)
    if name == "vertex_colors":
        return a.shape[1:] in ((3,), (4,))
    return a.shape[1:] in ((), (1,), (2,), (3,), (4,), (2, 2), (3, 3), (4, 4))


def save_path(
    mesh: TriMesh,
    path: str | os.PathLike[str],
    *,
    attributes: Iterable[str] | None = None,
    polygons: bool = True,
) -> None:
    fmt = _ext(os.fspath(path))
    chunks = serialize_chunks(mesh, fmt, attributes, polygons=polygons)
    try:
        with open(path, "wb") as fh:
            fh.writelines(chunks)
    except BaseException:
        with contextlib.suppress(OSError):  # no half-written file left behind
            os.unlink(path)
        raise
