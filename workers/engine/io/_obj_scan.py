"""The OBJ reader's fast path: the whole buffer scanned with NumPy, no Python per line.

The file is cut into blocks of whole lines (about 16 MB, so temporaries stay small). In each
block the line starts come from one search for newlines, leading and trailing whitespace is
stepped over for all lines at once, and the first bytes of each line say what it is (``v``,
``vt``, ``vn``, ``f``, ``usemtl``, or something we skip). The tags are blanked out, and all the
lines of one kind are gathered and converted by NumPy's C number parser in one call (one call per
kind, however the kinds alternate: MeshLab writes a ``vn`` line before every ``v`` line). For
``f`` lines each corner token (``a``, ``a/b``, ``a//c``, ``a/b/c``...) is classified from its
counts of numbers, slashes and double slashes, which locate its vertex, texture and normal
references among the numbers. ``usemtl`` lines are few: their names are taken one by one.

:func:`scan_arrays` returns None, and the caller reads the file line by line, whenever it cannot
vouch for giving the same result: a lone carriage return, ``v`` lines without three numbers each
on average (the line reader's own test) or a ``vn`` line without exactly three, ``vt`` lines not
all of two or all of three numbers, a token that is not a number, an unusual corner form, a
comment after a material name. It never raises.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._text import parse_floats, parse_ints, spaces

_BLOCK = 1 << 24
_V, _VN, _F, _VT, _USEMTL = 1, 2, 3, 4, 5
_SLASH = ord("/")
#: corner forms by (slashes, numbers, double slashes): where the normal and the texture
#: references are among the corner's numbers (-1: none)
_FORMS = {
    (0, 1, 0): (-1, -1),  # a
    (1, 1, 0): (-1, -1),  # a/
    (1, 2, 0): (-1, 1),  # a/b
    (2, 1, 1): (-1, -1),  # a//
    (2, 2, 0): (-1, 1),  # a/b/
    (2, 2, 1): (1, -1),  # a//c
    (2, 3, 0): (2, 1),  # a/b/c
}


#: the reference of a corner that has no texture (``vt``) or normal (``vn``) field
MISSING = np.iinfo(np.int64).min


class Scan(NamedTuple):
    """An OBJ file's numbers before the checks: what both scanners (vectorized, per line) give.

    ``V (n, 3) float64`` positions; ``k (m,)`` corner count of each ``f`` line and ``refs`` the
    first field of every corner (as written: 1-based, or negative); ``nv_at (m,)`` how many ``v``
    lines precede each ``f`` line. ``normals (p, 3) float64`` the ``vn`` lines (None when a ``vn``
    line is malformed), ``normal_refs`` the third field of every corner (:data:`MISSING` where
    a corner has none) and ``nn_at (m,)`` the ``vn`` lines preceding each ``f`` line; the same
    for texture coordinates: ``texcoords (q, 2) float64`` the first two numbers of each ``vt``
    line (None without ``vt`` lines, or when one is malformed), ``texcoord_refs`` the second
    field of every corner (likewise) and ``nt_at (m,)``. ``mtl_at (u,)`` is the count of ``f``
    lines before each ``usemtl`` line and ``mtl_names`` its name."""

    V: np.ndarray
    k: np.ndarray
    refs: np.ndarray
    nv_at: np.ndarray
    normals: np.ndarray | None
    normal_refs: np.ndarray | None
    nn_at: np.ndarray
    texcoords: np.ndarray | None
    texcoord_refs: np.ndarray | None
    nt_at: np.ndarray
    mtl_at: np.ndarray
    mtl_names: list[bytes]


class _Faces:
    """What the ``f`` lines gave so far."""

    def __init__(self) -> None:
        self.k: list[np.ndarray] = []
        self.refs: list[np.ndarray] = []
        self.normal_refs: list[np.ndarray] | None = []
        self.texcoord_refs: list[np.ndarray] | None = []
        self.nv_at: list[np.ndarray] = []
        self.nn_at: list[np.ndarray] = []
        self.nt_at: list[np.ndarray] = []
        self.mtl_at: list[int] = []
        self.mtl_names: list[bytes] = []


def scan_arrays(data: bytes) -> Scan | None:
    """:class:`Scan` of the OBJ bytes, or None (see the module docstring)."""
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None  # bytes.splitlines() also ends a line at a lone "\r"
    vertices: list[np.ndarray] = []
    normals: list[np.ndarray] = []
    texcoords: list[np.ndarray] = []
    faces = _Faces()
    counts = [0, 0, 0, 0]  # v, vn, vt and f lines so far
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _BLOCK)
        end = len(data) if end < 0 else end + 1
        block = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start).copy()
        if not _scan_block(block, vertices, normals, texcoords, faces, counts):
            return None
        start = end
    nrefs, trefs = faces.normal_refs, faces.texcoord_refs
    return Scan(
        np.concatenate(vertices) if vertices else np.zeros((0, 3)),
        _joined(faces.k),
        _joined(faces.refs),
        _joined(faces.nv_at),
        np.concatenate(normals) if normals else None,  # as the line scan: None without vn lines
        _joined(nrefs) if normals and nrefs is not None else None,
        _joined(faces.nn_at),
        np.concatenate(texcoords) if texcoords else None,
        _joined(trefs) if texcoords and trefs is not None else None,
        _joined(faces.nt_at),
        np.asarray(faces.mtl_at, dtype=np.int64),
        faces.mtl_names,
    )


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _scan_block(
    b: np.ndarray,
    vertices: list[np.ndarray],
    normals: list[np.ndarray],
    texcoords: list[np.ndarray],
    faces: _Faces,
    counts: list[int],
) -> bool:
    """Scan the lines of one block (a writable copy); False when the fast path must give up."""
    ends = np.flatnonzero(b == 10)
    if b[-1] != 10:
        ends = np.append(ends, b.shape[0])  # the last line has no newline
    starts = np.concatenate([[0], ends[:-1] + 1])
    first, last = _strip(b, starts, ends)
    kind = _kinds(b, first, last)
    # blank the tags: the lines of one kind are then plain numbers
    for k, width in ((_V, 1), (_VN, 2), (_F, 1), (_VT, 2)):
        at = first[kind == k]
        for j in range(width):
            b[at + j] = ord(" ")
    seen_v = np.cumsum(kind == _V) + counts[0]  # v lines up to and including each line
    seen_vn = np.cumsum(kind == _VN) + counts[1]
    seen_vt = np.cumsum(kind == _VT) + counts[2]
    seen_f = np.cumsum(kind == _F) + counts[3]
    for line in np.flatnonzero(kind == _USEMTL).tolist():
        name = b[first[line] + 6 : last[line]].tobytes().strip()
        if b"#" in name:
            return False  # a comment: the line reader cuts it off
        faces.mtl_at.append(int(seen_f[line]))
        faces.mtl_names.append(name)
    # each kind's lines gathered into one text: one parser call per kind, however the lines
    # of different kinds alternate (``v`` and ``vn`` lines often do, a pair per vertex)
    span = np.diff(np.append(starts, b.shape[0]))  # each line's bytes, its newline included
    for k in (_V, _VN, _VT, _F):
        lines = np.flatnonzero(kind == k)
        if not lines.shape[0]:
            continue
        text, line_starts, line_ends = _gathered(b, kind == k, lines, starts, ends, span)
        if k == _V:
            values = _floats(text, 3 * lines.shape[0])
            if values is None:
                return False
            vertices.append(values.reshape(-1, 3))
        elif k == _VN:
            values = _rows(text, line_starts, line_ends, (3,))
            if values is None:
                return False
            normals.append(values)
        elif k == _VT:
            values = _rows(text, line_starts, line_ends, (2, 3))  # all two or all three
            if values is None:
                return False
            texcoords.append(values[:, :2])
        elif not _faces(text, line_starts, line_ends, faces):
            return False
        else:
            faces.nv_at.append(seen_v[lines])
            faces.nn_at.append(seen_vn[lines])
            faces.nt_at.append(seen_vt[lines])
    counts[:] = [int(seen_v[-1]), int(seen_vn[-1]), int(seen_vt[-1]), int(seen_f[-1])]
    return True


def _gathered(
    b: np.ndarray,
    chosen: np.ndarray,
    lines: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    span: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The text of the ``lines`` (where ``chosen``), each with its newline, one after another in
    file order, and where each line starts and ends in it. One run of lines is a view of ``b``;
    lines scattered among others are copied out."""
    if int(lines[-1]) - int(lines[0]) + 1 == lines.shape[0]:
        lo = int(starts[lines[0]])
        return b[lo : int(ends[lines[-1]])], starts[lines] - lo, ends[lines] - lo
    text = b[np.repeat(chosen, span)]
    line_starts = np.cumsum(span[lines]) - span[lines]
    return text, line_starts, line_starts + (ends[lines] - starts[lines])


