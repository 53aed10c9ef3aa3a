// common.cuh: small device helpers shared by the kernels.
#pragma once

// Grid-stride loop over n elements: works for any grid size.
#define FOR_EACH(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
       i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ float3 load3(const float* __restrict__ V, int v) {
  return make_float3(V[3 * v], V[3 * v + 1], V[3 * v + 2]);
}
__device__ __forceinline__ float3 sub3(float3 a, float3 b) {
  return make_float3(a.x - b.x, a.y - b.y, a.z - b.z);
}
__device__ __forceinline__ float3 cross3(float3 a, float3 b) {
  return make_float3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ float dot3(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__device__ __forceinline__ float norm3(float3 a) { return sqrtf(dot3(a, a)); }
__device__ __forceinline__ float3 scale3(float3 a, float s) {
  return make_float3(a.x * s, a.y * s, a.z * s);
}
__device__ __forceinline__ void atomic_add3(float* __restrict__ out, int v, float3 a) {
  atomicAdd(out + 3 * v, a.x);
  atomicAdd(out + 3 * v + 1, a.y);
  atomicAdd(out + 3 * v + 2, a.z);
}
// Interior angle between u and w: atan2(|u x w|, u.w); 0 for a zero-length side.
__device__ __forceinline__ float angle3(float3 u, float3 w) {
  if (dot3(u, u) == 0.f || dot3(w, w) == 0.f) return 0.f;
  return atan2f(norm3(cross3(u, w)), dot3(u, w));
}

// The same in double precision, for sums where float32 rounding would bias the result.
__device__ __forceinline__ double3 load3d(const float* __restrict__ V, int v) {
  return make_double3(V[3 * v], V[3 * v + 1], V[3 * v + 2]);
}
__device__ __forceinline__ double3 sub3(double3 a, double3 b) {
  return make_double3(a.x - b.x, a.y - b.y, a.z - b.z);
}
__device__ __forceinline__ double3 cross3(double3 a, double3 b) {
  return make_double3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ double dot3(double3 a, double3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
__device__ __forceinline__ double norm3(double3 a) { return sqrt(dot3(a, a)); }
__device__ __forceinline__ double angle3(double3 u, double3 w) {
  if (dot3(u, u) == 0.0 || dot3(w, w) == 0.0) return 0.0;
  return atan2(norm3(cross3(u, w)), dot3(u, w));
}

// ---------------------------------------------------------------------------------------------
// Double-precision positions (n, 3) and helpers for the Laplacian family of kernels.
__device__ __forceinline__ double3 load3dd(const double* __restrict__ V, long long v) {
  return make_double3(V[3 * v], V[3 * v + 1], V[3 * v + 2]);
}
__device__ __forceinline__ void store3d(double* __restrict__ out, long long v, double3 a) {
  out[3 * v] = a.x;
  out[3 * v + 1] = a.y;
  out[3 * v + 2] = a.z;
}
__device__ __forceinline__ double3 add3(double3 a, double3 b) {
  return make_double3(a.x + b.x, a.y + b.y, a.z + b.z);
}
__device__ __forceinline__ double3 scale3(double3 a, double s) {
  return make_double3(a.x * s, a.y * s, a.z * s);
}
__device__ __forceinline__ void atomic_add3d(double* __restrict__ out, long long v, double3 a) {
  atomicAdd(out + 3 * v, a.x);
  atomicAdd(out + 3 * v + 1, a.y);
  atomicAdd(out + 3 * v + 2, a.z);
}
// Cotangent of the angle between u and w: u.w / |u x w|; 0 when u and w are parallel or one is
// zero (a degenerate triangle has no angle and contributes nothing), as the NumPy twins do.
__device__ __forceinline__ double cot3(double3 u, double3 w) {
  const double s = norm3(cross3(u, w));
  return s > 0.0 ? dot3(u, w) / s : 0.0;
}
// Corner cotangents of triangle (p0, p1, p2): c.x at p0, c.y at p1, c.z at p2. Side k runs from
// corner k to corner k+1 and is opposite corner k+2, so its cotangent weight is c[(k+2) % 3] / 2.
__device__ __forceinline__ double3 corner_cots(double3 p0, double3 p1, double3 p2) {
  return make_double3(cot3(sub3(p1, p0), sub3(p2, p0)), cot3(sub3(p2, p1), sub3(p0, p1)),
                      cot3(sub3(p0, p2), sub3(p1, p2)));
}
// A position from float32 or float64 storage, widened to double.
template <typename T>
__device__ __forceinline__ double3 load3t(const T* __restrict__ V, long long v) {
  return make_double3((double)V[3 * v], (double)V[3 * v + 1], (double)V[3 * v + 2]);
}
