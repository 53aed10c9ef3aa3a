// propagation.cu: one iteration of geodesic front propagation (propagation.py) with two
// fronts (source labels) per vertex: the frontier schedule (the op's path: only the vertices
// that read a released change, a few launches per iteration, at the end of this file), and the
// plain Jacobi iteration as a global-memory kernel (one thread per vertex over the VF CSR) and
// on the patched path (the VF query in shared memory, RXMesh's active set as a list of the
// patches to run). All evaluate tri_candidate exactly as the NumPy twin does (compiled without
// FMA contraction).
#include "patched.cuh"

__device__ __forceinline__ double side_length(const double* V, int i, int j) {
  const double dx = V[3 * (long long)i] - V[3 * (long long)j];
  const double dy = V[3 * (long long)i + 1] - V[3 * (long long)j + 1];
  const double dz = V[3 * (long long)i + 2] - V[3 * (long long)j + 2];
  return sqrt(dx * dx + dy * dy + dz * dz);
}

// NVRTC has no <cmath>: infinity and finiteness by hand (IEEE, no fast math).
__device__ __forceinline__ double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ bool is_finite(double x) { return fabs(x) <= 1.7976931348623157e308; }

// SLACK in propagation.py: the same decimal literal, so the same double.
#define SLACK 1.000000001

// Distance at C from triangle A B C given dA, dB and a = |BC|, b = |AC|, c = |AB|; D is the vertex
// across AB (dD its distance to the same source, inf where there is none), e = |AD|, f = |BD|: a
// virtual source S that puts D farther than |SD| while D lies in its wedge over AB is two fronts
// meeting, not a source, and is refused (candidate in propagation.py, operation for operation).
__device__ __forceinline__ double tri_candidate(double dA, double dB, double a, double b, double c,
                                                double dD, double e, double f) {
  const double edge = fmin(dA + b, dB + a);
  if (!is_finite(dA) || !is_finite(dB) || !(c > 0.0)) return edge;
  const double two_c = 2.0 * c;
  const double Sx = ((dA - dB) * (dA + dB) + c * c) / two_c;
  const double Sy2 = (dA - Sx) * (dA + Sx);
  const double Cx = ((b - a) * (b + a) + c * c) / two_c;
  const double Cy2 = (b - Cx) * (b + Cx);
  if (!(Sy2 >= 0.0) || !(Cy2 > 0.0)) return edge;
  const double Sy = -sqrt(fmax(Sy2, 0.0));
  const double Cy = sqrt(fmax(Cy2, 0.0));
  const double x = Sx + (Cx - Sx) * (-Sy / (Cy - Sy));
  if (!(x >= 0.0) || !(x <= c)) return edge;
  const double dx = Cx - Sx, dy = Cy - Sy;
  const double tri = sqrt(dx * dx + dy * dy);
  if (is_finite(dD)) {
    const double Dx = ((e - f) * (e + f) + c * c) / two_c;
    const double Dy2 = (e - Dx) * (e + Dx);
    const double Dy = -sqrt(fmax(Dy2, 0.0));
    if (Dy2 > 0.0 && Dy > Sy) {
      const double xD = Sx + (Dx - Sx) * (-Sy / (Dy - Sy));
      const double ex = Dx - Sx, ey = Dy - Sy;
      const double sd = sqrt(ex * ex + ey * ey);
      if (xD >= 0.0 && xD <= c && dD > sd * SLACK) return edge;
    }
  }
  return fmin(edge, tri);
}

// A vertex's two best fronts: the best (distance, source label) in the order (distance, label)
// and the best of another label; (inf, -1) where there is none. Entries are inserted one at a
// time; the pair reached is that of top_two in propagation.py for the same entries in any order.
struct Top2 {
  double d1, d2;
  int l1, l2;
  __device__ static bool less(double v, int l, double w, int m) {
    return v < w || (v == w && l < m);
  }
  __device__ void insert(double v, int l) {
    if (!is_finite(v)) return;
    if (l == l1) {
      if (v < d1) d1 = v;
    } else if (l == l2) {
      if (v < d2) d2 = v;
      if (less(d2, l2, d1, l1)) {
        const double td = d1; const int tl = l1;
        d1 = d2; l1 = l2; d2 = td; l2 = tl;
      }
    } else if (less(v, l, d1, l1)) {
      d2 = d1; l2 = l1; d1 = v; l1 = l;
    } else if (less(v, l, d2, l2)) {
      d2 = v; l2 = l;
    }
  }
};

