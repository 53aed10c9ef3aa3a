"""Per-face geometry shared by the NumPy twins, computed in float64 (the reference precision)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def face_corners64(xp: ModuleType, V: Any, F: Any) -> tuple[Any, Any, Any]:
    V = V.astype(xp.float64)
    return V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]


def face_cross64(xp: ModuleType, V: Any, F: Any) -> Any:
    """(n_faces, 3) float64 ``(b - a) x (c - a)``: twice the area times the unit normal."""
    a, b, c = face_corners64(xp, V, F)
    return xp.cross(b - a, c - a)


def face_areas64(xp: ModuleType, V: Any, F: Any) -> Any:
    """(n_faces,) float64 triangle areas."""
    return 0.5 * xp.linalg.norm(face_cross64(xp, V, F), axis=1)


def unitize(xp: ModuleType, v: Any) -> Any:
    """Rows scaled to unit length; zero rows stay zero."""
    n = xp.linalg.norm(v, axis=1)
    return v / xp.where(n > 0, n, 1.0)[:, None]


def corner_angles64(xp: ModuleType, V: Any, F: Any) -> Any:
    """(n_faces, 3) float64 interior angle at each corner, ``atan2(|u x w|, u . w)``.

    The atan2 form stays accurate for angles near 0 and pi, where the law of cosines used in the
    angle-defect papers loses digits in ``arccos``. A corner with a zero-length side gets 0."""
    a, b, c = face_corners64(xp, V, F)
    out = []
    for p, q, r in ((a, b, c), (b, c, a), (c, a, b)):
        u, w = q - p, r - p
        ang = xp.arctan2(xp.linalg.norm(xp.cross(u, w), axis=1), (u * w).sum(axis=1))
        # a zero-length side has no angle (atan2 of signed zeros could say pi)
        degenerate = ((u * u).sum(axis=1) == 0) | ((w * w).sum(axis=1) == 0)
        out.append(xp.where(degenerate, 0.0, ang))
    return xp.stack(out, axis=1)


def scatter_rows(xp: ModuleType, idx: Any, values: Any, n: int) -> Any:
    """``out[idx[k]] += values[k]`` for (m,) indices and (m,) or (m, d) values; one bincount per
    column (much faster than ``ufunc.at``)."""
    if values.ndim == 1:
        return xp.bincount(idx, weights=values, minlength=n)
    return xp.stack(
        [xp.bincount(idx, weights=values[:, k], minlength=n) for k in range(values.shape[1])],
        axis=1,
    )
