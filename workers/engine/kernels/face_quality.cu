// face_quality.cu: triangle quality Q = 4 sqrt(3) area / (l0^2 + l1^2 + l2^2) (KEY-WELD eq. 1,
// MATLAB's pdetriq): 1 for an equilateral triangle, towards 0 for slivers; 0 when all three
// sides have zero length. Computed in double.
// Launch: one thread per face (grid-stride); an entry point per position dtype.
// Twin: workers/engine/ops/face_quality.py::_numpy
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void face_quality_body(const T* __restrict__ V,
                                                  const int* __restrict__ F, long long n_faces,
                                                  double* __restrict__ Q) {
  const double FOUR_SQRT3 = 6.92820323027550917410978536602;  // 4 * sqrt(3)
  FOR_EACH(f, n_faces) {
    const double3 a = load3t(V, F[3 * f]), b = load3t(V, F[3 * f + 1]),
                  c = load3t(V, F[3 * f + 2]);
    const double3 u = sub3(b, a), v = sub3(c, b), w = sub3(a, c);
    const double area = 0.5 * norm3(cross3(u, sub3(c, a)));
    const double sq = dot3(u, u) + dot3(v, v) + dot3(w, w);
    Q[f] = sq > 0.0 ? FOUR_SQRT3 * area / sq : 0.0;
  }
}

extern "C" __global__ void face_quality_f32(const float* __restrict__ V,
                                            const int* __restrict__ F, long long n_faces,
                                            double* __restrict__ Q) {
  face_quality_body(V, F, n_faces, Q);
}
extern "C" __global__ void face_quality_f64(const double* __restrict__ V,
                                            const int* __restrict__ F, long long n_faces,
                                            double* __restrict__ Q) {
  face_quality_body(V, F, n_faces, Q);
}
