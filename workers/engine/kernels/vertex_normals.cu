// vertex_normals.cu: weighted face normals scattered to the corners, then unitized.
// Launch: accumulate with one thread per face, normalize with one thread per vertex.
// Twin: workers/engine/ops/vertex_normals.py::_numpy
#include "common.cuh"

// weighting: 0 area (raw cross product), 1 angle (unit normal x corner angle), 2 uniform,
// 3 Max (corner cross product over the squared lengths of its sides, in double)
// size[v] gathers the lengths of the vectors added to acc[v] (to tell a cancelled sum)
extern "C" __global__ void vertex_normals_accumulate(const float* __restrict__ V,
                                                     const int* __restrict__ F, long long n_faces,
                                                     int weighting, float* __restrict__ acc,
                                                     float* __restrict__ size) {
  FOR_EACH(f, n_faces) {
    const int i0 = F[3 * f], i1 = F[3 * f + 1], i2 = F[3 * f + 2];
    const float3 a = load3(V, i0), b = load3(V, i1), c = load3(V, i2);
    // the face normal in double, as in face_normals.cu; accumulation stays float32
    const double3 ad = load3d(V, i0), bd = load3d(V, i1), cd = load3d(V, i2);
    const double3 nd = cross3(sub3(bd, ad), sub3(cd, ad));
    const float3 n = make_float3((float)nd.x, (float)nd.y, (float)nd.z);
    if (weighting == 3) {
      const double3 P[3] = {ad, bd, cd};
      const int I[3] = {i0, i1, i2};
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        const double3 u = sub3(P[(k + 1) % 3], P[k]), w = sub3(P[(k + 2) % 3], P[k]);
        const double d = dot3(u, u) * dot3(w, w);
        const double3 x = cross3(u, w);
        const double s = d > 0.0 ? 1.0 / d : 0.0;
        atomic_add3(acc, I[k], make_float3((float)(x.x * s), (float)(x.y * s), (float)(x.z * s)));
        atomicAdd(size + I[k], (float)(norm3(x) * s));
      }
      continue;
    }
    const double lend = norm3(nd);
    if (weighting == 0) {
      atomic_add3(acc, i0, n);
      atomic_add3(acc, i1, n);
      atomic_add3(acc, i2, n);
      atomicAdd(size + i0, (float)lend);
      atomicAdd(size + i1, (float)lend);
      atomicAdd(size + i2, (float)lend);
      continue;
    }
    const double inv = lend > 0.0 ? 1.0 / lend : 0.0;
    const float3 u = make_float3((float)(nd.x * inv), (float)(nd.y * inv), (float)(nd.z * inv));
    const float unit = lend > 0.0 ? 1.f : 0.f;
    if (weighting == 2) {
      atomic_add3(acc, i0, u);
      atomic_add3(acc, i1, u);
      atomic_add3(acc, i2, u);
      atomicAdd(size + i0, unit);
      atomicAdd(size + i1, unit);
      atomicAdd(size + i2, unit);
      continue;
    }
    const float t0 = angle3(sub3(b, a), sub3(c, a)), t1 = angle3(sub3(c, b), sub3(a, b)),
                t2 = angle3(sub3(a, c), sub3(b, c));
    atomic_add3(acc, i0, scale3(u, t0));
    atomic_add3(acc, i1, scale3(u, t1));
    atomic_add3(acc, i2, scale3(u, t2));
    atomicAdd(size + i0, unit * t0);
    atomicAdd(size + i1, unit * t1);
    atomicAdd(size + i2, unit * t2);
  }
}

// a vertex whose sum is at most `cancelled` of its lengths' sum (faces facing opposite ways)
// gets the zero vector, as one with no face does
extern "C" __global__ void vertex_normals_normalize(float* __restrict__ N,
                                                    const float* __restrict__ size,
                                                    long long n_vertices, float cancelled) {
  FOR_EACH(v, n_vertices) {
    const float3 n = load3(N, (int)v);
    const float len = norm3(n);
    const float s = len > cancelled * size[v] && len > 0.f ? 1.f / len : 0.f;
    N[3 * v] = n.x * s;
    N[3 * v + 1] = n.y * s;
    N[3 * v + 2] = n.z * s;
  }
}
