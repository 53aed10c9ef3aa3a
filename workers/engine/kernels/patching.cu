// patching.cu: the two kernels of patching on the GPU (workers/engine/patches.py), each the same
// result as the array code it replaces, bit for bit. The index arrays they gather from at random
// (ranks, labels, owners, the VF and EF rows) come as 32-bit copies: on a shuffled mesh the
// gathers miss the cache, and half the bytes keep more of them in L2.
//
// run_pieces: one block per run of S consecutive faces in Morton order; the run's faces are
//   joined through the face graph (faces consecutive around an edge, as face_adjacency chains
//   them) in a lock-free union-find in shared memory, larger roots hooked under smaller ones, so
//   every piece's root is its first face in Morton order. Out: that root's rank, per position,
//   and at each root's position the piece's number of faces (counted in shared memory: the
//   array code's bincount of the labels is an atomic per face in global memory).
// face_centroids, morton_keys: the Morton order's keys (patches.morton_rank): float32 centroids
//   as the array code sums and divides them, then per face its code shifted above its id.
// patch_rows: one block per patch; the patch's local faces (owned, then the ribbon: every other
//   face around a vertex of an owned face), vertices and edges (owned first, then by id) sorted
//   and de-duplicated in shared memory (bitonic sort, in-place compaction; an edge is listed
//   only by its first local face, so its list has no repeats to sort), then the local EV and FE
//   by binary search. The rows go to a pool, each patch where an atomic counter puts it, with
//   its six counts; copy_rows then moves them to their offsets in patch order. A patch whose
//   rows do not fit the buffers sets *overflow to 1 (the caller builds the rows with the array
//   code), one that finds the pools full to 2 (the caller tries larger pools).

#ifndef CAP_F  // the buffers of patch_rows (patches.ROW_CAP sets them)
#define CAP_F 4096
#define CAP_V 4096
#define CAP_E 4096
#endif
#define SENT 0xFFFFFFFFu
#define NOT_OWNED 0x80000000u

__device__ __forceinline__ int find_root(volatile int* parent, int x) {
  while (true) {
    int p = parent[x];
    if (p == x) return x;
    x = p;
  }
}

__device__ __forceinline__ void unite(int* parent, int a, int b) {
  while (true) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a < b) {
      int t = a;
      a = b;
      b = t;
    }
    if (atomicCAS(parent + a, a, b) == a) return;  // else a gained a parent: look again
  }
}

