"""Array code shared by the refinement and dual operations, written once for NumPy and CuPy.

Polygon meshes of one degree ``d`` (triangles or quads) as ``(m, d)`` int64 arrays; edges by
key-sort of the sides (as ``topology`` does for triangles); vertex attributes stacked into one
float64 matrix so that every attribute is interpolated by the same gathers and scatters.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ..graph import compact_groups
from ..mesh import TriMesh


def poly_edges(xp: ModuleType, P: Any, n: int) -> tuple[Any, Any, Any]:
    """``(edge_of_side (m*d,), EV (E, 2) int64 min first, faces_per_edge (E,))`` of the polygon
    mesh ``P``: side ``k`` of face ``f`` (flat ``d * f + k``) runs from ``P[f, k]`` to
    ``P[f, (k + 1) % d]``."""
    d = int(P.shape[1])
    a = P.ravel()
    b = P[:, [(k + 1) % d for k in range(d)]].ravel()
    lo, hi = xp.minimum(a, b), xp.maximum(a, b)
    eos, first = compact_groups(xp, lo * n + hi)
    EV = xp.stack([lo[first], hi[first]], axis=1)
    efc = xp.bincount(eos, minlength=int(first.shape[0]))
    return eos, EV, efc


def stack_vertex_attrs(mesh: TriMesh) -> tuple[Any, list[tuple[str, tuple[int, ...], Any]]]:
    """All vertex attributes side by side as one ``(n, k)`` float64 matrix (``None`` when there
    are none) and what :func:`unstack_vertex_attrs` needs to split them again."""
    xp = mesh.xp
    cols, layout = [], []
    for name, a in mesh.vertex_attrs.items():
        cols.append(a.reshape(a.shape[0], -1).astype(xp.float64))
        layout.append((name, tuple(a.shape[1:]), a.dtype))
    if not cols:
        return None, layout
    return xp.concatenate(cols, axis=1), layout


def unstack_vertex_attrs(
    xp: ModuleType, A: Any, layout: list[tuple[str, tuple[int, ...], Any]]
) -> dict[str, Any]:
    """Inverse of :func:`stack_vertex_attrs`, each attribute back in its own dtype (integer
    attributes are rounded to the nearest value, booleans are true where the mean is nonzero)."""
    out: dict[str, Any] = {}
    col = 0
    for name, shape, dtype in layout:
        width = 1
        for s in shape:
            width *= s
        a = A[:, col : col + width]
        col += width
        if np.dtype(dtype).kind in "iu":
            a = xp.rint(a)
        out[name] = a.reshape((A.shape[0],) + shape).astype(dtype)
    return out
