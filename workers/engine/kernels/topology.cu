// topology.cu: Topology.build on the GPU by hashing the sides' edge keys instead of sorting them
// (workers/engine/topology.py). The arrays are those of the sort: edges numbered in order of
// their first side, each edge's sides in increasing order.
//
// Side s of face s / 3 runs from corner s % 3 to the next; its key is lo * n + hi of its ends.
#include "common.cuh"

#define EMPTY_KEY (-1LL)

__device__ __forceinline__ void side_ends(const long long* __restrict__ F, long long s,
                                          long long& a, long long& b) {
  const long long f = s / 3;
  const int c = (int)(s % 3);
  a = F[3 * f + c];
  b = F[3 * f + (c + 1) % 3];
}

// every slot empty: key -1, first side above every side, no side (a kernel, not a copy of the
// three values from the host, which would wait for the device)
extern "C" __global__ void table_init(long long slots, long long* __restrict__ table) {
  FOR_EACH(h, slots) {
    table[3 * h] = EMPTY_KEY;
    table[3 * h + 1] = 1LL << 62;
    table[3 * h + 2] = 0;
  }
}

// each distinct key takes one slot of the table (2^bits slots, open addressing, linear
// probing); a slot is three words side by side, so that a side's three atomics touch one sector:
// the key, the key's smallest side and its number of sides
extern "C" __global__ void edge_insert(const long long* __restrict__ F, long long n_sides,
                                       long long n, int bits, long long* __restrict__ table,
                                       long long* __restrict__ slot_of_side) {
  const unsigned long long mask = (1ULL << bits) - 1ULL;
  FOR_EACH(s, n_sides) {
    long long a, b;
    side_ends(F, s, a, b);
    const long long key = (a < b ? a : b) * n + (a < b ? b : a);
    unsigned long long h = ((unsigned long long)key * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
    while (true) {
      const long long old = (long long)atomicCAS((unsigned long long*)(table + 3 * h),
                                                 (unsigned long long)EMPTY_KEY,
                                                 (unsigned long long)key);
      if (old == EMPTY_KEY || old == key) break;
      h = (h + 1ULL) & mask;
    }
    atomicMin(table + 3 * h + 1, s);
    atomicAdd((unsigned long long*)(table + 3 * h + 2), 1ULL);
    slot_of_side[s] = (long long)h;
  }
}

// head[s]: s is the first side of its edge
extern "C" __global__ void edge_heads(const long long* __restrict__ table,
                                      const long long* __restrict__ slot_of_side,
                                      long long n_sides, long long* __restrict__ head) {
  FOR_EACH(s, n_sides) head[s] = table[3 * slot_of_side[s] + 1] == s ? 1 : 0;
}

// edge e = (inclusive count of heads up to its first side) - 1: its ends and side count, and the
// slot's edge number
extern "C" __global__ void edge_number(const long long* __restrict__ F,
                                       const long long* __restrict__ slot_of_side,
                                       const long long* __restrict__ heads,
                                       const long long* __restrict__ table, long long n_sides,
                                       long long* __restrict__ slot_edge, int* __restrict__ EV,
                                       long long* __restrict__ efc) {
  FOR_EACH(s, n_sides) {
    const long long before = s > 0 ? heads[s - 1] : 0;
    if (heads[s] == before) continue;  // not a head
    const long long e = before;
    const long long h = slot_of_side[s];
    long long a, b;
    side_ends(F, s, a, b);
    slot_edge[h] = e;
    EV[2 * e] = (int)(a < b ? a : b);
    EV[2 * e + 1] = (int)(a < b ? b : a);
    efc[e] = table[3 * h + 2];
  }
}

// FE[s] = 2 * edge + (a > b), and each side placed in its edge's row at an atomic cursor
extern "C" __global__ void edge_sides(const long long* __restrict__ F,
                                      const long long* __restrict__ slot_of_side,
                                      const long long* __restrict__ slot_edge, long long n_sides,
                                      int* __restrict__ FE, unsigned long long* __restrict__ cursor,
                                      long long* __restrict__ ef_sides) {
  FOR_EACH(s, n_sides) {
    long long a, b;
    side_ends(F, s, a, b);
    const long long e = slot_edge[slot_of_side[s]];
    FE[s] = (int)(2 * e + (a > b ? 1 : 0));
    ef_sides[atomicAdd(cursor + e, 1ULL)] = s;
  }
}

// each edge's row in increasing side order (rows are short: insertion sort)
extern "C" __global__ void sort_rows(const long long* __restrict__ offsets, long long n_rows,
                                     long long* __restrict__ values) {
  FOR_EACH(r, n_rows) {
    const long long lo = offsets[r], hi = offsets[r + 1];
    for (long long i = lo + 1; i < hi; ++i) {
      const long long v = values[i];
      long long j = i - 1;
      while (j >= lo && values[j] > v) {
        values[j + 1] = values[j];
        --j;
      }
      values[j + 1] = v;
    }
  }
}

// _edges.edge_table on the GPU, after edge_insert (keys lo << 32 | hi: n = 2^32) and the edges
// numbered in key order (slot_edge): each side's edge, and each edge's second side (the smallest
// side that is not its first, s0), by atomic minimum (s1 starts above every side)
extern "C" __global__ void edge_table_sides(const long long* __restrict__ slot_of_side,
                                            const long long* __restrict__ slot_edge,
                                            const long long* __restrict__ s0, long long n_sides,
                                            long long* __restrict__ of_side,
                                            long long* __restrict__ s1) {
  FOR_EACH(s, n_sides) {
    const long long e = slot_edge[slot_of_side[s]];
    of_side[s] = e;
    if (s != s0[e]) atomicMin(s1 + e, s);
  }
}

// Topology.vertex_fans' fast path: start[v] = one corner of v (any: the last write wins), -1 for
// an unused vertex
extern "C" __global__ void fan_starts(const long long* __restrict__ F, long long n_corners,
                                      long long* __restrict__ start) {
  FOR_EACH(c, n_corners) start[F[c]] = c;
}

// does v occur more than once in face f
__device__ __forceinline__ bool repeats(const long long* __restrict__ F, long long f,
                                        long long v) {
  return (F[3 * f] == v) + (F[3 * f + 1] == v) + (F[3 * f + 2] == v) > 1;
}

// several[v] = 0 when v is unused or all its faces are one fan, else 1 (several fans, or a walk
// that cannot tell: a non-manifold edge or a face with v twice at v). From v's start corner the
// thread walks across the two-face edges at v, one way and then, unless the walk came back
// round, the other; each face it reaches holds v once and has two edges at v, so the faces
// reached are exactly the start's fan, and that fan is all of v's faces when it counts
// vfc[v] (v's corners).
extern "C" __global__ void fan_walk(const long long* __restrict__ F, const int* __restrict__ FE,
                                    const long long* __restrict__ off,
                                    const long long* __restrict__ sides,
                                    const long long* __restrict__ start,
                                    const long long* __restrict__ vfc, long long n,
                                    unsigned char* __restrict__ several) {
  FOR_EACH(v, n) {
    const long long c0 = start[v];
    if (c0 < 0) {
      several[v] = 0;
      continue;
    }
    const long long f0 = c0 / 3, fv = vfc[v];
    const int k0 = (int)(c0 % 3);
    long long seen = 1;
    bool ok = !repeats(F, f0, v), closed = false;
    for (int dir = 0; dir < 2 && ok && !closed; ++dir) {
      long long f = f0;
      int side = dir == 0 ? k0 : (k0 + 2) % 3;  // the side leaving v, then the one reaching it
      while (true) {
        const long long e = (long long)(FE[3 * f + side] >> 1);
        const long long lo = off[e], cnt = off[e + 1] - lo;
        if (cnt == 1) break;  // a boundary edge: this way ends
        if (cnt != 2) {
          ok = false;
          break;
        }
        const long long s0 = sides[lo], s1 = sides[lo + 1];
        const long long t = s0 / 3 == f ? s1 : s0;
        const long long g = t / 3;
        if (g == f || repeats(F, g, v)) {
          ok = false;
          break;
        }
        if (g == f0) {
          closed = true;
          break;
        }
        if (++seen > fv) {
          ok = false;
          break;
        }
        const int kt = (int)(t % 3);
        side = F[3 * g + kt] == v ? (kt + 2) % 3 : (kt + 1) % 3;  // g's other side at v
        f = g;
      }
    }
    several[v] = (ok && seen == fv) ? 0 : 1;
  }
}

// ---- Topology.after_collapses: the topology after a round of collapses, from the one before.
// Collapse i removes the faces of edge[i] and renames B[i] to its survivor; in each removed face
// the edge at B[i] (b-c) merges into the other one (a-c). Faces are renumbered by newface (-1:
// removed), which keeps their order, so a row's surviving sides stay in increasing order.

// merge_from[e_ac] = e_bc and gone[e_bc] = 1 for each removed face (F, FE: before the round)
extern "C" __global__ void merge_edges(const long long* __restrict__ edge,
                                       const long long* __restrict__ B, long long k,
                                       const long long* __restrict__ F, const int* __restrict__ FE,
                                       const long long* __restrict__ off,
                                       const long long* __restrict__ sides,
                                       long long* __restrict__ merge_from,
                                       unsigned char* __restrict__ gone) {
  FOR_EACH(i, k) {
    const long long e = edge[i], b = B[i];
    for (long long r = off[e]; r < off[e + 1]; ++r) {
      const long long g = sides[r] / 3;
      long long e_b = -1, e_a = -1;
      for (int j = 0; j < 3; ++j) {
        const long long x = (long long)(FE[3 * g + j] >> 1);
        if (x == e) continue;
        if (F[3 * g + j] == b || F[3 * g + (j + 1) % 3] == b) e_b = x;
        else e_a = x;
      }
      if (e_a >= 0 && e_b >= 0) {
        merge_from[e_a] = e_b;
        gone[e_b] = 1;
      }
    }
  }
}

// side sides[r] after the round: its face renumbered, or -1 where the face is removed
__device__ __forceinline__ long long new_side(const long long* __restrict__ sides,
                                              const long long* __restrict__ newface, long long r) {
  const long long nf = newface[sides[r] / 3];
  return nf < 0 ? -1 : 3 * nf + sides[r] % 3;
}

// the surviving sides of row r0..r1, renumbered, appended to out (cap entries at most)
__device__ __forceinline__ int renumbered(const long long* __restrict__ sides,
                                          const long long* __restrict__ newface, long long r0,
                                          long long r1, long long* out, int n, int cap) {
  for (long long r = r0; r < r1 && n < cap; ++r) {
    const long long s = new_side(sides, newface, r);
    if (s >= 0) out[n++] = s;
  }
  return n;
}

// per edge before the round: its number of sides after it and the smallest (head[first] = 1)
extern "C" __global__ void survivors(const long long* __restrict__ off,
                                     const long long* __restrict__ sides,
                                     const long long* __restrict__ newface,
                                     const long long* __restrict__ merge_from,
                                     const unsigned char* __restrict__ gone, long long n_e,
                                     long long* __restrict__ count, long long* __restrict__ first,
                                     long long* __restrict__ head) {
  FOR_EACH(e, n_e) {
    long long cnt = 0, lo = -1;
    if (!gone[e]) {
      const long long e2 = merge_from[e];
      for (int part = 0; part < 2; ++part) {
        const long long x = part == 0 ? e : e2;
        if (x < 0) break;
        for (long long r = off[x]; r < off[x + 1]; ++r) {
          const long long s = new_side(sides, newface, r);
          if (s < 0) continue;
          lo = cnt == 0 || s < lo ? s : lo;
          ++cnt;
        }
      }
    }
    count[e] = cnt;
    first[e] = lo;
    if (cnt) head[lo] = 1;
  }
}

// a surviving edge's new number (heads: inclusive prefix sum of head), ends and side count
extern "C" __global__ void renumber_edges(const long long* __restrict__ count,
                                          const long long* __restrict__ first,
                                          const long long* __restrict__ heads,
                                          const long long* __restrict__ Fn, long long n_e,
                                          long long* __restrict__ new_of_old, int* __restrict__ EV,
                                          long long* __restrict__ efc) {
  FOR_EACH(e, n_e) {
    if (!count[e]) continue;
    const long long s = first[e], en = heads[s] - 1;
    long long u, v;
    side_ends(Fn, s, u, v);
    new_of_old[e] = en;
    EV[2 * en] = (int)(u < v ? u : v);
    EV[2 * en + 1] = (int)(u < v ? v : u);
    efc[en] = count[e];
  }
}

// a surviving edge's row (its sides and the merged edge's, in increasing order) and FE of them
extern "C" __global__ void edge_rows(const long long* __restrict__ off,
                                     const long long* __restrict__ sides,
                                     const long long* __restrict__ newface,
                                     const long long* __restrict__ merge_from,
                                     const long long* __restrict__ count,
                                     const long long* __restrict__ new_of_old,
                                     const long long* __restrict__ Fn,
                                     const long long* __restrict__ off_new, long long n_e,
                                     long long* __restrict__ sides_new, int* __restrict__ FE) {
  FOR_EACH(e, n_e) {
    if (!count[e]) continue;
    const long long en = new_of_old[e], e2 = merge_from[e];
    long long* row = sides_new + off_new[en];
    int n = 0;
    if (e2 < 0) {  // one row, already in order (of any length: non-manifold edges too)
      n = renumbered(sides, newface, off[e], off[e + 1], row, 0, (int)count[e]);
    } else {  // two manifold rows: at most four sides, merged by insertion
      long long tmp[4];
      int m = renumbered(sides, newface, off[e], off[e + 1], tmp, 0, 4);
      m = renumbered(sides, newface, off[e2], off[e2 + 1], tmp, m, 4);
      for (int i = 1; i < m; ++i) {
        const long long v = tmp[i];
        int j = i - 1;
        while (j >= 0 && tmp[j] > v) {
          tmp[j + 1] = tmp[j];
          --j;
        }
        tmp[j + 1] = v;
      }
      for (int i = 0; i < m; ++i) row[n++] = tmp[i];
    }
    for (int i = 0; i < n; ++i) {
      const long long s = row[i];
      long long u, v;
      side_ends(Fn, s, u, v);
      FE[s] = (int)(2 * en + (u > v ? 1 : 0));
    }
  }
}