extern "C" __global__ void run_pieces(const long long* __restrict__ order,
                                      const int* __restrict__ rank, long long m, int S,
                                      const int* __restrict__ FE, const int* __restrict__ ef_off,
                                      const int* __restrict__ ef_sides,
                                      long long* __restrict__ root_of_pos,
                                      long long* __restrict__ size_at_pos) {
  extern __shared__ int parent[];  // S parents, then S counts
  int* count = parent + S;
  const long long base = (long long)blockIdx.x * S;
  if (base >= m) return;
  const int n = (int)min((long long)S, m - base);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    parent[i] = i;
    count[i] = 0;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const long long f = order[base + i];
    for (int k = 0; k < 3; ++k) {
      const long long s = 3 * f + k;
      const int e = FE[s] >> 1;
      const long long lo = ef_off[e], hi = ef_off[e + 1];
      long long at = lo;
      while (at < hi && ef_sides[at] != s) ++at;
      for (int d = -1; d <= 1; d += 2) {
        const long long q = at + d;
        if (q < lo || q >= hi) continue;
        const long long g = ef_sides[q] / 3;
        if (g == f) continue;
        const long long rg = rank[g];
        if (rg < base || rg >= base + n) continue;
        unite(parent, i, (int)(rg - base));
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int r = find_root(parent, i);
    root_of_pos[base + i] = base + r;
    atomicAdd(count + r, 1);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (parent[i] == i) size_at_pos[base + i] = count[i];
}

// -------------------------------------------------------------------------------- Morton keys
extern "C" __global__ void face_centroids(const float* __restrict__ V, const int* __restrict__ F,
                                          long long m, float* __restrict__ c) {
  const long long f = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (f >= m) return;
  const long long a = 3LL * F[3 * f], b = 3LL * F[3 * f + 1], d = 3LL * F[3 * f + 2];
  for (int j = 0; j < 3; ++j) c[j * m + f] = (V[a + j] + V[b + j] + V[d + j]) / 3.0f;
}

// 10 bits with two zero bits between consecutive ones (patches._spread_bits)
__device__ __forceinline__ long long spread_bits(long long x) {
  x &= 0x3FF;
  x = (x | (x << 16)) & 0x30000FF;
  x = (x | (x << 8)) & 0x300F00F;
  x = (x | (x << 4)) & 0x30C30C3;
  x = (x | (x << 2)) & 0x9249249;
  return x;
}

extern "C" __global__ void morton_keys(const float* __restrict__ c, long long m, float lo0,
                                       float lo1, float lo2, float scale, int bits,
                                       long long* __restrict__ keys) {
  const long long f = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (f >= m) return;
  const float lo[3] = {lo0, lo1, lo2};
  long long code = 0;
  for (int j = 0; j < 3; ++j) {
    // clip(floor((c - lo) * scale), 0, 1023) in float32, as the array code
    const float q = fminf(fmaxf(floorf((c[j * m + f] - lo[j]) * scale), 0.0f), 1023.0f);
    code |= spread_bits((long long)q) << (2 - j);
  }
  keys[f] = (code << bits) | f;
}

// ------------------------------------------------------------------------------- block helpers
// Exclusive prefix sum of one int per thread across the block; *total gets the sum. Every
// thread of the block must call it. warp_sums holds 32 ints.
__device__ int block_exclusive_scan(int x, int* warp_sums, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  int v = x;
  for (int d = 1; d < 32; d <<= 1) {
    int y = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += y;
  }
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int w = lane < nwarps ? warp_sums[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int y = __shfl_up_sync(0xFFFFFFFFu, w, d);
      if (lane >= d) w += y;
    }
    warp_sums[lane] = w;  // inclusive
  }
  __syncthreads();
  const int before = (warp > 0 ? warp_sums[warp - 1] : 0) + v - x;
  *total = warp_sums[nwarps - 1];
  __syncthreads();
  return before;
}

// Sort keys[0, n) ascending and drop repeats (and SENT); returns the new count, or -1 when the
// padded length exceeds cap. Every thread of the block must call it.
__device__ int sort_unique(unsigned* keys, int n, int cap, int* warp_sums) {
  if (n <= 1) {
    __syncthreads();
    return n;
  }
  int P = 1;
  while (P < n) P <<= 1;
  if (P > cap) return -1;
  for (int i = n + threadIdx.x; i < P; i += blockDim.x) keys[i] = SENT;
  __syncthreads();
  for (int size = 2; size <= P; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < (P >> 1); t += blockDim.x) {
        const int lo = 2 * t - (t & (stride - 1));
        const int hi = lo + stride;
        const bool up = (lo & size) == 0;
        const unsigned a = keys[lo], b = keys[hi];
        if ((a > b) == up) {
          keys[lo] = b;
          keys[hi] = a;
        }
      }
      __syncthreads();
    }
  }
  // in-place compaction, a tile of blockDim at a time: a head moves to a place at or before its
  // own, and the tile is read before the scan's barriers, so no unread key is overwritten
  int out = 0;
  for (int tile = 0; tile < n; tile += blockDim.x) {
    const int i = tile + threadIdx.x;
    unsigned key = SENT;
    int head = 0;
    if (i < n) {
      key = keys[i];
      head = key != SENT && (i == 0 || keys[i - 1] != key);
    }
    int total;
    const int at = block_exclusive_scan(head, warp_sums, &total);
    if (head) keys[out + at] = key;
    out += total;
    __syncthreads();
  }
  return out;
}

