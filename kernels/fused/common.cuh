// Shared by the fused kernels: the storage types (fp32, bf16) read into and written from fp32 registers,
// 16-byte vectors of them, a deterministic block sum, and the launch-error check.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "forja_kernels/fused.h"

namespace forja_fused {

// Elements per 16-byte access: 4 floats or 8 bf16.
template <typename T>
constexpr int kVec = 16 / sizeof(T);

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// VEC consecutive elements, loaded and stored as one access (VEC = 1: the unaligned path).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Vec {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ void load(const T* base, int64_t i, float (&out)[VEC]) {
  const Vec<T, VEC> raw = reinterpret_cast<const Vec<T, VEC>*>(base)[i];
#pragma unroll
  for (int j = 0; j < VEC; ++j) out[j] = to_float(raw.v[j]);
}

template <typename T, int VEC>
__device__ __forceinline__ void store(T* base, int64_t i, const float (&in)[VEC]) {
  Vec<T, VEC> raw;
#pragma unroll
  for (int j = 0; j < VEC; ++j) raw.v[j] = from_float<T>(in[j]);
  reinterpret_cast<Vec<T, VEC>*>(base)[i] = raw;
}

// VEC fp32 values starting at base + i * VEC, in 16-byte loads where VEC allows (the caller guarantees the
// alignment when VEC > 1).
template <int VEC>
__device__ __forceinline__ void load_f32(const float* base, int64_t i, float (&out)[VEC]) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int j = 0; j < VEC / 4; ++j) {
      const float4 f = reinterpret_cast<const float4*>(base + i * VEC)[j];
      out[4 * j] = f.x, out[4 * j + 1] = f.y, out[4 * j + 2] = f.z, out[4 * j + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) out[j] = base[i * VEC + j];
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block, returned to every thread. The order of the additions is fixed by the block
// size, so the result is reproducible. blockDim.x must be a multiple of 32; `scratch` holds 32 floats. Safe
// to call repeatedly with the same scratch.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  __syncthreads();  // the next call may overwrite scratch
  return total;
}

inline bool aligned16(const void* p) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

inline int round_up_32(int64_t n) {
  return static_cast<int>((n + 31) / 32 * 32);
}

// NULL when the launch went through; otherwise the CUDA error's message.
inline const char* launch_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace forja_fused
