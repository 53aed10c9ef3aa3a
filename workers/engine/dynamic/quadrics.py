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

from ..geometry import corner_angles64, face_cross64, unitize
from ..graph import entry_groups, ordered_sums

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
    nothing), added in the order of the faces. On the GPU one kernel thread per vertex sums its
    faces' quadrics (``kernels/quadrics.cu``) in the order the array code's bincounts do: the
    same sums bit for bit, and the same from run to run, which atomics are not (the array code's
    ten bincounts over a (3m, 10) copy of the face quadrics took 41 ms at 17.8M faces on an
    H100)."""
    if xp.__name__ == "cupy":
        return _vertex_quadrics_kernel(xp, X, F, n)
    P0, P1, P2 = X[F[:, 0]], X[F[:, 1]], X[F[:, 2]]
    cr = xp.cross(P1 - P0, P2 - P0)
    ln = xp.linalg.norm(cr, axis=1)
    N = cr / xp.where(ln > 0, ln, 1.0)[:, None]
    d = -(N * P0).sum(axis=1)
    return ordered_sums(xp, F.ravel(), plane_quadrics(xp, N, d), n, per=3)


def _vertex_quadrics_kernel(xp: ModuleType, X: Any, F: Any, n: int) -> Any:
    from ..kernels.loader import launch, load_kernel

    F = xp.ascontiguousarray(F, dtype=xp.int64)
    off, corner = entry_groups(xp, F.ravel(), n)
    Q = xp.zeros((n, 10), dtype=xp.float64)
    args = (xp.ascontiguousarray(X, dtype=xp.float64), F, off, corner, xp.int64(n), Q)
    launch(load_kernel("quadrics", "vertex_quadrics"), n, args, op="decimate")
    return Q


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
    return ordered_sums(xp, ends, xp.concatenate([K, K]), n)


def tip_quadrics(xp: ModuleType, X: Any, F: Any, n: int, weight: float, skip: Any = None) -> Any:
    """(n, 10) quadrics that hold each convex vertex in place along its axis: the plane through
    the vertex across the sum of its faces' normals (area-weighted), weighted ``weight`` times
    its faces times ``f (2 - f)``, ``f`` its angle deficit over ``2 pi`` (clipped to [0, 1]):
    0 where flat or saddle-shaped, nearly ``weight`` times its faces at a sharp tip; zero rows at
    the vertices marked in ``skip`` (n,) (boundary vertices: their angle sums are no deficit).

    Why: the planes of a sharp cone's faces lie nearly along its axis, so moving the apex along
    the axis by ``δ`` costs the vertex quadric only ``faces * sin^2 θ * δ^2`` (``θ`` the cone's
    half-angle, ``sin θ = 1 - f``), while the surface loses its tip by ``δ``: a horn shortened.
    The missing ``faces * (1 - sin^2 θ)`` is the plane's weight, times ``weight``. On cow at
    10 % a horn tip went 0.024 of the diagonal off (fast-simplification 0.019, median of three
    vertex orders); with the planes (weight 6) 0.010."""
    idx = F.ravel()
    groups = entry_groups(xp, idx, n) if xp.__name__ == "cupy" else None
    deficit = 2.0 * xp.pi - ordered_sums(xp, idx, corner_angles64(xp, X, F).ravel(), n, 1, groups)
    faces = ordered_sums(xp, idx, xp.ones(idx.shape[0], dtype=xp.float64), n, 1, groups)
    N = unitize(xp, ordered_sums(xp, idx, face_cross64(xp, X, F), n, 3, groups))
    f = xp.clip(deficit / (2.0 * xp.pi), 0.0, 1.0)
    w = weight * faces * f * (2.0 - f)
    if skip is not None:
        w = xp.where(skip, 0.0, w)
    return plane_quadrics(xp, N, -(N * X).sum(axis=1), w)


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
    t3 = (a11 + a22 + a33) / 3.0
    ok = xp.abs(det) > MIN_RELATIVE_DET * (t3 * t3 * t3)
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


def segment_points(xp: ModuleType, Q: Any, Xa: Any, Xb: Any) -> tuple[Any, Any]:
    """``(p (k, 3), cost (k,))``: where each quadric ``Q (k, 10)`` is smallest on the segment
    from ``Xa`` to ``Xb`` (both ``(k, 3)``). Along the line ``Xa + t d`` the quadric is
    ``E(Xa) + 2 t d.(A Xa + b) + t^2 d.A d``; its minimum at ``t = -d.(A Xa + b) / d.A d``,
    clamped to [0, 1] (the midpoint where the quadric is flat along the edge)."""
    q = Q.T
    d = Xb - Xa

    def times_a(v: Any) -> tuple[Any, Any, Any]:  # A v, A the quadric's 3x3 part
        x, y, z = v[:, 0], v[:, 1], v[:, 2]
        return (
            q[0] * x + q[1] * y + q[2] * z,
            q[1] * x + q[4] * y + q[5] * z,
            q[2] * x + q[5] * y + q[7] * z,
        )

    ax, ay, az = times_a(Xa)
    dx, dy, dz = times_a(d)
    g = d[:, 0] * (ax + q[3]) + d[:, 1] * (ay + q[6]) + d[:, 2] * (az + q[8])
    h = d[:, 0] * dx + d[:, 1] * dy + d[:, 2] * dz
    curved = h > 0
    t = xp.clip(xp.where(curved, -g / xp.where(curved, h, 1.0), 0.5), 0.0, 1.0)
    p = Xa + t[:, None] * d
    return p, evaluate(xp, Q, p)


def collapse_points(xp: ModuleType, Q: Any, X: Any, a: Any, b: Any, snap: Any) -> tuple[Any, Any]:
    """``(p (k, 3), cost (k,))`` of collapsing the edges ``(a, b)``: the optimum of the summed
    quadrics ``Q[a] + Q[b]`` (:func:`optimal_points`), or ``a`` itself where ``snap`` (an end
    that must stay put), and the summed quadric's value there. On the GPU one kernel thread per
    edge (``kernels/quadrics.cu``) instead of some eighty array kernels."""
    if xp.__name__ != "cupy":
        Xa, Xb = X[a], X[b]
        Qe = Q[a] + Q[b]
        p, cost = optimal_points(xp, Qe, Xa, Xb)
        p = xp.where(snap[:, None], Xa, p)
        return p, xp.where(snap, evaluate(xp, Qe, Xa), cost)
    from ..kernels.loader import launch, load_kernel

    k = int(a.shape[0])
    p = xp.empty((k, 3), dtype=xp.float64)
    cost = xp.empty(k, dtype=xp.float64)
    launch(
        load_kernel("quadrics", "collapse_points"),
        k,
        (
            xp.ascontiguousarray(Q, dtype=xp.float64),
            xp.ascontiguousarray(X, dtype=xp.float64),
            xp.ascontiguousarray(a, dtype=xp.int64),
            xp.ascontiguousarray(b, dtype=xp.int64),
            xp.ascontiguousarray(snap, dtype=xp.uint8),
            xp.float64(MIN_RELATIVE_DET),
            xp.float64(MAX_REACH),
            xp.int64(k),
            p,
            cost,
        ),
        op="decimate",
    )
    return p, cost


def edge_parameter(xp: ModuleType, Xa: Any, Xb: Any, p: Any) -> Any:
    """(k,) where the projection of ``p`` falls on the edge from ``Xa`` (0) to ``Xb`` (1),
    clamped to [0, 1]: the weight of ``b``'s attributes in the merged vertex."""
    e = Xb - Xa
    ll = (e * e).sum(axis=1)
    t = ((p - Xa) * e).sum(axis=1) / xp.where(ll > 0, ll, 1.0)
    return xp.clip(t, 0.0, 1.0)


