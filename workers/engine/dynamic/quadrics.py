"""Garland-Heckbert error quadrics (Garland and Heckbert 1997, "Surface simplification using
quadric error metrics"), as arrays.

A plane ``n . x + d = 0`` (unit ``n``) gives the quadric ``K = [n, d] [n, d]^T``: ``v^T K v`` is
the squared distance of ``v = (x, y, z, 1)`` from the plane. Each vertex sums the quadrics of its
faces' planes; a collapse sums the two ends' quadrics, and its cost is the smallest value of that
sum, found by solving a 3x3 system. A symmetric 4x4 quadric is stored as its 10 coefficients
``[aa, ab, ac, ad, bb, bc, bd, cc, cd, dd]``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..geometry import scatter_rows

#: relative determinant below which the 3x3 system is ill-conditioned (a flat or cylindrical
#: neighbourhood: the optimum is a line or a plane, not a point)
MIN_RELATIVE_DET = 1e-6
#: an optimum farther than this many edge lengths from the edge's midpoint is not trusted
MAX_REACH = 2.0


def plane_quadrics(xp: ModuleType, N: Any, d: Any, w: Any | None = None) -> Any:
    """(k, 10) quadrics of the planes ``N (k, 3) . x + d (k,) = 0``, times weights ``w``."""
    a, b, c = N[:, 0], N[:, 1], N[:, 2]
    Q = xp.stack([a * a, a * b, a * c, a * d, b * b, b * c, b * d, c * c, c * d, d * d], axis=1)
    return Q if w is None else Q * w[:, None]


def vertex_quadrics(xp: ModuleType, X: Any, F: Any, n: int) -> Any:
    """(n, 10) sum of the plane quadrics of each vertex's faces (faces of zero area add
    nothing)."""
    P0, P1, P2 = X[F[:, 0]], X[F[:, 1]], X[F[:, 2]]
    cr = xp.cross(P1 - P0, P2 - P0)
    ln = xp.linalg.norm(cr, axis=1)
    N = cr / xp.where(ln > 0, ln, 1.0)[:, None]
    d = -(N * P0).sum(axis=1)
    Kf = plane_quadrics(xp, N, d)
    return scatter_rows(xp, F.ravel(), xp.repeat(Kf, 3, axis=0), n)


def boundary_quadrics(xp: ModuleType, X: Any, F: Any, sides: Any, n: int, weight: float) -> Any:
    """(n, 10) quadrics of planes through each boundary side (flat side ids ``3 f + k``) and
    perpendicular to its face, times ``weight``, added to both ends: moving a boundary vertex off
    its boundary costs as much as moving it off ``weight`` faces."""
    f, k = sides // 3, sides % 3
    u = F[f, k]
    v = F[f, (k + 1) % 3]
    w = F[f, (k + 2) % 3]
    e = X[v] - X[u]
    fn = xp.cross(e, X[w] - X[u])
    N = xp.cross(e, fn)
    ln = xp.linalg.norm(N, axis=1)
    N = N / xp.where(ln > 0, ln, 1.0)[:, None]
    d = -(N * X[u]).sum(axis=1)
    K = plane_quadrics(xp, N, d, xp.full(N.shape[0], weight))
    ends = xp.concatenate([u, v])
    return scatter_rows(xp, ends, xp.concatenate([K, K]), n)


def evaluate(xp: ModuleType, Q: Any, p: Any) -> Any:
    """(k,) ``v^T Q v`` for quadrics ``Q (k, 10)`` at points ``p (k, 3)``, clamped at 0."""
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    q = Q.T
    val = (
        q[0] * x * x
        + 2 * q[1] * x * y
        + 2 * q[2] * x * z
        + 2 * q[3] * x
        + q[4] * y * y
        + 2 * q[5] * y * z
        + 2 * q[6] * y
        + q[7] * z * z
        + 2 * q[8] * z
        + q[9]
    )
    return xp.maximum(val, 0.0)


def optimal_points(xp: ModuleType, Q: Any, Xa: Any, Xb: Any) -> tuple[Any, Any]:
    """``(p (k, 3), cost (k,))``: where each summed quadric is smallest, by Cramer's rule on
    ``A p = -b``; where the system is ill-conditioned or the optimum lies farther than
    ``MAX_REACH`` edge lengths from the midpoint, the best of the two ends and the midpoint."""
    q = Q.T
    a11, a12, a13, a22, a23, a33 = q[0], q[1], q[2], q[4], q[5], q[7]
    b1, b2, b3 = -q[3], -q[6], -q[8]
    c11 = a22 * a33 - a23 * a23
    c12 = a13 * a23 - a12 * a33
    c13 = a12 * a23 - a13 * a22
    det = a11 * c11 + a12 * c12 + a13 * c13
    tr = a11 + a22 + a33
    ok = xp.abs(det) > MIN_RELATIVE_DET * (tr / 3.0) ** 3
    safe = xp.where(ok, det, 1.0)
    c22 = a11 * a33 - a13 * a13
    c23 = a12 * a13 - a11 * a23
    c33 = a11 * a22 - a12 * a12
    px = (c11 * b1 + c12 * b2 + c13 * b3) / safe
    py = (c12 * b1 + c22 * b2 + c23 * b3) / safe
    pz = (c13 * b1 + c23 * b2 + c33 * b3) / safe
    p = xp.stack([px, py, pz], axis=1)
    mid = 0.5 * (Xa + Xb)
    reach = MAX_REACH * xp.linalg.norm(Xb - Xa, axis=1)
    ok &= xp.linalg.norm(p - mid, axis=1) <= reach
    # fallback: the best of a, b and the midpoint
    tries = [Xa, Xb, mid]
    costs = xp.stack([evaluate(xp, Q, t) for t in tries], axis=1)
    best = xp.argmin(costs, axis=1)
    fb = xp.where((best == 0)[:, None], Xa, xp.where((best == 1)[:, None], Xb, mid))
    p = xp.where(ok[:, None], p, fb)
    return p, evaluate(xp, Q, p)


def edge_parameter(xp: ModuleType, Xa: Any, Xb: Any, p: Any) -> Any:
    """(k,) where the projection of ``p`` falls on the edge from ``Xa`` (0) to ``Xb`` (1),
    clamped to [0, 1]: the weight of ``b``'s attributes in the merged vertex."""
    e = Xb - Xa
    ll = (e * e).sum(axis=1)
    t = ((p - Xa) * e).sum(axis=1) / xp.where(ll > 0, ll, 1.0)
    return xp.clip(t, 0.0, 1.0)
