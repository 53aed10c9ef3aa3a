// edge_lengths.cu: the three side lengths of each face, and the length of each unique edge.
// Launch: sides with one thread per face, edges with one thread per edge (grid-stride); an entry
// point per position dtype. Lengths are computed in double.
// Twin: workers/engine/ops/edge_lengths.py::_numpy
#include "common.cuh"

// L[f, k] = |p[k+1] - p[k]|: side k runs from corner k to corner k+1.
template <typename T>
__device__ __forceinline__ void sides_body(const T* __restrict__ V, const int* __restrict__ F,
                                           long long n_faces, float* __restrict__ L) {
  FOR_EACH(f, n_faces) {
    const double3 p0 = load3t(V, F[3 * f]), p1 = load3t(V, F[3 * f + 1]),
                  p2 = load3t(V, F[3 * f + 2]);
    L[3 * f] = (float)norm3(sub3(p1, p0));
    L[3 * f + 1] = (float)norm3(sub3(p2, p1));
    L[3 * f + 2] = (float)norm3(sub3(p0, p2));
  }
}

// E[e] = |p[EV[e, 1]] - p[EV[e, 0]]| in double, for the report's mean, min and max.
template <typename T>
__device__ __forceinline__ void edges_body(const T* __restrict__ V, const int* __restrict__ EV,
                                           long long n_edges, double* __restrict__ E) {
  FOR_EACH(e, n_edges) { E[e] = norm3(sub3(load3t(V, EV[2 * e + 1]), load3t(V, EV[2 * e]))); }
}

extern "C" __global__ void edge_lengths_sides_f32(const float* __restrict__ V,
                                                  const int* __restrict__ F, long long n_faces,
                                                  float* __restrict__ L) {
  sides_body(V, F, n_faces, L);
}
extern "C" __global__ void edge_lengths_sides_f64(const double* __restrict__ V,
                                                  const int* __restrict__ F, long long n_faces,
                                                  float* __restrict__ L) {
  sides_body(V, F, n_faces, L);
}
extern "C" __global__ void edge_lengths_edges_f32(const float* __restrict__ V,
                                                  const int* __restrict__ EV, long long n_edges,
                                                  double* __restrict__ E) {
  edges_body(V, EV, n_edges, E);
}
extern "C" __global__ void edge_lengths_edges_f64(const double* __restrict__ V,
                                                  const int* __restrict__ EV, long long n_edges,
                                                  double* __restrict__ E) {
  edges_body(V, EV, n_edges, E);
}
