// average_attribute.cu: one round of KEY-WELD local averaging of a per-vertex attribute over the
// one-ring, gathered through the topology's VV CSR (no atomics).
// Launch: one thread per vertex (grid-stride). Twin: workers/engine/ops/average_attribute.py
// The sum runs over the neighbours in CSR order and adds the vertex itself last, as the twin's
// bincount does, so both round the same way.
#include "common.cuh"

// out[v, :] = (sum of A[u, :] over the neighbours u of v [+ A[v, :]]) / (count [+ 1]); a vertex
// with nothing to average keeps A[v, :]; with renormalize, nonzero rows are scaled to length 1.
extern "C" __global__ void average_attribute_gather(const long long* __restrict__ off,
                                                    const long long* __restrict__ nbr,
                                                    const double* __restrict__ A,
                                                    long long n_vertices, int k,
                                                    int include_self, int renormalize,
                                                    double* __restrict__ out) {
  FOR_EACH(v, n_vertices) {
    const long long b = off[v], e = off[v + 1];
    const double count = (double)(e - b) + (include_self ? 1.0 : 0.0);
    double sq = 0.0;
    for (int c = 0; c < k; ++c) {
      double s = 0.0;
      for (long long t = b; t < e; ++t) s += A[nbr[t] * k + c];
      if (include_self) s += A[v * k + c];
      const double x = count > 0.0 ? s / count : A[v * k + c];
      out[v * k + c] = x;
      sq += x * x;
    }
    if (renormalize && sq > 0.0) {
      const double len = sqrt(sq);
      for (int c = 0; c < k; ++c) out[v * k + c] /= len;
    }
  }
}
