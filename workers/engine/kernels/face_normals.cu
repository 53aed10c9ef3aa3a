// face_normals.cu: unit normal of each face.
// Launch: one thread per face (grid-stride). Twin: workers/engine/ops/face_normals.py::_numpy
// The cross product is taken in double, as the twin does: for slivers, float32 loses digits in
// the difference of products (1e-5 on rx-giraffe), and the kernel is bound by memory anyway.
#include "common.cuh"

extern "C" __global__ void face_normals(const float* __restrict__ V, const int* __restrict__ F,
                                        long long n_faces, float* __restrict__ N) {
  FOR_EACH(f, n_faces) {
    const double3 a = load3d(V, F[3 * f]), b = load3d(V, F[3 * f + 1]),
                  c = load3d(V, F[3 * f + 2]);
    const double3 n = cross3(sub3(b, a), sub3(c, a));
    const double len = norm3(n);
    const double s = len > 0.0 ? 1.0 / len : 0.0;  // zero-area faces get the zero vector
    N[3 * f] = (float)(n.x * s);
    N[3 * f + 1] = (float)(n.y * s);
    N[3 * f + 2] = (float)(n.z * s);
  }
}
