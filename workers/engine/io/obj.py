"""Wavefront OBJ, read and written by us.

Why not trimesh here: its OBJ loader drops unused vertices and splits vertices where texture
coordinates or normals differ (even with ``process=False``), so a mesh with UVs arrives with
seams cut open and statistics describe the loader instead of the file. We read positions and
faces exactly as stored: every ``v`` line is a vertex, every ``f`` line a polygon (split into
triangles: fanned when convex, ear-clipped otherwise, ``polygons.triangulate``), and what the
file gives per polygon corner follows the triangles' corners: ``vt`` references become the
corner attribute ``uv`` (a corner without one, in a file where others have them, gets
``(0, 0)`` as a glTF primitive without the set does, and the read report counts its triangles),
and ``usemtl`` the face attribute
``material``. ``vn`` references become the ``vertex_normals`` attribute when they give every
vertex one normal (as our writer does, ``f a//a b//b c//c``, and most exporters), the corner
attribute ``normal`` only where they differ between the corners of a vertex (hard edges): one
normal per vertex is carried once, and the operations that recompute vertex normals stay in
charge of them. The material library (``mtllib``) is read by ``mtl.py`` when the archive the OBJ
came in holds it; no image is decoded.

Writing gives ``v`` lines, then ``vt`` and ``vn`` lines (each distinct value once) and faces
``f v/vt/vn`` when the mesh has corner ``uv`` and ``normal``, with ``usemtl`` lines where the
face attribute ``material`` changes and ``mtllib`` naming the library (``write_obj_asset``).

Speed: reading scans the whole buffer with NumPy (``_obj_scan.py``) and converts numbers with
NumPy's C parser, all the lines of one kind per call; the line-by-line reader here stays as the
reference for the files that scan declines. Writing formats numbers a block of lines at a time
with array arithmetic and digit tables (``_text.py``); the text is byte for byte what ``"%.9g"``
gives.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from ..errors import FormatError, MeshError
from ._obj_scan import MISSING, Scan, scan_arrays
from ._text import NUMBER_WIDTH, compact_rows, find, format_g9, format_ints
from .polygons import triangulate_corners

_ROWS = 1 << 15  # lines formatted per block
_SLASH_TAIL = re.compile(rb"/\S*")
_CONTINUATION = re.compile(rb"\\\r?\n")


class ObjMesh(NamedTuple):
    """What :func:`read_obj_mesh` read.

    ``V (n, 3) float64``, ``F (m, 3) int64`` (0-based triangles, polygons split as
    ``polygons.triangulate`` splits them), ``vertex_normals (n, 3) float32`` or None, and per
    triangle corner (each corner keeps the values of the polygon corner it came from): ``uv
    (m, 3, 2) float32`` from the ``vt`` references (None when no corner has one; ``(0, 0)``
    for a corner without one beside others with them, counted in ``faces_without_uv``),
    ``normal (m, 3, 3) float32`` from the ``vn`` references (likewise, a corner without one
    taking its triangle's normal, and only where they are not one normal per vertex: those are
    ``vertex_normals``, as before). ``material (m,)
    int32`` indexes ``material_names`` (the ``usemtl`` names in the order they first appear;
    faces before the first ``usemtl`` take a material named ``default`` added last), None
    without ``usemtl`` lines. ``libraries`` are the files the ``mtllib`` lines name."""

    V: np.ndarray
    F: np.ndarray
    vertex_normals: np.ndarray | None
    uv: np.ndarray | None
    normal: np.ndarray | None
    material: np.ndarray | None
    material_names: list[str]
    libraries: list[str]
    #: triangles with a corner that has no ``vt`` (given ``(0, 0)``) / no ``vn`` (given its
    #: triangle's normal) in a file where other corners have them
    faces_without_uv: int = 0
    faces_without_normal: int = 0


def read_obj(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Parse OBJ bytes. Returns ``V (n, 3) float64``, ``F (m, 3) int64`` (0-based) and the
    vertex normals ``(n, 3) float32`` or None (see the module docstring and
    :func:`read_obj_mesh`, which gives the corners' values and the materials too)."""
    got = read_obj_mesh(data)
    return got.V, got.F, got.vertex_normals