// A vertex's distance to source `label` as far as it knows it (value_for in propagation.py).
__device__ __forceinline__ double value_for(int label, const double* d1, const int* l1,
                                            const double* d2, const int* l2, int v) {
  return l1[v] == label ? d1[v] : (l2[v] == label ? d2[v] : infinity());
}

// Whether corner option o (the labels of A's two fronts, then B's) gives a candidate not given
// already: a label of -1 (no front) gives inf, which Top2 ignores, and a label seen before gives
// the same candidate again, which changes nothing (the twin's `need` mask in fronts_numpy leaves
// the same entries out). With one source: one triangle update per corner instead of four.
__device__ __forceinline__ bool wanted(const int* options, int o) {
  const int lab = options[o];
  if (lab < 0) return false;
  for (int q = 0; q < o; ++q)
    if (options[q] == lab) return false;
  return true;
}

// The current fronts of all vertices (one buffer of the double buffer).
struct Fronts {
  double* d1;
  int* l1;
  double* d2;
  int* l2;
};

// One corner's candidates (A and B its other corners, D the vertex across AB or -1, the side
// lengths as in tri_candidate): for each label A's and B's fronts hold, once.
__device__ __forceinline__ void corner_candidates(const Fronts& f, int A, int B, int D, double a,
                                                  double b, double c, double e, double fl,
                                                  Top2& acc) {
  const int options[4] = {f.l1[A], f.l2[A], f.l1[B], f.l2[B]};
  for (int o = 0; o < 4; ++o) {
    const int lab = options[o];
    if (!wanted(options, o)) continue;
    const double dA = value_for(lab, f.d1, f.l1, f.d2, f.l2, A);
    const double dB = value_for(lab, f.d1, f.l1, f.d2, f.l2, B);
    const double dD = D >= 0 ? value_for(lab, f.d1, f.l1, f.d2, f.l2, D) : infinity();
    acc.insert(tri_candidate(dA, dB, a, b, c, dD, e, fl), lab);
  }
}

// Every corner of face gf = (v0, v1, v2) at g, for each label its other two corners hold. Corner k
// is F[gf, k] on either path (the patched FE keeps the global corner order); across[3 gf + k] is
// the vertex across its opposite side, or -1 (opposite in propagation.py).
__device__ __forceinline__ void face_candidates(const double* V, const int* across, const Fronts& f,
                                                int g, long long gf, int v0, int v1, int v2,
                                                Top2& acc) {
  const int c[3] = {v0, v1, v2};
  for (int k = 0; k < 3; ++k) {
    if (c[k] != g) continue;
    const int A = c[(k + 1) % 3], B = c[(k + 2) % 3];
    const double a = side_length(V, g, B), b = side_length(V, g, A), cc = side_length(V, A, B);
    const int D = across[3 * gf + k];
    const double e = D >= 0 ? side_length(V, D, A) : 0.0;
    const double fl = D >= 0 ? side_length(V, D, B) : 0.0;
    corner_candidates(f, A, B, D, a, b, cc, e, fl, acc);
  }
}

// Kimmel and Sethian's virtual corners of each vertex (virtual_corners in propagation.py), a CSR
// by target: the two other corners and the side lengths a = |BC|, b = |AC|, c = |AB|.
struct Virtual {
  const long long* offsets;
  const int* A;
  const int* B;
  const double* a;
  const double* b;
  const double* c;
};

// Virtual corner i of the CSR: its candidates, for each label its two other corners hold.
__device__ __forceinline__ void virtual_corner(const Virtual& vc, const Fronts& f, long long i,
                                               Top2& acc) {
  // a virtual side is no mesh edge: no face across it, no check (as in corners())
  corner_candidates(f, vc.A[i], vc.B[i], -1, vc.a[i], vc.b[i], vc.c[i], 0.0, 0.0, acc);
}

