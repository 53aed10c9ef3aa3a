"""How operations carry corner attributes (texture coordinates, hard normals, colours) and
materials.

Operations work on positions and faces; most know nothing of corners. The pipeline wraps every
step of a mesh that has corner attributes or materials (:func:`carry`):

- An operation that keeps the faces (same ``F``: smoothing, normals, curvature, ...) keeps the
  corners as they are, exactly.
- An operation that changes the faces gets a mesh without them, and each corner of its result
  takes its value from the input surface, within the same *chart*: the output face's centroid
  picks the input face nearest to it, hence its chart (faces joined across edges where the corner
  values and the material agree: one piece of the texture atlas), and each corner takes the
  value at the closest point of that chart's faces (barycentric interpolation of the input
  corners). A face kept as it was (a weld, a repair) gets its own values back; a new vertex
  inside a chart (a split, a subdivision, a collapse) gets the interpolated value; a face never
  mixes two charts, so no triangle spans the atlas.
- Faces that the operation rebuilt also take the ``material`` (and any face attribute it
  dropped) of the input face nearest to their centroid.
- While the operation runs, :func:`seam_edges` gives it the seam edges of its input (edges where
  the two faces' corner values or materials differ, and the mesh's boundary is not among them).
  Dynamic operations keep them: ``decimate`` and ``collapse_short_edges`` lock their vertices,
  ``isotropic_remesh`` treats them as feature edges (split at midpoints, never collapsed or
  flipped), ``delaunay_flip`` never flips them. So seams stay where the texture has them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_SEAMS: ContextVar[Any | None] = ContextVar("tessera_seam_edges", default=None)


def seam_edges(xp: Any) -> Any | None:
    """The seam edges of the mesh the running operation was given, as ``(k, 2)`` int64 vertex
    pairs (smaller index first, on ``xp``), or None when its mesh has no corner attributes or
    materials (then there is nothing to keep)."""
    seams = _SEAMS.get()
    if seams is None:
        return None
    return xp.asarray(seams)


@contextmanager
def keeping_seams(edges: Any | None) -> Iterator[None]:
    """Operations run inside see ``edges`` as :func:`seam_edges`."""
    token = _SEAMS.set(edges)
    try:
        yield
    finally:
        _SEAMS.reset(token)
