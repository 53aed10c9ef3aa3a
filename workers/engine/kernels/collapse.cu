// collapse.cu: the preconditions of edge collapses, one thread per candidate
// (workers/engine/dynamic/collapse_check.py, whose array code this mirrors expression for
// expression: compiled without FMA contraction, it gives the same reasons bit for bit).
//
// Candidate i collapses b[i] onto a[i], which goes to p[i]. The thread walks the vertex-face
// rows of a and of b (the cavity): the link condition from the distinct neighbours of a that are
// neighbours of b, the repeated-face test, and every changed face before and after.
#include "common.cuh"

#define QUALITY_SCALE (2.0 * 1.7320508075688772)
#define NO_AREA 1e-10

struct Measures {
  double c[3];
  double area2, q, sin, lmax;
};

__device__ __forceinline__ double sq3(const double* v) {
  return v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
}

__device__ void measures(const double* P0, const double* P1, const double* P2, Measures& m) {
  double e0[3], e1[3], e2[3], f[3];
  for (int j = 0; j < 3; ++j) {
    e0[j] = P1[j] - P0[j];
    e1[j] = P2[j] - P1[j];
    e2[j] = P0[j] - P2[j];
    f[j] = P2[j] - P0[j];
  }
  m.c[0] = e0[1] * f[2] - e0[2] * f[1];
  m.c[1] = e0[2] * f[0] - e0[0] * f[2];
  m.c[2] = e0[0] * f[1] - e0[1] * f[0];
  m.area2 = sqrt(sq3(m.c));
  double l0 = sq3(e0), l1 = sq3(e1), l2 = sq3(e2);
  double s = l0 + l1 + l2;
  m.q = QUALITY_SCALE * m.area2 / (s > 0 ? s : 1.0);
  double lmax = fmax(fmax(l0, l1), l2);
  double lmin = fmin(fmin(l0, l1), l2);
  double den = sqrt(lmax * (s - lmax - lmin));
  m.sin = den > 0 ? m.area2 / (den > 0 ? den : 1.0) : 0.0;
  m.lmax = lmax;
}

__device__ __forceinline__ bool face_has(const long long* __restrict__ F, long long f, long long x) {
  return F[3 * f] == x || F[3 * f + 1] == x || F[3 * f + 2] == x;
}

// the distinct neighbours of a (the corners of a's faces vf[a0..a1)) that are also corners of
// b's faces (vf[b0..b1)), a and b not counted. a's neighbours go into a short list first (up to
// LINK_LIST), and each corner of b's faces marks its entry there; a longer ring takes the walk
// that looks each neighbour up in the faces again, some 500 reads a candidate at valence 6
#define LINK_LIST 32
__device__ long long common_neighbours(const long long* __restrict__ F,
                                       const long long* __restrict__ vf, long long a, long long b,
                                       long long a0, long long a1, long long b0, long long b1) {
  long long ring[LINK_LIST];
  int n_ring = 0;
  bool spill = false;
  for (long long r = a0; r < a1 && !spill; ++r) {
    const long long f = vf[r];
    for (int j = 0; j < 3; ++j) {
      const long long x = F[3 * f + j];
      if (x == a || x == b) continue;
      bool seen = false;
      for (int t = 0; t < n_ring && !seen; ++t) seen = ring[t] == x;
      if (seen) continue;
      if (n_ring == LINK_LIST) {
        spill = true;
        break;
      }
      ring[n_ring++] = x;
    }
  }
  if (!spill) {
    unsigned int hit = 0u;
    for (long long r = b0; r < b1; ++r) {
      const long long f = vf[r];
      for (int j = 0; j < 3; ++j) {
        const long long x = F[3 * f + j];
        if (x == a || x == b) continue;
        for (int t = 0; t < n_ring; ++t) {
          if (ring[t] == x) {
            hit |= 1u << t;
            break;
          }
        }
      }
    }
    return __popc(hit);
  }
  long long common = 0;
  for (long long r = a0; r < a1; ++r) {
    const long long f = vf[r];
    for (int j = 0; j < 3; ++j) {
      const long long x = F[3 * f + j];
      if (x == a || x == b) continue;
      bool seen = false;
      for (int j2 = 0; j2 < j && !seen; ++j2) seen = F[3 * f + j2] == x;
      for (long long r2 = a0; r2 < r && !seen; ++r2) seen = face_has(F, vf[r2], x);
      if (seen) continue;
      bool of_b = false;
      for (long long r3 = b0; r3 < b1 && !of_b; ++r3) of_b = face_has(F, vf[r3], x);
      common += of_b;
    }
  }
  return common;
}

