// face_normals.cu: unit normal of each face.
// Launch: one thread per face (grid-stride). Twin: workers/engine/ops/face_normals.py::_numpy
#include "common.cuh"

extern "C" __global__ void face_normals(const float* __restrict__ V, const int* __restrict__ F,
                                        long long n_faces, float* __restrict__ N) {
  FOR_EACH(f, n_faces) {
    const float3 a = load3(V, F[3 * f]), b = load3(V, F[3 * f + 1]), c = load3(V, F[3 * f + 2]);
    const float3 n = cross3(sub3(b, a), sub3(c, a));
    const float len = norm3(n);
    const float s = len > 0.f ? 1.f / len : 0.f;  // zero-area faces get the zero vector
    N[3 * f] = n.x * s;
    N[3 * f + 1] = n.y * s;
    N[3 * f + 2] = n.z * s;
  }
}