def _rows(
    text: np.ndarray, line_starts: np.ndarray, line_ends: np.ndarray, widths: tuple[int, ...]
) -> np.ndarray | None:
    """The numbers of lines (tags blanked) that all hold as many, ``(n, width)``, when that
    count is one of ``widths``; None otherwise (the line reader reads such lines otherwise, or
    gives up on them)."""
    space = spaces(text)
    word_at = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))
    per_line = np.searchsorted(word_at, line_ends) - np.searchsorted(word_at, line_starts)
    width = int(per_line[0])
    if width not in widths or not bool((per_line == width).all()):
        return None
    values = _floats(text, width * line_starts.shape[0])
    return None if values is None else values.reshape(-1, width)


def _strip(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last byte of each line without its surrounding whitespace."""
    first, last = starts.copy(), ends.copy()
    todo = np.flatnonzero(first < last)
    while todo.shape[0]:
        todo = todo[spaces(b[first[todo]])]
        first[todo] += 1
        todo = todo[first[todo] < last[todo]]
    todo = np.flatnonzero(first < last)
    while todo.shape[0]:
        todo = todo[spaces(b[last[todo] - 1])]
        last[todo] -= 1
        todo = todo[first[todo] < last[todo]]
    return first, last


def _kinds(b: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Each line's kind as the line-by-line reader sees it: ``v`` and ``f`` lines start with
    their tag and a space or tab, ``vn`` lines likewise; anything else is 0."""
    size = last - first
    top = b.shape[0] - 1
    c0, c1, c2 = (b[np.minimum(first + j, top)] for j in range(3))
    blank1 = (c1 == ord(" ")) | (c1 == ord("\t"))
    blank2 = (c2 == ord(" ")) | (c2 == ord("\t"))
    kind = np.zeros(first.shape[0], dtype=np.int8)
    kind[(size >= 3) & (c0 == ord("v")) & blank1] = _V
    kind[(size >= 4) & (c0 == ord("v")) & (c1 == ord("n")) & blank2] = _VN
    kind[(size >= 3) & (c0 == ord("f")) & blank1] = _F
    kind[(size >= 4) & (c0 == ord("v")) & (c1 == ord("t")) & blank2] = _VT
    usemtl = np.flatnonzero((size >= 7) & (c0 == ord("u")) & (c1 == ord("s")) & (c2 == ord("e")))
    for line in usemtl.tolist():
        at = int(first[line])
        if b[at : at + 6].tobytes() == b"usemtl" and bool(spaces(b[at + 6 : at + 7])[0]):
            kind[line] = _USEMTL
    return kind


def _floats(text: np.ndarray, expected: int) -> np.ndarray | None:
    try:
        values = parse_floats(text.tobytes())
    except ValueError:
        return None
    return values if values.shape[0] == expected else None


def _faces(text: np.ndarray, line_starts: np.ndarray, line_ends: np.ndarray, faces: _Faces) -> bool:
    """Read a run of ``f`` lines (tags blanked) into ``faces``; False when a corner has a form
    the line-by-line reader would read differently, or a field is not an integer."""
    space = spaces(text)
    corner_at = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))
    slash_at = np.flatnonzero(text == _SLASH)
    layout = _uniform_corners(text, space, corner_at, slash_at)
    if layout is None:
        layout = _corner_forms(text, space, corner_at, slash_at)
        if layout is None:
            return False
    text[slash_at] = ord(" ")
    try:
        values = parse_ints(text.tobytes())
    except ValueError:
        return False
    first, normal, texture, total = layout
    if values.shape[0] != total:
        return False
    faces.k.append(np.searchsorted(corner_at, line_ends) - np.searchsorted(corner_at, line_starts))
    faces.refs.append(values[first])
    c = first.shape[0]
    if faces.normal_refs is not None:
        faces.normal_refs.append(_field(values, normal, c))
    if faces.texcoord_refs is not None:
        faces.texcoord_refs.append(_field(values, texture, c))
    return True