# ------------------------------------------------------------------------ texture coordinates
#: columns of an attribute quadric (:func:`attribute_quadrics`): ``Σ (g.p + d)^2`` as a 4x4
#: quadric, the sums of the gradients ``g`` and offsets ``d`` of the two channels, the weight
ATTR_COLUMNS = 19


def face_gradients(xp: ModuleType, X: Any, F: Any, S: Any) -> tuple[Any, Any, Any, Any]:
    """The linear functions that interpolate each face's corner values ``S (m, 3, 2)``, as
    ``(g (m, 2, 3), d (m, 2), area (m,), ok (m,))``: value ``j`` at a point ``p`` of face
    ``f``'s plane is ``g[f, j] . p + d[f, j]``, ``g`` lying in the plane (Hoppe 1999, section
    3); ``ok`` is False for faces of zero area or with a non-finite value (their ``g``, ``d``
    and ``area`` are 0)."""
    P0, P1, P2 = X[F[:, 0]], X[F[:, 1]], X[F[:, 2]]
    cr = xp.cross(P1 - P0, P2 - P0)
    a2 = xp.linalg.norm(cr, axis=1)  # twice the area
    ok = (a2 > 0) & xp.isfinite(S).all(axis=(1, 2))
    safe = xp.where(ok, a2, 1.0)[:, None]
    n = cr / safe
    # the gradient of the barycentric coordinate of corner i: n x (opposite edge) / (2 area)
    d0 = xp.cross(n, P2 - P1) / safe
    d1 = xp.cross(n, P0 - P2) / safe
    d2 = xp.cross(n, P1 - P0) / safe
    Sz = xp.where(ok[:, None, None], S, 0.0)
    g = Sz[:, 0, :, None] * d0[:, None] + Sz[:, 1, :, None] * d1[:, None]
    g = g + Sz[:, 2, :, None] * d2[:, None]
    g = xp.where(ok[:, None, None], g, 0.0)
    d = Sz[:, 0] - (g * P0[:, None]).sum(axis=2)
    return g, d, xp.where(ok, 0.5 * a2, 0.0), ok


