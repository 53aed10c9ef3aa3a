"""Scalar volumes for ``marching_cubes``: ``.npy`` arrays, NRRD files and raw sample dumps.

Each becomes the faceless one-vertex mesh that carries a volume through the pipeline
(:func:`workers.engine.marching_cubes.volume_mesh`): the grid ``S[i, j, k]`` and, when the file
says where its samples lie (NRRD), the position of sample ``(0, 0, 0)`` and the distance between
samples along each axis.

- ``.npy``: a 3-D numeric array (NumPy's own reader, no pickles).
- NRRD (``NRRD0001`` .. ``NRRD0005``, our own reader of the text header): ``type``, ``dimension:
  3``, ``sizes``, ``endian`` (multi-byte types), ``encoding`` ``raw`` or ``gzip``; ``space
  directions`` (axis-aligned: one non-zero component per axis; a negative step is turned
  around by flipping that axis) or ``spacings`` give the spacing, ``space origin`` the origin.
  The first axis varies fastest, so ``sizes: nx ny nz`` reads as ``S[i, j, k]``. Detached data
  (``data file``), ``line skip``/``byte skip``, block types and other encodings are refused with
  their own codes rather than guessed around.
- raw (``.raw``): bare samples; shape, dtype, order (``C``: last index fastest, ``F``: first)
  and byte order come from the job's field spec (:class:`RawLayout`).

Memory stays bounded: sizes are checked against :data:`MAX_VOLUME_SIDE` and the bytes the header
declares against the bytes present (raw) or allowed (gzip inflates to at most the declared size)
before any array is allocated.
"""

from __future__ import annotations

import io
import re
import zlib
from typing import Any, NamedTuple

import numpy as np

from ..errors import FormatError
from ..mesh import TriMesh

#: largest volume side accepted from an upload (marching_cubes' own fields go to 512)
MAX_VOLUME_SIDE = 1024

RAW_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64")


class RawLayout(NamedTuple):
    """How the samples of a ``.raw`` file are laid out."""

    shape: tuple[int, int, int]
    dtype: str  # one of RAW_DTYPES
    order: str = "C"  # "C": last index varies fastest; "F": first
    endian: str = "little"


def read_npy(data: bytes) -> TriMesh:
    """A volume from ``.npy`` bytes (a 3-D numeric array). The header's shape is checked against
    the file's size before anything is allocated."""
    try:
        f = io.BytesIO(data)
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f".npy format version {version} is not supported")
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read_header(f)
        if int(np.prod(shape, dtype=object)) * dtype.itemsize > len(data) - f.tell():
            raise FormatError(
                "header declares more data than the file holds",
                code="format.count_exceeds_size",
                shape=list(shape)[:8],
                file_bytes=len(data),
            )
        a = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise FormatError(
            "not a readable .npy array", code="format.invalid", reason=str(exc)
        ) from None
    if a.ndim != 3 or a.dtype.kind not in "biuf":
        raise FormatError(
            "a volume must be a 3-D numeric array",
            code="format.bad_volume",
            shape=list(a.shape),
            dtype=str(a.dtype),
        )
    return _volume(a)


def read_raw(data: bytes, layout: RawLayout | None) -> TriMesh:
    """A volume from bare samples laid out as ``layout`` says (from the field spec)."""
    if layout is None:
        raise FormatError(
            "a .raw volume needs its layout in the field spec: "
            '{"type": "volume", "shape": [nx, ny, nz], "dtype": "uint8"}',
            code="format.raw_needs_layout",
        )
    shape = tuple(int(s) for s in layout.shape)
    _check_sides(shape)
    dt = np.dtype(layout.dtype).newbyteorder("<" if layout.endian == "little" else ">")
    expected = int(np.prod(shape)) * dt.itemsize
    if len(data) != expected:
        raise FormatError(
            "raw volume size does not match its shape and dtype",
            code="format.raw_size_mismatch",
            shape=list(shape),
            dtype=layout.dtype,
            expected_bytes=expected,
            file_bytes=len(data),
        )
    a = np.frombuffer(data, dtype=dt).reshape(shape, order="F" if layout.order == "F" else "C")
    return _volume(a)


