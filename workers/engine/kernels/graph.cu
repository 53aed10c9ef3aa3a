// graph.cu: counting for workers/engine/graph.py.
#include "common.cuh"

// out[x[i]] += 1 for values known to lie in [0, len(out)): numpy.bincount with its length given,
// without the two host round trips (smallest and largest value) cupy.bincount takes
extern "C" __global__ void count_values(const long long* __restrict__ x, long long k,
                                        unsigned long long* __restrict__ out) {
  FOR_EACH(i, k) atomicAdd(out + x[i], 1ULL);
}
