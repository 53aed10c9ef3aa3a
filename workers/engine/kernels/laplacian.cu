// laplacian.cu: the per-face terms of the cotangent Laplacian and the lumped mass matrix.
// Launch: one thread per face (grid-stride); barycentric vertex areas by double atomic adds.
// Twin: workers/engine/laplacian.py (corner_cotangents64, barycentric_areas)
// The matrix itself is assembled from these terms by cupyx (COO -> CSR), as the mesh-matrix
// paper assembles the constant-strain-triangle stiffness: one 3x3 block per face, no
// intermediate incidence matrix.
#include "common.cuh"

// cot[f, k]: cotangent of the angle at corner k (0 for a degenerate face);
// area[f]: |(b - a) x (c - a)| / 2; mass[v] += area / 3 for each corner (when mass is given).
extern "C" __global__ void laplacian_face_terms(const double* __restrict__ V,
                                                const int* __restrict__ F, long long n_faces,
                                                double* __restrict__ cot,
                                                double* __restrict__ area,
                                                double* __restrict__ mass, int with_mass) {
  FOR_EACH(f, n_faces) {
    const int i0 = F[3 * f], i1 = F[3 * f + 1], i2 = F[3 * f + 2];
    const double3 p0 = load3dd(V, i0), p1 = load3dd(V, i1), p2 = load3dd(V, i2);
    const double3 c = corner_cots(p0, p1, p2);
    cot[3 * f] = c.x;
    cot[3 * f + 1] = c.y;
    cot[3 * f + 2] = c.z;
    const double a = 0.5 * norm3(cross3(sub3(p1, p0), sub3(p2, p0)));
    area[f] = a;
    if (with_mass) {
      const double third = a / 3.0;
      atomicAdd(mass + i0, third);
      atomicAdd(mass + i1, third);
      atomicAdd(mass + i2, third);
    }
  }
}