extern "C" __global__ void collapse_check(
    const double* __restrict__ X, const long long* __restrict__ F,
    const long long* __restrict__ vf_off, const long long* __restrict__ vf,
    const long long* __restrict__ A, const long long* __restrict__ B,
    const double* __restrict__ P, const long long* __restrict__ expected,
    const long long* __restrict__ opp, const unsigned char* __restrict__ pre,
    double min_dot, double max_len2, double min_quality, double min_sin, long long k,
    signed char* __restrict__ reason) {
  FOR_EACH(i, k) {
    const long long a = A[i], b = B[i];
    const double p[3] = {P[3 * i], P[3 * i + 1], P[3 * i + 2]};
    const bool moves = p[0] != X[3 * a] || p[1] != X[3 * a + 1] || p[2] != X[3 * a + 2];
    const long long o0 = opp[2 * i], o1 = opp[2 * i + 1];
    const long long a0 = vf_off[a], a1 = vf_off[a + 1], b0 = vf_off[b], b1 = vf_off[b + 1];

    // -- link: the distinct neighbours of a that are neighbours of b
    const long long common = common_neighbours(F, vf, a, b, a0, a1, b0, b1);
    bool link = pre[i] != 0 || common != expected[i];

    // -- the surviving faces: repeated-face test; the changed ones before and after
    bool tet_a = false, tet_b = false, longer = false, fold = false, degenerate = false;
    double lo_old = 1.0, lo_new = 1.0;
    for (int side = 0; side < 2; ++side) {
      const long long r0 = side == 0 ? a0 : b0, r1 = side == 0 ? a1 : b1;
      for (long long r = r0; r < r1; ++r) {
        const long long f = vf[r];
        const long long T[3] = {F[3 * f], F[3 * f + 1], F[3 * f + 2]};
        const bool ma[3] = {T[0] == a, T[1] == a, T[2] == a};
        const bool mb[3] = {T[0] == b, T[1] == b, T[2] == b};
        const bool has_a = ma[0] || ma[1] || ma[2], has_b = mb[0] || mb[1] || mb[2];
        const bool survives = !(has_a && has_b);
        if (survives && o1 >= 0 && (T[0] == o0 || T[1] == o0 || T[2] == o0) &&
            (T[0] == o1 || T[1] == o1 || T[2] == o1)) {
          tet_a |= has_a;
          tet_b |= has_b;
        }
        if (!(survives && (has_b || moves))) continue;
        double Po[3][3], Pn[3][3];
        for (int j = 0; j < 3; ++j) {
          for (int d = 0; d < 3; ++d) {
            Po[j][d] = X[3 * T[j] + d];
            Pn[j][d] = (ma[j] || mb[j]) ? p[d] : Po[j][d];
          }
          if (max_len2 >= 0 && !(ma[j] || mb[j])) {
            const double dv[3] = {p[0] - Po[j][0], p[1] - Po[j][1], p[2] - Po[j][2]};
            longer |= sq3(dv) > max_len2;
          }
        }
        Measures mo, mn;
        measures(Po[0], Po[1], Po[2], mo);
        measures(Pn[0], Pn[1], Pn[2], mn);
        const double dot = mo.c[0] * mn.c[0] + mo.c[1] * mn.c[1] + mo.c[2] * mn.c[2];
        const bool flat = mn.area2 <= NO_AREA * mn.lmax;
        fold |= mo.area2 > 0 && !flat && dot < min_dot * mo.area2 * mn.area2;
        degenerate |= flat || (mn.q < min_quality && mn.q < mo.q);
        lo_old = fmin(lo_old, mo.sin);
        lo_new = fmin(lo_new, mn.sin);
      }
    }
    link |= tet_a && tet_b;
    if (min_sin > 0) degenerate |= lo_new < fmin(lo_old, min_sin);
    reason[i] = link ? 1 : longer ? 2 : fold ? 3 : degenerate ? 4 : 0;
  }
}

// The vertex-face rows of F (m faces): face f once in the row of each of its corners, at the
// place a per-row cursor (the row's start, advanced atomically) gives it. The order within a
// row is the order the threads ran in; collapse_check's reasons do not depend on it.
extern "C" __global__ void vertex_faces_fill(const long long* __restrict__ F, long long corners,
                                             unsigned long long* __restrict__ cursor,
                                             long long* __restrict__ vf) {
  FOR_EACH(c, corners) {
    const unsigned long long at = atomicAdd(cursor + F[c], 1ULL);
    vf[at] = c / 3;
  }
}

