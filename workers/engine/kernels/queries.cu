// queries.cu: the eight first-order queries on the patched structure, written to a global CSR
// (for tests and as the measured baseline of the patched path), and patched versions of static
// operations whose bodies use one query each.
// Launch: one block per patch, dynamic shared memory from queries.py::smem_bytes.
#include "patched.cuh"

// ---------------------------------------------------------------- queries into a global CSR
struct WriteRow {
  const long long* out_offsets;
  int* out_values;
  int* errors;  // rows whose length differs from the expected one
  template <class N>
  __device__ void operator()(int g, const N& nb, const PatchView&) const {
    const long long b = out_offsets[g], e = out_offsets[g + 1];
    const int n = nb.size();
    if (n != e - b) {
      atomicAdd(errors, 1);
      return;
    }
    for (int j = 0; j < n; ++j) out_values[b + j] = nb[j];
  }
};

#define QUERY_KERNEL(NAME, Q)                                                               \
  extern "C" __global__ void query_##NAME(PATCH_PARAMS, const long long* out_offsets,        \
                                          int* out_values, int* errors) {                    \
    extern __shared__ __align__(16) unsigned char smem[];                                     \
    for_each<Q>(PATCH_ARGS, smem, WriteRow{out_offsets, out_values, errors});                \
  }
QUERY_KERNEL(vv, Query::VV)
QUERY_KERNEL(ve, Query::VE)
QUERY_KERNEL(vf, Query::VF)
QUERY_KERNEL(ev, Query::EV)
QUERY_KERNEL(ef, Query::EF)
QUERY_KERNEL(fv, Query::FV)
QUERY_KERNEL(fe, Query::FE)
QUERY_KERNEL(ff, Query::FF)

// ---------------------------------------------------------------- static operations, patched
// Each owned vertex is computed by exactly one thread from its VF or VV answer: no atomics, and
// the result does not depend on thread timing.

// Area-weighted vertex normal from the faces around the vertex (VF).
struct VertexNormalBody {
  const float* V;
  float* N;
  __device__ void operator()(int g, const Neighbours& nb, const PatchView& view) const {
    double3 acc = make_double3(0.0, 0.0, 0.0);
    for (int j = 0; j < nb.size(); ++j) {
      const int lf = nb.local(j);
      const double3 a = load3d(V, view.vertices[face_vertex(view, lf, 0)]);
      const double3 b = load3d(V, view.vertices[face_vertex(view, lf, 1)]);
      const double3 c = load3d(V, view.vertices[face_vertex(view, lf, 2)]);
      const double3 n = cross3(sub3(b, a), sub3(c, a));
      acc = make_double3(acc.x + n.x, acc.y + n.y, acc.z + n.z);
    }
    const double len = norm3(acc);
    const double s = len > 0.0 ? 1.0 / len : 0.0;
    N[3 * g] = (float)(acc.x * s);
    N[3 * g + 1] = (float)(acc.y * s);
    N[3 * g + 2] = (float)(acc.z * s);
  }
};

extern "C" __global__ void vertex_normals_patched(PATCH_PARAMS, const float* V, float* N) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each<Query::VF>(PATCH_ARGS, smem, VertexNormalBody{V, N});
}

// Angle defect from the faces around the vertex (VF); boundary flag per global vertex.
struct DefectBody {
  const float* V;
  const bool* boundary;
  float* K;
  __device__ void operator()(int g, const Neighbours& nb, const PatchView& view) const {
    double sum = 0.0;
    for (int j = 0; j < nb.size(); ++j) {
      const int lf = nb.local(j);
      for (int k = 0; k < 3; ++k) {  // the corner(s) of this face at vertex g
        if (view.vertices[face_vertex(view, lf, k)] != g) continue;
        const double3 p = load3d(V, g);
        const double3 q = load3d(V, view.vertices[face_vertex(view, lf, (k + 1) % 3)]);
        const double3 r = load3d(V, view.vertices[face_vertex(view, lf, (k + 2) % 3)]);
        sum += angle3(sub3(q, p), sub3(r, p));
      }
    }
    const double PI = 3.14159265358979323846;
    K[g] = nb.size() == 0 ? 0.f : (float)((boundary[g] ? PI : 2.0 * PI) - sum);
  }
};

extern "C" __global__ void gaussian_curvature_patched(PATCH_PARAMS, const float* V,
                                                      const bool* boundary, float* K) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each<Query::VF>(PATCH_ARGS, smem, DefectBody{V, boundary, K});
}

