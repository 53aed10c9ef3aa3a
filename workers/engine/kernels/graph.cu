// graph.cu: counting for workers/engine/graph.py.
#include "common.cuh"

// out[x[i]] += 1 for values known to lie in [0, len(out)): numpy.bincount with its length given,
// without the two host round trips (smallest and largest value) cupy.bincount takes. The lanes
// of a warp that hold the same value add once, their count (__match_any_sync): a tally into a
// few bins (a round's rejection reasons over a million candidates) would otherwise send every
// thread's atomic to the same few addresses, one after another.
extern "C" __global__ void count_values(const long long* __restrict__ x, long long k,
                                        unsigned long long* __restrict__ out) {
  const long long stride = (long long)blockDim.x * gridDim.x;
  // the loop bound is the same for every lane of a warp (blockDim is a multiple of 32), so the
  // whole warp takes part in each match
  for (long long base = (long long)blockIdx.x * blockDim.x; base < k; base += stride) {
    const long long i = base + threadIdx.x;
    const unsigned active = __ballot_sync(0xffffffffu, i < k);
    if (i >= k) continue;
    const long long v = x[i];
    const unsigned peers = __match_any_sync(active, v);
    if ((threadIdx.x & 31) == (unsigned)(__ffs(peers) - 1))
      atomicAdd(out + v, (unsigned long long)__popc(peers));
  }
}

// out[EV[e, 0]] = out[EV[e, 1]] = 1 for the edges e whose flag is set (out zeroed first): the
// flagged edges' ends, by plain stores of one value, with no work for the edges not flagged
template <typename I>
__device__ void mark_ends(const I* __restrict__ EV, const bool* __restrict__ flag,
                          long long n_edges, bool* __restrict__ out) {
  FOR_EACH(e, n_edges) {
    if (!flag[e]) continue;
    out[EV[2 * e]] = true;
    out[EV[2 * e + 1]] = true;
  }
}
extern "C" __global__ void mark_ends_i32(const int* __restrict__ EV, const bool* __restrict__ flag,
                                         long long n_edges, bool* __restrict__ out) {
  mark_ends(EV, flag, n_edges, out);
}
extern "C" __global__ void mark_ends_i64(const long long* __restrict__ EV,
                                         const bool* __restrict__ flag, long long n_edges,
                                         bool* __restrict__ out) {
  mark_ends(EV, flag, n_edges, out);
}

// graph.ordered_sums: out[v, c] = the sum of values[entry[k] / per, c] over k in
// off[v]..off[v+1] (n rows of d columns), added in that order, one thread per row and column:
// the bincounts of the array code add in the order of the entries, and entry is their stable
// sort by row, so the sums are the twin's and the same on every run (atomics add in the order
// the threads come).
extern "C" __global__ void ordered_row_sums(const double* __restrict__ values, long long d,
                                            long long per, const long long* __restrict__ off,
                                            const long long* __restrict__ entry, long long n,
                                            double* __restrict__ out) {
  FOR_EACH(i, n * d) {
    const long long v = i / d, c = i % d;
    double s = 0.0;
    for (long long k = off[v]; k < off[v + 1]; ++k) s += values[(entry[k] / per) * d + c];
    out[i] = s;
  }
}
