// patched.cuh: one CUDA block per patch; the patch's local EV and FE are staged in shared memory
// and the eight first-order queries are answered there (RXMesh, dissertation ch. 4.3.2).
//
// An operation names a query and writes only the per-element body; for_each<Q> does the rest:
//
//   struct Body {
//     __device__ void operator()(int vertex, const Neighbours& nb, const PatchView& view) const {
//       for (int j = 0; j < nb.size(); ++j) { int w = nb[j]; ... }   // global ids
//     }   // nb.local(j) and the view give local ids, e.g. face_vertex(view, nb.local(j), k)
//   };
//   extern "C" __global__ void my_op(PatchArgs a, ...) {
//     extern __shared__ unsigned char smem[];
//     for_each<Query::VV>(a, smem, Body{...});
//   }
//
// The body runs once for every element the patch owns (so once per element of the mesh), with
// the query's answer for it; ribbons guarantee the answer is complete. Shared memory (dynamic,
// sized by the largest patch, see queries.py): local EV (2 x u16 per edge), local FE (3 x u16 per
// face), and for the transposed queries (VV, VE, VF, EF, FF) row offsets and values built by
// counting, a block-wide scan and a scatter (the dissertation's multisplit-style transpose).
#pragma once
#include "common.cuh"

struct PatchArgs {
  const int* face_offsets;    // k + 1
  const int* edge_offsets;    // k + 1
  const int* vertex_offsets;  // k + 1
  const int* owned_faces;     // k
  const int* owned_edges;     // k
  const int* owned_vertices;  // k
  const int* faces;           // global ids of the local faces (owned first), per patch row
  const int* edges;
  const int* vertices;
  const unsigned short* local_ev;  // 2 per local edge, at 2 * edge_offsets[p]
  const unsigned short* local_fe;  // 3 per local face (edge << 1 | orientation), at 3 * ...
  const unsigned char* active;     // per patch: 0 skips the patch (the active-set filter)
};

// The kernel parameters behind PatchArgs (queries.py::patch_args passes them in this order).
#define PATCH_PARAMS                                                                        \
  const int *face_offsets, const int *edge_offsets, const int *vertex_offsets,              \
      const int *owned_faces, const int *owned_edges, const int *owned_vertices,            \
      const int *faces, const int *edges, const int *vertices,                              \
      const unsigned short *local_ev, const unsigned short *local_fe,                       \
      const unsigned char *active
#define PATCH_ARGS                                                                          \
  PatchArgs {                                                                               \
    face_offsets, edge_offsets, vertex_offsets, owned_faces, owned_edges, owned_vertices,   \
        faces, edges, vertices, local_ev, local_fe, active                                  \
  }

enum class Query { VV, VE, VF, EV, EF, FV, FE, FF };

// One element's answer: local ids in shared memory, mapped to global ids on access.
struct Neighbours {
  const unsigned short* values;
  int begin, end, shift;
  const int* to_global;  // the patch's local→global map of the output element type
  __device__ int size() const { return end - begin; }
  __device__ int local(int j) const { return values[begin + j] >> shift; }
  __device__ int operator[](int j) const { return to_global[local(j)]; }
  // FE only: 1 when face side j runs from the edge's larger vertex to its smaller
  __device__ int orientation(int j) const { return values[begin + j] & 1; }
};

// FF: the faces across each of a face's edges (through the EF transpose), the face itself left out.
struct FaceNeighbours {
  const unsigned int* off;
  const unsigned short* val;
  const unsigned short* fe;
  int f;
  const int* to_global;
  __device__ int size() const {
    int n = 0;
    for (int k = 0; k < 3; ++k) {
      const int e = fe[3 * f + k] >> 1;
      for (unsigned int i = off[e]; i < off[e + 1]; ++i) n += val[i] != f;
    }
    return n;
  }
  __device__ int local(int j) const {
    for (int k = 0; k < 3; ++k) {
      const int e = fe[3 * f + k] >> 1;
      for (unsigned int i = off[e]; i < off[e + 1]; ++i) {
        if (val[i] == f) continue;
        if (j-- == 0) return val[i];
      }
    }
    return -1;
  }
  __device__ int operator[](int j) const { return to_global[local(j)]; }
};

struct PatchView {
  int p, nv, ne, nf, owned_v, owned_e, owned_f;
  const int* vertices;
  const int* edges;
  const int* faces;
  unsigned short* ev;  // shared
  unsigned short* fe;  // shared
};