def _field(values: np.ndarray, at: np.ndarray | None, c: int) -> np.ndarray:
    """The references at positions ``at`` of the run's numbers, :data:`MISSING` for the
    corners without the field (``at`` -1, or None: no corner of the run has it)."""
    if at is None:
        return np.full(c, MISSING, dtype=np.int64)
    return np.where(at >= 0, values[np.maximum(at, 0)].astype(np.int64), MISSING)


_Layout = tuple[np.ndarray, np.ndarray | None, np.ndarray | None, int]


def _uniform_corners(
    text: np.ndarray, space: np.ndarray, corner_at: np.ndarray, slash_at: np.ndarray
) -> _Layout | None:
    """Where each corner's vertex and normal references are among the run's numbers when every
    corner has one form, ``a``, ``a/b``, ``a//c`` or ``a/b/c`` (checked on the positions of the
    slashes alone); None otherwise. Returns (vertex positions, normal positions or None, texture
    positions or None, count of numbers)."""
    c = corner_at.shape[0]
    if slash_at.shape[0] == 0:
        return np.arange(c), None, None, c
    if text[corner_at[0]] == _SLASH:
        return None
    per = slash_at.shape[0] // c  # slashes per corner
    if slash_at.shape[0] != per * c or per not in (1, 2):
        return None
    nxt = np.append(corner_at[1:], text.shape[0])
    first, last = slash_at[::per], slash_at[per - 1 :: per]
    # each corner's slashes lie inside it, after its first character...
    if not bool(((corner_at < first) & (last < nxt)).all()):
        return None
    # ...and a field follows the last one
    tail = last + 1
    if int(tail[-1]) >= text.shape[0] or bool((space[tail] | (text[tail] == _SLASH)).any()):
        return None
    if per == 1:  # a/b
        return np.arange(0, 2 * c, 2), None, np.arange(1, 2 * c, 2), 2 * c
    if bool((last == first + 1).all()):  # a//c
        return np.arange(0, 2 * c, 2), np.arange(1, 2 * c, 2), None, 2 * c
    if bool((last > first + 1).all()):  # a/b/c
        return np.arange(0, 3 * c, 3), np.arange(2, 3 * c, 3), np.arange(1, 3 * c, 3), 3 * c
    return None


