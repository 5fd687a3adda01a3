// NF4 kernels on CUDA: dequantize to bf16, and the fused dequantize-GEMV of batch-1 decode. The format and
// the maths are in forja_kernels/nf4.h; reference.cpp is the same computation on the CPU.
//
// Both kernels are meant to be memory-bound: the GEMV streams 0.5 byte of codes per weight (plus 4 bytes of
// absmax per block) and reads them exactly once, so the bound it aims for is those bytes over HBM bandwidth
// (x, re-read by every row, comes from L1/L2). Dequantize reads 0.5 byte and writes 2 bytes per weight.
// tests/gpu/quant prints the GEMV's achieved GB/s on Llama-sized layers.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "forja_kernels/nf4.h"

namespace {

__constant__ float kCodesDevice[16] = {FORJA_NF4_CODE_VALUES};

// The code table in shared memory: 16 floats in 16 banks, so a warp's lookups never conflict (lanes reading
// the same entry get a broadcast). Constant memory would serialise a warp's 16 different addresses.
__device__ __forceinline__ void load_codes(float* codes) {
  if (threadIdx.x < 16) codes[threadIdx.x] = kCodesDevice[threadIdx.x];
  __syncthreads();
}

// The absmax of block b. The fused multiply-add is written out (not left to contraction) so that the CPU
// reference's std::fma gives the same bits.
__device__ __forceinline__ float block_absmax(const ForjaNf4Weights& w, uint64_t b) {
  if (w.absmax) return __ldg(w.absmax + b);
  const float q = static_cast<float>(__ldg(w.absmax_q + b));
  return __fmaf_rn(q, __ldg(w.absmax_scale + b / static_cast<uint64_t>(w.dq_block_size)), w.absmax_offset);
}

// The same with 32-bit index arithmetic, for the vector paths (which check that the block count fits).
__device__ __forceinline__ float block_absmax32(const ForjaNf4Weights& w, uint32_t b,
                                                uint32_t dq_block_size) {
  if (w.absmax) return __ldg(w.absmax + b);
  const float q = static_cast<float>(__ldg(w.absmax_q + b));
  return __fmaf_rn(q, __ldg(w.absmax_scale + b / dq_block_size), w.absmax_offset);
}

__device__ __forceinline__ uint32_t bf16_bits(float v) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(v)));
}

// ---- Dequantize ---------------------------------------------------------------------------------------
// Vector part: each thread turns 4 code bytes (8 elements, one 32-bit load) into 8 bf16 (one 16-byte store),
// so a warp's loads and stores are both contiguous. It needs block_size % 8 == 0 (a group never straddles two
// blocks), 4-byte aligned codes and 16-byte aligned out. The scalar part covers the rest (elements from
// `scalar_from` on), one element per thread.
__global__ void __launch_bounds__(256)
    dequantize_bf16_kernel(ForjaNf4Weights w, int64_t n, uint64_t groups, uint32_t groups_per_block,
                           uint32_t dq_block_size, int64_t scalar_from, __nv_bfloat16* __restrict__ out) {
  __shared__ float codes[16];
  load_codes(codes);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  const auto* in4 = reinterpret_cast<const uint32_t*>(w.codes);
  auto* out4 = reinterpret_cast<uint4*>(out);
  for (uint64_t g = tid; g < groups; g += stride) {
    const uint32_t word = __ldcs(in4 + g);
    const float a = block_absmax32(w, static_cast<uint32_t>(g) / groups_per_block, dq_block_size);
    uint32_t packed[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t byte = (word >> (8 * b)) & 0xffu;  // elements 2b (high nibble) and 2b + 1 (low nibble)
      const float v0 = __fmul_rn(codes[byte >> 4], a);
      const float v1 = __fmul_rn(codes[byte & 0x0fu], a);
      packed[b] = bf16_bits(v0) | (bf16_bits(v1) << 16);
    }
    out4[g] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }

  auto* out16 = reinterpret_cast<unsigned short*>(out);
  for (int64_t i = scalar_from + static_cast<int64_t>(tid); i < n; i += static_cast<int64_t>(stride)) {
    const uint32_t byte = __ldg(w.codes + i / 2);
    const uint32_t code = (i % 2 == 0) ? byte >> 4 : byte & 0x0fu;
    const float a = block_absmax(w, static_cast<uint64_t>(i / w.block_size));
    out16[i] = static_cast<unsigned short>(bf16_bits(__fmul_rn(codes[code], a)));
  }
}

