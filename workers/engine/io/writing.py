"""Writing mesh files: :func:`serialize_chunks` checks the format and the attributes against
:data:`.formats.FORMATS` (what each format can hold), rebuilds polygons where the format holds
them, and hands the arrays to the format's writer (:data:`_WRITERS`)."""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import zipfile
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import FormatError, MeshError, SpecError
from ..materials import library_problem
from ..mesh import TriMesh
from . import glb, mtl, ply, stl
from .formats import (
    FILE_EXTENSIONS,
    FORMATS,
    OUTPUT_FORMATS,
    OUTPUT_HOLDS,
    POLYGON_FORMATS,
    format_can_hold,
)
from .obj import write_obj, write_obj_asset
from .off import write_off
from .polygons import GROUP_ATTRIBUTES, Polygons, group_polygons, triangles_as_polygons
from .stored import named_arrays


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
    mesh: TriMesh,
    fmt: str,
    attributes: Iterable[str] | None = None,
    polygons: bool = True,
    compression: str = "none",
) -> bytes:
    """The mesh as file bytes in ``fmt`` (one of :data:`OUTPUT_FORMATS`); see
    :func:`serialize_chunks`."""
    return b"".join(serialize_chunks(mesh, fmt, attributes, polygons, compression))


#: what each compression applies to
COMPRESSIONS = {"none": None, "draco": "glb"}


def serialize_chunks(
    mesh: TriMesh,
    fmt: str,
    attributes: Iterable[str] | None = None,
    polygons: bool = True,
    compression: str = "none",
) -> Iterable[bytes | memoryview]:
    """:func:`file_chunks`, compressed as ``compression`` says: ``"none"``, or ``"draco"`` for
    GLB (:func:`.draco.compress_glb`: the file is then made whole in memory first)."""
    if compression not in COMPRESSIONS:
        raise SpecError(
            "unknown compression",
            code="spec.compression_not_supported",
            compression=compression,
            supported=list(COMPRESSIONS),
        )
    if COMPRESSIONS[compression] not in (None, fmt):
        raise SpecError(
            f"only {COMPRESSIONS[compression]} output can be compressed with {compression}",
            code="spec.compression_not_supported",
            format=fmt,
            compression=compression,
        )
    pieces = file_chunks(mesh, fmt, attributes, polygons)
    if compression == "draco":
        from .draco import compress_glb

        return [compress_glb(b"".join(bytes(p) for p in pieces))]
    return pieces


def file_chunks(
    mesh: TriMesh, fmt: str, attributes: Iterable[str] | None = None, polygons: bool = True
) -> Iterable[bytes | memoryview]:
    """The mesh's file in ``fmt`` (one of :data:`OUTPUT_FORMATS`) as pieces to write one after
    the other (binary PLY, STL and GLB: about a megabyte each, or the arrays' own memory, so a
    large file is never assembled in memory; each piece stays valid after the next is made).
    Every refusal (format, attributes) is raised before this returns. With ``polygons``, the
    formats of :data:`POLYGON_FORMATS` write the polygons the triangles' ``quad_id`` or
    ``polygon_id`` describe (see :func:`mesh_polygons`); otherwise, and for the other formats,
    the triangles. A mesh with corner attributes or materials is written as triangles to OBJ,
    ``objzip`` and PLY, with what its corners carry (``vt``/``vn``, ``texcoord``) and its
    materials (``usemtl``, the library and its images)."""
    from ..backend import to_numpy

    if fmt not in OUTPUT_FORMATS:
        raise SpecError(
            "unsupported output format",
            code="spec.unknown_format",
            format=fmt,
            supported=list(OUTPUT_FORMATS),
        )
    explicit = attributes is not None
    texcoord = mesh.corner_attrs.get("uv") if fmt == "ply" else None
    if texcoord is not None:
        texcoord = texcoord[:, :, :2] if texcoord.shape[2] >= 2 else None
        polygons = polygons and texcoord is None  # the texcoord list is written per triangle
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
    if texcoord is not None:
        check_finite_corners({"uv": texcoord}, "PLY")
    if on_device:
        return ply.ply_chunks(mesh.V, mesh.F, va, fa, texcoord=texcoord)
    if fmt == "npz" and (mesh.corner_attrs or mesh.materials is not None):
        return _write_npz_asset(mesh, va, fa)
    if fmt in _ASSET_WRITERS and (mesh.corner_attrs or mesh.materials is not None):
        return _ASSET_WRITERS[fmt](mesh, va, explicit)  # with what their corners carry
    V, F = to_numpy(mesh.V), to_numpy(mesh.F)
    if texcoord is not None:
        return ply.ply_chunks(V, F, va, fa, texcoord=to_numpy(texcoord))
    poly = mesh_polygons(mesh) if polygons and fmt in POLYGON_FORMATS else None
    if poly is not None:
        V = V[poly.vertices]
        va = {k: v[poly.vertices] for k, v in va.items()}
        fa = {k: v[poly.first_face] for k, v in fa.items()}
    return _WRITERS[fmt](V, F, poly, va, fa)