def _corner_forms(
    text: np.ndarray, space: np.ndarray, corner_at: np.ndarray, slash_at: np.ndarray
) -> _Layout | None:
    """:func:`_uniform_corners` for corners of mixed forms: each corner's counts of numbers,
    slashes and double slashes say which form it has."""
    if bool((text[corner_at] == _SLASH).any()):
        return None  # a corner without its vertex field
    slash = np.zeros(text.shape[0], dtype=bool)
    slash[slash_at] = True
    before_sep = np.concatenate([[True], space[:-1] | slash[:-1]])
    number = (~space & ~slash & before_sep).view(np.uint8)
    double = (slash & np.concatenate([slash[1:], [False]])).view(np.uint8)
    n_numbers = np.add.reduceat(number, corner_at, dtype=np.int64)
    n_slashes = np.add.reduceat(slash.view(np.uint8), corner_at, dtype=np.int64)
    n_doubles = np.add.reduceat(double, corner_at, dtype=np.int64)
    form = n_slashes * 100 + n_numbers * 10 + n_doubles
    where_normal = np.full(form.shape[0], -2, dtype=np.int64)
    where_texture = np.full(form.shape[0], -2, dtype=np.int64)
    for (s, n, d), (at_normal, at_texture) in _FORMS.items():
        this = form == s * 100 + n * 10 + d
        where_normal[this] = at_normal
        where_texture[this] = at_texture
    if bool((where_normal == -2).any()):
        return None
    first = np.cumsum(n_numbers) - n_numbers  # each corner's first number
    # a corner without the field: -1 (a corner of ``a`` or ``a//c`` beside ``a/b/c`` ones)
    normal = np.where(where_normal >= 0, first + where_normal, -1)
    texture = np.where(where_texture >= 0, first + where_texture, -1)
    return first, normal, texture, int(n_numbers.sum())