// Local vertex at the start of side k of local face f (FV = FE x EV, orientation applied).
__device__ __forceinline__ unsigned short face_vertex(const PatchView& v, int f, int k) {
  const unsigned short e = v.fe[3 * f + k];
  return v.ev[2 * (e >> 1) + (e & 1)];
}

// 1. stage patch p's EV and FE in shared memory.
__device__ inline PatchView load_patch(const PatchArgs& a, unsigned short* smem, int p) {
  PatchView v;
  v.p = p;
  const int f0 = a.face_offsets[v.p], e0 = a.edge_offsets[v.p], v0 = a.vertex_offsets[v.p];
  v.nf = a.face_offsets[v.p + 1] - f0;
  v.ne = a.edge_offsets[v.p + 1] - e0;
  v.nv = a.vertex_offsets[v.p + 1] - v0;
  v.owned_f = a.owned_faces[v.p];
  v.owned_e = a.owned_edges[v.p];
  v.owned_v = a.owned_vertices[v.p];
  v.vertices = a.vertices + v0;
  v.edges = a.edges + e0;
  v.faces = a.faces + f0;
  v.ev = smem;
  v.fe = smem + 2 * v.ne;
  for (int i = threadIdx.x; i < 2 * v.ne; i += blockDim.x) v.ev[i] = a.local_ev[2 * e0 + i];
  for (int i = threadIdx.x; i < 3 * v.nf; i += blockDim.x) v.fe[i] = a.local_fe[3 * f0 + i];
  __syncthreads();
  return v;
}

// Exclusive scan of cnt[0..n) in place, the whole block cooperating; returns the total.
// partial needs blockDim.x entries.
__device__ inline unsigned int block_exclusive_scan(unsigned int* cnt, int n,
                                                    unsigned int* partial) {
  const int T = blockDim.x, t = threadIdx.x;
  const int chunk = (n + T - 1) / T;
  const int lo = min(n, t * chunk), hi = min(n, lo + chunk);
  unsigned int sum = 0;
  for (int i = lo; i < hi; ++i) sum += cnt[i];
  partial[t] = sum;
  __syncthreads();
  for (int off = 1; off < T; off <<= 1) {  // Hillis-Steele over the per-thread sums
    const unsigned int x = t >= off ? partial[t - off] : 0u;
    __syncthreads();
    partial[t] += x;
    __syncthreads();
  }
  unsigned int run = partial[t] - sum;  // exclusive prefix of this thread's chunk
  for (int i = lo; i < hi; ++i) {
    const unsigned int c = cnt[i];
    cnt[i] = run;
    run += c;
  }
  const unsigned int total = partial[T - 1];
  __syncthreads();
  return total;
}

// 2. transpose: n_entries (row, value) pairs from key_of(i) / value_of(i) into rows
// off[0..n_rows] / val[], all in shared memory. pos needs n_rows entries, partial blockDim.x.
template <class Key, class Val>
__device__ void block_transpose(int n_rows, int n_entries, Key key_of, Val value_of,
                                unsigned int* off, unsigned int* pos, unsigned short* val,
                                unsigned int* partial) {
  for (int i = threadIdx.x; i <= n_rows; i += blockDim.x) off[i] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n_entries; i += blockDim.x) atomicAdd(off + key_of(i), 1u);
  __syncthreads();
  const unsigned int total = block_exclusive_scan(off, n_rows, partial);
  for (int i = threadIdx.x; i < n_rows; i += blockDim.x) pos[i] = off[i];
  if (threadIdx.x == 0) off[n_rows] = total;
  __syncthreads();
  for (int i = threadIdx.x; i < n_entries; i += blockDim.x) {
    const unsigned int slot = atomicAdd(pos + key_of(i), 1u);
    val[slot] = value_of(i);
  }
  __syncthreads();
}

// Shared memory for_each needs, in 4-byte words (queries.py computes the same for the launch):
// ev + fe (u16), off (rows + 1) and pos (rows) u32, val (max(3 nf, 2 ne) u16), partial (blockDim).

