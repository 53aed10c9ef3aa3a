// gaussian_curvature.cu: angle defect per vertex.
// Launch: angles with one thread per face (atomic sums per vertex), defect with one thread per
// vertex. Twin: workers/engine/ops/gaussian_curvature.py::_numpy
#include "common.cuh"

extern "C" __global__ void gaussian_curvature_angles(const float* __restrict__ V,
                                                     const int* __restrict__ F, long long n_faces,
                                                     int with_area, float* __restrict__ angle_sum,
                                                     float* __restrict__ area_sum) {
  FOR_EACH(f, n_faces) {
    const int i0 = F[3 * f], i1 = F[3 * f + 1], i2 = F[3 * f + 2];
    const float3 a = load3(V, i0), b = load3(V, i1), c = load3(V, i2);
    atomicAdd(angle_sum + i0, angle3(sub3(b, a), sub3(c, a)));
    atomicAdd(angle_sum + i1, angle3(sub3(c, b), sub3(a, b)));
    atomicAdd(angle_sum + i2, angle3(sub3(a, c), sub3(b, c)));
    if (with_area) {  // barycentric vertex area: a third of each incident face
      const float third = norm3(cross3(sub3(b, a), sub3(c, a))) / 6.f;
      atomicAdd(area_sum + i0, third);
      atomicAdd(area_sum + i1, third);
      atomicAdd(area_sum + i2, third);
    }
  }
}

// K = (boundary ? pi : 2 pi) - angle sum; 0 for unused vertices; divided by the vertex area
// when with_area is set.
extern "C" __global__ void gaussian_curvature_defect(int with_area,
                                                     const float* __restrict__ angle_sum,
                                                     const float* __restrict__ area_sum,
                                                     const bool* __restrict__ boundary,
                                                     const bool* __restrict__ used,
                                                     long long n_vertices, float* __restrict__ K) {
  const float PI = 3.14159265358979323846f;
  FOR_EACH(v, n_vertices) {
    float k = used[v] ? (boundary[v] ? PI : 2.f * PI) - angle_sum[v] : 0.f;
    if (with_area) k = area_sum[v] > 0.f ? k / area_sum[v] : 0.f;
    K[v] = k;
  }
}
