"""The seam edges a dynamic operation keeps (:func:`workers.engine.corners.seam_edges`), checked
against its mesh and put in the forms the rounds read: sorted edge keys (as ``Surface.feature``)
and a per-vertex mask.

A seam edge is where the texture atlas (or the material) changes across the surface; an output
corner takes its value from the input chart its face lies in, so an operation that moved a seam
vertex, removed it, or flipped or collapsed a seam edge would make faces that straddle two
charts. The operations lock the seam vertices and keep the seam edges (split at midpoints, or a
seam line shortened by decimate); this module gives them what to lock, and lets a caller learn
where the seams lie in the result (:func:`recording_kept`): the output's charts are then the
faces joined across every other edge, with no guess from positions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any

from .. import corners
from ..errors import MeshError
from ..graph import unique
from ._edges import SHIFT, edge_keys, edge_lookup, edge_table

#: the lists :func:`recording_kept` opened (the innermost is written)
_KEPT: ContextVar[list[Any] | None] = ContextVar("tessera_kept_seams", default=None)


def seam_keys(xp: ModuleType, F: Any, n: int) -> Any:
    """Sorted unique int64 keys (``lo << 32 | hi``) of the running operation's seam edges, empty
    when there are none to keep. ``F (m, 3)`` int64 faces over ``n`` vertices.

    Raises :class:`~workers.engine.errors.MeshError` (``mesh.seam_edges_invalid``) when the
    seam edges are not vertex pairs of this mesh's edges: keeping seams the mesh does not have
    would keep nothing, silently."""
    edges = corners.seam_edges(xp)
    if edges is None:
        return xp.zeros(0, dtype=xp.int64)
    if edges.ndim != 2 or int(edges.shape[1]) != 2:
        raise MeshError(
            "seam edges must be (k, 2) vertex pairs",
            code="mesh.seam_edges_invalid",
            shape=[int(s) for s in edges.shape],
        )
    if edges.shape[0] == 0:
        return xp.zeros(0, dtype=xp.int64)
    edges = edges.astype(xp.int64)
    a, b = edges[:, 0], edges[:, 1]
    bad = (a < 0) | (b < 0) | (a >= n) | (b >= n) | (a == b)
    n_bad = int(bad.sum())
    if n_bad:
        raise MeshError(
            "seam edges name vertices the mesh does not have",
            code="mesh.seam_edges_invalid",
            invalid=n_bad,
            vertices=n,
        )
    keys = unique(xp, edge_keys(xp, a, b))
    found, _ = edge_lookup(xp, edge_table(xp, F).key, keys)
    missing = int((~found).sum())
    if missing:
        raise MeshError(
            "seam edges are not edges of the mesh",
            code="mesh.seam_edges_invalid",
            not_edges=missing,
            seam_edges=int(keys.shape[0]),
        )
    return keys


def key_vertices(xp: ModuleType, keys: Any, n: int) -> Any:
    """(n,) bool: the vertices of the edges ``keys``."""
    mask = xp.zeros(n, dtype=bool)
    if keys.shape[0]:
        mask[keys >> SHIFT] = True
        mask[keys & ((1 << SHIFT) - 1)] = True
    return mask


def keys_to_pairs(xp: ModuleType, keys: Any, renum: Any | None = None) -> Any:
    """``(k, 2)`` int64 vertex pairs, smaller first, of the sorted edge ``keys``; with ``renum``
    (old vertex -> new vertex) renumbered."""
    lo, hi = keys >> SHIFT, keys & ((1 << SHIFT) - 1)
    if renum is not None:
        lo, hi = renum[lo], renum[hi]
    return xp.stack([xp.minimum(lo, hi), xp.maximum(lo, hi)], axis=1)


@contextmanager
def recording_kept() -> Iterator[list[Any]]:
    """Every operation run inside that was given seams (:func:`workers.engine.corners.
    seam_edges`) appends to the yielded list the seam edges of its result: ``(k, 2)`` int64
    vertex pairs (smaller first, on the operation's backend, in the output's vertex numbering):
    the pieces of split seam edges (remesh), the seam edges kept or the shortened seam lines
    (decimate, collapse_short_edges), the seam edges themselves (delaunay_flip)."""
    box: list[Any] = []
    token = _KEPT.set(box)
    try:
        yield box
    finally:
        _KEPT.reset(token)


def record_kept(xp: ModuleType, keys: Any, renum: Any | None = None) -> None:
    """Tell :func:`recording_kept` the result's seams: the sorted edge ``keys`` of the working
    mesh, ``renum`` mapping its vertices to the output's (None: the same). Nothing happens
    outside a recording or when the operation was given no seams."""
    box = _KEPT.get()
    if box is None or corners.seam_edges(xp) is None:
        return
    box.append(keys_to_pairs(xp, keys, renum))
