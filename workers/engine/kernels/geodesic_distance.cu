// geodesic_distance.cu: the middle step of the heat method (Crane, Weischedel and Wardetzky
// 2013): the normalized gradient X = -grad u / |grad u| of the heat u in each face, and its
// integrated divergence at each vertex.
// Launch: one thread per face (grid-stride), double atomic adds into the per-vertex divergence.
// Twin: workers/engine/ops/geodesic_distance.py::divergence_numpy
#include "common.cuh"

// For each face f with on[f]: with N the unit normal, A its area and e_k the side opposite
// corner k (counter-clockwise), grad u = sum_k u_k (N x e_k) / (2 A) and X = -grad u / |grad u|
// (nothing when |grad u| is 0). The face's u values are first divided by the largest of their
// magnitudes: X does not change, and |grad u|^2 cannot underflow where u is tiny (it would below
// u ~ 1e-154, long before u itself). Corner k then gets
//   div[v_k] += (cot[k+2] (p[k+1] - p[k]) . X + cot[k+1] (p[k+2] - p[k]) . X) / 2.
extern "C" __global__ void geodesic_distance_divergence(const double* __restrict__ V,
                                                        const int* __restrict__ F,
                                                        const double* __restrict__ cot,
                                                        const double* __restrict__ u,
                                                        const bool* __restrict__ on,
                                                        long long n_faces,
                                                        double* __restrict__ div) {
  FOR_EACH(f, n_faces) {
    if (!on[f]) continue;
    const int idx[3] = {F[3 * f], F[3 * f + 1], F[3 * f + 2]};
    const double3 p[3] = {load3dd(V, idx[0]), load3dd(V, idx[1]), load3dd(V, idx[2])};
    const double3 n = cross3(sub3(p[1], p[0]), sub3(p[2], p[0]));
    const double twice_area = norm3(n);
    if (!(twice_area > 0.0)) continue;
    const double3 nu = scale3(n, 1.0 / twice_area);
    // 1. the gradient of the heat in the face, scaled to the face's largest |u|
    const double uk[3] = {u[idx[0]], u[idx[1]], u[idx[2]]};
    const double top = fmax(fabs(uk[0]), fmax(fabs(uk[1]), fabs(uk[2])));
    if (!(top > 0.0)) continue;
    double3 g = make_double3(0.0, 0.0, 0.0);
    for (int k = 0; k < 3; ++k) {
      const double3 e = sub3(p[(k + 2) % 3], p[(k + 1) % 3]);
      g = add3(g, scale3(cross3(nu, e), uk[k] / top));
    }
    g = scale3(g, 1.0 / twice_area);
    const double gl = norm3(g);
    if (!(gl > 0.0)) continue;
    const double3 X = scale3(g, -1.0 / gl);
    // 2. its integrated divergence at the three corners
    const double c[3] = {cot[3 * f], cot[3 * f + 1], cot[3 * f + 2]};
    for (int k = 0; k < 3; ++k) {
      const int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
      const double d = c[k2] * dot3(sub3(p[k1], p[k]), X) + c[k1] * dot3(sub3(p[k2], p[k]), X);
      atomicAdd(div + idx[k], 0.5 * d);
    }
  }
}