// First index in sorted keys[0, n) holding a key >= x.
__device__ __forceinline__ int lower_bound(const unsigned* keys, int n, unsigned x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (keys[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// ---------------------------------------------------------------------------------- patch rows
extern "C" __global__ void patch_rows(
    long long n_patches, const long long* __restrict__ fsorted,
    const long long* __restrict__ own_off, const int* __restrict__ label,
    const int* __restrict__ F, const int* __restrict__ FE, const int* __restrict__ EV,
    const int* __restrict__ vf_off, const int* __restrict__ vf_faces,
    const int* __restrict__ ef_off, const int* __restrict__ ef_sides,
    const int* __restrict__ vertex_owner, const int* __restrict__ edge_owner,
    long long* __restrict__ counts, int* __restrict__ overflow, unsigned* __restrict__ pool,
    unsigned long long pool_cap, unsigned long long* pool_used,
    unsigned short* __restrict__ pool16, unsigned long long pool16_cap,
    unsigned long long* pool16_used, long long* __restrict__ base,
    long long* __restrict__ face_local, long long* __restrict__ vertex_local,
    long long* __restrict__ edge_local) {
  extern __shared__ unsigned smem[];
  unsigned* Fk = smem;            // local faces: owned, then the ribbon
  unsigned* Vk = Fk + CAP_F;      // local vertices, NOT_OWNED | id
  unsigned* Ek = Vk + CAP_V;      // local edges, NOT_OWNED | id
  __shared__ int warp_sums[32];
  __shared__ int n_add, bad;
  __shared__ unsigned long long at32, at16;
  const int tid = threadIdx.x, bd = blockDim.x;

  for (long long p = blockIdx.x; p < n_patches; p += gridDim.x) {
    const long long o0 = own_off[p];
    const int no = (int)(own_off[p + 1] - o0);
    if (tid == 0) {
      n_add = 0;
      bad = 3 * no > CAP_V || no > CAP_F;
    }
    __syncthreads();
    if (bad) {
      if (tid == 0) atomicMax(overflow, 1);
      return;  // the whole block leaves: bad is shared
    }
    // owned faces (sorted by id) and the vertices they touch
    for (int i = tid; i < no; i += bd) {
      const long long f = fsorted[o0 + i];
      Fk[i] = (unsigned)f;
      for (int c = 0; c < 3; ++c) Vk[3 * i + c] = (unsigned)F[3 * f + c];
    }
    __syncthreads();
    const int nv0 = sort_unique(Vk, 3 * no, CAP_V, warp_sums);
    // the ribbon: every face of another patch around one of those vertices
    for (int i = tid; i < nv0; i += bd) {
      const long long v = Vk[i];
      for (long long q = vf_off[v]; q < vf_off[v + 1]; ++q) {
        const long long g = vf_faces[q];
        if (label[g] == p) continue;
        const int at = atomicAdd(&n_add, 1);
        if (no + at < CAP_F) Fk[no + at] = (unsigned)g;
      }
    }
    __syncthreads();
    int nr = n_add;
    if (nv0 < 0 || no + nr > CAP_F) nr = -1;
    else nr = sort_unique(Fk + no, nr, CAP_F - no, warp_sums);
    if (nr < 0) {
      if (tid == 0) atomicMax(overflow, 1);
      return;
    }
    const int nf = no + nr;
    // vertices: those of the owned faces, and the ribbon's others (found by search)
    if (tid == 0) n_add = 0;
    __syncthreads();
    for (int j = tid; j < 3 * nr; j += bd) {
      const unsigned v = (unsigned)F[3 * (long long)Fk[no + j / 3] + j % 3];
      const int at = lower_bound(Vk, nv0, v);
      if (at < nv0 && Vk[at] == v) continue;
      const int slot = atomicAdd(&n_add, 1);
      if (nv0 + slot < CAP_V) Vk[nv0 + slot] = v;
    }
    __syncthreads();
    int nv = nv0 + n_add;
    if (nv > CAP_V) {
      if (tid == 0) atomicMax(overflow, 1);
      return;
    }
    for (int i = tid; i < nv; i += bd) {
      const unsigned v = Vk[i];
      Vk[i] = v | (vertex_owner[v] == p ? 0u : NOT_OWNED);
    }
    // edges: each from the first local face around it (faces around an edge ascend in its row),
    // so the list holds no repeats; a face of another patch is local if it is on the ribbon
    if (tid == 0) n_add = 0;
    __syncthreads();
    for (int j = tid; j < 3 * nf; j += bd) {
      const long long f = Fk[j / 3];
      const unsigned e = (unsigned)(FE[3 * f + j % 3] >> 1);
      bool first = true;
      for (long long q = ef_off[e]; q < ef_off[e + 1]; ++q) {
        const long long g = ef_sides[q] / 3;
        if (g >= f) break;
        if (label[g] == p) first = false;
        else {
          const int at = lower_bound(Fk + no, nr, (unsigned)g);
          first = !(at < nr && Fk[no + at] == (unsigned)g);
        }
        if (!first) break;
      }
      if (!first) continue;
      const int slot = atomicAdd(&n_add, 1);
      if (slot < CAP_E) Ek[slot] = e | (edge_owner[e] == p ? 0u : NOT_OWNED);
    }
    __syncthreads();
    if (n_add > CAP_E) {
      if (tid == 0) atomicMax(overflow, 1);
      return;
    }
    const int n_edges = n_add;
    nv = sort_unique(Vk, nv, CAP_V, warp_sums);
    const int ne = sort_unique(Ek, n_edges, CAP_E, warp_sums);
    if (nv < 0 || ne < 0) {
      if (tid == 0) atomicMax(overflow, 1);
      return;
    }
    const int ov = lower_bound(Vk, nv, NOT_OWNED);
    const int oe = lower_bound(Ek, ne, NOT_OWNED);
    // the rows go to the pools, each patch at the place it takes there (the copy kernel moves
    // them to their offsets in patch order); the maps to local ids go straight to their places
    if (tid == 0) {
      const unsigned long long n32 = (unsigned long long)(nf + nv + ne);
      const unsigned long long n16 = (unsigned long long)(3 * nf + 2 * ne);
      at32 = atomicAdd(pool_used, n32);
      at16 = atomicAdd(pool16_used, n16);
      bad = at32 + n32 > pool_cap || at16 + n16 > pool16_cap;
      if (!bad) {
        long long* c = counts + 6 * p;
        c[0] = nf;
        c[1] = no;
        c[2] = nv;
        c[3] = ov;
        c[4] = ne;
        c[5] = oe;
        base[2 * p] = (long long)at32;
        base[2 * p + 1] = (long long)at16;
      }
    }
    __syncthreads();
    if (bad) {
      if (tid == 0) atomicMax(overflow, 2);  // the pools are full (1: the buffers are)
      return;
    }
    unsigned* rows = pool + at32;
    unsigned short* fe16 = pool16 + at16;
    unsigned short* ev16 = fe16 + 3 * nf;
    for (int i = tid; i < nf; i += bd) {
      const long long f = Fk[i];
      rows[i] = (unsigned)f;
      if (i < no) face_local[f] = i;
      for (int c = 0; c < 3; ++c) {
        const int fe = FE[3 * f + c];
        const unsigned e = (unsigned)(fe >> 1);
        const unsigned key = e | (edge_owner[e] == p ? 0u : NOT_OWNED);
        const int le = lower_bound(Ek, ne, key);
        fe16[3 * i + c] = (unsigned short)((le << 1) | (fe & 1));
      }
    }
    for (int i = tid; i < nv; i += bd) {
      const unsigned v = Vk[i] & ~NOT_OWNED;
      rows[nf + i] = v;
      if (i < ov) vertex_local[v] = i;
    }
    for (int i = tid; i < ne; i += bd) {
      const unsigned e = Ek[i] & ~NOT_OWNED;
      rows[nf + nv + i] = e;
      if (i < oe) edge_local[e] = i;
      for (int c = 0; c < 2; ++c) {
        const unsigned v = (unsigned)EV[2 * (long long)e + c];
        const unsigned key = v | (vertex_owner[v] == p ? 0u : NOT_OWNED);
        ev16[2 * i + c] = (unsigned short)lower_bound(Vk, nv, key);
      }
    }
    __syncthreads();
  }
}

// One block per patch: its rows from the pools to their offsets in patch order (the CSR rows).
extern "C" __global__ void copy_rows(long long n_patches, const long long* __restrict__ counts,
                                     const long long* __restrict__ base,
                                     const unsigned* __restrict__ pool,
                                     const unsigned short* __restrict__ pool16,
                                     const long long* __restrict__ face_off,
                                     const long long* __restrict__ vert_off,
                                     const long long* __restrict__ edge_off,
                                     long long* __restrict__ faces, long long* __restrict__ vertices,
                                     long long* __restrict__ edges,
                                     unsigned short* __restrict__ local_ev,
                                     unsigned short* __restrict__ local_fe) {
  for (long long p = blockIdx.x; p < n_patches; p += gridDim.x) {
    const long long nf = counts[6 * p], nv = counts[6 * p + 2], ne = counts[6 * p + 4];
    const unsigned* rows = pool + base[2 * p];
    const unsigned short* fe16 = pool16 + base[2 * p + 1];
    const long long fo = face_off[p], vo = vert_off[p], eo = edge_off[p];
    for (long long i = threadIdx.x; i < nf; i += blockDim.x) faces[fo + i] = rows[i];
    for (long long i = threadIdx.x; i < nv; i += blockDim.x) vertices[vo + i] = rows[nf + i];
    for (long long i = threadIdx.x; i < ne; i += blockDim.x) edges[eo + i] = rows[nf + nv + i];
    for (long long i = threadIdx.x; i < 3 * nf; i += blockDim.x) local_fe[3 * fo + i] = fe16[i];
    for (long long i = threadIdx.x; i < 2 * ne; i += blockDim.x)
      local_ev[2 * eo + i] = fe16[3 * nf + i];
  }
}