// -- the conflict resolution of cavity.independent_collapses, pass by pass: the same scatter-mins
//    as its array code (min is order-free, so the accepted set is the same bit for bit)

// best[a], best[b] <- min(key) over the alive candidates
extern "C" __global__ void claim_ends(const long long* __restrict__ A,
                                      const long long* __restrict__ B,
                                      const long long* __restrict__ key,
                                      const unsigned char* __restrict__ alive, long long k,
                                      long long* __restrict__ best) {
  FOR_EACH(i, k) {
    if (!alive[i]) continue;
    atomicMin(best + A[i], key[i]);
    atomicMin(best + B[i], key[i]);
  }
}

// out[v] <- min(out[v], val[w]) over the edges (v, w), both ways (out starts as a copy of val)
extern "C" __global__ void edge_min(const long long* __restrict__ EV, long long n_edges,
                                    const long long* __restrict__ val, long long* __restrict__ out) {
  FOR_EACH(e, n_edges) {
    const long long u = EV[2 * e], v = EV[2 * e + 1];
    const long long bu = val[u], bv = val[v];
    if (bv < bu) atomicMin(out + u, bv);
    if (bu < bv) atomicMin(out + v, bu);
  }
}

// the alive candidates holding the minimum at both ends win; winners clear their ends' marks
extern "C" __global__ void take_minima(const long long* __restrict__ A,
                                       const long long* __restrict__ B,
                                       const long long* __restrict__ key,
                                       const long long* __restrict__ best, long long k,
                                       unsigned char* __restrict__ alive,
                                       unsigned char* __restrict__ accepted,
                                       long long* __restrict__ mark) {
  FOR_EACH(i, k) {
    if (!alive[i] || best[A[i]] != key[i] || best[B[i]] != key[i]) continue;
    accepted[i] = 1;
    alive[i] = 0;
    mark[A[i]] = 0;
    mark[B[i]] = 0;
  }
}

// candidates with an end where the spread marks reach drop out
extern "C" __global__ void drop_blocked(const long long* __restrict__ A,
                                        const long long* __restrict__ B,
                                        const long long* __restrict__ mark, long long k,
                                        unsigned char* __restrict__ alive) {
  FOR_EACH(i, k) {
    if (alive[i] && (mark[A[i]] == 0 || mark[B[i]] == 0)) alive[i] = 0;
  }
}

// -- _edges.claim_pairs, pass by pass: candidate owner[p] claims element el[p]; a candidate
//    wins when it holds the smallest key at every element it claims (the same scatter-mins)

extern "C" __global__ void claim_min(const long long* __restrict__ owner,
                                     const long long* __restrict__ el, long long n_pairs,
                                     const long long* __restrict__ key,
                                     const unsigned char* __restrict__ live,
                                     long long* __restrict__ best) {
  FOR_EACH(p, n_pairs) {
    const long long o = owner[p];
    if (live[o]) atomicMin(best + el[p], key[o]);
  }
}

// a live candidate that does not hold the minimum at one of its elements loses this pass
extern "C" __global__ void claim_lost(const long long* __restrict__ owner,
                                      const long long* __restrict__ el, long long n_pairs,
                                      const long long* __restrict__ key,
                                      const unsigned char* __restrict__ live,
                                      const long long* __restrict__ best,
                                      unsigned char* __restrict__ lost) {
  FOR_EACH(p, n_pairs) {
    const long long o = owner[p];
    if (live[o] && best[el[p]] != key[o]) lost[o] = 1;
  }
}

// winners: live and lost nowhere; they are accepted and leave play
extern "C" __global__ void claim_win(long long k, unsigned char* __restrict__ live,
                                     unsigned char* __restrict__ lost,
                                     unsigned char* __restrict__ won,
                                     unsigned char* __restrict__ accepted) {
  FOR_EACH(i, k) {
    const bool w = live[i] && !lost[i];
    won[i] = w;
    if (w) {
      accepted[i] = 1;
      live[i] = 0;
    }
    lost[i] = 0;
  }
}

// the elements of this pass's winners are taken
extern "C" __global__ void claim_take(const long long* __restrict__ owner,
                                      const long long* __restrict__ el, long long n_pairs,
                                      const unsigned char* __restrict__ won,
                                      unsigned char* __restrict__ taken) {
  FOR_EACH(p, n_pairs) {
    if (won[owner[p]]) taken[el[p]] = 1;
  }
}