# ----------------------------------------------------------------------------- NRRD
_NRRD_TYPES = {
    "int8": ("signed char", "int8", "int8_t"),
    "uint8": ("uchar", "unsigned char", "uint8", "uint8_t"),
    "int16": ("short", "short int", "signed short", "signed short int", "int16", "int16_t"),
    "uint16": ("ushort", "unsigned short", "unsigned short int", "uint16", "uint16_t"),
    "int32": ("int", "signed int", "int32", "int32_t"),
    "uint32": ("uint", "unsigned int", "uint32", "uint32_t"),
    "int64": (
        "longlong",
        "long long",
        "long long int",
        "signed long long",
        "signed long long int",
        "int64",
        "int64_t",
    ),
    "uint64": ("ulonglong", "unsigned long long", "unsigned long long int", "uint64", "uint64_t"),
    "float32": ("float",),
    "float64": ("double",),
}
_TYPE_OF = {name: dt for dt, names in _NRRD_TYPES.items() for name in names}
_MAX_HEADER = 64 * 1024
_VECTOR = re.compile(r"\(([^()]*)\)|none")


def is_nrrd(head: bytes) -> bool:
    return re.match(rb"NRRD000[1-5]\r?\n", head) is not None


def read_nrrd(data: bytes, max_expanded: int) -> TriMesh:
    """A volume from an NRRD file with its data attached (see the module docstring)."""
    fields, body = _nrrd_header(data)
    if "data file" in fields or "datafile" in fields:
        raise FormatError(
            "NRRD with a detached data file: upload the data in the same file (.nrrd)",
            code="format.nrrd_detached",
        )
    for key in ("line skip", "lineskip", "byte skip", "byteskip"):
        if fields.get(key, "0").strip() != "0":
            raise FormatError(
                "NRRD line or byte skip is not supported", code="format.nrrd_unsupported", field=key
            )
    dtype_name = _TYPE_OF.get(fields.get("type", "").strip().lower())
    if dtype_name is None:
        raise FormatError(
            "NRRD type missing or not supported",
            code="format.nrrd_bad_header",
            type=fields.get("type", "")[:50],
        )
    if fields.get("dimension", "").strip() != "3":
        raise FormatError(
            "an NRRD volume must have dimension 3",
            code="format.nrrd_bad_header",
            dimension=fields.get("dimension", "")[:50],
        )
    try:
        sizes = tuple(int(s) for s in fields.get("sizes", "").split())
    except ValueError:
        sizes = ()
    if len(sizes) != 3:
        raise FormatError("NRRD sizes must be three integers", code="format.nrrd_bad_header")
    _check_sides(sizes)
    dt = np.dtype(dtype_name)
    if dt.itemsize > 1:
        endian = fields.get("endian", "").strip().lower()
        if endian not in ("little", "big"):
            raise FormatError(
                "NRRD endian must be little or big", code="format.nrrd_bad_header", endian=endian
            )
        dt = dt.newbyteorder("<" if endian == "little" else ">")
    expected = int(np.prod(sizes)) * dt.itemsize
    encoding = fields.get("encoding", "").strip().lower()
    if encoding == "raw":
        raw = data[body:]
    elif encoding in ("gzip", "gz"):
        if expected > max_expanded:
            raise FormatError(
                "volume expands beyond the limit",
                code="format.archive_too_large",
                limit=max_expanded,
            )
        raw = _inflate(data[body:], expected)
    else:
        raise FormatError(
            "NRRD encoding must be raw or gzip",
            code="format.nrrd_unsupported",
            encoding=encoding[:50],
        )
    if len(raw) != expected:
        raise FormatError(
            "NRRD data size does not match its header",
            code="format.nrrd_size_mismatch",
            sizes=list(sizes),
            type=dtype_name,
            expected_bytes=expected,
            data_bytes=len(raw),
        )
    a = np.frombuffer(raw, dtype=dt).reshape(sizes, order="F")  # first axis fastest
    origin, spacing = _nrrd_space(fields)
    flip = [axis for axis in range(3) if spacing[axis] < 0]
    if flip:
        # a negative step: the same samples, indexed from the other end
        a = np.flip(a, axis=tuple(flip))
        for axis in flip:
            origin[axis] += (sizes[axis] - 1) * spacing[axis]
            spacing[axis] = -spacing[axis]
    return _volume(a, origin, spacing)


