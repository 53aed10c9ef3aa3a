"""Numbers to text and back, whole arrays at a time, for the OBJ reader and writer.

Writing: every number is laid out in a fixed-width row of bytes in which a 0 byte means "no
character here"; a block of such rows (a vertex per row, say) is turned into text by dropping the
0 bytes (one boolean compress). :func:`format_g9` gives exactly what ``"%.9g" % x`` gives:

* ``x`` is split into 9 significant digits ``m`` and a decimal exponent ``e`` with float64
  arithmetic. For ``-4 <= e <= 8`` (fixed notation, the usual case for coordinates and normals)
  ``x * 10**(8 - e)`` uses an exact power of ten, so the product is rounded once and ``rint``
  rounds it to the nearest 9-digit integer, ties to even, as the printf family does.
* The digits are written four at a time from a table (with and without leading or trailing
  zeros), and the point only where a fraction digit is left.
* Values whose product lies within 1e-6 of a tie (where that one rounding could have gone the
  other way), non-finite values and values needing an exponent (``e < -4`` or ``e > 8``) are
  formatted by Python, one by one; in meshes they are rare.

Reading: :func:`parse_floats` and :func:`parse_ints` convert whitespace-separated tokens with
NumPy's C parser (``np.fromstring``, correctly rounded like ``float()``).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

#: exact powers of ten 10**0 .. 10**22 (float64 holds them exactly)
_POW10 = np.array([float(f"1e{k}") for k in range(23)])
#: 10**k for k = -6 .. 9, to place a value between two powers of ten
_DECADES = np.array([float(f"1e{k}") for k in range(-6, 10)])


@functools.cache
def _groups() -> np.ndarray:
    """Four-character pieces of numbers as little-endian uint32 (the bytes in order, 0 for no
    character), by ``group + kind``: kind ``_FULL`` all four digits, ``_LEAD`` without leading
    zeros (the first group of an integer part; 0 is written "0"), ``_TRAIL`` without trailing
    zeros (the last group of a fraction), ``_BLANK`` nothing."""
    full = [f"{g:04d}".encode() for g in range(10000)]
    lead = [f"{g:d}".encode().rjust(4, b"\0") for g in range(10000)]
    trail = [f"{g:04d}".rstrip("0").encode().ljust(4, b"\0") for g in range(10000)]
    blank = [b"\0" * 4] * 10000
    return np.frombuffer(b"".join(full + lead + trail + blank), dtype="<u4")


_FULL, _LEAD, _TRAIL, _BLANK = 0, 10000, 20000, 30000
#: bytes of one formatted number: sign, 12 integer digits, point, 12 fraction digits
NUMBER_WIDTH = 26
_LOG10_2 = 0.30102999566398120


def format_g9(x: np.ndarray, out: np.ndarray) -> None:
    """Write ``"%.9g" % v`` of every value of ``x`` (1-D) into the rows of ``out`` (uint8,
    ``(n, NUMBER_WIDTH)``, its last axis contiguous): the characters in order, 0 bytes between
    and after them."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    zero = a == 0
    fine = (a >= 1e-5) & (a < 1e9)  # candidates for fixed notation; excludes NaN and infinity
    a = np.where(fine, a, 1.0)
    # decimal exponent: from the binary one, then one comparison with the next power of ten
    binary = (a.view(np.int64) >> 52) - 1023
    e = np.floor(binary * _LOG10_2).astype(np.intp)
    e += a >= _DECADES[e + 7]
    r, m = _scaled(a, e)
    # rounding can carry into a tenth digit (and guard against a misplaced decade)
    for fix, step in ((m >= 1e9, 1), (m < 1e8, -1)):
        if fix.any():
            e[fix] += step
            r[fix], m[fix] = _scaled(a[fix], e[fix])
    slow = ~(fine | zero) | (e < -4) | (np.abs(np.abs(r - m) - 0.5) < 1e-6)
    slow &= ~zero
    m[zero] = 0
    e = np.clip(e, -4, 8)
    e[zero] = -1
    q = 8 - e  # digits after the point before trailing zeros are dropped
    scale = _POW10[q]
    integer = np.floor(m / scale)  # exact: see the module docstring
    fraction = (m - integer * scale) * _POW10[12 - q]  # the fraction's digits, as 12 digits
    # the integer part has e + 1 digits (one "0" when e < 0): its first group is known
    first = (11 - np.maximum(e, 0)) // 4
    f = _split(fraction)
    last = np.where(f[2] != 0, 2, np.where(f[1] != 0, 1, np.where(f[0] != 0, 0, -1)))
    out[:, 0] = np.where(np.signbit(x), ord("-"), 0)
    for j, g in enumerate(_split(integer)):
        kind = np.where(j < first, _BLANK, np.where(j == first, _LEAD, _FULL))
        out[:, 1 + 4 * j : 5 + 4 * j].view("<u4")[:, 0] = np.take(_groups(), g + kind)
    out[:, 13] = np.where(last >= 0, ord("."), 0)
    for j, g in enumerate(f):
        kind = np.where(j < last, _FULL, np.where(j == last, _TRAIL, _BLANK))
        out[:, 14 + 4 * j : 18 + 4 * j].view("<u4")[:, 0] = np.take(_groups(), g + kind)
    if slow.any():
        rows = np.flatnonzero(slow)
        text = b"".join((b"%.9g" % v).ljust(NUMBER_WIDTH, b"\0") for v in x[rows].tolist())
        out[rows] = np.frombuffer(text, dtype=np.uint8).reshape(-1, NUMBER_WIDTH)


