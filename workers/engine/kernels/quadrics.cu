// quadrics.cu: the collapse plan of quadric error decimation, one thread per edge
// (workers/engine/dynamic/quadrics.py: collapse_points, whose array code this mirrors:
// the two ends' quadrics summed, the optimum by Cramer's rule, the fallback to the best of the
// ends and the midpoint, an end that must stay put kept).
#include "common.cuh"

// v^T Q v for the 10 coefficients of a symmetric 4x4 quadric, clamped at 0 (as evaluate())
__device__ __forceinline__ double quadric_at(const double* q, double x, double y, double z) {
  double val = q[0] * x * x + 2 * q[1] * x * y + 2 * q[2] * x * z + 2 * q[3] * x + q[4] * y * y +
               2 * q[5] * y * z + 2 * q[6] * y + q[7] * z * z + 2 * q[8] * z + q[9];
  return fmax(val, 0.0);
}

extern "C" __global__ void collapse_points(
    const double* __restrict__ Q, const double* __restrict__ X, const long long* __restrict__ A,
    const long long* __restrict__ B, const unsigned char* __restrict__ snap, double min_det,
    double max_reach, long long k, double* __restrict__ P, double* __restrict__ cost) {
  FOR_EACH(i, k) {
    const long long a = A[i], b = B[i];
    double q[10];
    for (int j = 0; j < 10; ++j) q[j] = Q[10 * a + j] + Q[10 * b + j];
    const double xa[3] = {X[3 * a], X[3 * a + 1], X[3 * a + 2]};
    const double xb[3] = {X[3 * b], X[3 * b + 1], X[3 * b + 2]};
    double p[3];
    if (snap[i]) {
      for (int d = 0; d < 3; ++d) p[d] = xa[d];
    } else {
      const double a11 = q[0], a12 = q[1], a13 = q[2], a22 = q[4], a23 = q[5], a33 = q[7];
      const double b1 = -q[3], b2 = -q[6], b3 = -q[8];
      const double c11 = a22 * a33 - a23 * a23;
      const double c12 = a13 * a23 - a12 * a33;
      const double c13 = a12 * a23 - a13 * a22;
      const double det = a11 * c11 + a12 * c12 + a13 * c13;
      const double t3 = (a11 + a22 + a33) / 3.0;
      bool ok = fabs(det) > min_det * (t3 * t3 * t3);
      const double safe = ok ? det : 1.0;
      const double c22 = a11 * a33 - a13 * a13;
      const double c23 = a12 * a13 - a11 * a23;
      const double c33 = a11 * a22 - a12 * a12;
      p[0] = (c11 * b1 + c12 * b2 + c13 * b3) / safe;
      p[1] = (c12 * b1 + c22 * b2 + c23 * b3) / safe;
      p[2] = (c13 * b1 + c23 * b2 + c33 * b3) / safe;
      double mid[3], e[3], m[3];
      for (int d = 0; d < 3; ++d) {
        mid[d] = 0.5 * (xa[d] + xb[d]);
        e[d] = xb[d] - xa[d];
        m[d] = p[d] - mid[d];
      }
      const double reach = max_reach * sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
      ok = ok && sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]) <= reach;
      if (!ok) {  // the best of a, b and the midpoint (the first on ties)
        const double ca = quadric_at(q, xa[0], xa[1], xa[2]);
        const double cb = quadric_at(q, xb[0], xb[1], xb[2]);
        const double cm = quadric_at(q, mid[0], mid[1], mid[2]);
        const double* best = ca <= cb && ca <= cm ? xa : (cb <= cm ? xb : mid);
        for (int d = 0; d < 3; ++d) p[d] = best[d];
      }
    }
    for (int d = 0; d < 3; ++d) P[3 * i + d] = p[d];
    cost[i] = quadric_at(q, p[0], p[1], p[2]);
  }
}

// One face's plane quadric (unit normal from the cross product of its two sides from corner 0,
// offset through corner 0) into K; false for a face of zero area (the array code's quadric is all
// zeros then). The array code's expressions in its order (no contraction: --fmad=false).
__device__ __forceinline__ bool face_quadric(const double* __restrict__ X,
                                             const long long* __restrict__ F, long long f,
                                             double K[10]) {
  const long long i0 = F[3 * f], i1 = F[3 * f + 1], i2 = F[3 * f + 2];
  const double p0[3] = {X[3 * i0], X[3 * i0 + 1], X[3 * i0 + 2]};
  const double u[3] = {X[3 * i1] - p0[0], X[3 * i1 + 1] - p0[1], X[3 * i1 + 2] - p0[2]};
  const double v[3] = {X[3 * i2] - p0[0], X[3 * i2 + 1] - p0[1], X[3 * i2 + 2] - p0[2]};
  double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  const double ln = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (!(ln > 0)) return false;
  for (int d = 0; d < 3; ++d) n[d] = n[d] / ln;
  const double dd = -(n[0] * p0[0] + n[1] * p0[1] + n[2] * p0[2]);
  const double a = n[0], b = n[1], c = n[2];
  const double k[10] = {a * a, a * b, a * c, a * dd, b * b, b * c, b * dd, c * c, c * dd, dd * dd};
  for (int j = 0; j < 10; ++j) K[j] = k[j];
  return true;
}

// vertex_quadrics: one thread per vertex sums the plane quadrics of its corners' faces into its
// row of Q (n, 10), in the order of the corners (off, corner: the corners 3 f + k grouped by
// vertex, a stable sort of F's entries), the order in which the array code's bincounts add
// them: the same sums, bit for bit, and the same on every run (atomics add in the order the
// threads come, and on a flat grid, where the costs tie, the rounding decides the collapses).
extern "C" __global__ void vertex_quadrics(const double* __restrict__ X,
                                           const long long* __restrict__ F,
                                           const long long* __restrict__ off,
                                           const long long* __restrict__ corner, long long n,
                                           double* __restrict__ Q) {
  FOR_EACH(v, n) {
    double q[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    double K[10];
    for (long long k = off[v]; k < off[v + 1]; ++k)
      if (face_quadric(X, F, corner[k] / 3, K))
        for (int j = 0; j < 10; ++j) q[j] += K[j];
    for (int j = 0; j < 10; ++j) Q[10 * v + j] = q[j];
  }
}

// decimate.rank_keys: int64 keys ordering the costs as floats (NaN as +inf), their last
// tie_bits bits replaced by a multiplicative hash of the edge id
extern "C" __global__ void rank_keys(const double* __restrict__ cost,
                                     const long long* __restrict__ edge, int tie_bits,
                                     long long k, long long* __restrict__ key) {
  FOR_EACH(i, k) {
    const double c = isnan(cost[i]) ? __longlong_as_double(0x7FF0000000000000LL) : cost[i];
    long long bits = __double_as_longlong(c);
    if (bits < 0) bits ^= 0x7FFFFFFFFFFFFFFFLL;
    const unsigned long long h =
        ((unsigned long long)edge[i] * 0x9E3779B97F4A7C15ULL) >> (64 - tie_bits);
    key[i] = (bits & ~((1LL << tie_bits) - 1)) | (long long)h;
  }
}