def read_obj_mesh(data: bytes) -> ObjMesh:
    """Parse OBJ bytes (see :class:`ObjMesh`).

    The whole buffer is scanned with NumPy (``_obj_scan.py``); a file that scan cannot vouch
    for (odd line endings, extra numbers on ``v`` lines, tokens that are not numbers...) is read
    line by line instead, which gives the same result and the errors for what is wrong."""
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark: would hide the first line
        data = data[3:]
    # a backslash at the end continues the line
    if find(data, b"\\\n", 0) >= 0 or find(data, b"\\\r\n", 0) >= 0:
        data = _CONTINUATION.sub(b" ", data)
    try:
        scan = scan_arrays(data) or _scan_lines(data)
        V = scan.V
        idx = _corner_indices(scan.refs, scan.k, scan.nv_at, V.shape[0])
    except (FormatError, MeshError) as exc:
        line = _first_bad_line(data, exc.code)
        if line is not None:
            exc.detail["line"] = line
        raise
    N = None
    if scan.normals is not None and scan.normals.shape[0] and idx.shape[0]:
        N = _vertex_normals(scan, idx, V.shape[0])
    C = triangulate_corners(V, idx, scan.k).reshape(-1, 3)  # each corner's polygon corner
    F = idx[C]
    uv, no_uv = None, 0
    got = _corner_values(scan.texcoords, scan.texcoord_refs, scan.nt_at, scan.k, C)
    if got is not None:  # a corner without vt: (0, 0), as a glTF primitive without the set
        uv, missing = got
        no_uv = int(missing.any(axis=1).sum())
    normal, no_normal = None, 0
    if N is None:  # normals that differ between the corners of a vertex: hard edges
        got = _corner_values(scan.normals, scan.normal_refs, scan.nn_at, scan.k, C)
        if got is not None:  # a corner without vn: its triangle's own normal
            normal, missing = got
            if missing.any():
                flat = _face_normals(V, F)
                normal[missing] = np.repeat(flat[:, None, :], 3, axis=1)[missing]
                no_normal = int(missing.any(axis=1).sum())
    material, names = _materials(scan)
    return ObjMesh(
        V,
        F,
        N,
        None if uv is None else uv.astype(np.float32),
        None if normal is None else normal.astype(np.float32),
        material,
        names,
        mtl_libraries(data),
        no_uv,
        no_normal,
    )