#: a writer: ``(V, F, polygons or None, vertex attributes, face attributes) -> pieces``; the
#: attributes are those the format holds (checked by the caller), on the host
Writer = Callable[
    [np.ndarray, np.ndarray, "Polygons | None", dict[str, np.ndarray], dict[str, np.ndarray]],
    Iterable[bytes | memoryview],
]


def _write_ply(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    if poly is not None:
        return ply.ply_chunks(V, poly.corners, va, fa, offsets=poly.offsets)
    return ply.ply_chunks(V, F, va, fa)


def _write_obj(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    if poly is not None:
        return [write_obj(V, poly.corners, va.get("vertex_normals"), offsets=poly.offsets)]
    return [write_obj(V, F, va.get("vertex_normals"))]


def _write_objzip(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    """The OBJ alone in a zip (a mesh without materials or corner values)."""
    return [_zip({OBJ_MEMBER: b"".join(_write_obj(V, F, poly, va, fa))})]


#: the members of an ``objzip``: the OBJ and its material library at the top; the images at the
#: paths the library names
OBJ_MEMBER, MTL_MEMBER = "mesh.obj", "mesh.mtl"


def _obj_asset(mesh: TriMesh, va: dict[str, np.ndarray], mtllib: str | None) -> bytes:
    """The mesh's OBJ with its corners' ``uv`` and ``normal`` and its faces' ``material``."""
    from ..backend import to_numpy

    ca = {k: to_numpy(v) for k, v in mesh.corner_attrs.items()}
    check_finite_corners({k: _corner(ca, k, n) for k, n in (("uv", 2), ("normal", 3))}, "OBJ")
    material = mesh.face_attrs.get("material")
    names = mtl.library_names(mesh.materials) if mesh.materials is not None else None
    return write_obj_asset(
        to_numpy(mesh.V),
        to_numpy(mesh.F),
        uv=_corner(ca, "uv", 2),
        normal=_corner(ca, "normal", 3),
        vertex_normals=va.get("vertex_normals"),
        material=None if material is None or not names else to_numpy(material),
        material_names=names,
        mtllib=mtllib if names else None,
    )


def _corner(ca: dict[str, np.ndarray], name: str, k: int) -> np.ndarray | None:
    """The corner attribute ``name`` when it has ``k`` numbers per corner (a ``uv`` set of
    three keeps its first two)."""
    a = ca.get(name)
    if a is None or a.shape[2] < k:
        return None
    return a[:, :, :k]


def _write_obj_asset(mesh: TriMesh, va: dict[str, np.ndarray], explicit: bool) -> Any:
    check_materials(mesh)
    return [_obj_asset(mesh, va, MTL_MEMBER)]


def _write_objzip_asset(mesh: TriMesh, va: dict[str, np.ndarray], explicit: bool) -> Any:
    """The OBJ, its material library (the text it was read with, or one made from the glTF
    terms: :func:`.mtl.write_mtl`) and the images, at the paths the library names."""
    check_materials(mesh)
    members = {OBJ_MEMBER: _obj_asset(mesh, va, MTL_MEMBER)}
    m = mesh.materials
    if m is not None and m.names:
        members[MTL_MEMBER] = mtl.write_mtl(m).encode()
        for name, data in m.files.items():
            path = mtl.file_key(name)
            if path not in members and mtl.safe_member(path):
                members[path] = data
    return [_zip(members)]


#: every member's time stamp: the zip's first representable moment, so that one mesh makes the
#: same bytes whenever it is written (a clock in the file would change them every two seconds)
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _member(name: str, method: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = method
    info.external_attr = 0o644 << 16
    return info


def _zip(members: dict[str, bytes]) -> bytes:
    """A zip of ``members``; images stored as they are (already compressed), text deflated."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            packed = posixpath.splitext(name)[1].lower() in (".obj", ".mtl")
            z.writestr(_member(name, zipfile.ZIP_DEFLATED if packed else zipfile.ZIP_STORED), data)
    return buf.getvalue()


def _write_off(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    p = poly if poly is not None else triangles_as_polygons(F, V.shape[0])
    return [write_off(V, p.corners, p.offsets)]


def _write_stl(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    return stl.stl_chunks(V, F)


def _write_npz(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    buf = io.BytesIO()
    np.savez(buf, **named_arrays(V, F, va, fa))  # numpy stamps its members 1980-01-01 too
    return [buf.getvalue()]


def _write_npz_asset(mesh: TriMesh, va: dict[str, Any], fa: dict[str, Any]) -> Any:
    """An NPZ of a mesh with corner attributes or materials: the arrays :func:`_write_npz`
    writes, each corner attribute as ``corner.<name>`` ``(m, 3, k)``, the faces' ``material``
    (always, with the library), and the library as the stored form keeps it
    (:func:`.stored.library_arrays`: ``materials``, its JSON as bytes, and ``file.<i>``)."""
    from ..backend import to_numpy
    from .stored import library_arrays

    check_materials(mesh)
    fa = dict(fa)
    if mesh.materials is not None and "material" in mesh.face_attrs:
        fa["material"] = to_numpy(mesh.face_attrs["material"])
    arrays = named_arrays(to_numpy(mesh.V), to_numpy(mesh.F), va, fa)
    arrays.update({f"corner.{k}": to_numpy(v) for k, v in mesh.corner_attrs.items()})
    if mesh.materials is not None:
        arrays.update(library_arrays(mesh.materials))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return [buf.getvalue()]


def _write_glb(V: np.ndarray, F: np.ndarray, poly: Polygons | None, va: Any, fa: Any) -> Any:
    va = dict(va)
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


def _write_textured_glb(mesh: TriMesh, va: dict[str, np.ndarray], explicit: bool) -> Any:
    """A GLB of a mesh with corner attributes or materials: one primitive per material, the
    vertices split at seams (:func:`.glb.textured_glb_chunks`); vertex normals asked for by
    name (``explicit``) are written before the corner normals."""
    from ..backend import to_numpy

    for k, v in va.items():
        if not _gltf_accessor_shape(k, v):
            raise FormatError(
                "attribute cannot be written as a glTF accessor",
                code="format.unsupported_attribute",
                attribute=k,
                shape=list(v.shape),
            )
    corners = {
        k: to_numpy(v)
        for k, v in mesh.corner_attrs.items()
        if format_can_hold("glb", k, "corner") and _gltf_corner_shape(k, v)
    }
    check_finite_corners(corners, "glTF")
    check_materials(mesh)
    material = mesh.face_attrs.get("material")
    return glb.textured_glb_chunks(
        to_numpy(mesh.V),
        to_numpy(mesh.F),
        va,
        corners,
        None if material is None else to_numpy(material),
        mesh.materials,
        vertex_normals_first=explicit and "vertex_normals" in va,
    )


def check_finite_corners(corners: dict[str, Any], fmt: str) -> None:
    """Raise ``mesh.non_finite`` when a corner attribute to be written holds NaN or an
    infinity (on its device): no format we write can hold one (OBJ and PLY would write the
    text ``nan``, which readers take as an error or as zero)."""
    from ..backend import array_backend, xp_for

    for k, v in corners.items():
        if v is None or v.dtype.kind != "f":
            continue
        xp = xp_for(array_backend(v))
        if not bool(xp.isfinite(v).all()):
            raise MeshError(
                f"corner values are NaN or infinite: {fmt} cannot hold them",
                code="mesh.non_finite",
                attribute=k,
            )


def check_materials(mesh: TriMesh) -> None:
    """Raise :class:`MeshError` (``mesh.materials_invalid``) when the mesh's materials cannot be
    written: a library :func:`.materials.library_problem` finds fault with, or a face naming a
    material the library does not have."""
    from ..backend import to_numpy

    m = mesh.materials
    material = mesh.face_attrs.get("material")
    if m is None:
        return
    problem = library_problem(m.gltf, len(m.names))
    if problem is None and material is not None:
        a = to_numpy(material)
        if a.size and (a.dtype.kind not in "iu" or int(a.min()) < 0 or int(a.max()) >= len(m)):
            problem = f"a face names a material outside the library's {len(m)}"
    if problem is not None:
        raise MeshError(
            f"the mesh's materials cannot be written: {problem}", code="mesh.materials_invalid"
        )


def _gltf_corner_shape(name: str, a: np.ndarray) -> bool:
    """Whether a corner attribute has the width its glTF attribute needs (a texture coordinate
    2, or more: its first two are written, as OBJ and PLY do; a normal 3, a colour 3 or 4); one
    that has not is not written."""
    width = a.shape[2] if a.ndim == 3 else -1
    if name.startswith("uv"):
        return width >= 2
    return width == {"normal": 3, "tangent": 4, "color": 4 if width == 4 else 3}.get(name, 2)


#: the writer of every output format (:data:`.formats.OUTPUT_FORMATS`)
_WRITERS: dict[str, Writer] = {
    "ply": _write_ply,
    "obj": _write_obj,
    "objzip": _write_objzip,
    "off": _write_off,
    "stl": _write_stl,
    "npz": _write_npz,
    "glb": _write_glb,
}


#: formats that hold corner values and materials: written from the mesh (as triangles) when it
#: has any, with the vertex attributes the format keeps and whether they were asked for by name
_ASSET_WRITERS: dict[str, Callable[[TriMesh, dict[str, np.ndarray], bool], Iterable[Any]]] = {
    "obj": _write_obj_asset,
    "objzip": _write_objzip_asset,
    "glb": _write_textured_glb,
}


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
    compression: str = "none",
) -> None:
    """Write ``mesh``; the format is taken from the file name's extension. OBJ, PLY and OFF
    write Catmull-Clark quads and dual polygons as polygons unless ``polygons`` is False;
    ``compression="draco"`` compresses a GLB's triangles (KHR_draco_mesh_compression). A
    failed write leaves no file behind."""
    ext = os.path.splitext(os.fspath(path).lower())[1].lstrip(".")
    # a format whose files have another extension (objzip: .zip) is found by it
    fmt = next((f for f, e in FILE_EXTENSIONS.items() if e == ext and f != ext), ext)
    chunks = serialize_chunks(mesh, fmt, attributes, polygons=polygons, compression=compression)
    try:
        with open(path, "wb") as fh:
            fh.writelines(chunks)
    except BaseException:
        with contextlib.suppress(OSError):  # no half-written file left behind
            os.unlink(path)
        raise


#: the words the job record uses for each corner attribute a file leaves out
_CORNER_WORDS = {
    "uv": "texture coordinate sets",
    "normal": "corner normals",
    "color": "corner colours",
    "tangent": "tangents",
}


def left_out(mesh: TriMesh, fmt: str) -> dict[str, int]:
    """What ``mesh`` carries that a file of ``fmt`` does not hold (texture coordinate sets,
    corner normals and colours, materials and their textures), as the job record's
    ``result.dropped`` says it; empty when the file keeps everything of that kind."""
    out: dict[str, int] = {}
    for name in mesh.corner_attrs:
        if (
            name == "tangent"
            and fmt == "glb"
            and "normal" not in mesh.corner_attrs
            and "vertex_normals" not in mesh.vertex_attrs
        ):
            out["tangents (no normals to go with them)"] = 1  # glTF: TANGENT only with NORMAL
        elif not format_can_hold(fmt, name, "corner"):
            word = _CORNER_WORDS.get("uv" if name.startswith("uv") else name, "corner attributes")
            out[word] = out.get(word, 0) + 1
        elif (
            name.startswith("uv")
            and mesh.corner_attrs[name].ndim == 3
            and (
                mesh.corner_attrs[name].shape[2] > 2  # every format's sets are 2-vectors
            )
        ):
            word = "texture coordinate components beyond two"
            out[word] = out.get(word, 0) + 1
    if mesh.materials is not None and not FORMATS[fmt].library:
        out["materials"] = len(mesh.materials)
        textures = mesh.materials.gltf.get("textures", [])
        if isinstance(textures, list) and textures:
            out["textures"] = len(textures)
    elif mesh.materials is not None and fmt == "objzip":
        # an image whose name is no safe path in a zip (``..``, blanks) is not written
        unsafe = [n for n in mesh.materials.files if not mtl.safe_member(mtl.file_key(n))]
        if unsafe:
            out["textures"] = len(unsafe)
    return out
