"""Reading mesh files: :func:`load_bytes` recognises the format from the bytes
(:func:`.formats.sniff`), refuses a file name whose extension says otherwise, opens archives
(zip, gzip) and hands the bytes to the format's reader (:data:`_READERS`, one per format that
:data:`.formats.FORMATS` declares read)."""

from __future__ import annotations

import io
import logging
import os
import posixpath
import warnings
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import FormatError, MeshError
from ..mesh import TriMesh
from . import glb, gltf, mtl, ply, stl, volumes
from ._text import spaces
from .archive import check_member_count, gunzip, unzip_members
from .formats import MESH_FORMATS, sniff
from .obj import obj_dropped, read_obj_mesh
from .off import read_off, without_comments
from .stored import split_named
from .volumes import RawLayout

logger = logging.getLogger(__name__)

DEFAULT_MAX_EXPANDED = 2 << 30
#: archives inside archives: a ``.obj.gz`` or ``.npz`` in a zip is fine, deeper nesting is refused
#: (a zip or gzip quine would otherwise recurse for ever, each level inflating to the limit)
MAX_ARCHIVE_DEPTH = 2
MAX_ARCHIVE_MEMBERS = 1000


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
    _resources: dict[str, bytes] | None = None,
) -> TriMesh:
    """Parse a mesh file held in memory. Raises :class:`FormatError` or :class:`MeshError`.

    ``_resources``: the members of the archive the file came in (an OBJ's material library and
    textures are looked up there).

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
    if kind in ("npy", "nrrd"):  # a scalar volume for marching_cubes
        if ext not in (kind, ""):
            what = "a NumPy array" if kind == "npy" else "an NRRD volume"
            raise FormatError(
                f"file named .{ext} holds {what}",
                code="format.mismatch",
                extension=ext,
                detected=kind,
            )
        mesh = read_volume(data) if kind == "npy" else volumes.read_nrrd(data, max_expanded)
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
    if kind == "obj" and _resources is not None:
        mesh = _parse(data, kind, dtype=dtype, resources=_resources, base=filename)
    else:
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
    obj = posixpath.splitext(name)[1].lower() == ".obj"
    mesh = load_bytes(
        members[name],
        name,
        dtype=dtype,
        max_expanded=max_expanded,
        _depth=depth,
        _resources=members if obj else None,
    )
    others = [n for n in names_only if not n.endswith("/") and n != name]
    if others and not obj:  # an OBJ's reader counts those its materials did not use
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


def _parse(
    data: bytes, kind: str, *, dtype: str, resources: dict[str, bytes] | None = None, base: str = ""
) -> TriMesh:
    _check_counts(data, kind, sum(len(r) for r in (resources or {}).values()))
    return _READERS[kind](data, dtype, resources, base)


#: a reader: ``(bytes, dtype, resources, base) -> TriMesh`` (``resources``: the other files of
#: the archive a ``.gltf`` came in, by path; ``base``: the ``.gltf``'s own path there)
Reader = Callable[[bytes, str, "dict[str, bytes] | None", str], TriMesh]


def _read_obj(data: bytes, dtype: str, resources: Any, base: str) -> TriMesh:
    """An OBJ with its corners' texture coordinates and normals, and its materials: from its
    library and textures when ``resources`` (the archive it came in) holds them (what is
    missing is counted in ``mesh.dropped``, as are the archive's files no material uses)."""
    o = read_obj_mesh(data)
    va = {"vertex_normals": o.vertex_normals} if o.vertex_normals is not None else None
    fa = {"material": o.material} if o.material is not None else None
    mesh = TriMesh.from_arrays(o.V, o.F, dtype=dtype, vertex_attrs=va, face_attrs=fa)
    xp = mesh.xp
    corners = {"uv": o.uv, "normal": o.normal}
    mesh.corner_attrs = {k: xp.asarray(v) for k, v in corners.items() if v is not None}
    dropped = obj_dropped(
        data,
        has_normals=o.vertex_normals is not None or o.normal is not None,
        has_uv=o.uv is not None,
        has_materials=o.material is not None,
    )
    # corners without vt / vn beside others with them: read as (0, 0) / their triangle's normal
    if o.faces_without_uv:
        dropped["faces without texture coordinates (read as 0, 0)"] = o.faces_without_uv
    if o.faces_without_normal:
        dropped["faces without normals (read as their own)"] = o.faces_without_normal
    used: set[str] = set()
    if o.material is not None:
        mesh.materials, missing, used = mtl.read_materials(
            o.material_names, o.libraries, resources, base
        )
        dropped.update(missing)
    elif o.libraries and resources is None:
        dropped["material libraries"] = len(o.libraries)
    if resources is not None:
        others = [n for n in resources if n != base and n not in used]
        if others:
            dropped["other files in the archive"] = len(others)
    mesh.dropped = dropped
    return mesh


def _read_stl(data: bytes, dtype: str, resources: Any, base: str) -> TriMesh:
    V, F = stl.read_binary(data) if not _ascii_stl(data) else stl.read_ascii(data)
    return TriMesh.from_arrays(V, F, dtype=dtype)


def _read_ply(data: bytes, dtype: str, resources: Any, base: str) -> TriMesh:
    p = ply.read_binary(data) or ply.read_ascii(data)
    if p is None:  # other elements or lists in binary: trimesh's path, after our header checks
        return _vertex_uv(_parse_trimesh(data, "ply", dtype=dtype))
    mesh = TriMesh.from_arrays(
        p.V, p.F, dtype=dtype, vertex_attrs=p.vertex_attrs, face_attrs=p.face_attrs
    )
    mesh.corner_attrs = {k: mesh.xp.asarray(v) for k, v in (p.corner_attrs or {}).items()}
    if p.dropped:
        mesh.dropped = {**mesh.dropped, **p.dropped}
    return _vertex_uv(mesh)


#: per-vertex texture coordinates as PLY writers name them
_UV_PROPERTIES = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"))


def _vertex_uv(mesh: TriMesh) -> TriMesh:
    """A PLY's per-vertex texture coordinates (``s t``, ``u v`` or ``texture_u texture_v``) as
    the corner attribute ``uv`` (each corner takes its vertex's), unless the faces gave one."""
    va = mesh.vertex_attrs
    for u, v in _UV_PROPERTIES:
        if "uv" in mesh.corner_attrs:
            break
        a, b = va.get(u), va.get(v)
        if a is None or b is None or a.ndim != 1 or b.ndim != 1:
            continue
        xp = mesh.xp
        uv = xp.stack([a, b], axis=1).astype(xp.float32)
        mesh.vertex_attrs = {k: x for k, x in va.items() if k not in (u, v)}
        if not bool(xp.isfinite(uv).all()):  # as OBJ's vt: not carried, and counted
            mesh.dropped = {**mesh.dropped, "texture coordinates": 1}
            break
        mesh.corner_attrs = {**mesh.corner_attrs, "uv": uv[mesh.F]}
    uv = mesh.corner_attrs.get("uv")
    if uv is not None and not bool(mesh.xp.isfinite(uv).all()):
        mesh.corner_attrs = {k: x for k, x in mesh.corner_attrs.items() if k != "uv"}
        mesh.dropped = {**mesh.dropped, "texture coordinates": 1}
    return mesh


def _read_off(data: bytes, dtype: str, resources: Any, base: str) -> TriMesh:
    data = without_comments(data)  # for our reader and trimesh's (which loses faces to them)
    o = read_off(data)
    if o is None:  # COFF, NOFF and the other variants: trimesh's path, unless the file is cut
        _refuse_truncated_off(data)
        return _parse_trimesh(data, "off", dtype=dtype)
    return TriMesh.from_arrays(o[0], o[1], dtype=dtype)


def _read_gltf(data: bytes, dtype: str, resources: Any, base: str) -> TriMesh:
    g = glb.read_simple(data) if data[:4] == b"glTF" else None
    if g is not None:  # one primitive shaped like the files we write: straight from the buffer
        mesh = TriMesh.from_arrays(g.V, g.F, dtype=dtype, vertex_attrs=g.vertex_attrs)
        # as the general reader: normals and colours per corner too where they have seams
        normals, colors = g.vertex_attrs.get("vertex_normals"), g.vertex_attrs.get("vertex_colors")
        if normals is not None and gltf.has_seams(g.V, normals):
            mesh.corner_attrs["normal"] = normals[mesh.F]
        if colors is not None and gltf.has_seams(g.V, colors):
            mesh.corner_attrs["color"] = gltf.corner_colors(colors, mesh.F)
        mesh.dropped = gltf.dropped_by_simple(data)
        return mesh
    s = gltf.read_scene(data, resources, base)
    mesh = TriMesh.from_arrays(
        s.V, s.F, dtype=dtype, vertex_attrs=s.vertex_attrs, face_attrs=s.face_attrs, check=False
    )
    mesh.corner_attrs = dict(s.corner_attrs)
    mesh.materials = s.materials
    mesh.check()
    mesh.dropped = s.dropped
    return mesh


def _refuse_truncated_off(data: bytes) -> None:
    """Refuse an OFF (comments blanked) with fewer words than its header's counts need: every
    vertex has at least three numbers and every face at least four (its size and three
    corners), so fewer is a file that ends early (trimesh would read it as a smaller mesh).
    :func:`_check_counts` has checked the header."""
    head = data[:65536].split(None, 3)
    nv, nf = int(head[1]), int(head[2])
    b = np.frombuffer(data, dtype=np.uint8)
    blank = spaces(b)
    words = int(np.count_nonzero(~blank[1:] & blank[:-1])) + int(b.shape[0] > 0 and not blank[0])
    if words < 4 + 3 * nv + 4 * nf:
        raise FormatError(
            f"the file ends before the {nv} vertices and {nf} faces its header declares",
            code="format.truncated",
            vertices=nv,
            faces=nf,
            words=words,
        )


#: the reader of every mesh format but NPZ (an archive: :func:`_load_zip` reads it)
_READERS: dict[str, Reader] = {
    "obj": _read_obj,
    "stl": _read_stl,
    "ply": _read_ply,
    "off": _read_off,
    "glb": _read_gltf,
    "gltf": _read_gltf,
}


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
    mesh = TriMesh.from_arrays(arrays["V"], F, dtype=dtype, vertex_attrs=va, face_attrs=fa)
    mesh.corner_attrs = {
        k[len("corner.") :]: v for k, v in arrays.items() if k.startswith("corner.")
    }
    for name, a in mesh.corner_attrs.items():
        widths = _CORNER_WIDTHS.get("uv" if name.startswith("uv") else name)
        if widths is not None and a.ndim == 3 and a.shape[2] not in widths:
            raise MeshError(
                f"corner attribute {name!r} must hold {' or '.join(map(str, widths))} values "
                "per corner: no format could write it",
                code="mesh.bad_attribute",
                attribute=name[:100],
                shape=list(a.shape),
            )
    mesh.materials = _npz_library(arrays)
    if mesh.corner_attrs or mesh.materials is not None:
        mesh.check()  # corner shapes, material indices
    return mesh


#: the values per corner each known corner attribute holds (``uv`` for every UV set); an NPZ
#: with another width would be read and then left out by every writer without a word
_CORNER_WIDTHS = {"uv": (2, 3), "normal": (3,), "tangent": (4,), "color": (3, 4)}


def _npz_library(arrays: dict[str, np.ndarray]) -> Any:
    """The material library an NPZ we wrote holds (``materials`` and ``file.<i>``: see
    :func:`.stored.library_arrays`), None without one; a malformed one is refused."""
    from ..materials import library_problem
    from .stored import library_of

    if "materials" not in arrays:
        return None
    try:
        materials = library_of(arrays)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, RecursionError):
        raise FormatError(
            "the NPZ's material library is not one Tessera wrote", code="format.parse_error"
        ) from None
    assert materials is not None
    problem = library_problem(materials.gltf, len(materials.names))
    if problem is not None:
        raise FormatError(
            f"the NPZ's material library is malformed: {problem}", code="format.parse_error"
        )
    return materials


def load_path(path: str | os.PathLike[str], *, dtype: str = "float32") -> TriMesh:
    """Read a mesh file (OBJ, PLY, STL, OFF, GLB/glTF, NPZ, or one of them in .zip/.gz); the
    format is found from the file's content and name. Raises :class:`~..errors.FormatError`
    (with a machine-readable ``code``) for a file that cannot be read as a mesh."""
    with open(path, "rb") as fh:
        data = fh.read()
    return load_bytes(data, os.fspath(path), dtype=dtype)
