// queries.cu: the eight first-order queries on the patched structure, written to a global CSR
// (for tests and as the measured baseline of the patched path), and patched versions of static
// operations whose bodies use one query each.
// Launch: one block per patch, dynamic shared memory from queries.py::smem_bytes.
#include "patched.cuh"

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

// One explicit uniform-Laplacian smoothing step from the one-ring (VV):
// out = v + lambda * (mean of neighbours - v); fixed vertices (boundary) stay.
struct SmoothBody {
  const float* V;
  const bool* fixed;
  float lambda;
  float* out;
  __device__ void operator()(int g, const Neighbours& nb, const PatchView&) const {
    const float3 p = load3(V, g);
    const int n = nb.size();
    if (n == 0 || (fixed != nullptr && fixed[g])) {
      out[3 * g] = p.x;
      out[3 * g + 1] = p.y;
      out[3 * g + 2] = p.z;
      return;
    }
    double3 m = make_double3(0.0, 0.0, 0.0);
    for (int j = 0; j < n; ++j) {
      const double3 q = load3d(V, nb[j]);
      m = make_double3(m.x + q.x, m.y + q.y, m.z + q.z);
    }
    out[3 * g] = (float)(p.x + lambda * (m.x / n - p.x));
    out[3 * g + 1] = (float)(p.y + lambda * (m.y / n - p.y));
    out[3 * g + 2] = (float)(p.z + lambda * (m.z / n - p.z));
  }
};

extern "C" __global__ void laplacian_smooth_patched(PATCH_PARAMS, const float* V,
                                                    const bool* fixed, int use_fixed,
                                                    float lambda, float* out) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each<Query::VV>(PATCH_ARGS, smem, SmoothBody{V, use_fixed ? fixed : nullptr, lambda, out});
}