__device__ __forceinline__ void virtual_candidates(const Virtual& vc, const Fronts& f,
                                                   long long g, Top2& acc) {
  for (long long i = vc.offsets[g]; i < vc.offsets[g + 1]; ++i) virtual_corner(vc, f, i, acc);
}

__device__ __forceinline__ Top2 start(const Fronts& f, long long g) {
  Top2 acc;
  acc.d1 = f.d1[g]; acc.l1 = f.l1[g]; acc.d2 = f.d2[g]; acc.l2 = f.l2[g];
  return acc;
}

// Store the new fronts; true when they differ from the old ones.
__device__ __forceinline__ bool store(const Fronts& cur, const Fronts& nxt, long long g,
                                      const Top2& acc) {
  nxt.d1[g] = acc.d1; nxt.l1[g] = acc.l1; nxt.d2[g] = acc.d2; nxt.l2[g] = acc.l2;
  return acc.d1 != cur.d1[g] || acc.l1 != cur.l1[g] || acc.d2 != cur.d2[g] ||
         acc.l2 != cur.l2[g];
}

extern "C" __global__ void propagate_global(const double* __restrict__ V,
                                            const int* __restrict__ F,
                                            const long long* __restrict__ vf_offsets,
                                            const int* __restrict__ vf_faces,
                                            const int* __restrict__ across, double* cur_d1,
                                            int* cur_l1, double* cur_d2, int* cur_l2,
                                            double* nxt_d1, int* nxt_l1, double* nxt_d2,
                                            int* nxt_l2, const long long* vc_offsets,
                                            const int* vc_A, const int* vc_B, const double* vc_a,
                                            const double* vc_b, const double* vc_c, int* changed,
                                            long long n) {
  const Fronts cur{cur_d1, cur_l1, cur_d2, cur_l2};
  const Fronts nxt{nxt_d1, nxt_l1, nxt_d2, nxt_l2};
  const Virtual vc{vc_offsets, vc_A, vc_B, vc_a, vc_b, vc_c};
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < n;
       g += (long long)gridDim.x * blockDim.x) {
    Top2 acc = start(cur, g);
    for (long long i = vf_offsets[g]; i < vf_offsets[g + 1]; ++i) {
      const long long f = vf_faces[i];
      face_candidates(V, across, cur, (int)g, f, F[3 * f], F[3 * f + 1], F[3 * f + 2], acc);
    }
    virtual_candidates(vc, cur, g, acc);
    if (store(cur, nxt, g, acc)) *changed = 1;
  }
}

struct PropagateBody {
  const double* V;
  const int* across;  // per global face corner: the vertex across the opposite side, or -1
  Fronts cur;
  Fronts nxt;
  Virtual vc;
  const int* vp_offsets;  // vertex -> patches holding it (owned or ribbon)
  const int* vp_values;
  const long long* dep_offsets;  // vertex -> the vertices whose corners read it from afar
  const int* dep_values;
  int* flags;      // per patch: 1 once listed for the next launch
  int* next_list;  // the next launch's patches, next_count of them
  int* next_count;
  __device__ void activate(int v) const {
    for (int i = vp_offsets[v]; i < vp_offsets[v + 1]; ++i) {
      const int q = vp_values[i];
      if (flags[q] == 0 && atomicExch(flags + q, 1) == 0) next_list[atomicAdd(next_count, 1)] = q;
    }
  }
  __device__ void operator()(int g, const Neighbours& nb, const PatchView& view) const {
    Top2 acc = start(cur, g);
    for (int j = 0; j < nb.size(); ++j) {
      const int lf = nb.local(j);
      face_candidates(V, across, cur, g, nb[j], view.vertices[face_vertex(view, lf, 0)],
                      view.vertices[face_vertex(view, lf, 1)],
                      view.vertices[face_vertex(view, lf, 2)], acc);
    }
    virtual_candidates(vc, cur, g, acc);
    if (store(cur, nxt, g, acc)) {
      // the patches that read g: its own, and (through a virtual corner or as the vertex
      // across a corner's side, g is two rings away from the target, maybe outside the
      // target's patch) those of its dependents
      activate(g);
      for (long long i = dep_offsets[g]; i < dep_offsets[g + 1]; ++i) activate(dep_values[i]);
    }
  }
};