// candidates that touch a taken element leave play
extern "C" __global__ void claim_drop(const long long* __restrict__ owner,
                                      const long long* __restrict__ el, long long n_pairs,
                                      const unsigned char* __restrict__ taken,
                                      unsigned char* __restrict__ live) {
  FOR_EACH(p, n_pairs) {
    if (taken[el[p]]) live[owner[p]] = 0;
  }
}

// -- the round's setup on the GPU (collapse.py), each the array code it replaces expression for
//    expression

// collapse.eligible_edges without pinned vertices: ok[e] for an edge with one or two faces and
// no locked end; with preserve_boundary, two faces and not both ends on the boundary
extern "C" __global__ void eligible_edges(const int* __restrict__ EV,
                                          const long long* __restrict__ efc,
                                          const bool* __restrict__ locked,
                                          const bool* __restrict__ bnd, int preserve,
                                          long long n_edges, bool* __restrict__ ok) {
  FOR_EACH(e, n_edges) {
    const int u = EV[2 * e], v = EV[2 * e + 1];
    const long long c = efc[e];
    bool good = (c == 1 || c == 2) && !locked[u] && !locked[v];
    if (preserve) good = good && c == 2 && !(bnd[u] && bnd[v]);
    ok[e] = good;
  }
}

// the eligible edges e oriented: the boundary end survives (a) and stays where it is (snap)
extern "C" __global__ void orient_edges(const long long* __restrict__ E,
                                        const int* __restrict__ EV,
                                        const long long* __restrict__ efc,
                                        const bool* __restrict__ bnd, long long k,
                                        long long* __restrict__ A, long long* __restrict__ B,
                                        bool* __restrict__ snap, bool* __restrict__ bedge) {
  FOR_EACH(i, k) {
    const long long e = E[i];
    const long long u = EV[2 * e], v = EV[2 * e + 1];
    const bool bu = bnd[u], bv = bnd[v];
    const bool swap = bv && !bu;
    A[i] = swap ? v : u;
    B[i] = swap ? u : v;
    snap[i] = bu != bv;
    bedge[i] = efc[e] == 1;
  }
}

// collapse.check_candidates' inputs per candidate edge: the common neighbours the link
// condition wants (the opposite vertices, the virtual one on a boundary edge, less the virtual
// one two boundary ends share), the opposite vertices (-1 for none) and whether a boundary
// edge's face has only boundary edges (an isolated triangle)
extern "C" __global__ void collapse_setup(
    const long long* __restrict__ edge, const long long* __restrict__ A,
    const long long* __restrict__ B, const long long* __restrict__ efc,
    const bool* __restrict__ bnd, const long long* __restrict__ ef_off,
    const long long* __restrict__ ef_sides, const int* __restrict__ FE,
    const long long* __restrict__ F, long long n_sides, long long k,
    long long* __restrict__ expected, long long* __restrict__ opp, bool* __restrict__ isolated) {
  FOR_EACH(i, k) {
    const long long e = edge[i];
    const long long c = efc[e];
    const bool is_bnd = c == 1;
    expected[i] = c + (is_bnd ? 1 : 0) - ((bnd[A[i]] && bnd[B[i]]) ? 1 : 0);
    const long long first = ef_off[e];
    const long long s0 = ef_sides[first];
    const long long f0 = s0 / 3;
    bool all_bnd = true;
    for (int j = 0; j < 3; ++j) all_bnd = all_bnd && efc[FE[3 * f0 + j] / 2] == 1;
    isolated[i] = is_bnd && all_bnd;
    const long long second = first + 1 < n_sides - 1 ? first + 1 : n_sides - 1;
    const long long s1 = ef_sides[second];
    opp[2 * i] = F[3 * f0 + (s0 % 3 + 2) % 3];
    opp[2 * i + 1] = is_bnd ? -1 : F[3 * (s1 / 3) + (s1 % 3 + 2) % 3];
  }
}

// gone[f] <- true for every face of the collapsed edges
extern "C" __global__ void mark_edge_faces(const long long* __restrict__ edge,
                                           const long long* __restrict__ ef_off,
                                           const long long* __restrict__ ef_sides, long long k,
                                           bool* __restrict__ gone) {
  FOR_EACH(i, k) {
    const long long e = edge[i];
    for (long long j = ef_off[e]; j < ef_off[e + 1]; ++j) gone[ef_sides[j] / 3] = true;
  }
}
