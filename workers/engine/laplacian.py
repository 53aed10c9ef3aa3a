"""The cotangent Laplacian and vertex areas, on NumPy/SciPy or CuPy/cupyx.

Conventions
-----------
* ``L`` is the positive semidefinite cotangent Laplacian (the stiffness matrix of linear finite
  elements): ``(L x)_i = sum_j w_ij (x_i - x_j)`` with ``w_ij = (cot a_ij + cot b_ij) / 2``, the
  angles opposite edge ``ij`` in its (one, two, or more) faces. ``L @ 1 = 0``; ``-L`` is the
  ``L_c`` of Crane et al. and libigl's ``cotmatrix``.
* Corner cotangents ``cot[f, k]`` belong to the angle at corner ``k`` of face ``f``. Side ``k``
  (corner ``k`` to ``k + 1``) is opposite corner ``k + 2``, so its weight is ``cot[f, k + 2] / 2``.
* Degenerate faces (zero area) have no angles: their cotangents are 0, so they add nothing to
  ``L`` and nothing to any vertex area.

Assembly follows the mesh-matrix paper (Zayer, Steinberger and Seidel, "A GPU-adapted structure
for unstructured grids", 2017, section 6): each face contributes the 3x3 constant-strain-triangle
block ``[[c1 + c2, -c2, -c1], ...]`` (``c_k`` its corner cotangents over 2), which is the action
map ``Q0 - (Q1 + Q2)`` of the face's incidence weighted by the cotangents. The blocks go straight
from the per-face cotangents into one COO triplet list that the sparse library sums into CSR:
no face-vertex incidence matrix and no product of matrices is ever formed. On the GPU the
per-face terms come from ``kernels/laplacian.cu`` (one thread per face) and cupyx does the sum.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from .geometry import face_corners64, scatter_rows
from .mesh import TriMesh


class FaceTerms(NamedTuple):
    cot: Any  # (n_faces, 3) float64 corner cotangents
    area: Any  # (n_faces,) float64 face areas
    mass: Any | None  # (n_vertices,) float64 barycentric vertex areas, when asked for


def sparse_module(xp: ModuleType) -> ModuleType:
    """``scipy.sparse`` for NumPy arrays, ``cupyx.scipy.sparse`` for CuPy arrays."""
    if xp is np:
        import scipy.sparse

        return scipy.sparse
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse


def corner_cotangents64(xp: ModuleType, V: Any, F: Any) -> Any:
    """(n_faces, 3) float64 cotangent ``u . w / |u x w|`` of the angle at each corner (``u``,
    ``w`` the two sides leaving it); 0 for degenerate faces."""
    a, b, c = face_corners64(xp, V, F)
    out = []
    for p, q, r in ((a, b, c), (b, c, a), (c, a, b)):
        u, w = q - p, r - p
        s = xp.linalg.norm(xp.cross(u, w), axis=1)
        d = (u * w).sum(axis=1)
        out.append(xp.where(s > 0, d / xp.where(s > 0, s, 1.0), 0.0))
    return xp.stack(out, axis=1)


def face_terms(mesh: TriMesh, *, with_mass: bool = False) -> FaceTerms:
    """Corner cotangents, face areas and (optionally) barycentric vertex areas in float64: the
    twin's vectorized formulas on NumPy, ``laplacian_face_terms`` (one thread per face) on CuPy."""
    xp = mesh.xp
    if mesh.backend == "numpy":
        cot = corner_cotangents64(xp, mesh.V, mesh.F)
        a, b, c = face_corners64(xp, mesh.V, mesh.F)
        area = 0.5 * xp.linalg.norm(xp.cross(b - a, c - a), axis=1)
        mass = None
        if with_mass:
            mass = scatter_rows(xp, mesh.F.ravel(), xp.repeat(area / 3.0, 3), mesh.n_vertices)
        return FaceTerms(cot, area, mass)
    from .kernels.loader import launch, load_kernel

    m = mesh.n_faces
    V = xp.ascontiguousarray(mesh.V, dtype=xp.float64)
    F = xp.ascontiguousarray(mesh.F, dtype=xp.int32)
    cot = xp.zeros((m, 3), dtype=xp.float64)
    area = xp.zeros(m, dtype=xp.float64)
    mass = xp.zeros(mesh.n_vertices if with_mass else 1, dtype=xp.float64)
    launch(
        load_kernel("laplacian", "laplacian_face_terms"),
        m,
        (V, F, np.int64(m), cot, area, mass, np.int32(with_mass)),
        op="laplacian",
    )
    return FaceTerms(cot, area, mass if with_mass else None)


def side_weights(xp: ModuleType, cot: Any) -> Any:
    """(n_faces, 3) cotangent weight of each side: ``cot[f, k + 2] / 2`` for side ``k``."""
    return 0.5 * cot[:, [2, 0, 1]]


def cotan_laplacian(mesh: TriMesh, cot: Any | None = None) -> Any:
    """The (n_vertices, n_vertices) float64 CSR matrix ``L`` (see the module docstring) on the
    mesh's backend, from the corner cotangents (computed when not given)."""
    xp = mesh.xp
    if cot is None:
        cot = face_terms(mesh).cot
    w = side_weights(xp, cot).ravel()
    F = mesh.F.astype(xp.int64)
    i = F.ravel()
    j = F[:, [1, 2, 0]].ravel()
    rows = xp.concatenate([i, j, i, j])
    cols = xp.concatenate([j, i, i, j])
    vals = xp.concatenate([-w, -w, w, w])
    n = mesh.n_vertices
    L = sparse_module(xp).coo_matrix((vals, (rows, cols)), shape=(n, n))
    L.sum_duplicates()
    return L.tocsr()


def mixed_areas64(xp: ModuleType, V: Any, F: Any, n: int, cot: Any | None = None) -> Any:
    """(n,) float64 mixed Voronoi areas of Meyer, Desbrun, Schröder and Barr (2003), Fig. 4:
    per face, each corner gets its Voronoi region ``(|pq|^2 cot r + |pr|^2 cot q) / 8`` when no
    angle of the face is obtuse, else half the face area at the obtuse corner and a quarter at
    the other two. The areas of all faces sum to the surface area; unused vertices get 0."""
    corner = mixed_corner_areas64(xp, V, F, cot)
    return scatter_rows(xp, F.ravel(), corner.ravel(), n)


def mixed_corner_areas64(xp: ModuleType, V: Any, F: Any, cot: Any | None = None) -> Any:
    """(n_faces, 3) float64 share of each face's area at each of its corners, as
    :func:`mixed_areas64` sums them per vertex."""
    if cot is None:
        cot = corner_cotangents64(xp, V, F)
    a, b, c = face_corners64(xp, V, F)
    P = (a, b, c)
    sq = xp.stack([((P[(k + 1) % 3] - P[k]) ** 2).sum(axis=1) for k in range(3)], axis=1)
    area = 0.5 * xp.linalg.norm(xp.cross(b - a, c - a), axis=1)
    # corner k: side k (to k+1) is opposite corner k+2, side k+2 (from k+2) opposite corner k+1
    voronoi = xp.stack(
        [
            (sq[:, k] * cot[:, (k + 2) % 3] + sq[:, (k + 2) % 3] * cot[:, (k + 1) % 3]) / 8.0
            for k in range(3)
        ],
        axis=1,
    )
    obtuse_corner = cot < 0
    obtuse_face = obtuse_corner.any(axis=1, keepdims=True)
    corner = xp.where(
        obtuse_face, xp.where(obtuse_corner, area[:, None] / 2.0, area[:, None] / 4.0), voronoi
    )
    return corner
