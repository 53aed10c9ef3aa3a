// flip.cu: the quads of edge flips and the valence flips' candidates, one thread per edge
// (workers/engine/dynamic/flip.py: flip_quads and valence_flip_round, whose array code this
// mirrors expression for expression; compiled without FMA contraction it gives the same quads,
// reasons and candidates bit for bit).
#include "common.cuh"

#define R_OK 0
#define R_BOUNDARY 1
#define R_FEATURE 2
#define R_EXISTS 3
#define R_FOLD 4
#define R_SEAM 5

struct D3 {
  double x, y, z;
};
__device__ __forceinline__ D3 ld(const double* V, long long v) {
  return {V[3 * v], V[3 * v + 1], V[3 * v + 2]};
}
__device__ __forceinline__ D3 sub(D3 a, D3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
__device__ __forceinline__ D3 cross(D3 a, D3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
__device__ __forceinline__ double dot(D3 a, D3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__device__ __forceinline__ double norm(D3 a) { return sqrt(dot(a, a)); }

// keys sorted ascending: is q among them (edge_lookup)
__device__ bool has_key(const long long* __restrict__ keys, long long n, long long q) {
  if (n == 0) return false;
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (keys[mid] < q) lo = mid + 1; else hi = mid;
  }
  if (lo > n - 1) lo = n - 1;
  return keys[lo] == q;
}

__device__ __forceinline__ long long edge_key(long long u, long long v) {
  return ((u < v ? u : v) << 32) | (u < v ? v : u);
}

// sine of the smallest angle of (p, q, r) (_edges.sin_min_angle)
__device__ double sin_min_angle(D3 p, D3 q, D3 r) {
  const D3 qp = sub(q, p), rq = sub(r, q), pr = sub(p, r);
  const double l0 = dot(qp, qp), l1 = dot(rq, rq), l2 = dot(pr, pr);
  const double two_area = norm(cross(qp, sub(r, p)));
  const double lmax = fmax(fmax(l0, l1), l2), lmin = fmin(fmin(l0, l1), l2);
  const double den = sqrt(lmax * (l0 + l1 + l2 - lmax - lmin));
  return den > 0 ? two_area / den : 0.0;
}

// a flip's new faces (a, d, c) and (b, c, d) degenerate (area below 1e-10 of the longest side
// squared) or turned against either old normal n0, n1 (flip.py: quad_folds)
__device__ bool quad_folds(D3 Pa, D3 Pb, D3 Pc, D3 Pd, D3 n0, D3 n1) {
  const D3 m0 = cross(sub(Pd, Pa), sub(Pc, Pa));
  const D3 m1 = cross(sub(Pc, Pb), sub(Pd, Pb));
  const D3 cdv = sub(Pc, Pd), da = sub(Pd, Pa), ca = sub(Pc, Pa), cb = sub(Pc, Pb),
           db = sub(Pd, Pb);
  const double cd2 = dot(cdv, cdv);
  const double longest0 = fmax(fmax(dot(da, da), dot(ca, ca)), cd2);
  const double longest1 = fmax(fmax(dot(cb, cb), dot(db, db)), cd2);
  const bool degenerate = norm(m0) <= 1e-10 * longest0 || norm(m1) <= 1e-10 * longest1;
  const bool against = dot(m0, n0) <= 0 || dot(m0, n1) <= 0 || dot(m1, n0) <= 0 ||
                       dot(m1, n1) <= 0;
  return degenerate || against;
}

extern "C" __global__ void flip_quads(
    const double* __restrict__ V, const long long* __restrict__ F,
    const long long* __restrict__ key, const long long* __restrict__ count,
    const long long* __restrict__ S0, const long long* __restrict__ S1, long long n_edges,
    int use_feature, double lim, const long long* __restrict__ seams, long long n_seams,
    long long* __restrict__ A, long long* __restrict__ B, long long* __restrict__ C,
    long long* __restrict__ Dd, long long* __restrict__ F0, long long* __restrict__ F1,
    long long* __restrict__ reason) {
  FOR_EACH(e, n_edges) {
    const bool m2 = count[e] == 2;
    const long long s0 = S0[e], s1 = m2 ? S1[e] : s0;
    const long long f = s0 / 3, k = s0 % 3, g = s1 / 3, h = s1 % 3;
    const long long a = F[3 * f + k], b = F[3 * f + (k + 1) % 3], c = F[3 * f + (k + 2) % 3];
    const long long p = F[3 * g + h], q = F[3 * g + (h + 1) % 3], d = F[3 * g + (h + 2) % 3];
    const bool interior = m2 && p == b && q == a && c != d;
    long long r = interior ? R_OK : R_BOUNDARY;
    if (n_seams > 0 && r == R_OK && has_key(seams, n_seams, key[e])) r = R_SEAM;
    const D3 Pa = ld(V, a), Pb = ld(V, b), Pc = ld(V, c), Pd = ld(V, d);
    const D3 n0 = cross(sub(Pb, Pa), sub(Pc, Pa));
    const D3 n1 = cross(sub(Pa, Pb), sub(Pd, Pb));
    if (use_feature) {
      const double cosang = dot(n0, n1);
      const double norms = norm(n0) * norm(n1);
      if (r == R_OK && cosang < lim * norms) r = R_FEATURE;
    }
    if (r == R_OK && has_key(key, n_edges, edge_key(c, d))) r = R_EXISTS;
    if (r == R_OK && quad_folds(Pa, Pb, Pc, Pd, n0, n1)) r = R_FOLD;
    A[e] = a;
    B[e] = b;
    C[e] = c;
    Dd[e] = d;
    F0[e] = interior ? f : -1;
    F1[e] = interior ? g : -1;
    reason[e] = r;
  }
}

// valence flips: an allowed flip of a non-feature edge that lowers the four vertices' summed
// deviation from valence 6 (4 on the boundary) and keeps the quad's smallest angle at least
// min(before, the bound)
extern "C" __global__ void valence_flip_candidates(
    const double* __restrict__ V, const long long* __restrict__ A,
    const long long* __restrict__ B, const long long* __restrict__ C,
    const long long* __restrict__ Dd, const long long* __restrict__ reason,
    const long long* __restrict__ key, long long n_edges, const long long* __restrict__ feature,
    long long n_feature, const long long* __restrict__ val,
    const unsigned char* __restrict__ on_boundary, double sin_bound,
    unsigned char* __restrict__ cand, long long* __restrict__ gain) {
  FOR_EACH(e, n_edges) {
    const long long v[4] = {A[e], B[e], C[e], Dd[e]};
    const long long delta[4] = {-1, -1, 1, 1};
    long long before = 0, after = 0;
    for (int j = 0; j < 4; ++j) {
      const long long t = on_boundary[v[j]] ? 4 : 6;
      before += llabs(val[v[j]] - t);
      after += llabs(val[v[j]] + delta[j] - t);
    }
    const long long g = before - after;
    gain[e] = g;
    bool ok = reason[e] == R_OK && g > 0 && !has_key(feature, n_feature, key[e]);
    if (ok) {
      const D3 Pa = ld(V, v[0]), Pb = ld(V, v[1]), Pc = ld(V, v[2]), Pd = ld(V, v[3]);
      const double old = fmin(sin_min_angle(Pa, Pb, Pc), sin_min_angle(Pb, Pa, Pd));
      const double nw = fmin(sin_min_angle(Pa, Pd, Pc), sin_min_angle(Pb, Pc, Pd));
      ok = nw >= fmin(old, sin_bound);
    }
    cand[e] = ok;
  }
}

// ---------------------------------------------------------------------------------------------
// Delaunay flips inside patches (workers/engine/dynamic/patched_flip.py, whose array code this
// mirrors expression for expression): one block per patch; the patch's faces (global vertex
// ids), the twin of each of its sides (local side or -1) and the round's claims live in shared
// memory; rounds of claim, check and apply run here until a round finds no candidate or
// max_rounds have run. Claims: the two faces (shared memory) and the new edge's inner end x
// (global memory; no other patch touches an inner vertex).
#define NO_KEY 0xFFFFFFFFFFFFFFFFull

__device__ __forceinline__ double angle_at(D3 p, D3 q, D3 r) {
  const D3 u = sub(q, p), w = sub(r, p);
  return atan2(norm(cross(u, w)), dot(u, w));
}

// the flip of the edge of local sides j < t: its key (priority << 32 | j), or NO_KEY when it
// does not run this round; x: the new edge's claimed inner end
__device__ unsigned long long flip_wanted(
    const double* __restrict__ V, const int* Fl, int nf, int j, int t,
    const unsigned char* __restrict__ inner, int use_feature, double lim, double limit,
    long long* x_out) {
  const int f = j / 3, k = j % 3, g = t / 3, h = t % 3;
  const long long a = Fl[3 * f + k], b = Fl[3 * f + (k + 1) % 3], c = Fl[3 * f + (k + 2) % 3];
  const long long p = Fl[3 * g + h], q = Fl[3 * g + (h + 1) % 3], d = Fl[3 * g + (h + 2) % 3];
  if (!(p == b && q == a && c != d)) return NO_KEY;
  const D3 Pa = ld(V, a), Pb = ld(V, b), Pc = ld(V, c), Pd = ld(V, d);
  const double old = angle_at(Pc, Pa, Pb) + angle_at(Pd, Pa, Pb);
  if (!(old > limit)) return NO_KEY;  // most edges are Delaunay: the cheapest refusal first
  const bool ic = inner[c], id = inner[d];
  if (!(ic || id)) return NO_KEY;
  const long long x = (ic && id) ? (c < d ? c : d) : (ic ? c : d);
  const double nw = angle_at(Pa, Pc, Pd) + angle_at(Pb, Pc, Pd);
  if (!(nw < old)) return NO_KEY;
  const D3 n0 = cross(sub(Pb, Pa), sub(Pc, Pa));
  const D3 n1 = cross(sub(Pa, Pb), sub(Pd, Pb));
  if (use_feature) {
    const double norms = norm(n0) * norm(n1);
    if (dot(n0, n1) < lim * norms) return NO_KEY;
  }
  if (quad_folds(Pa, Pb, Pc, Pd, n0, n1)) return NO_KEY;
  // the new edge c-d must not exist: every face at x is in this patch
  const long long y = x == c ? d : c;
  for (int i = 0; i < nf; ++i) {
    const long long u0 = Fl[3 * i], u1 = Fl[3 * i + 1], u2 = Fl[3 * i + 2];
    if ((u0 == x || u1 == x || u2 == x) && (u0 == y || u1 == y || u2 == y)) return NO_KEY;
  }
  // float_priority(old - pi, larger_first=True)
  const float excess = (float)fmax(old - 3.141592653589793, 0.0);
  const long long prio = 2147483647LL - (long long)__float_as_int(excess);
  *x_out = x;
  return ((unsigned long long)prio << 32) | (unsigned long long)j;
}

extern "C" __global__ void patched_delaunay_flips(
    const double* __restrict__ V, const long long* __restrict__ F,
    const long long* __restrict__ faces, const long long* __restrict__ offsets,
    const long long* __restrict__ twin_in, const unsigned char* __restrict__ inner,
    int use_feature, double lim, double limit, int max_rounds, int cap,
    long long* __restrict__ F_out, unsigned long long* __restrict__ vclaim,
    long long* __restrict__ flips_out, long long* __restrict__ rounds_out) {
  extern __shared__ unsigned long long smem_u64[];
  unsigned long long* ck = smem_u64;      // 3 cap: each side's key this round
  unsigned long long* fc = ck + 3 * cap;  // cap: each face's claim
  int* Fl = (int*)(fc + cap);             // 3 cap: the faces (global vertex ids)
  int* tw = Fl + 3 * cap;                 // 3 cap: twin side or -1
  int* tw2 = tw + 3 * cap;                // 3 cap: the twins after the round
  int* mv = tw2 + 3 * cap;                // 3 cap: where each side goes (-1: gone)
  __shared__ int n_won;
  const long long p = blockIdx.x;
  const long long base = offsets[p];
  const int nf = (int)(offsets[p + 1] - base), ns = 3 * nf;
  for (int j = threadIdx.x; j < ns; j += blockDim.x) {
    Fl[j] = (int)F[3 * faces[base + j / 3] + j % 3];
    const long long t = twin_in[3 * base + j];
    tw[j] = t < 0 ? -1 : (int)(t - 3 * base);
  }
  long long flips = 0, rounds = 0;
  for (int r = 0; r < max_rounds; ++r) {
    if (threadIdx.x == 0) n_won = 0;
    for (int i = threadIdx.x; i < nf; i += blockDim.x) fc[i] = NO_KEY;
    for (int j = threadIdx.x; j < ns; j += blockDim.x) mv[j] = j;
    __syncthreads();
    // candidates: each edge by its first side; reset the claimed inner vertices
    for (int j = threadIdx.x; j < ns; j += blockDim.x) {
      unsigned long long key = NO_KEY;
      const int t = tw[j];
      long long x = -1;
      if (t > j) key = flip_wanted(V, Fl, nf, j, t, inner, use_feature, lim, limit, &x);
      if (key != NO_KEY) vclaim[x] = NO_KEY;
      ck[j] = key;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < ns; j += blockDim.x) {
      const unsigned long long key = ck[j];
      if (key == NO_KEY) continue;
      const int t = tw[j];
      const long long c = Fl[3 * (j / 3) + (j % 3 + 2) % 3], d = Fl[3 * (t / 3) + (t % 3 + 2) % 3];
      const bool ic = inner[c], id = inner[d];
      const long long x = (ic && id) ? (c < d ? c : d) : (ic ? c : d);
      atomicMin(&fc[j / 3], key);
      atomicMin(&fc[t / 3], key);
      atomicMin(&vclaim[x], key);
    }
    __syncthreads();
    // winners: both faces and x hold their key; rewrite the two faces and say where sides go
    for (int j = threadIdx.x; j < ns; j += blockDim.x) {
      const unsigned long long key = ck[j];
      if (key == NO_KEY) continue;
      const int t = tw[j], f = j / 3, k = j % 3, g = t / 3, h = t % 3;
      if (fc[f] != key || fc[g] != key) continue;
      const int a = Fl[3 * f + k], b = Fl[3 * f + (k + 1) % 3], c = Fl[3 * f + (k + 2) % 3];
      const int d = Fl[3 * g + (h + 2) % 3];
      const bool ic = inner[c], id = inner[d];
      const long long x = (ic && id) ? (c < d ? c : d) : (ic ? c : d);
      if (vclaim[x] != key) continue;
      mv[3 * f + (k + 1) % 3] = 3 * g;
      mv[3 * f + (k + 2) % 3] = 3 * f + 2;
      mv[3 * g + (h + 1) % 3] = 3 * f;
      mv[3 * g + (h + 2) % 3] = 3 * g + 2;
      mv[j] = -1;
      mv[t] = -1;
      tw2[3 * f + 1] = 3 * g + 1;
      tw2[3 * g + 1] = 3 * f + 1;
      Fl[3 * f] = a;
      Fl[3 * f + 1] = d;
      Fl[3 * f + 2] = c;
      Fl[3 * g] = b;
      Fl[3 * g + 1] = c;
      Fl[3 * g + 2] = d;
      atomicAdd(&n_won, 1);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < ns; j += blockDim.x) {
      const int to = mv[j];
      if (to < 0) continue;
      const int t = tw[j];
      tw2[to] = t < 0 ? -1 : mv[t];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < ns; j += blockDim.x) tw[j] = tw2[j];
    const int won = n_won;
    __syncthreads();
    if (won == 0) break;
    flips += won;
    rounds += 1;
  }
  for (int j = threadIdx.x; j < ns; j += blockDim.x) F_out[3 * faces[base + j / 3] + j % 3] = Fl[j];
  if (threadIdx.x == 0) {
    flips_out[p] = flips;
    rounds_out[p] = rounds;
  }
}

// the opposite-angle sums of every edge's quad now (at c and d) and after a flip (at a and b)
// (flip.py: opposite_angle_sums_array, expression for expression)
extern "C" __global__ void opposite_angle_sums(
    const double* __restrict__ V, const long long* __restrict__ A,
    const long long* __restrict__ B, const long long* __restrict__ C,
    const long long* __restrict__ Dd, long long n_edges, double* __restrict__ old_sum,
    double* __restrict__ new_sum) {
  FOR_EACH(e, n_edges) {
    const D3 Pa = ld(V, A[e]), Pb = ld(V, B[e]), Pc = ld(V, C[e]), Pd = ld(V, Dd[e]);
    old_sum[e] = angle_at(Pc, Pa, Pb) + angle_at(Pd, Pa, Pb);
    new_sum[e] = angle_at(Pa, Pc, Pd) + angle_at(Pb, Pc, Pd);
  }
}
