// mean_curvature.cu: the mean-curvature normal of Meyer et al. (2003) with mixed areas.
// Launch: accumulate with one thread per face (double atomic adds into per-vertex sums), finish
// with one thread per vertex. Twin: workers/engine/ops/mean_curvature.py::_numpy
// The cotangent Laplacian of the positions, L X, is the mesh-matrix product done without the
// matrix: each face adds its three sides' weighted differences to their end vertices.
#include "common.cuh"

// LX[v] += sum over sides (v, u) of w (x_v - x_u), w = cot(opposite angle) / 2;
// A[v] += mixed Voronoi area of v's corner; N[v] += (b - a) x (c - a) (area-weighted normal).
extern "C" __global__ void mean_curvature_accumulate(const double* __restrict__ V,
                                                     const int* __restrict__ F,
                                                     long long n_faces, double* __restrict__ LX,
                                                     double* __restrict__ A,
                                                     double* __restrict__ N) {
  FOR_EACH(f, n_faces) {
    const int idx[3] = {F[3 * f], F[3 * f + 1], F[3 * f + 2]};
    const double3 p[3] = {load3dd(V, idx[0]), load3dd(V, idx[1]), load3dd(V, idx[2])};
    const double3 c3 = corner_cots(p[0], p[1], p[2]);
    const double c[3] = {c3.x, c3.y, c3.z};
    const double3 n = cross3(sub3(p[1], p[0]), sub3(p[2], p[0]));
    const double area = 0.5 * norm3(n);
    const bool obtuse = c[0] < 0.0 || c[1] < 0.0 || c[2] < 0.0;
    // 1. Laplacian of the positions, side by side (side k: corner k to k+1, opposite k+2)
    for (int k = 0; k < 3; ++k) {
      const int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
      const double w = 0.5 * c[k2];
      const double3 d = sub3(p[k], p[k1]);
      atomic_add3d(LX, idx[k], scale3(d, w));
      atomic_add3d(LX, idx[k1], scale3(d, -w));
    }
    // 2. mixed areas and the area-weighted normal, corner by corner
    for (int k = 0; k < 3; ++k) {
      const int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
      double a;
      if (obtuse) {
        a = c[k] < 0.0 ? area / 2.0 : area / 4.0;
      } else {
        const double3 s0 = sub3(p[k1], p[k]), s2 = sub3(p[k], p[k2]);
        a = (dot3(s0, s0) * c[k2] + dot3(s2, s2) * c[k1]) / 8.0;
      }
      atomicAdd(A + idx[k], a);
      atomic_add3d(N, idx[k], n);
    }
  }
}

// H = |K| / 2 with the sign of K . N, where K = L X / A is the mean-curvature normal (2 H n);
// 0 on boundary vertices, unused vertices and vertices without area.
extern "C" __global__ void mean_curvature_finish(const double* __restrict__ LX,
                                                 const double* __restrict__ A,
                                                 const double* __restrict__ N,
                                                 const bool* __restrict__ boundary,
                                                 const bool* __restrict__ used,
                                                 long long n_vertices, float* __restrict__ H) {
  FOR_EACH(v, n_vertices) {
    double h = 0.0;
    if (used[v] && !boundary[v] && A[v] > 0.0) {
      const double3 k = scale3(load3dd(LX, v), 1.0 / A[v]);
      const double s = dot3(k, load3dd(N, v));
      h = 0.5 * norm3(k) * (double)((s > 0.0) - (s < 0.0));
    }
    H[v] = (float)h;
  }
}