def attribute_quadrics(xp: ModuleType, X: Any, F: Any, S: Any, n: int, skip: Any = None) -> Any:
    """(n, :data:`ATTR_COLUMNS`) per-vertex sums of each face's texture error
    ``sum_j (s_j - g_j . p - d_j)^2`` (Hoppe 1999, "New quadric metric for simplifying meshes
    with appearance attributes": the attribute value ``s`` a vertex at ``p`` takes against the
    linear attribute function of every face it was part of), stored in Hoppe's memory-efficient
    form: ``Σ (g_j . p + d_j)^2`` as a 4x4 quadric (10 columns), ``Σ g_u``, ``Σ g_v`` (3 each),
    ``Σ d_u``, ``Σ d_v`` and the total weight ``W``. ``S (m, 3, 2)``: corner values (scaled texture
    coordinates). Each face weighs its area over the mean face area (G&H 1998 weigh by area;
    the geometric quadrics weigh each face 1, so a face of mean area weighs the same in both).
    Faces of zero area or non-finite values add nothing; the vertices marked in
    ``skip`` (n,) get zero rows (seam vertices: their faces lie in several charts, so their
    values do not make one function)."""
    g, d, area, ok = face_gradients(xp, X, F, S)
    K = plane_quadrics(xp, g[:, 0], d[:, 0]) + plane_quadrics(xp, g[:, 1], d[:, 1])
    rows = xp.concatenate([K, g[:, 0], g[:, 1], d, ok.astype(xp.float64)[:, None]], axis=1)
    # by area, a face of mean area weighing 1 (as one plane of the geometric quadric)
    n_ok = int(ok.sum())
    mean = float(area.sum()) / n_ok if n_ok else 1.0
    rows = rows * (area / (mean if mean > 0 else 1.0))[:, None]
    U = ordered_sums(xp, F.ravel(), rows, n, per=3)
    if skip is not None:
        U = xp.where(skip[:, None], 0.0, U)
    return U


def _channels(U: Any) -> tuple[Any, Any, Any, Any, Any]:
    return U[:, 10:13], U[:, 13:16], U[:, 16], U[:, 17], U[:, 18]


def attribute_reduced(xp: ModuleType, U: Any) -> Any:
    """(k, 10) the geometric form of attribute quadrics ``U (k, 19)`` with the attribute values
    at their best for each position (``s_j = (G_j . p + D_j) / W``): ``Σ (g . p + d)^2 -
    (G . p + D)^2 / W`` per channel, what is left of the texture error once the merged vertex
    takes the mean of its faces' functions. Added to the plane quadric, the 3x3 solve of
    :func:`optimal_points` then finds the position (Schur complement of the 5x5 system)."""
    Gu, Gv, Du, Dv, W = _channels(U)
    inv = xp.sqrt(1.0 / xp.where(W > 0, W, 1.0))[:, None]
    R = plane_quadrics(xp, Gu * inv, Du * inv[:, 0]) + plane_quadrics(xp, Gv * inv, Dv * inv[:, 0])
    return U[:, :10] - R


def attribute_best(xp: ModuleType, U: Any, p: Any) -> Any:
    """(k, 2) the attribute values at ``p (k, 3)`` that make ``U``'s error smallest (the mean of
    the faces' functions there); 0 where ``U`` has no face."""
    Gu, Gv, Du, Dv, W = _channels(U)
    su = (Gu * p).sum(axis=1) + Du
    sv = (Gv * p).sum(axis=1) + Dv
    return xp.stack([su, sv], axis=1) / xp.where(W > 0, W, 1.0)[:, None]


def attribute_error(xp: ModuleType, U: Any, p: Any, s: Any) -> Any:
    """(k,) the texture error of attribute quadrics ``U`` at position ``p (k, 3)`` with values
    ``s (k, 2)``: ``Σ (g . p + d)^2 - 2 s . (G . p + D) + W |s|^2``, clamped at 0."""
    Gu, Gv, Du, Dv, W = _channels(U)
    lin = s[:, 0] * ((Gu * p).sum(axis=1) + Du) + s[:, 1] * ((Gv * p).sum(axis=1) + Dv)
    val = evaluate(xp, U[:, :10], p) - 2.0 * lin + W * (s * s).sum(axis=1)
    return xp.maximum(val, 0.0)
