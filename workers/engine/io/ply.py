"""PLY: header checks before reading, and the binary writer of our output contract.

Reading goes through trimesh once :func:`check_header` has made sure the counts the header declares
fit in the bytes that follow (a header declaring four billion vertices must not allocate them).
Writing is ours because the property names are part of our output contract: positions ``x y z``,
vertex normals ``nx ny nz``, colours ``red green blue alpha``, a scalar attribute as a property of
its own name, a k-vector attribute as ``name_0 .. name_{k-1}``; the same for face attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import FormatError

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


def check_header(data: bytes) -> None:
    """Raise :class:`FormatError` unless the header is well formed and its element counts can be
    backed by the file's size (each binary row has a minimum size; an ASCII row needs 2 bytes)."""
    end = data.find(b"end_header", 0, _MAX_HEADER)
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
) -> bytes:
    """Binary little-endian PLY with attributes as properties."""
    vcols: list[tuple[str, np.ndarray]] = [("x", V[:, 0]), ("y", V[:, 1]), ("z", V[:, 2])]
    vcols += _columns(vertex_attrs)
    fcols = _columns(face_attrs)
    _check_names(vcols, "vertex", taken=set())
    _check_names(fcols, "face", taken={"vertex_indices"})
    header = [
        "ply",
        "format binary_little_endian 1.0",
        "comment written by tessera",
        f"element vertex {V.shape[0]}",
    ]
    header += [f"property {_ply_type(a)} {n}" for n, a in vcols]
    header += [f"element face {F.shape[0]}", "property list uchar int vertex_indices"]
    header += [f"property {_ply_type(a)} {n}" for n, a in fcols]
    header.append("end_header")
    vrec = _records(vcols, V.shape[0])
    # record fields are numbered, so that no attribute name can clash with them
    fdt = [("n", "u1"), ("i", "<i4", (3,))] + [
        (f"a{k}", a.dtype.newbyteorder("<")) for k, (_, a) in enumerate(fcols)
    ]
    frec = np.zeros(F.shape[0], dtype=fdt)
    frec["n"] = 3
    frec["i"] = F
    for k, (_, a) in enumerate(fcols):
        frec[f"a{k}"] = a
    return ("\n".join(header) + "\n").encode() + vrec.tobytes() + frec.tobytes()


def _columns(attrs: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    cols: list[tuple[str, np.ndarray]] = []
    for name, a in attrs.items():
        a = _ply_dtype(np.asarray(a))
        if name in ("vertex_normals", "face_normals") and a.shape[1:] == (3,):
            cols += [("nx", a[:, 0]), ("ny", a[:, 1]), ("nz", a[:, 2])]
        elif name in ("vertex_colors", "face_colors") and a.shape[1:] in ((3,), (4,)):
            cols += [
                (c, a[:, k]) for k, c in enumerate(("red", "green", "blue", "alpha")[: a.shape[1]])
            ]
        elif a.ndim == 1:
            cols.append((name, a))
        else:
            flat = a.reshape(a.shape[0], -1)
            cols += [(f"{name}_{k}", flat[:, k]) for k in range(flat.shape[1])]
    return cols


def _check_names(cols: list[tuple[str, np.ndarray]], element: str, taken: set[str]) -> None:
    """Property names must be single ASCII words, distinct within their element."""
    seen = set(taken)
    for name, _ in cols:
        if not name or not name.isascii() or any(c.isspace() for c in name) or name in seen:
            raise FormatError(
                "attribute cannot be written as a PLY property",
                code="format.unsupported_attribute",
                element=element,
                property=name[:100],
                reason="name taken" if name in seen else "not a single ASCII word",
            )
        seen.add(name)


def _ply_dtype(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind == "i" and a.dtype.itemsize > 4:
        return a.astype(np.int32)
    if a.dtype.kind == "u" and a.dtype.itemsize > 4:
        return a.astype(np.uint32)
    return a


def _ply_type(a: np.ndarray) -> str:
    names = {
        "f4": "float",
        "f8": "double",
        "i1": "char",
        "u1": "uchar",
        "i2": "short",
        "u2": "ushort",
        "i4": "int",
        "u4": "uint",
    }
    key = f"{a.dtype.kind}{a.dtype.itemsize}"
    if key not in names:
        raise FormatError(
            "attribute type not writable to PLY",
            code="format.unsupported_attribute",
            dtype=str(a.dtype),
        )
    return names[key]


def _records(cols: list[tuple[str, np.ndarray]], n: int) -> np.ndarray:
    rec = np.zeros(n, dtype=[(f"a{k}", a.dtype.newbyteorder("<")) for k, (_, a) in enumerate(cols)])
    for k, (_, a) in enumerate(cols):
        rec[f"a{k}"] = a
    return rec


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
    renames = {"vertex_normals": "face_normals", "vertex_colors": "face_colors"}
    return {renames.get(k, k): v for k, v in out.items()}


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
    out: dict[str, np.ndarray] = {}
    names = list(cols)
    if {"nx", "ny", "nz"} <= set(names):
        out["vertex_normals"] = np.stack([cols[c] for c in ("nx", "ny", "nz")], 1).astype(
            np.float32
        )
        skip = skip | {"nx", "ny", "nz"}
    rgb = [c for c in ("red", "green", "blue", "alpha") if c in names]
    if len(rgb) >= 3:
        out["vertex_colors"] = np.stack([cols[c] for c in rgb], 1)
        skip = skip | set(rgb)
    vectors: dict[str, list[str]] = {}
    for n in names:
        if n in skip or cols[n].ndim != 1 or cols[n].dtype.kind not in "iuf":
            continue
        base, _, k = n.rpartition("_")
        if base and k.isdigit():
            vectors.setdefault(base, []).append(n)
        else:
            out[n] = np.ascontiguousarray(cols[n])
    for base, group in vectors.items():
        group.sort(key=lambda c: int(c.rpartition("_")[2]))
        if [int(c.rpartition("_")[2]) for c in group] == list(range(len(group))) and len(group) > 1:
            out[base] = np.stack([cols[c] for c in group], 1)
        else:
            out.update({c: np.ascontiguousarray(cols[c]) for c in group})
    return out