extern "C" __global__ void propagate_patched(PATCH_PARAMS, const double* V, const int* across,
                                             double* cur_d1,
                                             int* cur_l1, double* cur_d2, int* cur_l2,
                                             double* nxt_d1, int* nxt_l1, double* nxt_d2,
                                             int* nxt_l2, const long long* vc_offsets,
                                             const int* vc_A, const int* vc_B,
                                             const double* vc_a, const double* vc_b,
                                             const double* vc_c, const int* vp_offsets,
                                             const int* vp_values, const long long* dep_offsets,
                                             const int* dep_values, const int* list,
                                             const int* count, int* flags, int* next_list,
                                             int* next_count) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each_listed<Query::VF>(
      PATCH_ARGS, smem, list, count,
      PropagateBody{V, across, Fronts{cur_d1, cur_l1, cur_d2, cur_l2},
                    Fronts{nxt_d1, nxt_l1, nxt_d2, nxt_l2},
                    Virtual{vc_offsets, vc_A, vc_B, vc_a, vc_b, vc_c}, vp_offsets, vp_values,
                    dep_offsets, dep_values, flags, next_list, next_count});
}

// ------------------------------------------------------------------------------ frontier schedule
// propagate_frontier in propagation.py: the same iteration as the NumPy twin (fronts_numpy),
// step for step. Iteration t = *step (par = t & 1) is three launches:
//   frontier_release: each vertex that changed at t - 1 (its new fronts in nxt) or waits from
//     before is copied into cur; below the threshold *tau it is released and every vertex with
//     a corner that reads it (as A or B of a face corner or a virtual corner, or as the vertex
//     across a face corner's side) becomes a target, once (t_stamp); above it, it waits (the
//     next pending list, once: p_stamp).
//   frontier_update: each target's fronts from all of its corners and the current values (as
//     propagate_global does for every vertex); one that changes goes on the next changed list.
//     No target at all: the threshold rises by delta.
//   frontier_step: t + 1.
// A listed vertex has GROUP lanes: they split its faces, dependents and virtual corners, and
// the update merges their partial fronts by shuffles (the best two of the union are the best
// two of the parts' best two), so an iteration waits on one face's loads, not a vertex's six.
// counts holds six ints: changed, pending and targets, two of each by parity. Each launch zeroes
// the counts the next launch fills and that no thread of its own reads. The host captures the
// launches of several iterations in a CUDA graph (t lives on the device for that).
#define GROUP 8

__device__ __forceinline__ void mark(int u, int t, int* t_stamp, int* targets, int* count) {
  if (t_stamp[u] != t && atomicExch(t_stamp + u, t) != t) targets[atomicAdd(count, 1)] = u;
}

extern "C" __global__ void frontier_release(
    const int* step, long long n, const int* __restrict__ F,
    const long long* __restrict__ vf_offsets, const int* __restrict__ vf_faces,
    const long long* __restrict__ dep_offsets, const int* __restrict__ dep_values,
    double* cur_d1, int* cur_l1, double* cur_d2, int* cur_l2, const double* nxt_d1,
    const int* nxt_l1, const double* nxt_d2, const int* nxt_l2, const int* changed,
    int* pending, int* targets, int* t_stamp, int* p_stamp, int* counts, const double* tau) {
  const int t = *step;
  const int par = t & 1;
  const int n_changed = counts[par], n_pending = counts[2 + par];
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[1 - par] = 0;
  const double limit = *tau;
  const int* changed_now = changed + par * n;
  const int* pending_now = pending + par * n;
  int* pending_next = pending + (1 - par) * n;
  int* n_targets = counts + 4 + par;
  const int lane = threadIdx.x & (GROUP - 1);
  const long long groups = (long long)gridDim.x * blockDim.x / GROUP;
  for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / GROUP;
       i < n_changed + n_pending; i += groups) {
    const int v = i < n_changed ? changed_now[i] : pending_now[i - n_changed];
    const double d = nxt_d1[v];
    if (lane == 0) {
      cur_d1[v] = d; cur_l1[v] = nxt_l1[v]; cur_d2[v] = nxt_d2[v]; cur_l2[v] = nxt_l2[v];
    }
    if (d < limit) {
      for (long long q = vf_offsets[v] + lane; q < vf_offsets[v + 1]; q += GROUP) {
        const long long f = vf_faces[q];
        const int c0 = F[3 * f], c1 = F[3 * f + 1], c2 = F[3 * f + 2];
        // corner k reads its two other corners
        if (c1 == v || c2 == v) mark(c0, t, t_stamp, targets, n_targets);
        if (c2 == v || c0 == v) mark(c1, t, t_stamp, targets, n_targets);
        if (c0 == v || c1 == v) mark(c2, t, t_stamp, targets, n_targets);
      }
      for (long long q = dep_offsets[v] + lane; q < dep_offsets[v + 1]; q += GROUP)
        mark(dep_values[q], t, t_stamp, targets, n_targets);
    } else if (lane == 0 && p_stamp[v] != t && atomicExch(p_stamp + v, t) != t) {
      pending_next[atomicAdd(counts + 2 + (1 - par), 1)] = v;
    }
  }
}

