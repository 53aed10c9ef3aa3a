"""PLY: header checks before reading, a vectorized binary reader, and the binary writer of our
output contract.

Reading starts with :func:`check_header`, which makes sure the counts the header declares fit in
the bytes that follow (a header declaring four billion vertices must not allocate them). A binary
file with a ``vertex`` element of scalar properties and a ``face`` element whose list has the same
length in every row (triangles, or polygons fanned into triangles) is then read by
:func:`read_binary`: one ``np.frombuffer`` with a structured dtype per element, no per-row Python.
Anything else (ASCII, mixed polygon sizes, other elements) goes through trimesh, and
:func:`read_binary` gives the same arrays and attributes trimesh's reader leads to.

Writing is ours because the property names are part of our output contract: positions ``x y z``,
vertex normals ``nx ny nz``, colours ``red green blue alpha``, a scalar attribute as a property of
its own name, a k-vector attribute as ``name_0 .. name_{k-1}``; the same for face attributes. Each
element is packed into one byte block, column group by column group.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from ..backend import array_backend, xp_for
from ..errors import FormatError
from . import _records
from ._text import parse_floats
from .polygons import nonconvex, triangulate, triangulate_corners

_SIZES = {
    "char": 1,
    "uchar": 1,
    "int8": 1,
    "uint8": 1,
    "short": 2,
    "ushort": 2,
    "int16": 2,
    "uint16": 2,
    "int": 4,
    "uint": 4,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
}
_MAX_HEADER = 64 * 1024
#: the header's last line (a property may be named end_header_0: only a whole word at a line
#: start counts)
_END_HEADER = re.compile(rb"\nend_header\b")


def _end_header(data: bytes) -> int:
    """Where the ``end_header`` line starts, or -1."""
    m = _END_HEADER.search(data, 0, _MAX_HEADER)
    return m.start() + 1 if m else -1


def check_header(data: bytes) -> None:
    """Raise :class:`FormatError` unless the header is well formed and its element counts can be
    backed by the file's size (each binary row has a minimum size; an ASCII row needs 2 bytes)."""
    end = _end_header(data)
    if not data.startswith(b"ply") or end < 0:
        raise FormatError("not a PLY file (no ply/end_header)", code="format.ply_bad_header")
    nl = data.find(b"\n", end)
    body = len(data) - (nl + 1 if nl >= 0 else len(data))
    fmt = None
    need = 0
    elements: list[tuple[str, int, int]] = []
    for raw in data[:end].decode("ascii", "replace").splitlines():
        t = raw.split()
        if not t:
            continue
        if t[0] == "format" and len(t) >= 2:
            fmt = t[1]
        elif t[0] == "element":
            if len(t) != 3 or not t[2].isdigit():
                raise FormatError("bad element line", code="format.ply_bad_header", line=raw)
            elements.append((t[1], int(t[2]), 0))
        elif t[0] == "property" and elements:
            name, count, row = elements[-1]
            if len(t) >= 5 and t[1] == "list":
                size = _SIZES.get(t[2], 0)  # a list row holds at least its count
            else:
                size = _SIZES.get(t[1], 0) if len(t) >= 3 else 0
            if size == 0:
                raise FormatError("unknown property type", code="format.ply_bad_header", line=raw)
            elements[-1] = (name, count, row + size)
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise FormatError("unknown PLY format", code="format.ply_bad_header", format=fmt)
    for name, count, row in elements:
        if count >= 2**31:
            raise FormatError(
                "element count too large",
                code="format.count_exceeds_size",
                element=name,
                declared=count,
            )
        need += count * (row if fmt != "ascii" else 2)
    if need > body:
        raise FormatError(
            "header declares more data than the file holds",
            code="format.count_exceeds_size",
            declared_bytes=need,
            file_bytes=body,
        )


def write_ply(
    V: np.ndarray,
    F: np.ndarray,
    vertex_attrs: dict[str, np.ndarray],
    face_attrs: dict[str, np.ndarray],
    offsets: np.ndarray | None = None,
    texcoord: np.ndarray | None = None,
) -> bytes:
    """Binary little-endian PLY with attributes as properties (see :func:`ply_chunks`)."""
    return b"".join(ply_chunks(V, F, vertex_attrs, face_attrs, offsets, texcoord))


