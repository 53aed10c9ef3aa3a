// weld.cu: exact duplicate-vertex merging by hashing positions, in one pass over the vertices.
// Launch: one thread per vertex. Twin: workers/engine/reindex.py::weld (sort, scan, scatter).
//
// Wald's method sorts the positions (96-bit keys) to bring duplicates together; here each used
// vertex inserts its position into an open-addressing hash table (linear probing) whose slots
// hold the id of the first vertex that claimed them. A vertex that finds its position already
// there joins that slot. Every slot then keeps the smallest vertex id of its group (atomicMin),
// which is what the twin's numbering (groups in order of their first vertex) needs; the rest is
// a scan and gathers in Python. Positions compare as floats, so -0.0 and +0.0 are equal, and the
// hash is taken on x + 0.0f so that both hash alike.
#include "common.cuh"

#define EMPTY 0xffffffffu

__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

__device__ __forceinline__ unsigned long long hash_position(float x, float y, float z) {
  const unsigned long long a = __float_as_uint(x + 0.f), b = __float_as_uint(y + 0.f),
                           c = __float_as_uint(z + 0.f);
  return mix64(a * 0x9e3779b97f4a7c15ull ^ mix64(b + 0x632be59bd9b4e019ull) ^ (c << 21) ^ c);
}

// slot_of[v]: the table slot of vertex v's position; -1 for a vertex that takes no part (one
// with used[v] false, when use_mask is set). The table has mask + 1 slots (a power of two),
// slot_vertex filled with EMPTY and slot_min with 0xffffffff beforehand.
extern "C" __global__ void weld_insert(const float* __restrict__ V,
                                       const bool* __restrict__ used, int use_mask,
                                       long long n_vertices, unsigned int* __restrict__ slot_vertex,
                                       unsigned int* __restrict__ slot_min,
                                       unsigned long long mask, int* __restrict__ slot_of) {
  FOR_EACH(v, n_vertices) {
    if (use_mask && !used[v]) {
      slot_of[v] = -1;
      continue;
    }
    const float x = V[3 * v], y = V[3 * v + 1], z = V[3 * v + 2];
    unsigned long long h = hash_position(x, y, z) & mask;
    while (true) {
      const unsigned int prev = atomicCAS(slot_vertex + h, EMPTY, (unsigned int)v);
      if (prev == EMPTY || prev == (unsigned int)v) break;
      const float* q = V + 3ull * prev;
      if (q[0] == x && q[1] == y && q[2] == z) break;
      h = (h + 1) & mask;
    }
    atomicMin(slot_min + h, (unsigned int)v);
    slot_of[v] = (int)h;
  }
}

// rep[v]: the smallest vertex id with v's position (-1 for vertices that take no part).
extern "C" __global__ void weld_representative(const int* __restrict__ slot_of,
                                               const unsigned int* __restrict__ slot_min,
                                               long long n_vertices, int* __restrict__ rep) {
  FOR_EACH(v, n_vertices) {
    const int s = slot_of[v];
    rep[v] = s < 0 ? -1 : (int)slot_min[s];
  }
}