def _nrrd_header(data: bytes) -> tuple[dict[str, str], int]:
    """The header's fields (lowercase names; ``key:=value`` pairs and comments left out) and
    where the data begins (after the blank line ending the header)."""
    end = data.find(b"\n\n", 0, _MAX_HEADER)
    end_crlf = data.find(b"\r\n\r\n", 0, _MAX_HEADER)
    if end < 0 and end_crlf < 0:
        raise FormatError("NRRD header has no end", code="format.nrrd_bad_header")
    if end < 0 or 0 <= end_crlf < end:
        text, body = data[:end_crlf], end_crlf + 4
    else:
        text, body = data[:end], end + 2
    fields: dict[str, str] = {}
    for line in text.decode("ascii", "replace").splitlines()[1:]:
        if not line.strip() or line.startswith("#") or ":=" in line.split(": ", 1)[0]:
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            raise FormatError(
                "bad NRRD header line", code="format.nrrd_bad_header", line=line[:100]
            )
        fields[key.strip().lower()] = value
    return fields, body


def _nrrd_space(fields: dict[str, str]) -> tuple[list[float], list[float]]:
    """``(origin, spacing)`` from ``space origin`` and ``space directions`` or ``spacings``;
    0 and 1 where the header says nothing."""
    origin = [0.0, 0.0, 0.0]
    spacing = [1.0, 1.0, 1.0]
    try:
        if "space origin" in fields:
            vec = _VECTOR.findall(fields["space origin"])
            origin = [float(x) for x in vec[0].split(",")]
            if len(origin) != 3:
                raise ValueError
        if "space directions" in fields:
            dirs = [m.group(1) for m in _VECTOR.finditer(fields["space directions"])]
            if len(dirs) != 3 or any(d is None for d in dirs):
                raise ValueError
            D = np.array([[float(x) for x in d.split(",")] for d in dirs])
            if D.shape != (3, 3):
                raise ValueError
            if bool((np.count_nonzero(D, axis=1) != 1).any()) or not np.array_equal(
                np.abs(D) > 0, np.eye(3, dtype=bool)
            ):
                raise FormatError(
                    "NRRD space directions must follow the axes (no rotation or permutation)",
                    code="format.nrrd_unsupported",
                    space_directions=fields["space directions"][:200],
                )
            spacing = [float(D[i, i]) for i in range(3)]
        elif "spacings" in fields:
            spacing = [float(s) for s in fields["spacings"].split()]
            if len(spacing) != 3:
                raise ValueError
    except (ValueError, IndexError):
        raise FormatError("bad NRRD space fields", code="format.nrrd_bad_header") from None
    if not all(np.isfinite(origin)) or not all(np.isfinite(s) and s != 0 for s in spacing):
        raise FormatError("bad NRRD space fields", code="format.nrrd_bad_header")
    return origin, spacing


def _inflate(data: bytes, expected: int) -> bytes:
    """gzip (or zlib) data inflated to at most ``expected + 1`` bytes: a stream that would give
    more is cut there and then fails the size check."""
    try:
        d = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib header
        out = d.decompress(data, expected + 1)
    except zlib.error as exc:
        raise FormatError(
            "corrupt gzip data in NRRD", code="format.archive_corrupt", reason=str(exc)
        ) from None
    if len(out) <= expected and not d.eof:
        raise FormatError("truncated gzip data in NRRD", code="format.archive_corrupt")
    return out


# ----------------------------------------------------------------------------- shared
def _check_sides(shape: tuple[int, ...]) -> None:
    if len(shape) != 3 or min(shape) < 2 or max(shape) > MAX_VOLUME_SIDE:
        raise FormatError(
            f"each side of a volume must hold 2 to {MAX_VOLUME_SIDE} samples",
            code="format.bad_volume",
            shape=list(shape),
        )


def _volume(a: Any, origin: Any = None, spacing: Any = None) -> TriMesh:
    from ..marching_cubes import volume_mesh

    _check_sides(tuple(a.shape))
    a = np.ascontiguousarray(a, dtype=np.float64 if a.dtype == np.float64 else np.float32)
    if not bool(np.isfinite(a).all()):
        raise FormatError("volume samples must be finite", code="format.bad_volume")
    return volume_mesh(a, origin, spacing)
