// gaussian_curvature.cu: angle defect per vertex.
// Launch: angles with one thread per face (atomic sums per vertex), defect with one thread per
// vertex. Twin: workers/engine/ops/gaussian_curvature.py::_numpy
// Angles and sums are in double: in float32, 2*pi itself is 1.7e-7 too large, a bias that adds
// up over a mesh (1.8e-3 on a 10k-vertex torus whose total must be 0).
#include "common.cuh"

extern "C" __global__ void gaussian_curvature_angles(const float* __restrict__ V,
                                                     const int* __restrict__ F, long long n_faces,
                                                     int with_area, double* __restrict__ angle_sum,
                                                     double* __restrict__ area_sum) {
  FOR_EACH(f, n_faces) {
    const int i0 = F[3 * f], i1 = F[3 * f + 1], i2 = F[3 * f + 2];
    const double3 a = load3d(V, i0), b = load3d(V, i1), c = load3d(V, i2);
    atomicAdd(angle_sum + i0, angle3(sub3(b, a), sub3(c, a)));
    atomicAdd(angle_sum + i1, angle3(sub3(c, b), sub3(a, b)));
    atomicAdd(angle_sum + i2, angle3(sub3(a, c), sub3(b, c)));
    if (with_area) {  // barycentric vertex area: a third of each incident face
      const double third = norm3(cross3(sub3(b, a), sub3(c, a))) / 6.0;
      atomicAdd(area_sum + i0, third);
      atomicAdd(area_sum + i1, third);
      atomicAdd(area_sum + i2, third);
    }
  }
}

// K = (boundary ? pi : 2 pi) - angle sum; 0 for unused vertices; divided by the vertex area
// when with_area is set.
extern "C" __global__ void gaussian_curvature_defect(int with_area,
                                                     const double* __restrict__ angle_sum,
                                                     const double* __restrict__ area_sum,
                                                     const bool* __restrict__ boundary,
                                                     const bool* __restrict__ used,
                                                     long long n_vertices, float* __restrict__ K) {
  const double PI = 3.14159265358979323846;
  FOR_EACH(v, n_vertices) {
    double k = used[v] ? (boundary[v] ? PI : 2.0 * PI) - angle_sum[v] : 0.0;
    if (with_area) k = area_sum[v] > 0.0 ? k / area_sum[v] : 0.0;
    K[v] = (float)k;
  }
}
