// propagation.cu: one Jacobi iteration of geodesic front propagation (propagation.py), as a
// global-memory kernel (one thread per vertex over the VF CSR) and on the patched path (the VF
// query in shared memory, one block per patch, RXMesh's active-set filter). Both evaluate
// tri_candidate exactly as the NumPy twin does (compiled without FMA contraction).
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

// Distance at C from triangle A B C given dA, dB and a = |BC|, b = |AC|, c = |AB|.
__device__ __forceinline__ double tri_candidate(double dA, double dB, double a, double b,
                                                double c) {
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
  return fmin(edge, sqrt(dx * dx + dy * dy));
}

// The best candidate at vertex g from face (v0, v1, v2): every corner of the face at g counts.
__device__ __forceinline__ double face_candidate(const double* V, const double* d, int g, int v0,
                                                 int v1, int v2) {
  const int f[3] = {v0, v1, v2};
  double best = infinity();
  for (int k = 0; k < 3; ++k) {
    if (f[k] != g) continue;
    const int A = f[(k + 1) % 3], B = f[(k + 2) % 3];
    const double a = side_length(V, g, B), b = side_length(V, g, A), c = side_length(V, A, B);
    best = fmin(best, tri_candidate(d[A], d[B], a, b, c));
  }
  return best;
}

extern "C" __global__ void propagate_global(const double* __restrict__ V,
                                            const int* __restrict__ F,
                                            const long long* __restrict__ vf_offsets,
                                            const int* __restrict__ vf_faces,
                                            const double* __restrict__ cur,
                                            double* __restrict__ nxt, int* changed, long long n) {
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < n;
       g += (long long)gridDim.x * blockDim.x) {
    const double old = cur[g];
    double best = old;
    for (long long i = vf_offsets[g]; i < vf_offsets[g + 1]; ++i) {
      const long long f = vf_faces[i];
      best = fmin(best, face_candidate(V, cur, (int)g, F[3 * f], F[3 * f + 1], F[3 * f + 2]));
    }
    nxt[g] = best;
    if (best < old) *changed = 1;
  }
}

struct PropagateBody {
  const double* V;
  const double* cur;
  double* nxt;
  const int* vp_offsets;  // vertex -> patches holding it (owned or ribbon)
  const int* vp_values;
  unsigned char* next_active;
  __device__ void operator()(int g, const Neighbours& nb, const PatchView& view) const {
    const double old = cur[g];
    double best = old;
    for (int j = 0; j < nb.size(); ++j) {
      const int lf = nb.local(j);
      best = fmin(best, face_candidate(V, cur, g, view.vertices[face_vertex(view, lf, 0)],
                                       view.vertices[face_vertex(view, lf, 1)],
                                       view.vertices[face_vertex(view, lf, 2)]));
    }
    nxt[g] = best;
    if (best < old)
      for (int i = vp_offsets[g]; i < vp_offsets[g + 1]; ++i) next_active[vp_values[i]] = 1;
  }
};

extern "C" __global__ void propagate_patched(PATCH_PARAMS, const double* V, const double* cur,
                                             double* nxt, const int* vp_offsets,
                                             const int* vp_values, unsigned char* next_active) {
  extern __shared__ __align__(16) unsigned char smem[];
  for_each<Query::VF>(PATCH_ARGS, smem,
                      PropagateBody{V, cur, nxt, vp_offsets, vp_values, next_active});
}