extern "C" __global__ void frontier_update(
    const int* step, long long n, const double* __restrict__ V, const int* __restrict__ F,
    const long long* __restrict__ vf_offsets, const int* __restrict__ vf_faces,
    const int* __restrict__ across, double* cur_d1, int* cur_l1, double* cur_d2, int* cur_l2,
    double* nxt_d1, int* nxt_l1, double* nxt_d2, int* nxt_l2, const long long* vc_offsets,
    const int* vc_A, const int* vc_B, const double* vc_a, const double* vc_b,
    const double* vc_c, const int* targets, int* changed, int* counts, double* tau,
    double delta) {
  const int t = *step;
  const int par = t & 1;
  const int n_targets = counts[4 + par];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    counts[4 + (1 - par)] = 0;
    counts[2 + par] = 0;
    if (n_targets == 0) *tau += delta;
  }
  const Fronts cur{cur_d1, cur_l1, cur_d2, cur_l2};
  const Fronts nxt{nxt_d1, nxt_l1, nxt_d2, nxt_l2};
  const Virtual vc{vc_offsets, vc_A, vc_B, vc_a, vc_b, vc_c};
  int* changed_next = changed + (1 - par) * n;
  const int lane = threadIdx.x & (GROUP - 1);
  // the group's lanes in the warp (the lanes of a group run the loop the same number of times)
  const unsigned mask = ((1u << GROUP) - 1) << ((threadIdx.x & 31) & ~(GROUP - 1));
  const long long groups = (long long)gridDim.x * blockDim.x / GROUP;
  for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / GROUP; i < n_targets;
       i += groups) {
    const int g = targets[i];
    Top2 acc;
    if (lane == 0) {
      acc = start(cur, g);
    } else {
      acc.d1 = acc.d2 = infinity();
      acc.l1 = acc.l2 = -1;
    }
    for (long long q = vf_offsets[g] + lane; q < vf_offsets[g + 1]; q += GROUP) {
      const long long f = vf_faces[q];
      face_candidates(V, across, cur, g, f, F[3 * f], F[3 * f + 1], F[3 * f + 2], acc);
    }
    for (long long q = vc.offsets[g] + lane; q < vc.offsets[g + 1]; q += GROUP)
      virtual_corner(vc, cur, q, acc);
    for (int off = GROUP / 2; off > 0; off >>= 1) {
      const double d1 = __shfl_xor_sync(mask, acc.d1, off, GROUP);
      const int l1 = __shfl_xor_sync(mask, acc.l1, off, GROUP);
      const double d2 = __shfl_xor_sync(mask, acc.d2, off, GROUP);
      const int l2 = __shfl_xor_sync(mask, acc.l2, off, GROUP);
      acc.insert(d1, l1);
      acc.insert(d2, l2);
    }
    if (lane == 0 && store(cur, nxt, g, acc)) changed_next[atomicAdd(counts + (1 - par), 1)] = g;
  }
}

extern "C" __global__ void frontier_step(int* step) { *step += 1; }
