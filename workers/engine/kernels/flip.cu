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
    if (r == R_OK && (degenerate || against)) r = R_FOLD;
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