def _scaled(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * 10**(8 - e)`` (an exact power of ten for ``-14 <= e <= 8``) and its nearest
    integer, ties to even."""
    r = a * _POW10[np.clip(8 - e, 0, 22)]
    return r, np.rint(r)


def _split(v: np.ndarray) -> list[np.ndarray]:
    """The whole numbers ``v`` (float64, below ``10**12``) as three base-10000 digits, most
    significant first, each an ``intp`` array."""
    high = np.floor(v / 1e8)
    rest = v - high * 1e8
    mid = np.floor(rest / 1e4)
    low = rest - mid * 1e4
    return [high.astype(np.intp), mid.astype(np.intp), low.astype(np.intp)]


def format_ints(v: np.ndarray) -> np.ndarray:
    """Decimal text of the integers ``v`` (1-D, below ``10**12`` in size): ``(n, 13)`` uint8,
    right-aligned, 0 bytes before."""
    v = np.asarray(v, dtype=np.int64)
    out = np.zeros((v.shape[0], 13), dtype=np.uint8)
    a = np.abs(v).astype(np.float64)
    digits = np.maximum(np.searchsorted(_POW10[:13], a, side="right"), 1)
    first = (12 - digits) // 4
    for j, g in enumerate(_split(a)):
        kind = np.where(j < first, _BLANK, np.where(j == first, _LEAD, _FULL))
        out[:, 1 + 4 * j : 5 + 4 * j].view("<u4")[:, 0] = np.take(_groups(), g + kind)
    neg = np.flatnonzero(v < 0)
    out[neg, 12 - digits[neg]] = ord("-")
    return out


def compact_rows(rows: np.ndarray) -> np.ndarray:
    """The bytes of ``rows`` (uint8, any shape) in order, 0 bytes left out, as a 1-D array."""
    flat = rows.reshape(-1)
    return np.compress(flat != 0, flat)  # several times faster than rows[rows != 0]


def parse_floats(text: bytes) -> np.ndarray:
    """Whitespace-separated numbers as float64. A token that is not one raises ValueError (or,
    in older NumPy, ends the array early): callers check the count too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.fromstring(text, dtype=np.float64, sep=" ")


def parse_ints(text: bytes) -> np.ndarray:
    """Whitespace-separated integers as int64, as :func:`parse_floats`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.fromstring(text, dtype=np.int64, sep=" ")


def spaces(text: np.ndarray) -> np.ndarray:
    """Where ``text`` (uint8) holds ASCII whitespace as ``bytes.split()`` knows it (space, tab,
    line feed, vertical tab, form feed, carriage return). Comparisons: several times faster
    than a lookup table indexed by the bytes."""
    return (text == 32) | ((text - np.uint8(9)) < 5)


def find(data: bytes, needle: bytes, rare: int, start: int = 0) -> int:
    """``data.find(needle, start)``, by ``memchr`` for the needle's byte at ``rare`` (one that is
    rare in the text) and a look at the bytes around each hit. CPython's search for a short
    needle whose first byte is common (``vt`` in an OBJ: every ``v`` line starts a candidate)
    runs at about 1 GB/s; this at memory speed, where the rare byte is rare: after 64 hits
    that were not the needle it leaves the rest to the plain search."""
    key = needle[rare : rare + 1]
    at = data.find(key, start + rare)
    for _ in range(64):
        if at < 0:
            return -1
        if data.startswith(needle, at - rare):
            return at - rare
        at = data.find(key, at + 1)
    return data.find(needle, max(start, at - rare)) if at >= 0 else -1
