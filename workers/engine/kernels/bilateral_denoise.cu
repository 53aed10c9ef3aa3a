// bilateral_denoise.cu: one step of bilateral mesh denoising (Fleishman, Drori and Cohen-Or
// 2003) as in RXMesh's filtering application: each vertex moves along its normal by the
// bilateral-weighted mean height of its neighbourhood above its tangent plane.
// Launch: one thread per vertex (grid-stride) over its neighbourhood in CSR form, gathered
// without atomics; every vertex reads the old positions (Jacobi). All in double.
// Twin: workers/engine/ops/bilateral_denoise.py::_step
#include "common.cuh"

// The neighbourhood of v (CSR row v, v itself included) holds the vertices within 2 sigma_c[v]
// reached by a breadth-first search that never leaves that ball. With d = x_u - x_v:
//   t^2 = |d|^2, h = d . n_v, w = exp(-t^2 / (2 sigma_c^2)) exp(-h^2 / (2 sigma_s^2)),
//   x_v <- x_v + n_v sum(w h) / sum(w).
// sigma_s > 0 is used as given; otherwise, per vertex, the standard deviation of |h| over the
// neighbourhood (plus 1e-12 when below 1e-12), as RXMesh computes it. A vertex stays when it is
// fixed, its sigma_c is 0, or its neighbourhood is only itself.
extern "C" __global__ void bilateral_denoise_step(const double* __restrict__ X,
                                                  const double* __restrict__ N,
                                                  const long long* __restrict__ off,
                                                  const long long* __restrict__ nbr,
                                                  const double* __restrict__ sigma_c,
                                                  double sigma_s_given,
                                                  const bool* __restrict__ fixed,
                                                  long long n_vertices,
                                                  double* __restrict__ out) {
  FOR_EACH(v, n_vertices) {
    const double3 x = load3dd(X, v);
    const long long b = off[v], e = off[v + 1];
    const double sc = sigma_c[v];
    if (fixed[v] || !(sc > 0.0) || e - b <= 1) {
      store3d(out, v, x);
      continue;
    }
    const double3 n = load3dd(N, v);
    // 1. the range width: given, or the spread of the heights
    double ss = sigma_s_given;
    if (!(ss > 0.0)) {
      double sum_abs = 0.0, sum_sq = 0.0;
      for (long long t = b; t < e; ++t) {
        const double h = dot3(sub3(load3dd(X, nbr[t]), x), n);
        sum_abs += fabs(h);
        sum_sq += h * h;
      }
      const double c = (double)(e - b);
      const double mean_abs = sum_abs / c;
      ss = sqrt(fmax(sum_sq / c - mean_abs * mean_abs, 0.0));
      if (ss < 1e-12) ss += 1e-12;
    }
    // 2. the bilateral-weighted mean height
    double acc = 0.0, norm = 0.0;
    for (long long t = b; t < e; ++t) {
      const double3 d = sub3(load3dd(X, nbr[t]), x);
      const double h = dot3(d, n);
      const double w = exp(-0.5 * dot3(d, d) / (sc * sc)) * exp(-0.5 * h * h / (ss * ss));
      acc += w * h;
      norm += w;
    }
    store3d(out, v, add3(x, scale3(n, acc / norm)));
  }
}
