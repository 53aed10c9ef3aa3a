"""Reading and writing mesh files.

Every format is declared once in ``formats.py`` (name, media type, read or written, polygons,
which attributes it holds, how its bytes are recognised); ``reading.py`` and ``writing.py`` hold
one reader and one writer per declared format and the logic around them (archives, extension
checks, attribute selection, polygons).

Inputs: OBJ, PLY (ASCII and binary), STL (ASCII and binary), OFF, GLB/glTF, NPZ (our own
arrays), and any of them inside a ``.zip`` or ``.gz``. The format is recognised from the bytes;
a file name whose extension says otherwise is rejected rather than guessed around. Read by us:
OBJ (``obj.py``), PLY in ASCII and the common binary shapes (``ply.py``), STL (``stl.py``),
plain OFF (``off.py``), glTF (``glb.py`` for the files shaped like ours, ``gltf.py`` for every
scene, compressed ones included), NPZ by NumPy; trimesh reads the rarer PLY and OFF shapes after
our own header checks. Polygons are split into triangles by ear clipping where a fan would be
wrong (``polygons.triangulate``). Text in UTF-16 or with a byte order mark is re-encoded first.
What a file holds that the mesh does not carry (texture coordinates, materials...) is counted in
``mesh.dropped``. OBJ's ``vt`` references (and ``vn`` ones at hard edges) and PLY's ``texcoord``
lists are carried as corner attributes, an OBJ's ``usemtl`` as the face attribute ``material``
and, when it comes in a zip with them, its material library and textures as the mesh's
materials.

Outputs, all written by us: binary PLY (attributes as properties, corner ``uv`` as a face
``texcoord`` list; text when polygons have several sizes), OBJ (vertex normals as ``vn``; corner
``uv`` and ``normal`` as ``vt``/``vn`` with ``f v/vt/vn``, ``usemtl`` by material), ``objzip``
(that OBJ in a zip with its material library and textures, ``mtl.py``), OFF (no attributes),
binary STL, GLB (vertex normals as ``NORMAL``, colours as ``COLOR_0``, other vertex attributes
as ``_name`` accessors), NPZ (every array). OBJ, PLY and OFF write the quads of Catmull-Clark
and the polygons of the dual mesh as polygons, rebuilt from the triangles' ``quad_id`` or
``polygon_id`` (``polygons.py``); the other formats, and these when asked to triangulate, write
the triangles the engine holds."""

from . import glb, gltf, ply, polygons, reading, stl, stored, writing
from .formats import (
    FILE_EXTENSIONS,
    FORMATS,
    MEDIA_TYPES,
    MESH_FORMATS,
    OUTPUT_FORMATS,
    OUTPUT_HOLDS,
    POLYGON_FORMATS,
    Format,
    format_can_hold,
    sniff,
)
from .reading import (
    DEFAULT_MAX_EXPANDED,
    MAX_ARCHIVE_DEPTH,
    MAX_ARCHIVE_MEMBERS,
    _parse_trimesh,
    load_bytes,
    load_path,
    read_volume,
)
from .volumes import RawLayout
from .writing import mesh_polygons, save_path, select_attributes, serialize, serialize_chunks

__all__ = [
    "DEFAULT_MAX_EXPANDED",
    "FILE_EXTENSIONS",
    "FORMATS",
    "MAX_ARCHIVE_DEPTH",
    "MAX_ARCHIVE_MEMBERS",
    "MEDIA_TYPES",
    "MESH_FORMATS",
    "OUTPUT_FORMATS",
    "OUTPUT_HOLDS",
    "POLYGON_FORMATS",
    "Format",
    "RawLayout",
    "_parse_trimesh",
    "format_can_hold",
    "glb",
    "gltf",
    "load_bytes",
    "load_path",
    "mesh_polygons",
    "ply",
    "polygons",
    "read_volume",
    "reading",
    "save_path",
    "select_attributes",
    "serialize",
    "serialize_chunks",
    "sniff",
    "stl",
    "stored",
    "writing",
]