// One bilateral denoising step with the one-ring neighbourhood (bilateral_denoise with
// max_rings = 1; twin: ops/bilateral_denoise.py::_step): the neighbours within 2 sigma_c of the
// vertex, plus the vertex itself, are found on the fly from the VV answer. sigma_c <= 0 means
// RXMesh's adaptive width, the vertex's shortest edge; sigma_s <= 0 the spread of the heights.
// The same body runs on the patched path (VV in shared memory) and over the global VV CSR.
struct BilateralBody {
  const double* X;
  const double* N;
  double sigma_c_given, sigma_s_given;
  const bool* fixed;
  double* out;
  int* sizes;  // neighbourhood size per vertex (itself included), for the op's report
  template <class Nb>
  __device__ void operator()(int g, const Nb& nb, const PatchView*) const {
    const double3 x = load3dd(X, g);
    const int k = nb.size();
    double sc = sigma_c_given;
    if (!(sc > 0.0)) {
      sc = -1.0;
      for (int j = 0; j < k; ++j) {
        if (nb[j] == g) continue;  // a face repeating a vertex makes a self-loop edge: skipped
        const double3 d = sub3(load3dd(X, nb[j]), x);
        const double len = sqrt(dot3(d, d));
        sc = sc < 0.0 ? len : fmin(sc, len);
      }
      sc = fmax(sc, 0.0);
    }
    const double r = 2.0 * sc, r2 = r * r;
    int count = 1;  // the vertex itself
    for (int j = 0; j < k; ++j) {
      if (nb[j] == g) continue;
      const double3 d = sub3(load3dd(X, nb[j]), x);
      count += dot3(d, d) <= r2;
    }
    sizes[g] = count;
    if (fixed[g] || !(sc > 0.0) || count <= 1) {
      store3d(out, g, x);
      return;
    }
    const double3 n = load3dd(N, g);
    double ss = sigma_s_given;
    if (!(ss > 0.0)) {
      double sum_abs = 0.0, sum_sq = 0.0;
      for (int j = 0; j < k; ++j) {
        if (nb[j] == g) continue;
        const double3 d = sub3(load3dd(X, nb[j]), x);
        if (!(dot3(d, d) <= r2)) continue;
        const double h = dot3(d, n);
        sum_abs += fabs(h);
        sum_sq += h * h;
      }
      const double c = (double)count;
      const double mean_abs = sum_abs / c;
      ss = sqrt(fmax(sum_sq / c - mean_abs * mean_abs, 0.0));
      if (ss < 1e-12) ss += 1e-12;
    }
    double acc = 0.0, norm = 1.0;  // the vertex itself: h = 0, w = 1
    for (int j = 0; j < k; ++j) {
      if (nb[j] == g) continue;
      const double3 d = sub3(load3dd(X, nb[j]), x);
      const double t2 = dot3(d, d);
      if (!(t2 <= r2)) continue;
      const double h = dot3(d, n);
      const double w = exp(-0.5 * t2 / (sc * sc)) * exp(-0.5 * h * h / (ss * ss));
      acc += w * h;
      norm += w;
    }
    store3d(out, g, add3(x, scale3(n, acc / norm)));
  }
  __device__ void operator()(int g, const Neighbours& nb, const PatchView& v) const {
    (*this)(g, nb, &v);
  }
};

extern "C" __global__ void bilateral_ring_patched(PATCH_PARAMS, const double* X, const double* N,
                                                  double sigma_c, double sigma_s,
                                                  const bool* fixed, double* out, int* sizes) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each<Query::VV>(PATCH_ARGS, smem,
                      BilateralBody{X, N, sigma_c, sigma_s, fixed, out, sizes});
}

// A row of a global CSR, read like a query answer.
struct CsrRow {
  const long long* values;
  long long begin, end;
  __device__ int size() const { return (int)(end - begin); }
  __device__ int operator[](int j) const { return (int)values[begin + j]; }
};

extern "C" __global__ void bilateral_ring_global(const long long* vv_offsets,
                                                 const long long* vv_values, const double* X,
                                                 const double* N, double sigma_c, double sigma_s,
                                                 const bool* fixed, double* out, int* sizes,
                                                 long long n) {
  const BilateralBody body{X, N, sigma_c, sigma_s, fixed, out, sizes};
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < n;
       g += (long long)gridDim.x * blockDim.x)
    body((int)g, CsrRow{vv_values, vv_offsets[g], vv_offsets[g + 1]}, (const PatchView*)nullptr);
}