def ply_chunks(
    V: np.ndarray,
    F: np.ndarray,
    vertex_attrs: dict[str, np.ndarray],
    face_attrs: dict[str, np.ndarray],
    offsets: np.ndarray | None = None,
    texcoord: np.ndarray | None = None,
) -> Iterator[bytes | memoryview]:
    """The bytes of a binary little-endian PLY with attributes as properties, in pieces of about
    a megabyte: the header, then the vertex and face rows (triangles on the GPU are packed there,
    in pieces of 32 MB). Faces are the triangles ``F (m,
    3)``, or with ``offsets (n + 1,)`` the polygons ``F[offsets[p]:offsets[p + 1]]`` of the
    flat corner array ``F`` (one ``vertex_indices`` list per polygon, its length in a ``uchar``,
    or an ``int`` when some polygon has more than 255 corners). ``texcoord (m, 3, 2)``, the
    triangles' corner texture coordinates, is written as MeshLab writes it: a face list
    ``texcoord`` of six floats (u v per corner) after ``vertex_indices`` (triangles only). Every
    check (property names and types) is made before this returns."""
    vblocks: list[tuple[list[str], np.ndarray]] = [(["x", "y", "z"], V)]
    vblocks += _blocks(vertex_attrs)
    fblocks = _blocks(face_attrs)
    _check_names(vblocks, "vertex", taken=set())
    if texcoord is not None and offsets is not None:
        raise ValueError("texcoord is written with triangles only")
    _check_names(fblocks, "face", taken={"vertex_indices", "texcoord"})
    _check_read_back(vertex_attrs, vblocks[1:], "vertex")
    _check_read_back(face_attrs, fblocks, "face")
    sizes = None if offsets is None else np.diff(offsets)
    if sizes is not None and sizes.shape[0] and int(sizes.min()) != int(sizes.max()):
        # polygons of several sizes (dual meshes) in binary are read by MeshLab and plyfile
        # but not by trimesh (its binary reader needs rows of one length): written as text
        return iter([_ascii_polygons(V, vblocks, F, sizes, fblocks)])
    count_dt = np.dtype("<i4") if sizes is not None and int(sizes.max(initial=0)) > 255 else None
    n_faces = F.shape[0] if sizes is None else sizes.shape[0]
    header = [
        "ply",
        "format binary_little_endian 1.0",
        "comment written by tessera",
        f"element vertex {V.shape[0]}",
    ]
    header += [f"property {_ply_type(a)} {n}" for names, a in vblocks for n in names]
    header += [
        f"element face {n_faces}",
        f"property list {'uchar' if count_dt is None else 'int'} int vertex_indices",
    ]
    if texcoord is not None:
        header.append("property list uchar float texcoord")
    header += [f"property {_ply_type(a)} {n}" for names, a in fblocks for n in names]
    header.append("end_header")
    head = ("\n".join(header) + "\n").encode()
    vertex_rows = _records.pack_chunks([_little(a) for _, a in vblocks])
    if sizes is None:
        if _on_gpu(F):  # rows packed on the device (see _records.pack_chunks_device)
            import cupy as cp

            count = cp.full((F.shape[0], 1), 3, dtype=cp.uint8)
        else:
            count = np.broadcast_to(np.uint8(3), (F.shape[0], 1))
        lists = [count, _little(F.astype(np.int32, copy=False))]
        if texcoord is not None:
            xp = xp_for(array_backend(texcoord))
            lists += [
                xp.full((F.shape[0], 1), 6, dtype=xp.uint8),
                _little(texcoord.reshape(F.shape[0], 6).astype(xp.float32, copy=False)),
            ]
        face_rows = _records.pack_chunks(lists + [_little(a) for _, a in fblocks])
        return itertools.chain([head], vertex_rows, face_rows)
    rest = _records.pack([_little(a) for _, a in fblocks]) if fblocks else None
    faces = _polygon_rows(F, sizes, count_dt or np.dtype("u1"), rest)
    return itertools.chain([head], vertex_rows, [faces.data])


def _ascii_polygons(
    V: np.ndarray,
    vblocks: list[tuple[list[str], np.ndarray]],
    corners: np.ndarray,
    sizes: np.ndarray,
    fblocks: list[tuple[list[str], np.ndarray]],
) -> bytes:
    """ASCII PLY of polygons of several sizes, with the same header (but its format line) and
    properties as the binary file: floats to their shortest round-trip digits (``%.9g`` for
    float, ``%.17g`` for double), integers as written."""
    header = [
        "ply",
        "format ascii 1.0",
        "comment written by tessera",
        f"element vertex {V.shape[0]}",
    ]
    header += [f"property {_ply_type(a)} {n}" for names, a in vblocks for n in names]
    count_type = "uchar" if int(sizes.max()) <= 255 else "int"
    header += [f"element face {sizes.shape[0]}", f"property list {count_type} int vertex_indices"]
    header += [f"property {_ply_type(a)} {n}" for names, a in fblocks for n in names]
    header.append("end_header")
    vertex_rows = _text_rows([a for _, a in vblocks])
    tails = _text_rows([a for _, a in fblocks]) if fblocks else None
    words = np.char.mod("%d", np.asarray(corners, dtype=np.int64)).tolist()
    ends = np.cumsum(sizes).tolist()
    lines, start = [], 0
    for p, end in enumerate(ends):
        row = f"{end - start} " + " ".join(words[start:end])
        lines.append(row if tails is None else f"{row} {tails[p]}")
        start = end
    return ("\n".join(header + vertex_rows + lines) + "\n").encode()


def _text_rows(blocks: list[np.ndarray]) -> list[str]:
    """One line of text per row of the column blocks (each ``(n, k)``)."""
    columns = []
    for a in blocks:
        a = np.asarray(a)
        fmt = {"f4": "%.9g", "f8": "%.17g"}.get(f"{a.dtype.kind}{a.dtype.itemsize}", "%d")
        for j in range(a.shape[1]):
            columns.append(np.char.mod(fmt, a[:, j]))
    if not columns:
        return []
    rows = columns[0]
    for c in columns[1:]:
        rows = np.char.add(np.char.add(rows, " "), c)
    return rows.tolist()


def _polygon_rows(
    corners: np.ndarray, sizes: np.ndarray, count_dt: np.dtype, rest: np.ndarray | None
) -> np.ndarray:
    """The face element's bytes for polygons of ``sizes`` corners: per polygon its count
    (``count_dt``), its corners (int32) and its row of ``rest`` (packed properties), rows of
    varying length placed by scatter (no loop over polygons). Returns uint8 ``(total,)``."""
    n = sizes.shape[0]
    c = count_dt.itemsize
    w = 0 if rest is None else rest.dtype.itemsize
    length = c + 4 * sizes + w
    start = np.zeros(n, dtype=np.int64)
    np.cumsum(length[:-1], out=start[1:])
    out = np.zeros(int(length.sum()), dtype=np.uint8)
    counts = sizes.astype(count_dt.newbyteorder("<")).view(np.uint8).reshape(n, c)
    out[start[:, None] + np.arange(c)] = counts
    polygon = np.repeat(np.arange(n), sizes)
    j = np.arange(corners.shape[0]) - np.repeat(start_of(sizes), sizes)
    at = start[polygon] + c + 4 * j
    out[at[:, None] + np.arange(4)] = corners.astype("<i4").view(np.uint8).reshape(-1, 4)
    if rest is not None:
        tail = start + c + 4 * sizes
        out[tail[:, None] + np.arange(w)] = rest.view(np.uint8).reshape(n, w)
    return out


