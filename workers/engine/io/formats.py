"""Every file format the engine reads or writes, declared once: its name, what it is, its media
type, whether it is read and written, whether it holds polygons and which attributes, and how its
bytes are recognised (:func:`sniff`). The lists the rest of the code uses (``MESH_FORMATS``,
``OUTPUT_FORMATS``, ``POLYGON_FORMATS``, ``OUTPUT_HOLDS``, ``MEDIA_TYPES``, the job spec's output
formats) are derived from :data:`FORMATS`; the readers (``reading.py``) and writers
(``writing.py``) are looked up by the same names, and a test checks that every format declared
as read or written has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import ply, volumes


def _nothing(name: str, element: str) -> bool:
    return False


def _ply_holds(name: str, element: str) -> bool:
    """A face element's nx ny nz / red green blue are read back as face_normals / face_colors:
    a vertex attribute of those names, or a face attribute named like the vertex ones, would
    come back renamed."""
    if element == "corner":
        return name == "uv"  # a face texcoord list
    renamed = ply.FACE_RENAMES if element == "face" else ply.FACE_RENAMES.values()
    return name not in renamed


def _obj_holds(name: str, element: str) -> bool:
    """Vertex normals as ``vn``; the faces' ``material`` as ``usemtl`` runs; the corners' ``uv``
    and ``normal`` as ``vt`` and ``vn`` references."""
    return (name, element) in (
        ("vertex_normals", "vertex"),
        ("material", "face"),
        ("uv", "corner"),
        ("normal", "corner"),
    )


def _npz_holds(name: str, element: str) -> bool:
    """Every vertex, face and corner attribute (``corner.<name>``)."""
    return True


def _glb_holds(name: str, element: str) -> bool:
    """Every vertex attribute; the face attribute ``material`` (a primitive per material); the
    corner attributes ``uv``, ``uv1``... (``TEXCOORD_n``), ``normal``, ``tangent`` and
    ``color``."""
    if element == "face":
        return name == "material"
    if element == "corner":
        return name in ("normal", "tangent", "color") or (
            name.startswith("uv") and (name == "uv" or name[2:].isdigit())
        )
    return element == "vertex"


@dataclass(frozen=True)
class Format:
    """One file format. ``holds`` says in words which attributes a written file keeps and
    ``can_hold(name, element)`` decides it per attribute."""

    name: str
    title: str
    media_type: str
    reads: bool
    writes: bool
    polygons: bool = False  # written with the polygons of Catmull-Clark and dual meshes
    holds: str = "no attributes"
    can_hold: Callable[[str, str], bool] = _nothing
    #: the extension of a file written in the format, when it is not the format's name
    extension: str = ""
    #: a written file keeps the material library (materials, textures, images), not only each
    #: face's material
    library: bool = False


#: in the order the API lists output formats
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "ply",
            "PLY, ASCII or binary (written binary; as text when polygons have several sizes)",
            "application/x-ply",
            reads=True,
            writes=True,
            polygons=True,
            holds="every vertex and face attribute but vertex attributes named face_normals or "
            "face_colors and face attributes named vertex_normals or vertex_colors; the corners' "
            "uv as a face texcoord list",
            can_hold=_ply_holds,
        ),
        Format(
            "obj",
            "Wavefront OBJ",
            "model/obj",
            reads=True,
            writes=True,
            polygons=True,
            holds="vertex_normals, the corners' uv and normal, the faces' material names",
            can_hold=_obj_holds,
        ),
        Format(
            "objzip",
            "Wavefront OBJ in a zip with its material library (MTL) and texture images",
            "application/zip",
            reads=False,  # a zip holding an OBJ is read as any archive is
            writes=True,
            polygons=True,
            holds="vertex_normals, the corners' uv and normal, materials and their textures",
            can_hold=_obj_holds,
            extension="zip",
            library=True,
        ),
        Format("off", "OFF", "application/x-off", reads=True, writes=True, polygons=True),
        Format(
            "stl", "STL, ASCII or binary (written binary)", "model/stl", reads=True, writes=True
        ),
        Format(
            "glb",
            "binary glTF 2.0",
            "model/gltf-binary",
            reads=True,
            writes=True,
            holds="vertex attributes, the face attribute material (one primitive per "
            "material, with the mesh's materials, textures and images) and the corner "
            "attributes uv, uv1... (texture coordinate sets), normal, tangent (with normals) "
            "and color",
            can_hold=_glb_holds,
            library=True,
        ),
        Format(
            "npz",
            "NumPy arrays: V, F and the attributes",
            "application/x-npz",
            reads=True,
            writes=True,
            holds="every vertex, face and corner attribute, materials and their textures",
            can_hold=_npz_holds,
            library=True,
        ),
        Format(
            "gltf",
            "glTF 2.0 JSON, with its buffers embedded or beside it in a zip",
            "model/gltf+json",
            reads=True,
            writes=False,
        ),
    )
}
MESH_FORMATS = tuple(n for n, f in FORMATS.items() if f.reads)
OUTPUT_FORMATS = tuple(n for n, f in FORMATS.items() if f.writes)
#: output formats that hold polygons (the others are written as triangles)
POLYGON_FORMATS = tuple(n for n, f in FORMATS.items() if f.writes and f.polygons)
#: which attributes each output format can hold
OUTPUT_HOLDS: dict[str, str] = {n: f.holds for n, f in FORMATS.items() if f.writes}
MEDIA_TYPES: dict[str, str] = {n: f.media_type for n, f in FORMATS.items() if f.writes}
#: the extension of a written file (``result.zip`` for ``objzip``)
FILE_EXTENSIONS: dict[str, str] = {n: f.extension or n for n, f in FORMATS.items() if f.writes}


def format_can_hold(fmt: str, name: str, element: str) -> bool:
    """Whether a file of ``fmt`` keeps the ``element`` ("vertex", "face" or "corner")
    attribute ``name``."""
    return FORMATS[fmt].can_hold(name, element)


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
