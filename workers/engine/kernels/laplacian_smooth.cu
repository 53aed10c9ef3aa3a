// laplacian_smooth.cu: one explicit step x <- x + lambda * (weighted mean of neighbours - x).
// Used by the laplacian_smooth and taubin_smooth operations (Taubin's two passes are two such
// steps with lambda and mu). Everything is in double, as in the twin.
// Launch: edge_cotan with one thread per face, scatter with one thread per edge, update with one
// thread per vertex. Twin: workers/engine/ops/_smoothing.py
#include "common.cuh"

// W[e] += cot(angle opposite side k) / 2 for each side k of each face, e = FE[f, k] >> 1: the
// cotangent weight (cot a + cot b) / 2 of every edge (more terms on non-manifold edges).
extern "C" __global__ void laplacian_smooth_edge_cotan(const double* __restrict__ V,
                                                       const int* __restrict__ F,
                                                       const int* __restrict__ FE,
                                                       long long n_faces,
                                                       double* __restrict__ W) {
  FOR_EACH(f, n_faces) {
    const double3 c = corner_cots(load3dd(V, F[3 * f]), load3dd(V, F[3 * f + 1]),
                                  load3dd(V, F[3 * f + 2]));
    atomicAdd(W + (FE[3 * f] >> 1), 0.5 * c.z);  // side 0 is opposite corner 2
    atomicAdd(W + (FE[3 * f + 1] >> 1), 0.5 * c.x);
    atomicAdd(W + (FE[3 * f + 2] >> 1), 0.5 * c.y);
  }
}

// For edge (i, j) with weight w = uniform ? 1 : max(W[e], 0) (skipped when w is 0 or i == j):
// acc[i] += w (x_j - x_i), acc[j] += w (x_i - x_j), wsum[i] += w, wsum[j] += w.
extern "C" __global__ void laplacian_smooth_scatter(const double* __restrict__ V,
                                                    const int* __restrict__ EV,
                                                    const double* __restrict__ W, int uniform,
                                                    long long n_edges,
                                                    double* __restrict__ acc,
                                                    double* __restrict__ wsum) {
  FOR_EACH(e, n_edges) {
    const int i = EV[2 * e], j = EV[2 * e + 1];
    const double w = uniform ? 1.0 : fmax(W[e], 0.0);
    if (i == j || !(w > 0.0)) continue;
    const double3 d = scale3(sub3(load3dd(V, j), load3dd(V, i)), w);
    atomic_add3d(acc, i, d);
    atomic_add3d(acc, j, scale3(d, -1.0));
    atomicAdd(wsum + i, w);
    atomicAdd(wsum + j, w);
  }
}

// out = x + step * acc / wsum for free vertices with wsum > 0; out = x otherwise.
extern "C" __global__ void laplacian_smooth_update(const double* __restrict__ V,
                                                   const double* __restrict__ acc,
                                                   const double* __restrict__ wsum,
                                                   const bool* __restrict__ fixed, double step,
                                                   long long n_vertices,
                                                   double* __restrict__ out) {
  FOR_EACH(v, n_vertices) {
    const double3 x = load3dd(V, v);
    const double s = wsum[v];
    if (fixed[v] || !(s > 0.0)) {
      store3d(out, v, x);
    } else {
      store3d(out, v, add3(x, scale3(load3dd(acc, v), step / s)));
    }
  }
}
