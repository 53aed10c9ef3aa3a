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