def start_of(sizes: np.ndarray) -> np.ndarray:
    """Where each run of ``sizes`` items starts in the flat array: exclusive cumulative sum."""
    return np.asarray(np.cumsum(sizes) - sizes, dtype=np.int64)


def _on_gpu(a: Any) -> bool:
    return array_backend(a) == "cupy"


def _little(a: Any) -> Any:
    if _on_gpu(a):  # the device is little-endian: packed there as it is
        return a
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _blocks(attrs: dict[str, np.ndarray]) -> list[tuple[list[str], np.ndarray]]:
    """Attributes as ``(property names, (n, k) array)``: one column per property."""
    blocks: list[tuple[list[str], np.ndarray]] = []
    for name, a in attrs.items():
        a = _ply_dtype(name, a if _on_gpu(a) else np.asarray(a))
        if name in ("vertex_normals", "face_normals") and a.shape[1:] == (3,):
            blocks.append((["nx", "ny", "nz"], a))
        elif name in ("vertex_colors", "face_colors") and a.shape[1:] in ((3,), (4,)):
            blocks.append((["red", "green", "blue", "alpha"][: a.shape[1]], a))
        elif a.ndim == 1 or a.shape[1:] == (1,):  # (n, 1) as a scalar: read back as (n,)
            blocks.append(([name], a.reshape(-1, 1)))
        else:
            flat = a.reshape(a.shape[0], -1)
            blocks.append(([f"{name}_{k}" for k in range(flat.shape[1])], flat))
    return blocks


#: a face element's normals and colours are read under these names
FACE_RENAMES = {"vertex_normals": "face_normals", "vertex_colors": "face_colors"}


def _check_read_back(
    attrs: dict[str, np.ndarray], blocks: list[tuple[list[str], np.ndarray]], element: str
) -> None:
    """Refuse attribute names that the reader would read back as other attributes: properties
    are grouped by name (``nx ny nz``, ``red green blue``, ``a_0 a_1``), so a scalar ``a_0`` beside
    ``a_1``, or a vertex attribute called ``face_normals``, would come back changed."""
    names = [p for props, _ in blocks for p in props]
    kinds = {p: a.dtype.kind for props, a in blocks for p in props}
    renames = FACE_RENAMES if element == "face" else {}
    back = {renames.get(a, a) for a, _, _ in _plan(names, kinds, skip=set())}
    if back != set(attrs):
        raise FormatError(
            "attribute names that PLY's property naming would read back as other attributes",
            code="format.unsupported_attribute",
            element=element,
            written=sorted(set(attrs) - back)[:20],
            read_back=sorted(back - set(attrs))[:20],
        )


def _check_names(blocks: list[tuple[list[str], np.ndarray]], element: str, taken: set[str]) -> None:
    """Property names must be single ASCII words, distinct within their element."""
    seen = set(taken)
    for names, _ in blocks:
        for name in names:
            if not name or not name.isascii() or any(c.isspace() for c in name) or name in seen:
                raise FormatError(
                    "attribute cannot be written as a PLY property",
                    code="format.unsupported_attribute",
                    element=element,
                    property=name[:100],
                    reason="name taken" if name in seen else "not a single ASCII word",
                )
            seen.add(name)


def _ply_dtype(name: str, a: np.ndarray) -> np.ndarray:
    """``a`` in a type PLY has: booleans as bytes, 64-bit integers as 32-bit ones when every
    value fits (else refused: PLY has no 64-bit integers, and wrapping would change them)."""
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind in "iu" and a.dtype.itemsize > 4:
        narrow = np.dtype(np.int32 if a.dtype.kind == "i" else np.uint32)
        info = np.iinfo(narrow)
        if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
            raise FormatError(
                "attribute values do not fit PLY's 32-bit integers",
                code="format.unsupported_attribute",
                attribute=name,
                min=int(a.min()),
                max=int(a.max()),
            )
        return a.astype(narrow)
    return a


def _ply_type(a: np.ndarray) -> str:
    key = f"{a.dtype.kind}{a.dtype.itemsize}"
    if key not in _WRITE_TYPES:
        raise FormatError(
            "attribute type not writable to PLY",
            code="format.unsupported_attribute",
            dtype=str(a.dtype),
        )
    return _WRITE_TYPES[key]


_WRITE_TYPES = {
    "f4": "float",
    "f8": "double",
    "i1": "char",
    "u1": "uchar",
    "i2": "short",
    "u2": "ushort",
    "i4": "int",
    "u4": "uint",
}