// 3. run body(global id, answer) for every element patch p owns.
template <Query Q, class Body>
__device__ void for_patch(const PatchArgs& a, unsigned char* smem, int p, Body body) {
  unsigned short* s16 = reinterpret_cast<unsigned short*>(smem);
  PatchView v = load_patch(a, s16, p);
  const int rows = max(max(v.nv, v.ne), v.nf);
  const int base16 = ((2 * v.ne + 3 * v.nf) * 2 + 3) / 4;  // in 4-byte words
  unsigned int* off = reinterpret_cast<unsigned int*>(smem) + base16;
  unsigned int* pos = off + rows + 1;
  unsigned short* val = reinterpret_cast<unsigned short*>(pos + rows);
  const int n_val = 3 * v.nf > 2 * v.ne ? 3 * v.nf : 2 * v.ne;
  unsigned int* partial = reinterpret_cast<unsigned int*>(val) + (n_val * 2 + 3) / 4;

  if constexpr (Q == Query::EV) {
    for (int e = threadIdx.x; e < v.owned_e; e += blockDim.x)
      body(v.edges[e], Neighbours{v.ev, 2 * e, 2 * e + 2, 0, v.vertices}, v);
  } else if constexpr (Q == Query::FE) {
    for (int f = threadIdx.x; f < v.owned_f; f += blockDim.x)
      body(v.faces[f], Neighbours{v.fe, 3 * f, 3 * f + 3, 1, v.edges}, v);
  } else if constexpr (Q == Query::FV) {
    for (int i = threadIdx.x; i < 3 * v.nf; i += blockDim.x) val[i] = face_vertex(v, i / 3, i % 3);
    __syncthreads();
    for (int f = threadIdx.x; f < v.owned_f; f += blockDim.x)
      body(v.faces[f], Neighbours{val, 3 * f, 3 * f + 3, 0, v.vertices}, v);
  } else if constexpr (Q == Query::VE || Q == Query::VV) {
    const unsigned short* ev = v.ev;
    block_transpose(
        v.nv, 2 * v.ne, [ev](int i) { return (int)ev[i]; },
        [ev](int i) { return (unsigned short)(Q == Query::VE ? (i >> 1) : ev[i ^ 1]); }, off, pos,
        val, partial);
    for (int u = threadIdx.x; u < v.owned_v; u += blockDim.x)
      body(v.vertices[u],
           Neighbours{val, (int)off[u], (int)off[u + 1], 0, Q == Query::VE ? v.edges : v.vertices},
           v);
  } else if constexpr (Q == Query::VF) {
    const PatchView w = v;
    block_transpose(
        v.nv, 3 * v.nf, [w](int i) { return (int)face_vertex(w, i / 3, i % 3); },
        [](int i) { return (unsigned short)(i / 3); }, off, pos, val, partial);
    for (int u = threadIdx.x; u < v.owned_v; u += blockDim.x)
      body(v.vertices[u], Neighbours{val, (int)off[u], (int)off[u + 1], 0, v.faces}, v);
  } else if constexpr (Q == Query::EF || Q == Query::FF) {
    const unsigned short* fe = v.fe;
    block_transpose(
        v.ne, 3 * v.nf, [fe](int i) { return (int)(fe[i] >> 1); },
        [](int i) { return (unsigned short)(i / 3); }, off, pos, val, partial);
    if constexpr (Q == Query::EF) {
      for (int e = threadIdx.x; e < v.owned_e; e += blockDim.x)
        body(v.edges[e], Neighbours{val, (int)off[e], (int)off[e + 1], 0, v.faces}, v);
    } else {
      for (int f = threadIdx.x; f < v.owned_f; f += blockDim.x)
        body(v.faces[f], FaceNeighbours{off, val, v.fe, f, v.faces}, v);
    }
  }
}

// One block per patch (block b runs patch b), with the active-set filter: a patch whose flag is
// 0 is skipped by its whole block.
template <Query Q, class Body>
__device__ void for_each(const PatchArgs& a, unsigned char* smem, Body body) {
  if (!a.active[blockIdx.x]) return;
  for_patch<Q>(a, smem, blockIdx.x, body);
}

// The patches of a list (the active set compacted: list[0 .. *count)), each block taking every
// gridDim.x-th entry: a launch costs what its listed patches cost, not one block per patch of
// the mesh (at 61k patches the empty blocks alone took 1.2 ms a launch on an H100).
template <Query Q, class Body>
__device__ void for_each_listed(const PatchArgs& a, unsigned char* smem, const int* list,
                                const int* count, Body body) {
  const int n = *count;
  for (int i = blockIdx.x; i < n; i += gridDim.x) {
    for_patch<Q>(a, smem, list[i], body);
    __syncthreads();  // the next patch reuses the shared memory
  }
}
