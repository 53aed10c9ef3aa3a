"""Tangents per corner (glTF's ``TANGENT``: a unit vector along increasing ``u`` in the
surface, and a sign ``w`` so that the bitangent is ``cross(normal, tangent) * w``), computed
from positions, normals and texture coordinates.

This is the standard construction (Lengyel, "Computing Tangent Space Basis Vectors for an
Arbitrary Mesh", 2001) organised as MikkTSpace does in spirit (Mikkelsen, "Simulation of
Wrinkled Surfaces Revisited", 2008), not bit for bit:

1. per triangle, the gradients of the position along ``u`` and ``v``: with edges ``e1, e2``
   and texture edges ``(du1, dv1), (du2, dv2)``, ``T = (e1 dv2 - e2 dv1) / r`` and
   ``B = (e2 du1 - e1 du2) / r``, ``r = du1 dv2 - du2 dv1`` (a triangle of no texture area
   gives nothing);
2. per corner, ``T`` projected on the plane of the corner's normal and unitized, weighted by
   the corner's angle, and the handedness ``sign(dot(cross(N, T), B))``;
3. summed over the corners that share a vertex, texture coordinates, normal and handedness
   (one tangent per (vertex, chart): a texture seam or a mirrored half of the atlas gets its
   own), then orthonormalized against each corner's normal (Gram-Schmidt).

A group whose sum is zero (no triangle with texture area) gets a unit vector perpendicular to
its normal and ``w = +1``, so that every value written is a valid glTF tangent.
"""

from __future__ import annotations

import numpy as np

from .geometry import face_cross64, scatter_rows


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = (n > 1e-20) & np.isfinite(n)
    return np.where(ok, v / np.where(ok, n, 1.0), 0.0), ok[..., 0]


def perpendicular(N: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to each row of ``N`` ((k, 3); ``+x`` for a zero row)."""
    N = np.asarray(N, dtype=np.float64)
    axis = np.zeros_like(N)
    axis[np.arange(N.shape[0]), np.argmin(np.abs(N), axis=1)] = 1.0
    t, ok = _unit(axis - N * (N * axis).sum(1, keepdims=True))
    t[~ok] = (1.0, 0.0, 0.0)
    return t


def corner_tangents(V: np.ndarray, F: np.ndarray, normal: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Tangents ``(m, 3, 4)`` float32 of the corners of faces ``F (m, 3)`` on positions
    ``V (n, 3)``, with the corners' normals ``normal (m, 3, 3)`` and texture coordinates
    ``uv (m, 3, 2)`` (see the module docstring)."""
    V = np.asarray(V, dtype=np.float64)
    F = np.asarray(F, dtype=np.int64)
    m = F.shape[0]
    if m == 0:
        return np.zeros((0, 3, 4), np.float32)
    N, _ = _unit(np.asarray(normal, dtype=np.float64).reshape(m, 3, 3))
    st = np.asarray(uv, dtype=np.float64).reshape(m, 3, 2)
    P = V[F]
    e1, e2 = P[:, 1] - P[:, 0], P[:, 2] - P[:, 0]
    d1, d2 = st[:, 1] - st[:, 0], st[:, 2] - st[:, 0]
    r = d1[:, 0] * d2[:, 1] - d2[:, 0] * d1[:, 1]
    good = (r != 0) & np.isfinite(r)
    inv = np.where(good, 1.0 / np.where(good, r, 1.0), 0.0)[:, None]
    T = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) * inv
    B = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) * inv
    # 2. per corner: T on the normal's plane, weighted by the corner's angle; the handedness
    t = T[:, None, :] - N * (N * T[:, None, :]).sum(2, keepdims=True)
    t, _ = _unit(t)
    a, _ = _unit(np.roll(P, -1, axis=1) - P)
    b, _ = _unit(np.roll(P, 1, axis=1) - P)
    angle = np.arccos(np.clip((a * b).sum(2), -1.0, 1.0))
    w = np.where((np.cross(N, T[:, None, :]) * B[:, None, :]).sum(2) < 0, -1.0, 1.0)
    # 3. one tangent per (vertex, texture coordinates, normal, handedness), compared by their
    # bytes: + 0.0 makes a negative zero (which arithmetic gives) the positive one it equals
    key = np.concatenate(
        [
            F.reshape(-1, 1).astype("<i8").view(np.uint8),
            np.ascontiguousarray(st.reshape(-1, 2) + 0.0).view(np.uint8),
            np.ascontiguousarray(N.reshape(-1, 3) + 0.0).view(np.uint8),
            np.ascontiguousarray(w.reshape(-1, 1)).view(np.uint8),
        ],
        axis=1,
    )
    key = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1]))).ravel()
    _, group = np.unique(key, return_inverse=True)
    group = group.ravel()
    total = np.zeros((int(group.max()) + 1, 3))
    contrib = (t * angle[:, :, None] * good[:, None, None]).reshape(-1, 3)
    for k in range(3):
        total[:, k] = np.bincount(group, weights=contrib[:, k], minlength=total.shape[0])
    flatN = N.reshape(-1, 3)
    out = total[group]
    out = out - flatN * (flatN * out).sum(1, keepdims=True)
    out, ok = _unit(out)
    if not ok.all():
        out[~ok] = perpendicular(flatN[~ok])
    result = np.concatenate([out, w.reshape(-1, 1)], axis=1).reshape(m, 3, 4)
    return result.astype(np.float32)


def vertex_normals_of(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals ``(n, 3)`` float64 (zero where no face has area)."""
    F = np.asarray(F, dtype=np.int64)
    cross = face_cross64(np, V, F)
    return _unit(scatter_rows(np, F.ravel(), np.repeat(cross, 3, axis=0), V.shape[0]))[0]