# ----------------------------------------------------------------------------- fast reading
_READ_TYPES = {
    "char": "i1",
    "uchar": "u1",
    "int8": "i1",
    "uint8": "u1",
    "short": "i2",
    "ushort": "u2",
    "int16": "i2",
    "uint16": "u2",
    "int": "i4",
    "uint": "u4",
    "int32": "i4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
_INDEX_NAMES = ("vertex_indices", "vertex_index")


class BinaryPly(NamedTuple):
    """What :func:`read_binary` read: positions, triangles and attributes."""

    V: np.ndarray
    F: np.ndarray
    vertex_attrs: dict[str, np.ndarray]
    face_attrs: dict[str, np.ndarray]
    #: per triangle corner (``uv`` from MeshLab's face ``texcoord`` list)
    corner_attrs: dict[str, np.ndarray] | None = None
    #: what the file held that is not read (``{"texture coordinates": 1}``), for ``mesh.dropped``
    dropped: dict[str, int] | None = None


class _Element(NamedTuple):
    """One element's rows in the file: where they start, how many, and each property's byte
    offset in a row and dtype (byte order included)."""

    start: int
    rows: int
    row: int
    props: dict[str, tuple[int, np.dtype]]

    def take(self, data: bytes, names: list[str]) -> np.ndarray:
        """Copy of the properties ``names``: ``(rows,)`` for one, ``(rows, k)`` for several
        (stacked as :func:`numpy.stack` would, in one copy when they sit side by side)."""
        (at, dt), k = self.props[names[0]], len(names)
        side_by_side = all(self.props[c] == (at + j * dt.itemsize, dt) for j, c in enumerate(names))
        if side_by_side:
            return self.column(data, at, dt, k)
        return np.stack([self.take(data, [c]) for c in names], axis=1)

    def column(self, data: bytes, at: int, dt: np.dtype, k: int = 1) -> np.ndarray:
        """Copy of the ``k`` values of ``dt`` at byte ``at`` of every row, in native order."""
        a = _records.take(data, self.start, self.rows, self.row, at, dt, k)
        return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def read_binary(data: bytes) -> BinaryPly | None:
    """Read a binary PLY of the common shape without trimesh, or None when it has another shape.

    The common shape: elements ``vertex`` (scalar properties, ``x y z`` among them) and ``face``
    (a list property ``vertex_indices`` or ``vertex_index`` first, then scalar properties), in
    either order, every list holding the same number ``k >= 3`` of indices, and nothing after the
    last row. Triangles are used as stored; polygons are triangulated as trimesh does (quads as
    ``(0 1 2) (2 3 0)``, all first halves, then all second halves; larger polygons as fans).
    Polygons of several sizes (which trimesh does not read in binary PLY) are read when the face
    element comes last (see :func:`_read_polygons`), fanned polygon by polygon. Every triangle
    takes the face properties of its polygon (so the ``quad_id`` and ``polygon_id`` of our own
    polygon output come back). Properties become attributes as :func:`extra_vertex_properties` and
    :func:`extra_face_properties` make them on trimesh's path, in native byte order. Call
    :func:`check_header` first. Returned arrays are copies, never views of ``data``.
    """
    header = _parse_header(data)
    if header is None or header[0] == "ascii":
        return None
    endian, at, elements = header
    if sorted(e[0] for e in elements) != ["face", "vertex"]:
        return None
    layout: dict[str, _Element] = {}
    k = 0
    lists: list[tuple[str, int]] = []  # the face element's other lists: (name, their count)
    for name, count, props in elements:
        if count <= 0 or (name == "vertex" and any(len(p) != 2 for p in props)):
            return None
        fields: dict[str, tuple[int, np.dtype]] = {}
        row = 0
        if name == "face":
            if len(props[0]) != 3 or props[0][0] not in _INDEX_NAMES:
                return None
            count_dt, index_dt = np.dtype(endian + props[0][1]), np.dtype(endian + props[0][2])
            if count_dt.kind not in "iu" or index_dt.kind not in "iu":
                return None  # counts and indices must be integers: trimesh's path says why not
            if at + count_dt.itemsize > len(data):
                return None
            k = int(np.frombuffer(data, count_dt, count=1, offset=at)[0])
            if k < 3:
                return None
            # the list's count and indices take two names no property can have
            fields = {" count": (0, count_dt), " indices": (count_dt.itemsize, index_dt)}
            row = count_dt.itemsize + k * index_dt.itemsize
            props = props[1:]
        elif not {"x", "y", "z"} <= {p[0] for p in props}:
            return None
        for prop in props:
            if len(prop) == 3:  # another list (MeshLab's texcoord): as long in every row
                cdt, vdt = np.dtype(endian + prop[1]), np.dtype(endian + prop[2])
                if cdt.kind not in "iu" or at + row + cdt.itemsize > len(data):
                    return None
                c = int(np.frombuffer(data, cdt, count=1, offset=at + row)[0])
                fields[f" {prop[0]} count"] = (row, cdt)
                fields[f" {prop[0]}"] = (row + cdt.itemsize, vdt)
                lists.append((prop[0], c))
                row += cdt.itemsize + c * vdt.itemsize
                continue
            fields[prop[0]] = (row, np.dtype(endian + prop[1]))
            row += fields[prop[0]][1].itemsize
        layout[name] = _Element(at, count, row, fields)
        at += count * row
    vertex, face = layout["vertex"], layout["face"]
    count_dt = face.props[" count"][1]
    index_at, index_dt = face.props[" indices"]
    # a line break after the last row, as some writers leave, is no data
    ends = at == len(data) or data[at:] in (b"\n", b"\r\n")
    # every list as long in every row as in the first (read only when the rows fit)
    lengths = [(" count", k)] + [(f" {n} count", c) for n, c in lists]
    same = ends and all(bool((face.column(data, *face.props[p]) == c).all()) for p, c in lengths)
    if lists and not same:
        # rows of several lengths with two lists: trimesh's reader misreads them
        raise FormatError(
            "binary PLY faces with a second list property of varying length are not supported",
            code="format.unsupported_feature",
        )
    if same:
        idx = face.column(data, index_at, index_dt, k)
        # triangles as stored; quads as trimesh splits them; larger polygons as fans
        n = face.rows
        V = vertex.take(data, ["x", "y", "z"])
        if k == 3:
            F, of_triangle = idx, None
        elif k == 4:
            F = np.concatenate([idx[:, [0, 1, 2]], idx[:, [2, 3, 0]]])
            # a concave quad is split along its other diagonal (the one through its reflex
            # corner): the halves keep their places
            concave = np.flatnonzero(nonconvex(V, idx.reshape(-1), np.full(n, 4)))
            if concave.shape[0]:
                halves = triangulate(V, idx[concave].reshape(-1), np.full(concave.shape[0], 4))
                F[concave], F[n + concave] = halves[0::2], halves[1::2]
            of_triangle = np.tile(np.arange(n), 2)
        else:
            F = triangulate(V, idx.reshape(-1), np.full(n, k))
            of_triangle = np.repeat(np.arange(n), k - 2)
        fa = _attributes(data, face, skip=set())
        for name, c in lists:  # per-corner values of each face, e.g. texcoord (u v per corner)
            if c > 0:
                fa[name] = face.column(data, *face.props[f" {name}"], c)
        corner_attrs = corner_texcoords(fa, idx, F, of_triangle)
    elif elements[-1][0] == "face":
        # polygons of several sizes: rows of varying length, found by pointer jumping
        base = count_dt.itemsize + k * index_dt.itemsize  # the properties follow the list
        polys = _read_polygons(data, face.start, face.rows, count_dt, index_dt, face.row - base)
        if polys is None:
            return None
        corners, sizes, tails = polys
        V = vertex.take(data, ["x", "y", "z"])
        F = triangulate(V, corners, sizes)
        of_triangle = np.repeat(np.arange(face.rows), sizes - 2)
        # the properties as rows of their own, laid out as in the first row
        props = {n: (o - base, dt) for n, (o, dt) in face.props.items() if not n.startswith(" ")}
        fa = _attributes(tails, _Element(0, face.rows, face.row - base, props), skip=set())
        corner_attrs = {}
    else:
        return None  # trimesh refuses a body of another size, and so do we
    if of_triangle is not None:
        fa = {name: a[of_triangle] for name, a in fa.items()}
    fa = {FACE_RENAMES.get(name, name): a for name, a in fa.items()}
    return BinaryPly(V, F, _attributes(data, vertex, skip={"x", "y", "z"}), fa, corner_attrs)


def read_ascii(data: bytes) -> BinaryPly | None:
    """Read an ASCII PLY: what :func:`read_binary` gives for the same mesh in binary, or None
    when the header is not one :func:`_parse_header` reads (trimesh's path).

    The body is one array of numbers, walked element by element as the header declares: an
    element of scalar properties is one reshape; an element with lists (faces) is one reshape
    too when every row's lists are as long as the first row's, else walked row by row. Elements
    other than ``vertex`` and ``face`` are stepped over. The counts are the header's: a body
    that ends early (a half-written file, the commonest bad input) is refused as
    ``format.truncated`` with the element and the row it ends in, and numbers left over after
    the last element as ``format.ply_trailing_data``. Faces are split into triangles by
    :func:`polygons.triangulate`, each triangle with its polygon's properties."""
    header = _parse_header(data)
    if header is None or header[0] != "ascii":
        return None
    _, at, elements = header
    names = [e[0] for e in elements]
    if "face" not in names and {"tristrips", "tristrip"} & set(names):
        raise FormatError(
            "PLY triangle strips are not supported: export the mesh with a face element",
            code="format.ply_triangle_strips",
        )
    if "vertex" not in names or "face" not in names:
        return None
    try:
        vals = parse_floats(data[at:])
    except ValueError:
        raise FormatError(
            "the ASCII PLY body holds a word that is not a number",
            code="format.parse_error",
        ) from None
    pos = 0
    read: dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray], list]] = {}
    for name, count, props in elements:
        pos, scalars, lists = _ascii_element(vals, pos, name, count, props)
        read[name] = (scalars, lists, props)
    if pos != vals.shape[0]:
        raise FormatError(
            "the file holds more numbers than its header declares",
            code="format.ply_trailing_data",
            declared=pos,
            found=int(vals.shape[0]),
        )
    vcols, _, vprops = read["vertex"]
    if not {"x", "y", "z"} <= set(vcols):
        return None
    fcols, flists, fprops = read["face"]
    index_name = next((p[0] for p in fprops if len(p) == 3 and p[0] in _INDEX_NAMES), None)
    if index_name is None:
        return None
    corners, sizes = flists.pop(index_name)
    if bool((sizes < 3).any()):
        raise FormatError(
            "a face has fewer than three corners",
            code="format.ply_bad_face",
            face=int(np.flatnonzero(sizes < 3)[0]),
        )
    V = np.stack([vcols["x"], vcols["y"], vcols["z"]], axis=1)
    n_vertices = V.shape[0]
    if corners.shape[0] and (int(corners.min()) < 0 or int(corners.max()) >= n_vertices):
        F = corners[: 3 * (corners.shape[0] // 3)].reshape(-1, 3)  # the mesh's checks say why
        return BinaryPly(V, F, _ascii_attributes(vcols, {"x", "y", "z"}), {})
    F = triangulate(V, corners, sizes)
    of_triangle = np.repeat(np.arange(sizes.shape[0]), sizes - 2)
    fa = _ascii_attributes(fcols, set())
    dropped: dict[str, int] = {}
    k = int(sizes[0]) if sizes.shape[0] else 0
    same = sizes.shape[0] and bool((sizes == k).all())
    corner_attrs: dict[str, np.ndarray] = {}
    tc = flists.get("texcoord")
    if tc is not None and not same and bool((tc[1] == 2 * sizes).all()):
        # polygons of several sizes, u v for each of their corners
        C = triangulate_corners(V, corners, sizes)
        corner_attrs["uv"] = np.ascontiguousarray(tc[0].reshape(-1, 2)[C], dtype=np.float32)
        del flists["texcoord"]
    for name, (values, lengths) in flists.items():  # per-corner lists, e.g. texcoord
        c = int(lengths[0]) if lengths.shape[0] else 0
        if c > 0 and bool((lengths == c).all()):
            fa[name] = values.reshape(-1, c).astype(np.float32)
        elif values.shape[0]:  # rows of several lengths: no attribute holds them
            word = "texture coordinates" if name == "texcoord" else "face list properties"
            dropped[word] = dropped.get(word, 0) + 1
    polygons = corners.reshape(-1, k) if same else None
    corner_attrs = corner_attrs or corner_texcoords(fa, polygons, F, of_triangle)
    fa = {FACE_RENAMES.get(n, n): a[of_triangle] for n, a in fa.items()}
    return BinaryPly(V, F, _ascii_attributes(vcols, {"x", "y", "z"}), fa, corner_attrs, dropped)


def corner_texcoords(
    fa: dict[str, np.ndarray],
    polygons: np.ndarray | None,
    F: np.ndarray,
    of_triangle: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """MeshLab's per-corner face list ``texcoord`` (u v for each corner of a polygon), taken out
    of the face attributes ``fa`` (a row per polygon), as the corner attribute ``uv (m, 3, 2)``
    of the triangles ``F`` (``of_triangle``: each triangle's polygon, None when the polygons are
    the triangles; ``polygons (n, k)``: their corners). Empty when there is no such list, or it
    does not hold two numbers per corner (it then stays a face attribute)."""
    tc = fa.get("texcoord")
    if tc is None or polygons is None or tc.ndim != 2 or tc.shape[1] != 2 * polygons.shape[1]:
        return {}
    k = polygons.shape[1]
    of = np.arange(F.shape[0]) if of_triangle is None else np.asarray(of_triangle)
    if k == 3 and of_triangle is None:
        uv = tc.reshape(-1, 3, 2)
    else:
        # where each triangle corner sits on its polygon
        at = np.argmax(polygons[of][:, None, :] == np.asarray(F)[:, :, None], axis=2)
        uv = tc.reshape(-1, k, 2)[of[:, None], at]
    del fa["texcoord"]
    return {"uv": np.ascontiguousarray(uv, dtype=np.float32)}


def _ascii_attributes(cols: dict[str, np.ndarray], skip: set[str]) -> dict[str, np.ndarray]:
    kinds = {n: c.dtype.kind for n, c in cols.items()}
    out: dict[str, np.ndarray] = {}
    for attr, props, as_float32 in _plan(list(cols), kinds, skip):
        a = cols[props[0]] if len(props) == 1 else np.stack([cols[c] for c in props], 1)
        out[attr] = a.astype(np.float32) if as_float32 else np.ascontiguousarray(a)
    return out


def _ascii_element(
    vals: np.ndarray, pos: int, element: str, count: int, props: list[tuple[str, ...]]
) -> tuple[int, dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Read ``count`` rows of ``element`` from the numbers ``vals`` at ``pos``: ``(position after
    them, {scalar property: (count,) array of its type}, {list property: (values flat, lengths)})``.
    """
    n_vals = int(vals.shape[0])

    def truncated(row: int) -> FormatError:
        return FormatError(
            f"the file ends before the {count} {element} rows its header declares",
            code="format.truncated",
            element=element,
            declared=count,
            complete_rows=row,
        )

    is_list = [len(p) == 3 for p in props]
    # the layout of the first row: the offset of each property and each list's length
    offsets, lengths, width = [], [], 0
    for p, listed in zip(props, is_list, strict=True):
        offsets.append(width)
        if listed:
            if count == 0:
                lengths.append(0)
                continue
            if pos + width >= n_vals:
                raise truncated(0)
            c = vals[pos + width]
            if not (c >= 0 and c == int(c)):
                raise FormatError(
                    "a list length in the PLY body is not a whole number",
                    code="format.ply_bad_list",
                    element=element,
                    property=p[0],
                )
            lengths.append(int(c))
            width += 1 + int(c)
        else:
            lengths.append(0)
            width += 1
    uniform = False
    if count and pos + count * width <= n_vals:
        block = vals[pos : pos + count * width].reshape(count, width)
        uniform = all(
            bool((block[:, o] == c).all())
            for o, c, listed in zip(offsets, lengths, is_list, strict=True)
            if listed
        )
    scalars: dict[str, np.ndarray] = {}
    lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if uniform or count == 0:
        if count == 0:
            block = np.zeros((0, width))
        for p, o, c, listed in zip(props, offsets, lengths, is_list, strict=True):
            if listed:
                values = block[:, o + 1 : o + 1 + c].reshape(-1)
                lists[p[0]] = (_as_type(values, p[2], p[0]), np.full(count, c, dtype=np.int64))
            else:
                scalars[p[0]] = _as_type(block[:, o], p[1], p[0])
        return pos + count * width, scalars, lists
    if not any(is_list):
        raise truncated((n_vals - pos) // max(width, 1))
    # rows of varying length: walked one by one
    columns: list[list[float]] = [[] for _ in props]
    list_values: list[list[np.ndarray]] = [[] for _ in props]
    at = pos
    for row in range(count):
        for j, listed in enumerate(is_list):
            if at >= n_vals:
                raise truncated(row)
            if listed:
                c = vals[at]
                if not (c >= 0 and c == int(c)):
                    raise FormatError(
                        "a list length in the PLY body is not a whole number",
                        code="format.ply_bad_list",
                        element=element,
                        property=props[j][0],
                        row=row,
                    )
                c = int(c)
                if at + 1 + c > n_vals:
                    raise truncated(row)
                columns[j].append(c)
                list_values[j].append(vals[at + 1 : at + 1 + c])
                at += 1 + c
            else:
                columns[j].append(vals[at])
                at += 1
    for j, (p, listed) in enumerate(zip(props, is_list, strict=True)):
        if listed:
            flat = np.concatenate(list_values[j]) if list_values[j] else np.zeros(0)
            lists[p[0]] = (_as_type(flat, p[2], p[0]), np.asarray(columns[j], dtype=np.int64))
        else:
            scalars[p[0]] = _as_type(np.asarray(columns[j], dtype=np.float64), p[1], p[0])
    return at, scalars, lists


def _as_type(values: np.ndarray, dtype: str, name: str) -> np.ndarray:
    """``values`` (float64 read from text) as the property's type; integers must be whole and
    in range."""
    dt = np.dtype(dtype).newbyteorder("=")
    if dt.kind == "f":
        return values.astype(dt)
    info = np.iinfo(dt)
    if values.size and (
        not bool((values == np.floor(values)).all())
        or float(values.min()) < info.min
        or float(values.max()) > info.max
    ):
        raise FormatError(
            "a value in the PLY body does not fit its integer property",
            code="format.ply_bad_value",
            property=name,
            type=dtype,
        )
    return values.astype(dt if name not in _INDEX_NAMES else np.int64)


#: bytes of a polygon face element searched for row starts at a time (bounds the memory the
#: search takes to some 30 bytes per byte of window)
_ROW_WINDOW = 1 << 22


def _read_polygons(
    data: bytes, start: int, rows: int, count_dt: np.dtype, index_dt: np.dtype, rest: int
) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """The polygons of a face element that runs from ``start`` to the end of ``data``, its rows
    ``count, count indices, rest bytes``: ``(corners (n_corners,) int64, sizes (rows,), the rest
    bytes of every row one after the other)``, or None when the rows do not end exactly at the
    end of the data.

    A row's start depends on every count before it. Without a loop over rows: in a window of
    bytes, every position ``p`` gets the position its row would end at if a row started there
    (its count read at ``p``), and the chain from the window's first row is followed by pointer
    doubling (after round ``r`` the first ``2^r`` starts are known); the next window begins where
    the last row found ends."""
    c, isz = count_dt.itemsize, index_dt.itemsize
    body = np.frombuffer(data, dtype=np.uint8, offset=start)
    size = int(body.shape[0])
    found: list[np.ndarray] = []
    at = 0
    while at < size:
        window = body[at : at + _ROW_WINDOW + c - 1]
        n = min(_ROW_WINDOW, size - at)
        count = _counts_at_every_byte(window, n, count_dt)
        end = np.arange(n, dtype=np.int64) + c + count * isz + rest  # relative to `at`
        jump = np.minimum(end, n)  # n: the chain leaves the window
        jump = np.concatenate([jump, [n]])
        reached = np.zeros(n + 1, dtype=bool)
        reached[0] = True
        while not reached[n]:
            reached[jump[reached]] = True
            jump = jump[jump]
        starts = np.flatnonzero(reached[:n])
        found.append(starts + at)
        at += int(end[starts[-1]])
        if sum(f.shape[0] for f in found) > rows:
            return None
    starts = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    if at != size or starts.shape[0] != rows:
        return None
    sizes = body[starts].astype(np.int64) if c == 1 else _counts_at(body, starts, count_dt)
    if bool((sizes < 3).any()):
        return None
    n_corners = int(sizes.sum())
    j = np.arange(n_corners, dtype=np.int64) - np.repeat(start_of(sizes), sizes)
    corner_at = np.repeat(starts, sizes) + c + isz * j
    raw = np.ascontiguousarray(body[corner_at[:, None] + np.arange(isz)])
    corners = raw.view(index_dt).reshape(-1).astype(np.int64)
    tail_at = starts + c + isz * sizes
    tails = np.ascontiguousarray(body[tail_at[:, None] + np.arange(rest)]).tobytes()
    return corners, sizes, tails


def _counts_at_every_byte(window: np.ndarray, n: int, count_dt: np.dtype) -> np.ndarray:
    """The list count a row starting at each of the first ``n`` bytes of ``window`` would have,
    as int64 (negative counts read as large unsigned ones: they run past the end)."""
    c = count_dt.itemsize
    if c == 1:
        return window[:n].astype(np.int64)
    padded = np.zeros(n + c - 1, dtype=np.int64)
    padded[: window.shape[0]] = window
    little = count_dt.byteorder in ("<", "=", "|")
    count = np.zeros(n, dtype=np.int64)
    for byte in range(c):
        shift = byte if little else c - 1 - byte
        count |= padded[byte : byte + n] << (8 * shift)
    return count


def _counts_at(body: np.ndarray, starts: np.ndarray, count_dt: np.dtype) -> np.ndarray:
    raw = np.ascontiguousarray(body[starts[:, None] + np.arange(count_dt.itemsize)])
    return raw.view(count_dt).reshape(-1).astype(np.int64)


def _attributes(data: bytes, element: _Element, skip: set[str]) -> dict[str, np.ndarray]:
    names = [n for n in element.props if not n.startswith(" ")]
    kinds: dict[str, str] = {n: element.props[n][1].kind for n in names}
    out: dict[str, np.ndarray] = {}
    for attr, props, as_float32 in _plan(names, kinds, skip):
        a = element.take(data, props)
        out[attr] = a.astype(np.float32) if as_float32 else a
    return out


def _parse_header(
    data: bytes,
) -> tuple[str, int, list[tuple[str, int, list[tuple[str, ...]]]]] | None:
    """``(byte order, body start, [(element, count, [(name, type) or (name, count type, index
    type)]...])`` of a PLY header written the usual way, or None. The byte order is ``<`` or
    ``>``, or ``ascii`` for a text body."""
    end = _end_header(data)
    nl = data.find(b"\n", end)
    if end < 0 or nl < 0 or data[end:nl].strip() != b"end_header" or data[end - 1 : end] != b"\n":
        return None
    lines = [ln.split() for ln in data[:end].decode("ascii", "replace").splitlines()]
    lines = [t for t in lines if t]
    if len(lines) < 2 or lines[0] != ["ply"] or len(lines[1]) != 3 or lines[1][0] != "format":
        return None
    endian = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": "ascii"}.get(
        lines[1][1]
    )
    if endian is None:
        return None
    elements: list[tuple[str, int, list[tuple[str, ...]]]] = []
    for t in lines[2:]:
        if t[0] in ("comment", "obj_info"):
            continue
        if t[0] == "element" and len(t) == 3 and t[2].isdigit():
            elements.append((t[1], int(t[2]), []))
        elif t[0] == "property" and elements and len(t) == 3 and t[1] in _READ_TYPES:
            elements[-1][2].append((t[2], _READ_TYPES[t[1]]))
        elif (
            t[0] == "property"
            and elements
            and len(t) == 5
            and t[1] == "list"
            and t[2] in _READ_TYPES
            and t[3] in _READ_TYPES
        ):
            elements[-1][2].append((t[4], _READ_TYPES[t[2]], _READ_TYPES[t[3]]))
        else:
            return None
    for _, _, props in elements:
        names = [p[0] for p in props]
        if not props or len(set(names)) != len(names):
            return None
    return endian, nl + 1, elements


def extra_vertex_properties(raw: Any) -> dict[str, np.ndarray]:
    """Attributes from the vertex properties trimesh leaves in ``metadata['_ply_raw']``: the
    inverse of :func:`_columns` (``nx ny nz`` → ``vertex_normals``, ``name_0..`` → vectors)."""
    cols = _element_columns(raw, "vertex")
    return _gather(cols, skip={"x", "y", "z"}) if cols else {}


def extra_face_properties(raw: Any) -> dict[str, np.ndarray]:
    cols = _element_columns(raw, "face")
    if not cols:
        return {}
    out = _gather(cols, skip={"vertex_indices", "vertex_index"})
    return {FACE_RENAMES.get(k, k): v for k, v in out.items()}


def _element_columns(raw: Any, element: str) -> dict[str, np.ndarray]:
    """One array per property of ``element``. trimesh stores a binary element as a structured
    array, an ASCII one as a dict of ``(n, 1)`` columns; both become ``{name: (n,) array}``
    (list properties keep their second axis)."""
    try:
        data = raw[element]["data"]
    except (KeyError, TypeError):
        return {}
    if isinstance(data, dict):
        cols = {}
        for name, a in data.items():
            a = np.asarray(a)
            cols[name] = a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a
        return cols
    names = getattr(getattr(data, "dtype", None), "names", None) or ()
    return {name: np.asarray(data[name]) for name in names}


def _gather(cols: dict[str, np.ndarray], skip: set[str]) -> dict[str, np.ndarray]:
    kinds: dict[str, str] = {n: (c.dtype.kind if c.ndim == 1 else "") for n, c in cols.items()}
    out: dict[str, np.ndarray] = {}
    for attr, props, as_float32 in _plan(list(cols), kinds, skip):
        if len(props) == 1:
            out[attr] = np.ascontiguousarray(cols[props[0]])
        else:
            out[attr] = np.stack([cols[c] for c in props], 1)
        if as_float32:
            out[attr] = out[attr].astype(np.float32)
    return out


def _plan(
    names: list[str], kinds: dict[str, str], skip: set[str]
) -> list[tuple[str, list[str], bool]]:
    """Which attribute the properties ``names`` become, the inverse of :func:`_blocks`:
    ``(attribute, properties, as float32)`` in order, one property for a scalar attribute,
    several (stacked in that order) for a vector. ``kinds`` is each property's dtype kind, empty
    for a list property (those are left out, as are properties in ``skip``)."""
    plan: list[tuple[str, list[str], bool]] = []
    if {"nx", "ny", "nz"} <= set(names):
        plan.append(("vertex_normals", ["nx", "ny", "nz"], True))
        skip = skip | {"nx", "ny", "nz"}
    rgb: list[str] = [c for c in ("red", "green", "blue", "alpha") if c in names]
    if len(rgb) >= 3:
        plan.append(("vertex_colors", rgb, False))
        skip = skip | set(rgb)
    vectors: dict[str, list[str]] = {}
    for n in names:
        if n in skip or kinds[n] not in ("i", "u", "f"):
            continue
        base, _, k = n.rpartition("_")
        if base and k.isdigit():
            vectors.setdefault(base, []).append(n)
        else:
            plan.append((n, [n], False))
    for base, group in vectors.items():
        group.sort(key=lambda c: int(c.rpartition("_")[2]))
        if [int(c.rpartition("_")[2]) for c in group] == list(range(len(group))) and len(group) > 1:
            plan.append((base, group, False))
        else:
            plan.extend((c, [c], False) for c in group)
    return plan
