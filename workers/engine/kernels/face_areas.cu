// face_areas.cu: area of each face, |(b - a) x (c - a)| / 2, computed in double.
// Launch: one thread per face (grid-stride); an entry point per position dtype.
// Twin: workers/engine/ops/face_areas.py::_numpy
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void face_areas_body(const T* __restrict__ V,
                                                const int* __restrict__ F, long long n_faces,
                                                float* __restrict__ A) {
  FOR_EACH(f, n_faces) {
    const double3 a = load3t(V, F[3 * f]), b = load3t(V, F[3 * f + 1]),
                  c = load3t(V, F[3 * f + 2]);
    A[f] = (float)(0.5 * norm3(cross3(sub3(b, a), sub3(c, a))));
  }
}

extern "C" __global__ void face_areas_f32(const float* __restrict__ V, const int* __restrict__ F,
                                          long long n_faces, float* __restrict__ A) {
  face_areas_body(V, F, n_faces, A);
}

extern "C" __global__ void face_areas_f64(const double* __restrict__ V,
                                          const int* __restrict__ F, long long n_faces,
                                          float* __restrict__ A) {
  face_areas_body(V, F, n_faces, A);
}
