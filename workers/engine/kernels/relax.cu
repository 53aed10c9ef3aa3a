// relax.cu: SurfaceProjector.nearest on the GPU (workers/engine/dynamic/relax.py), one thread per
// query point walking the faces listed in its grid cell. The closest point on each face is
// closest_points' array code expression for expression (no FMA contraction: the same bits), and
// the face kept is the one the array code's scatter-min keeps: the smallest distance as a
// float32 bit pattern within reach, ties to the earlier face in the cell's list.
#include "common.cuh"

__device__ __forceinline__ double dot3v(const double* x, const double* y) {
  return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}
__device__ __forceinline__ double safe_div(double x, double y) { return x / (y != 0.0 ? y : 1.0); }

__device__ void closest_point(const double* P, const double* a, const double* b, const double* c,
                              double* q, double* bary) {
  double ab[3], ac[3], ap[3], bp[3], cp[3];
  for (int k = 0; k < 3; ++k) {
    ab[k] = b[k] - a[k];
    ac[k] = c[k] - a[k];
    ap[k] = P[k] - a[k];
    bp[k] = P[k] - b[k];
    cp[k] = P[k] - c[k];
  }
  const double d1 = dot3v(ab, ap), d2 = dot3v(ac, ap);
  const double d3 = dot3v(ab, bp), d4 = dot3v(ac, bp);
  const double d5 = dot3v(ab, cp), d6 = dot3v(ac, cp);
  const double va = d3 * d6 - d5 * d4;
  const double vb = d5 * d2 - d1 * d6;
  const double vc = d1 * d4 - d3 * d2;
  if (d1 <= 0 && d2 <= 0) {
    bary[0] = 1.0; bary[1] = 0.0; bary[2] = 0.0;
  } else if (d3 >= 0 && d4 <= d3) {
    bary[0] = 0.0; bary[1] = 1.0; bary[2] = 0.0;
  } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    const double t = safe_div(d1, d1 - d3);
    bary[0] = 1.0 - t; bary[1] = t; bary[2] = 0.0;
  } else if (d6 >= 0 && d5 <= d6) {
    bary[0] = 0.0; bary[1] = 0.0; bary[2] = 1.0;
  } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    const double t = safe_div(d2, d2 - d6);
    bary[0] = 1.0 - t; bary[1] = 0.0; bary[2] = t;
  } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    const double t = safe_div(d4 - d3, (d4 - d3) + (d5 - d6));
    bary[0] = 0.0; bary[1] = 1.0 - t; bary[2] = t;
  } else {
    const double den = va + vb + vc;
    const double v = safe_div(vb, den), w = safe_div(vc, den);
    bary[0] = 1.0 - v - w; bary[1] = v; bary[2] = w;
  }
  for (int k = 0; k < 3; ++k) q[k] = bary[0] * a[k] + bary[1] * b[k] + bary[2] * c[k];
}

// For point i: the faces cell_face[lo[i]:hi[i]]; Q, face, bary of the nearest within r (Q
// untouched, face -1 and bary 0 where none is).
extern "C" __global__ void nearest_in_cells(
    const double* __restrict__ P, const long long* __restrict__ lo,
    const long long* __restrict__ hi, const long long* __restrict__ cell_face,
    const long long* __restrict__ F0, const double* __restrict__ V0, double r, long long k,
    double* __restrict__ Q, long long* __restrict__ face, double* __restrict__ bary) {
  FOR_EACH(i, k) {
    const double p[3] = {P[3 * i], P[3 * i + 1], P[3 * i + 2]};
    int best_bits = 0x7fffffff;
    long long best = -1;
    double bq[3] = {0.0, 0.0, 0.0}, bb[3] = {0.0, 0.0, 0.0};
    for (long long j = lo[i]; j < hi[i]; ++j) {
      const long long f = cell_face[j];
      const double* a = V0 + 3 * F0[3 * f];
      const double* b = V0 + 3 * F0[3 * f + 1];
      const double* c = V0 + 3 * F0[3 * f + 2];
      double q[3], bc[3];
      closest_point(p, a, b, c, q, bc);
      const double dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
      const double d = sqrt(dx * dx + dy * dy + dz * dz);
      if (!(d <= r)) continue;
      const int bits = __float_as_int((float)fmax(d, 0.0));
      if (bits < best_bits) {
        best_bits = bits;
        best = f;
        for (int m = 0; m < 3; ++m) {
          bq[m] = q[m];
          bb[m] = bc[m];
        }
      }
    }
    face[i] = best;
    for (int m = 0; m < 3; ++m) {
      if (best >= 0) Q[3 * i + m] = bq[m];
      bary[3 * i + m] = bb[m];
    }
  }
}