def _face_normals(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Unit normals of the triangles (+z for a degenerate one), float64."""
    n = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    ok = length[:, 0] > 0
    out = np.tile([0.0, 0.0, 1.0], (F.shape[0], 1))
    out[ok] = n[ok] / length[ok]
    return out


def _finite_float32(values: np.ndarray) -> bool:
    """Whether every value is finite as float32, as the mesh keeps it (``1e300`` is not: it
    would be kept as inf)."""
    with np.errstate(over="ignore"):
        return bool(np.isfinite(values.astype(np.float32)).all())


def _corner_values(
    values: np.ndarray | None,
    refs: np.ndarray | None,
    at: np.ndarray,
    k: np.ndarray,
    C: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(m, 3, d)``: the ``values`` rows the references ``refs`` (one per polygon corner,
    1-based, or negative counting back from the ``at`` rows read before each polygon) give the
    triangle corners ``C`` (zeros where a corner has no reference, :data:`MISSING`), and the
    mask ``(m, 3)`` of those corners; None without values or references (no corner has one),
    or when a reference is 0 or out of range or a value is not finite (the values are then not
    carried, and reported as dropped)."""
    if values is None or refs is None or refs.shape[0] != int(k.sum()) or not C.size:
        return None
    absent = refs == MISSING
    if bool(absent.all()):
        return None
    if bool((refs == 0).any()) or not _finite_float32(values):
        return None
    ridx = refs - 1
    if bool((refs < 0).any()):
        ridx = np.where(refs > 0, ridx, np.repeat(at, k) + refs)
    ridx = np.where(absent, 0, ridx)
    if int(ridx.min()) < 0 or int(ridx.max()) >= values.shape[0]:
        return None
    got = values[ridx[C]]
    missing = absent[C]
    got[missing] = 0.0
    return got, missing


def _materials(scan: Scan) -> tuple[np.ndarray | None, list[str]]:
    """Each triangle's material (index into the names returned), from the ``usemtl`` lines."""
    if not scan.mtl_names:
        return None, []
    text = [n.decode("utf-8", "replace") for n in scan.mtl_names]
    index = {n: i for i, n in enumerate(dict.fromkeys(text))}
    names = list(index)
    code = np.array([index[n] for n in text], dtype=np.int64)
    n_polygons = scan.k.shape[0]
    j = np.searchsorted(scan.mtl_at, np.arange(n_polygons), side="right") - 1
    of_polygon = np.where(j >= 0, code[np.maximum(j, 0)], -1)
    if bool((of_polygon < 0).any()):
        default = "default"
        while default in names:
            default += "_"
        of_polygon[of_polygon < 0] = len(names)
        names.append(default)
    return np.repeat(of_polygon, scan.k - 2).astype(np.int32), names


_MTLLIB = re.compile(rb"(?m)^[ \t]*mtllib[ \t]+([^\r\n#]*)")


def mtl_libraries(data: bytes) -> list[str]:
    """The material library files the ``mtllib`` lines name, in order, each once."""
    out: list[str] = []
    # plain searches for the word, the expression tried only at the start of its lines: run
    # over the whole text (``findall``) it costs a fifth of reading a small file
    at = find(data, b"mtllib", 5)
    while at >= 0:
        m = _MTLLIB.match(data, data.rfind(b"\n", 0, at) + 1)
        if m:
            text = m.group(1).decode("utf-8", "replace").strip()
            if text and text not in out:
                out.append(text)
        end = data.find(b"\n", at)
        at = -1 if end < 0 else find(data, b"mtllib", 5, end)
    return out


_VT = re.compile(rb"(?m)^[ \t]*vt[ \t]")
_VN = re.compile(rb"(?m)^[ \t]*vn[ \t]")
_USEMTL = re.compile(rb"(?m)^[ \t]*usemtl[ \t]+(\S+)")


def obj_dropped(
    data: bytes, has_normals: bool, has_uv: bool = False, has_materials: bool = False
) -> dict[str, int]:
    """What an OBJ holds that the mesh read from it does not carry: texture coordinates
    (``vt`` lines) that not every corner references, the materials its faces use (``usemtl``
    names) when they are not carried, and normals (``vn`` lines) that became neither vertex
    nor corner normals."""
    out: dict[str, int] = {}
    vt = 0 if has_uv or find(data, b"vt", 1) < 0 else len(_VT.findall(data))
    if vt:
        out["texture coordinates"] = vt
    materials: set[bytes] = set()
    if not has_materials and find(data, b"usemtl", 0) >= 0:
        materials = set(_USEMTL.findall(data))
    if materials:
        out["materials"] = len(materials)
    if not has_normals and find(data, b"vn", 1) >= 0:
        vn = len(_VN.findall(data))
        if vn:
            out["normals"] = vn
    return out


def _first_bad_line(data: bytes, code: str) -> int | None:
    """The 1-based number of the first line at fault for the error ``code`` (found again line
    by line, only once reading has failed), or None."""
    n_vertices = 0
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    for number, raw in enumerate(lines, 1):
        line = raw.split(b"#", 1)[0].strip()
        words = line.split()
        if not words:
            continue
        if words[0] == b"v":
            if code == "format.obj_bad_vertex" and not _numbers(words[1:4], 3, float):
                return number
            n_vertices += 1
        elif words[0] == b"f":
            refs = [_SLASH_TAIL.sub(b"", w) for w in words[1:]]
            if code == "format.obj_bad_face" and not _numbers(refs, 3, int):
                return number
            if code in ("mesh.index_out_of_range", "mesh.obj_zero_index") and _numbers(
                refs, 3, int
            ):
                ints = [int(r) for r in refs]
                if any(i == 0 for i in ints) and code == "mesh.obj_zero_index":
                    return number
                at = [i - 1 if i > 0 else n_vertices + i for i in ints]
                if code == "mesh.index_out_of_range" and any(not 0 <= a < n_vertices for a in at):
                    return number
    return None


def _numbers(words: list[bytes], at_least: int, kind: type) -> bool:
    """Whether ``words`` are at least ``at_least`` numbers of ``kind``."""
    if len(words) < at_least:
        return False
    try:
        [kind(w) for w in words]
    except ValueError:
        return False
    return True


def _scan_lines(data: bytes) -> Scan:
    """:class:`Scan` of the file, a line at a time (raises the format errors)."""
    vlines: list[bytes] = []
    nlines: list[bytes] = []
    tlines: list[bytes] = []
    flines: list[bytes] = []
    nv_at_face: list[int] = []
    nn_at_face: list[int] = []
    nt_at_face: list[int] = []
    mtl_at: list[int] = []
    mtl_names: list[bytes] = []
    for raw in data.splitlines():
        line = raw.split(b"#", 1)[0].strip()  # a comment runs to the end of its line
        if line[:2] == b"v " or line[:2] == b"v\t":
            vlines.append(line[2:])
        elif line[:2] == b"f " or line[:2] == b"f\t":
            flines.append(line[2:])
            nv_at_face.append(len(vlines))
            nn_at_face.append(len(nlines))
            nt_at_face.append(len(tlines))
        elif line[:3] == b"vn " or line[:3] == b"vn\t":
            nlines.append(line[3:])
        elif line[:3] == b"vt " or line[:3] == b"vt\t":
            tlines.append(line[3:])
        elif line[:7] == b"usemtl " or line[:7] == b"usemtl\t":
            mtl_at.append(len(flines))
            mtl_names.append(line[7:].strip())
    V = _parse_vertices(vlines)
    stripped = [_SLASH_TAIL.sub(b"", ln).split() for ln in flines]
    k = np.fromiter((len(t) for t in stripped), dtype=np.int64, count=len(stripped))
    _check_corner_counts(k)
    try:
        refs = np.array([t for ts in stripped for t in ts], dtype=np.int64)
    except ValueError:
        raise FormatError("face index is not an integer", code="format.obj_bad_face") from None
    normals: np.ndarray | None = None
    normal_refs: np.ndarray | None = None
    if nlines:
        rows = [ln.split()[:3] for ln in nlines]
        try:
            if all(len(r) == 3 for r in rows):
                normals = np.array(rows, dtype=np.float64)
        except ValueError:
            pass
        normal_refs = _field_refs(flines, 2, refs.shape[0])
    texcoords: np.ndarray | None = None
    texcoord_refs: np.ndarray | None = None
    if tlines:
        rows = [ln.split() for ln in tlines]
        try:
            if all(2 <= len(r) <= 3 for r in rows):
                texcoords = np.array([r[:2] for r in rows], dtype=np.float64)
        except ValueError:
            texcoords = None
        texcoord_refs = _field_refs(flines, 1, refs.shape[0])
    return Scan(
        V,
        k,
        refs,
        np.asarray(nv_at_face, dtype=np.int64),
        normals,
        normal_refs,
        np.asarray(nn_at_face, dtype=np.int64),
        texcoords,
        texcoord_refs,
        np.asarray(nt_at_face, dtype=np.int64),
        np.asarray(mtl_at, dtype=np.int64),
        mtl_names,
    )


def _parse_vertices(vlines: list[bytes]) -> np.ndarray:
    if not vlines:
        return np.zeros((0, 3))
    try:
        vals = np.array(b" ".join(vlines).split(), dtype=np.float64)
        if vals.shape[0] == 3 * len(vlines):
            return vals.reshape(-1, 3)
        # some lines carry w or colours: take the first three numbers of each
        rows = [ln.split()[:3] for ln in vlines]
        if any(len(r) < 3 for r in rows):
            raise FormatError(
                "vertex line with fewer than 3 coordinates", code="format.obj_bad_vertex"
            )
        return np.array(rows, dtype=np.float64)
    except ValueError:
        raise FormatError(
            "vertex coordinate is not a number", code="format.obj_bad_vertex"
        ) from None


def _check_corner_counts(k: np.ndarray) -> None:
    if k.shape[0] and int(k.min()) < 3:
        line = int(np.argmax(k < 3))
        raise FormatError(
            "face with fewer than 3 vertices", code="format.obj_bad_face", face_line=line
        )


def _corner_indices(
    refs: np.ndarray, k: np.ndarray, nv_at: np.ndarray, n_vertices: int
) -> np.ndarray:
    """0-based vertex index of every polygon corner."""
    _check_corner_counts(k)
    if not refs.shape[0]:
        return np.zeros(0, dtype=np.int64)
    if bool((refs == 0).any()):
        raise MeshError("OBJ face indices are 1-based; found index 0", code="mesh.obj_zero_index")
    # 1-based positive indices; negative ones count back from the vertices read so far
    idx = refs - 1
    if bool((refs < 0).any()):
        idx = np.where(refs > 0, idx, np.repeat(nv_at, k) + refs)
    if int(idx.min()) < 0 or int(idx.max()) >= n_vertices:
        raise MeshError(
            "face index out of range",
            code="mesh.index_out_of_range",
            min_index=int(idx.min()) + 1,
            max_index=int(idx.max()) + 1,
            n_vertices=n_vertices,
        )
    return idx


def _field_refs(flines: list[bytes], field: int, n: int) -> np.ndarray | None:
    """The ``field``-th slash-separated field (1: texture, 2: normal) of every corner of the
    ``f`` lines, :data:`MISSING` where a corner has none; None when one is not an integer or
    the corners are not the ``n`` the vertex fields gave."""
    out: list[int] = []
    try:
        for ln in flines:
            for token in ln.split():
                parts = token.split(b"/")
                text = parts[field] if len(parts) > field else b""
                out.append(int(text) if text else MISSING)
    except ValueError:
        return None
    return np.array(out, dtype=np.int64) if len(out) == n else None


def _vertex_normals(scan: Scan, idx: np.ndarray, n_vertices: int) -> np.ndarray | None:
    """One normal per vertex from the corners' ``vn`` references, or None when some corner has
    none, a reference or a ``vn`` line is malformed, or the corners of one vertex disagree."""
    normals, nidx = scan.normals, scan.normal_refs
    if normals is None or nidx is None or nidx.shape[0] != idx.shape[0]:
        return None
    if not _finite_float32(normals) or bool((nidx == 0).any()):
        return None
    if bool((nidx == MISSING).any()):  # some corner has none: corner normals, if any
        return None
    if bool((nidx < 0).any()):
        nidx = np.where(nidx > 0, nidx - 1, np.repeat(scan.nn_at, scan.k) + nidx)
    else:
        nidx = nidx - 1
    if bool((nidx < 0).any()) or bool((nidx >= normals.shape[0]).any()):
        return None
    if normals.shape[0] == n_vertices and np.array_equal(nidx, idx):
        # every corner uses its vertex's own normal (as our writer writes): they agree, and
        # the vn line of a vertex no face uses is still its normal
        return normals.astype(np.float32)
    corner = np.take(normals, nidx, axis=0)
    out = np.zeros((n_vertices, 3), dtype=np.float64)
    out[idx] = corner
    if not bool((np.take(out, idx, axis=0) == corner).all()):
        return None
    return out.astype(np.float32)


def write_obj(
    V: np.ndarray,
    F: np.ndarray,
    normals: Any | None = None,
    offsets: np.ndarray | None = None,
) -> bytes:
    """OBJ text with ``v`` lines, ``vn`` lines when normals are given (one per vertex, so faces
    read ``f a//a b//b c//c``), and 1-based faces: the triangles ``F (m, 3)``, or with
    ``offsets (n + 1,)`` the polygons ``F[offsets[p]:offsets[p + 1]]`` of the flat corner array
    ``F``. Numbers are written as ``"%.9g"`` writes them, formatted a block of rows at a time
    (see ``_text.py``)."""
    parts = number_lines(b"v", np.asarray(V))
    if normals is not None:
        parts += number_lines(b"vn", np.asarray(normals))
    if offsets is None:
        parts += _face_lines(np.asarray(F), with_normals=normals is not None)
    else:
        parts += polygon_lines(
            np.asarray(offsets), np.asarray(F), lead=b"f", base=1, with_normals=normals is not None
        )
    return b"".join([b"# written by tessera\n", *(p.data for p in parts)])


def number_lines(tag: bytes, a: np.ndarray) -> list[np.ndarray]:
    """``tag x y z`` lines (``x y z`` when ``tag`` is empty), one per row of ``a``, in blocks of
    text."""
    if a.shape[0] == 0:
        return []
    a = a.reshape(a.shape[0], -1)
    width = len(tag) + a.shape[1] * (1 + NUMBER_WIDTH) + 1
    out = []
    for s in range(0, a.shape[0], _ROWS):
        block = a[s : s + _ROWS]
        rows = np.empty((block.shape[0], width), dtype=np.uint8)
        rows[:, : len(tag)] = np.frombuffer(tag, dtype=np.uint8)
        for j in range(a.shape[1]):
            at = len(tag) + j * (1 + NUMBER_WIDTH)
            rows[:, at] = ord(" ") if tag or j else 0  # 0 bytes are left out
            format_g9(block[:, j], rows[:, at + 1 : at + 1 + NUMBER_WIDTH])
        rows[:, -1] = ord("\n")
        out.append(compact_rows(rows))
    return out


def _face_lines(F: np.ndarray, with_normals: bool) -> list[np.ndarray]:
    """``f a b c`` (or ``f a//a b//b c//c``) lines of the 0-based faces ``F``, 1-based."""
    if F.shape[0] == 0:
        return []
    lo, hi = int(F.min()), int(F.max())
    if hi - lo < 3 * F.shape[0]:
        # each index's text once, then gathered for every corner that uses it
        table, F = _tokens(np.arange(lo + 1, hi + 2)), F - lo
    else:
        table, F = _tokens(F.ravel().astype(np.int64) + 1), np.arange(F.size).reshape(F.shape)
    token = 8 * table.shape[1]
    corner = 1 + token + (2 + token if with_normals else 0)
    width = 1 + F.shape[1] * corner + 1
    out = []
    for s in range(0, F.shape[0], _ROWS):
        tokens = np.take(table, F[s : s + _ROWS], axis=0)  # (c, corners, words)
        rows = np.empty((tokens.shape[0], width), dtype=np.uint8)
        rows[:, 0] = ord("f")
        for j in range(F.shape[1]):
            at = 1 + j * corner
            rows[:, at] = ord(" ")
            rows[:, at + 1 : at + 1 + token].view(np.uint64)[...] = tokens[:, j]
            if with_normals:
                rows[:, at + 1 + token : at + 3 + token] = np.frombuffer(b"//", dtype=np.uint8)
                rows[:, at + 3 + token : at + 3 + 2 * token].view(np.uint64)[...] = tokens[:, j]
        rows[:, -1] = ord("\n")
        out.append(compact_rows(rows))
    return out


def polygon_lines(
    offsets: np.ndarray,
    corners: np.ndarray,
    *,
    lead: bytes | None,
    base: int,
    with_normals: bool = False,
) -> list[np.ndarray]:
    """One line per polygon, ``lead i j k ...`` (OBJ: ``f``, 1-based) or, when ``lead`` is None,
    the corner count first (OFF: ``4 i j k l``, 0-based): ``i = corner + base``, ``i//i`` with
    normals. Polygons ``p`` have the corners ``corners[offsets[p]:offsets[p + 1]]``.

    Polygons differ in size, so the text is built a corner at a time: each corner is one row
    holding `` i``, its polygon's lead only in the polygon's first row and the line feed only in
    its last, unused bytes 0 (dropped when the rows are compacted). Memory and time are linear
    in the corner count whatever the sizes."""
    sizes = np.diff(offsets)
    n_corners = int(corners.shape[0])
    if n_corners == 0:
        return []
    first = np.zeros(n_corners, dtype=bool)
    first[offsets[:-1][sizes > 0]] = True
    last = np.zeros(n_corners, dtype=bool)
    last[offsets[1:][sizes > 0] - 1] = True
    table, idx = _index_tokens(corners.astype(np.int64) + base)
    token = 8 * table.shape[1]
    if lead is None:
        lead_table = _tokens(sizes.astype(np.int64)).view(np.uint8)
        polygon = np.repeat(np.arange(sizes.shape[0]), sizes)
    else:
        lead_table = np.frombuffer(lead, dtype=np.uint8)[None, :]
        polygon = np.zeros(n_corners, dtype=np.int64)
    lw = lead_table.shape[1]
    corner = 1 + token + (2 + token if with_normals else 0)
    width = lw + corner + 1
    out = []
    for s in range(0, n_corners, _ROWS):
        tokens = np.take(table, idx[s : s + _ROWS], axis=0)  # (c, words)
        rows = np.zeros((tokens.shape[0], width), dtype=np.uint8)
        starts = np.flatnonzero(first[s : s + _ROWS])
        rows[starts, :lw] = lead_table[polygon[s + starts]]
        rows[:, lw] = ord(" ")
        rows[:, lw + 1 : lw + 1 + token].view(np.uint64)[...] = tokens
        if with_normals:
            at = lw + 1 + token
            rows[:, at : at + 2] = np.frombuffer(b"//", dtype=np.uint8)
            rows[:, at + 2 : at + 2 + token].view(np.uint64)[...] = tokens
        rows[last[s : s + _ROWS], -1] = ord("\n")
        out.append(compact_rows(rows))
    return out


def _index_tokens(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(table, idx)``: the text of every value is ``table[idx]`` (each distinct value in a
    dense range formatted once, else every value)."""
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < values.shape[0]:
        return _tokens(np.arange(lo, hi + 1)), values - lo
    return _tokens(values), np.arange(values.shape[0])


def _tokens(values: np.ndarray) -> np.ndarray:
    """Decimal text of integers as ``(n, words)`` uint64: right-aligned in ``8 * words`` bytes,
    0 bytes before the digits."""
    text = format_ints(values)  # (n, 13)
    used = int(np.flatnonzero(text.any(axis=0))[0])  # first column any value reaches
    words = -(-(text.shape[1] - used) // 8)
    padded = np.zeros((text.shape[0], 8 * words), dtype=np.uint8)
    padded[:, 8 * words - (text.shape[1] - used) :] = text[:, used:]
    return padded.view(np.uint64)


def write_obj_asset(
    V: np.ndarray,
    F: np.ndarray,
    *,
    uv: np.ndarray | None = None,
    normal: np.ndarray | None = None,
    vertex_normals: np.ndarray | None = None,
    material: np.ndarray | None = None,
    material_names: list[str] | None = None,
    mtllib: str | None = None,
) -> bytes:
    """OBJ text of the triangles ``F (m, 3)`` with what their corners carry: ``vt`` lines (each
    distinct ``uv (m, 3, 2)`` value once, in the order first used) and ``vn`` lines (the corner
    ``normal (m, 3, 3)`` values likewise, or one per vertex from ``vertex_normals`` when there
    are no corner normals or they are the vertex normals at every corner), faces ``f v/vt/vn``
    (``v/vt``, ``v//vn``); a ``usemtl`` line before each run of faces of one ``material`` (index
    into ``material_names``), faces kept in their order; ``mtllib`` naming the library first."""
    V, F = np.asarray(V), np.asarray(F, dtype=np.int64)
    parts: list[np.ndarray] = []
    head = b"# written by tessera\n"
    if mtllib:
        head += b"mtllib " + mtllib.encode() + b"\n"
    parts += number_lines(b"v", V)
    T = N = None
    if uv is not None:
        values, T = _distinct(np.asarray(uv, dtype=np.float64).reshape(-1, 2))
        parts += number_lines(b"vt", values)
        T = T.reshape(F.shape)
    if normal is not None and vertex_normals is not None:
        vn = np.asarray(vertex_normals)
        if vn.shape == (V.shape[0], 3) and np.array_equal(vn[F], np.asarray(normal)):
            normal = None  # the vertex normals at every corner: written as vertex normals
    if normal is not None:
        values, N = _distinct(np.asarray(normal, dtype=np.float64).reshape(-1, 3))
        parts += number_lines(b"vn", values)
        N = N.reshape(F.shape)
    elif vertex_normals is not None:
        parts += number_lines(b"vn", np.asarray(vertex_normals))
        N = F
    body = b"".join(p.data for p in parts)
    faces, lengths = _corner_face_lines(F, T, N)
    if material is None or not material_names or F.shape[0] == 0:
        return head + body + faces
    material = np.asarray(material)
    starts = np.flatnonzero(np.concatenate([[True], material[1:] != material[:-1]]))
    ends = np.append(starts[1:], material.shape[0])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    pieces = [head, body]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        m = int(material[s])
        name = material_names[m] if 0 <= m < len(material_names) else "default"
        pieces += [b"usemtl " + name.encode() + b"\n", faces[offsets[s] : offsets[e]]]
    return b"".join(pieces)


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``rows`` in the order they first appear, and each row's index among them
    (one lexicographic sort of the rows; several times faster than ``np.unique(axis=0)``)."""
    n = rows.shape[0]
    if n == 0:
        return rows, np.zeros(0, dtype=np.int64)
    order = np.lexsort(rows.T[::-1])  # stable: each group of equal rows starts at its first
    ranked = rows[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    first = order[new]  # where each distinct row first appears
    by_first = np.argsort(first, kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.shape[0])
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = rank[group]
    return rows[first[by_first]], inverse


def _corner_face_lines(
    F: np.ndarray, T: np.ndarray | None, N: np.ndarray | None
) -> tuple[bytes, np.ndarray]:
    """``f v/t/n ...`` lines (``v/t``, ``v//n``, ``v``) of the 0-based ``F``, ``T`` and ``N``
    ``(m, 3)``, 1-based, and each line's length in bytes."""
    if F.shape[0] == 0:
        return b"", np.zeros(0, dtype=np.int64)
    fields: list[tuple[bytes, np.ndarray, np.ndarray]] = []
    for sep, X in ((b" ", F), (b"/", T), (b"//" if T is None else b"/", N)):
        if X is not None:
            table, idx = _index_tokens(np.asarray(X, dtype=np.int64).ravel() + 1)
            fields.append((sep, table, idx.reshape(F.shape)))
    corner = sum(len(sep) + 8 * table.shape[1] for sep, table, _ in fields)
    width = 1 + F.shape[1] * corner + 1
    out, lengths = [], []
    for s in range(0, F.shape[0], _ROWS):
        n = min(_ROWS, F.shape[0] - s)
        rows = np.zeros((n, width), dtype=np.uint8)
        rows[:, 0] = ord("f")
        at = 1
        for j in range(F.shape[1]):
            for sep, table, idx in fields:
                rows[:, at : at + len(sep)] = np.frombuffer(sep, dtype=np.uint8)
                at += len(sep)
                token = 8 * table.shape[1]
                rows[:, at : at + token].view(np.uint64)[...] = np.take(
                    table, idx[s : s + n, j], axis=0
                )
                at += token
        rows[:, -1] = ord("\n")
        lengths.append(np.count_nonzero(rows, axis=1))
        out.append(compact_rows(rows).tobytes())
    return b"".join(out), np.concatenate(lengths)