// ---- Fused dequantize-GEMV -----------------------------------------------------------------------------
constexpr int kGemvWarps = 4;   // rows per thread block, one warp each
constexpr int kGemvUnroll = 4;  // 16-byte weight loads each lane keeps in flight

// The dot product of one 32-element chunk: 16 code bytes against 32 bf16 of x (four 16-byte loads). Byte k of
// the chunk holds elements 2k (high nibble) and 2k + 1 (low); 32-bit word b of an x load holds elements 2b
// (low half) and 2b + 1 (high half).
__device__ __forceinline__ float chunk_dot(const uint4& wq, const uint4* __restrict__ x, const float* codes) {
  const uint32_t words[4] = {wq.x, wq.y, wq.z, wq.w};
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint4 xv = __ldg(x + q);
    const uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t byte = (words[q] >> (8 * b)) & 0xffu;
      s0 = fmaf(codes[byte >> 4], __uint_as_float(xs[b] << 16), s0);
      s1 = fmaf(codes[byte & 0x0fu], __uint_as_float(xs[b] & 0xffff0000u), s1);
    }
  }
  return s0 + s1;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per row; lane l takes the row's 32-element chunks l, l + 32, ... Needs cols % 32 == 0,
// block_size % 32 == 0 (a chunk lies in one block), 16-byte aligned codes and x, and rows * cols / 32 < 2^32.
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_vector_kernel(ForjaNf4Weights w, int64_t rows, uint32_t chunks_per_row, uint32_t chunks_per_block,
                       uint32_t dq_block_size, const uint4* __restrict__ x, __nv_bfloat16* __restrict__ y) {
  __shared__ float codes[16];
  load_codes(codes);
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together

  const uint32_t first = static_cast<uint32_t>(row) * chunks_per_row;  // global index of the row's chunk 0
  const auto* wrow = reinterpret_cast<const uint4*>(w.codes) + first;
  float acc = 0.0f;
  uint32_t j = lane;
  for (; j + 32u * (kGemvUnroll - 1) < chunks_per_row; j += 32u * kGemvUnroll) {
    uint4 wq[kGemvUnroll];
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) wq[u] = __ldcs(wrow + j + 32u * u);  // streamed: read once
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) {
      const uint32_t c = j + 32u * u;
      const float a = block_absmax32(w, (first + c) / chunks_per_block, dq_block_size);
      acc = fmaf(chunk_dot(wq[u], x + 4u * c, codes), a, acc);
    }
  }
  for (; j < chunks_per_row; j += 32u) {
    const uint4 wq = __ldcs(wrow + j);
    const float a = block_absmax32(w, (first + j) / chunks_per_block, dq_block_size);
    acc = fmaf(chunk_dot(wq, x + 4u * j, codes), a, acc);
  }
  acc = warp_sum(acc);
  if (lane == 0) y[row] = __float2bfloat16_rn(acc);
}

// Any shape and alignment: one warp per row, one element per lane at a time.
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_scalar_kernel(ForjaNf4Weights w, int64_t rows, int64_t cols, const __nv_bfloat16* __restrict__ x,
                       __nv_bfloat16* __restrict__ y) {
  __shared__ float codes[16];
  load_codes(codes);
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const int64_t i = row * cols + c;
    const uint32_t byte = __ldg(w.codes + i / 2);
    const uint32_t code = (i % 2 == 0) ? byte >> 4 : byte & 0x0fu;
    const float v = __fmul_rn(codes[code], block_absmax(w, static_cast<uint64_t>(i / w.block_size)));
    acc = fmaf(v, __bfloat162float(x[c]), acc);
  }
  acc = warp_sum(acc);
  if (lane == 0) y[row] = __float2bfloat16_rn(acc);
}

bool is_aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The vector paths index blocks and double-quant groups in 32 bits.
constexpr uint64_t kMax32 = 0xffffffffull;
bool dq_fits_32(const ForjaNf4Weights& w) {
  return w.absmax || static_cast<uint64_t>(w.dq_block_size) <= kMax32;
}
uint32_t dq_block_size32(const ForjaNf4Weights& w) {
  return w.absmax ? 1u : static_cast<uint32_t>(w.dq_block_size);
}

}  // namespace

extern "C" {

int forja_nf4_dequantize_bf16(const ForjaNf4Dequantize* p, cudaStream_t stream) {
  if (forja_nf4_dequantize_check(p)) return FORJA_NF4_INVALID_ARGUMENT;
  if (p->n == 0) return FORJA_NF4_OK;
  const ForjaNf4Weights& w = p->w;
  uint64_t groups = 0;
  uint32_t groups_per_block = 1;
  if (w.block_size % 8 == 0 && is_aligned(w.codes, 4) && is_aligned(p->out, 16) &&
      static_cast<uint64_t>(p->n / 8) < kMax32 && dq_fits_32(w)) {
    groups = static_cast<uint64_t>(p->n / 8);
    groups_per_block = static_cast<uint32_t>(w.block_size / 8);
  }
  const int64_t scalar_from = static_cast<int64_t>(groups * 8);
  const uint64_t work = groups + static_cast<uint64_t>(p->n - scalar_from);
  const int threads = 256;
  const uint64_t blocks = (work + threads - 1) / threads;
  const unsigned grid = static_cast<unsigned>(blocks < (1u << 20) ? blocks : (1u << 20));
  dequantize_bf16_kernel<<<grid, threads, 0, stream>>>(w, p->n, groups, groups_per_block, dq_block_size32(w),
                                                       scalar_from, static_cast<__nv_bfloat16*>(p->out));
  return static_cast<int>(cudaGetLastError());
}

int forja_nf4_gemv_bf16(const ForjaNf4Gemv* p, cudaStream_t stream) {
  if (forja_nf4_gemv_check(p)) return FORJA_NF4_INVALID_ARGUMENT;
  if (p->rows == 0) return FORJA_NF4_OK;
  const ForjaNf4Weights& w = p->w;
  const uint64_t blocks = static_cast<uint64_t>((p->rows + kGemvWarps - 1) / kGemvWarps);
  if (blocks > 0x7fffffffull) return FORJA_NF4_INVALID_ARGUMENT;  // the grid's x limit
  const auto grid = static_cast<unsigned>(blocks);
  const int threads = kGemvWarps * 32;
  const bool vector = p->cols % 32 == 0 && w.block_size % 32 == 0 && is_aligned(w.codes, 16) &&
                      is_aligned(p->x, 16) && static_cast<uint64_t>(p->rows * p->cols / 32) < kMax32 &&
                      dq_fits_32(w);
  if (vector) {
    gemv_vector_kernel<<<grid, threads, 0, stream>>>(
        w, p->rows, static_cast<uint32_t>(p->cols / 32), static_cast<uint32_t>(w.block_size / 32),
        dq_block_size32(w), static_cast<const uint4*>(p->x), static_cast<__nv_bfloat16*>(p->y));
  } else {
    gemv_scalar_kernel<<<grid, threads, 0, stream>>>(
        w, p->rows, p->cols, static_cast<const __nv_bfloat16*>(p->x), static_cast<__nv_bfloat16*>(p->y));
  }
  return static_cast<int>(cudaGetLastError());
}

}  // extern "C"
