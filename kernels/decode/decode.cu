// The batch-1 decode kernels of forja_kernels/decode.h.
//
// GEMV: one warp per output row (grid-strided over the rows), 16-byte loads of the weight row, the
// activation vector in shared memory, fp32 accumulation and a warp-shuffle sum. Every block first computes
// the whole activation (the RMSNorm or SwiGLU before the projection) into shared memory: a few KB read from
// L2 per block instead of a launch of its own. The grid is capped at 4 blocks per SM so that the prologue is
// paid a bounded number of times. Where k is a multiple of 8 and the vectors are 16-byte aligned, each warp's
// first weights are requested before the prologue (gemv_vec_kernel).
//
// Attention: flash-decoding. Block (split s, kv head g) takes the keys [s·chunk, (s+1)·chunk) that lie in
// [lo, pos], its 4 warps take every 4th key each, and all n_rep query heads of the kv head are scored against
// each key as it is read (GQA without repeating the cache), several keys at a time so that their warp-wide
// sums overlap. Each warp keeps an online softmax per query head; the block merges its warps and writes (max,
// sum, unnormalised output) per head to the scratch; a second kernel merges the splits. Splits beyond the
// position write max = -inf and are skipped by the merge.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "forja_kernels/decode.h"
#include "forja_kernels/nf4.h"

namespace {

constexpr int kWarp = 32;
constexpr int kGemvWarps = 8;
constexpr int kAttnWarps = 4;

__device__ __forceinline__ float bf2f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ __nv_bfloat16 f2bf(float v) {
  return __float2bfloat16_rn(v);
}
__device__ __forceinline__ float round_bf(float v) {
  return __bfloat162float(__float2bfloat16_rn(v));
}

// Programmatic dependent launch (on unless FORJA_DECODE_PDL=0): wait until the kernel before this one in the
// stream has finished and its writes are visible, then let the next kernel's blocks start (they request their
// weights while this one runs). Everything before the call may read only what no kernel of the step writes
// (weights). Without the launch attribute both instructions return at once.
__device__ __forceinline__ void pdl_wait_then_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block (every thread gets it). `red` holds kGemvWarps floats.
__device__ float block_sum(float v, float* red) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  v = warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = 0;
#pragma unroll
  for (int w = 0; w < kGemvWarps; ++w) t += red[w];
  __syncthreads();
  return t;
}

// The prologues that normalize x (the Llama and Gemma RMSNorms) and those that gate [gate | up] (SwiGLU and
// GeGLU), with the one element each computes, rounded as forja_kernels/decode.h says.
template <ForjaDecodePrologue P>
constexpr bool kNormed = P == FORJA_DECODE_RMSNORM || P == FORJA_DECODE_RMSNORM_UNIT_OFFSET;
template <ForjaDecodePrologue P>
constexpr bool kGated = P == FORJA_DECODE_SWIGLU || P == FORJA_DECODE_GEGLU;

template <ForjaDecodePrologue P>
__device__ __forceinline__ float normed(float v, float r, float w) {
  if constexpr (P == FORJA_DECODE_RMSNORM_UNIT_OFFSET) return v * r * (1.0f + w);
  return round_bf(v * r) * w;
}

template <ForjaDecodePrologue P>
__device__ __forceinline__ float gated(float g, float u) {
  if constexpr (P == FORJA_DECODE_GEGLU) {
    constexpr float kBeta = 0.7978845608028654f, kKappa = 0.044715f;  // sqrt(2 / pi): LibTorch's tanh GELU
    return round_bf(0.5f * g * (1.0f + tanhf(kBeta * (g + kKappa * g * g * g)))) * u;
  }
  return round_bf(g / (1.0f + expf(-g))) * u;
}

// The activation the GEMV multiplies, act[i] for i < k, computed by the whole block and handed to
// store(i, value): an RMSNorm (one block-wide sum of squares first), a gate of [gate | up], or x itself.
template <ForjaDecodePrologue P, typename Store>
__device__ __forceinline__ void compute_activation(int64_t k, const __nv_bfloat16* __restrict__ x,
                                                   const __nv_bfloat16* __restrict__ norm_weight, float eps,
                                                   float* red, Store store) {
  const int tid = threadIdx.x;
  if constexpr (kNormed<P>) {
    float ss = 0;
    for (int64_t i = tid; i < k; i += blockDim.x) {
      const float v = bf2f(x[i]);
      ss += v * v;
    }
    const float r = rsqrtf(block_sum(ss, red) / static_cast<float>(k) + eps);
    for (int64_t i = tid; i < k; i += blockDim.x)
      store(i, f2bf(normed<P>(bf2f(x[i]), r, bf2f(norm_weight[i]))));
  } else if constexpr (kGated<P>) {
    for (int64_t i = tid; i < k; i += blockDim.x) store(i, f2bf(gated<P>(bf2f(x[i]), bf2f(x[k + i]))));
  } else {
    for (int64_t i = tid; i < k; i += blockDim.x) store(i, x[i]);
  }
}

// 8 bf16 from a 16-byte word, into fp32.
__device__ __forceinline__ void unpack8(const uint4& raw, float (&out)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

template <ForjaDecodePrologue P, bool VEC>
__global__ void __launch_bounds__(kGemvWarps* kWarp)
    gemv_kernel(int64_t n, int64_t k, const __nv_bfloat16* __restrict__ w,
                const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ norm_weight, float eps,
                const __nv_bfloat16* __restrict__ bias, const __nv_bfloat16* residual, __nv_bfloat16* y,
                __nv_bfloat16* __restrict__ act_out) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[kGemvWarps];
  __nv_bfloat16* act = reinterpret_cast<__nv_bfloat16*>(smem);
  const int tid = threadIdx.x;

  pdl_wait_then_release();
  compute_activation<P>(k, x, norm_weight, eps, red, [&](int64_t i, __nv_bfloat16 v) { act[i] = v; });
  __syncthreads();
  if (act_out != nullptr && blockIdx.x == 0)
    for (int64_t i = tid; i < k; i += blockDim.x) act_out[i] = act[i];

  const int warp = tid / kWarp, lane = tid % kWarp;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp; row < n;
       row += static_cast<int64_t>(gridDim.x) * kGemvWarps) {
    const __nv_bfloat16* wr = w + row * k;
    float acc = 0;
    if constexpr (VEC) {
      const int64_t chunks = k / 8;
      const uint4* w4 = reinterpret_cast<const uint4*>(wr);
      const uint4* a4 = reinterpret_cast<const uint4*>(act);
      // Up to eight 16-byte loads in flight per lane (predicated at the end of the row).
      for (int64_t c = lane; c < chunks; c += 8 * kWarp) {
        uint4 raw[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          raw[u] = c + u * kWarp < chunks ? __ldg(w4 + c + u * kWarp) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          if (c + u * kWarp >= chunks) break;
          float wf[8], af[8];
          unpack8(raw[u], wf);
          unpack8(a4[c + u * kWarp], af);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc = fmaf(wf[e], af[e], acc);
        }
      }
    } else {
      for (int64_t c = lane; c < k; c += kWarp) acc = fmaf(bf2f(wr[c]), bf2f(act[c]), acc);
    }
    acc = warp_sum(acc);
    if (lane == 0) {
      if (bias != nullptr) acc += bf2f(bias[row]);
      if (residual != nullptr) acc += bf2f(residual[row]);
      y[row] = f2bf(acc);
    }
  }
}

// The 16-byte GEMV (k a multiple of 8, w, x and norm_weight 16-byte aligned). Each warp requests its first
// row's first 4 KB of weights before the prologue, so that their memory latency overlaps the norm instead of
// following it, and the next row's (or the next part of this row's) before reducing the current one: a warp
// always has a batch of loads in flight. The prologue reads x and the norm weight in 16-byte words, each
// thread keeping its own words from the first pass to the second, so it costs one block-wide reduction.
constexpr int kVecUnroll = 8;  // 16-byte words per lane in flight: 4 KB per warp, a TinyLlama row

// `slot(c)`: where 16-byte word c of the activation goes in `act` (a kernel may swizzle it).
template <ForjaDecodePrologue P, typename Slot>
__device__ __forceinline__ void compute_activation_vec(int64_t chunks, const uint4* __restrict__ x,
                                                       const uint4* __restrict__ norm_weight, float eps,
                                                       float* red, uint4* act, Slot slot) {
  const int tid = threadIdx.x;
  if constexpr (kNormed<P>) {
    float ss = 0;
    for (int64_t c = tid; c < chunks; c += blockDim.x) {
      const uint4 raw = __ldg(x + c);
      float v[8];
      unpack8(raw, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) ss = fmaf(v[e], v[e], ss);
      act[slot(c)] = raw;  // x itself until the scale is known; this thread rewrites the same word below
    }
    const float r = rsqrtf(block_sum(ss, red) / static_cast<float>(chunks * 8) + eps);
    for (int64_t c = tid; c < chunks; c += blockDim.x) {
      float v[8], nw[8];
      unpack8(act[slot(c)], v);
      unpack8(__ldg(norm_weight + c), nw);
      __nv_bfloat162 out[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        out[e] = __halves2bfloat162(f2bf(normed<P>(v[2 * e], r, nw[2 * e])),
                                    f2bf(normed<P>(v[2 * e + 1], r, nw[2 * e + 1])));
      act[slot(c)] = *reinterpret_cast<const uint4*>(out);
    }
  } else if constexpr (kGated<P>) {
    for (int64_t c = tid; c < chunks; c += blockDim.x) {
      float g[8], u[8];
      unpack8(__ldg(x + c), g);
      unpack8(__ldg(x + chunks + c), u);
      __nv_bfloat162 out[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        out[e] = __halves2bfloat162(f2bf(gated<P>(g[2 * e], u[2 * e])),
                                    f2bf(gated<P>(g[2 * e + 1], u[2 * e + 1])));
      act[slot(c)] = *reinterpret_cast<const uint4*>(out);
    }
  } else {
    for (int64_t c = tid; c < chunks; c += blockDim.x) act[slot(c)] = __ldg(x + c);
  }
}

template <ForjaDecodePrologue P>
__global__ void __launch_bounds__(kGemvWarps* kWarp)
    gemv_vec_kernel(int64_t n, int64_t k, const uint4* __restrict__ w, const uint4* __restrict__ x,
                    const uint4* __restrict__ norm_weight, float eps, const __nv_bfloat16* __restrict__ bias,
                    const __nv_bfloat16* residual, __nv_bfloat16* y, uint4* __restrict__ act_out) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[kGemvWarps];
  uint4* act = reinterpret_cast<uint4*>(smem);
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int64_t chunks = k / 8, stride = static_cast<int64_t>(gridDim.x) * kGemvWarps;
  constexpr int64_t kBatch = kVecUnroll * kWarp;  // 16-byte words of a row per warp batch

  uint4 raw[kVecUnroll];
  auto load = [&](int64_t row, int64_t c0) {
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      const int64_t c = c0 + lane + u * kWarp;
      raw[u] = c < chunks ? __ldcs(w + row * chunks + c) : make_uint4(0, 0, 0, 0);  // streamed: read once
    }
  };
  int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp, c0 = 0;
  if (row < n) load(row, 0);

  pdl_wait_then_release();
  compute_activation_vec<P>(chunks, x, norm_weight, eps, red, act, [](int64_t c) { return c; });
  __syncthreads();
  if (act_out != nullptr && blockIdx.x == 0)
    for (int64_t c = tid; c < chunks; c += blockDim.x) act_out[c] = act[c];

  float acc = 0;
  while (row < n) {
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      const int64_t c = c0 + lane + u * kWarp;
      if (c < chunks) {
        float wf[8], af[8];
        unpack8(raw[u], wf);
        unpack8(act[c], af);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc = fmaf(wf[e], af[e], acc);
      }
    }
    // The next batch is requested before this row's reduction and store.
    int64_t next_row = row, next_c0 = c0 + kBatch;
    const bool row_done = next_c0 >= chunks;
    if (row_done) next_row += stride, next_c0 = 0;
    if (next_row < n) load(next_row, next_c0);
    if (row_done) {
      float sum = warp_sum(acc);
      if (lane == 0) {
        if (bias != nullptr) sum += bf2f(bias[row]);
        if (residual != nullptr) sum += bf2f(residual[row]);
        y[row] = f2bf(sum);
      }
      acc = 0;
    }
    row = next_row;
    c0 = next_c0;
  }
}

// ---- NF4 GEMV --------------------------------------------------------------------------------------------
// One warp per pair of rows (kNf4Rows), 8 warps per block. Lane l takes the rows' 16-byte code groups (32
// elements each) l, l + 32, ..., kNf4Unroll groups of each row in flight at a time; the activation's 32
// elements of a group are read from shared memory once and used for both rows, and each element is looked
// up in a 16-entry code table in shared memory (16 banks, so a warp's lookups never conflict). The first
// batch of codes is requested before the prologue: the weights do not depend on it, so their latency
// overlaps the norm's reduction instead of following it.
//
// The activation lives in shared memory as bf16 in 16-byte units, unit q (0..3) of group c stored at unit
// 4c + (q ^ ((c >> 1) & 3)): a lane reads its group's four units, and with this swizzle the eight lanes of a
// quarter-warp read eight different bank quads (unswizzled, groups 64 bytes apart would put lanes 0, 2, 4, 6
// on the same banks).
constexpr int kNf4Rows = 2;
constexpr int kNf4Unroll = 4;

__constant__ float kNf4CodesDevice[16] = {FORJA_NF4_CODE_VALUES};

// Where 16-byte unit w (elements 8w .. 8w + 7: unit w % 4 of group w / 4) is stored, and element i.
__device__ __forceinline__ int64_t nf4_act_unit(int64_t w) {
  const int64_t c = w >> 2, q = w & 3;
  return (c << 2) + (q ^ ((c >> 1) & 3));
}
__device__ __forceinline__ int64_t nf4_act_slot(int64_t i) {
  return nf4_act_unit(i >> 3) * 8 + (i & 7);
}

// VEC: the prologue reads x and the norm weight in 16-byte words and writes act_out so (all 16-byte aligned).
template <ForjaDecodePrologue P, bool VEC>
__global__ void __launch_bounds__(kGemvWarps* kWarp)
    gemv_nf4_kernel(int64_t n, int64_t k, const uint4* __restrict__ codes, const float* __restrict__ absmax,
                    int block_shift, const __nv_bfloat16* __restrict__ x,
                    const __nv_bfloat16* __restrict__ norm_weight, float eps,
                    const __nv_bfloat16* __restrict__ bias, const __nv_bfloat16* residual, __nv_bfloat16* y,
                    __nv_bfloat16* __restrict__ act_out) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[kGemvWarps];
  __shared__ float table[16];
  const uint4* act4 = reinterpret_cast<const uint4*>(smem);
  __nv_bfloat16* act = reinterpret_cast<__nv_bfloat16*>(smem);
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  if (tid < 16) table[tid] = kNf4CodesDevice[tid];

  const int64_t groups = k / 32;                         // 16-byte code groups per row
  const int64_t blocks_per_row = groups >> block_shift;  // absmax values per row
  const int64_t tiles = (n + kNf4Rows - 1) / kNf4Rows;
  int64_t tile = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;

  uint4 wq[kNf4Unroll][kNf4Rows];
  float am[kNf4Unroll][kNf4Rows];
  auto load = [&](int64_t t, int64_t g0) {
#pragma unroll
    for (int u = 0; u < kNf4Unroll; ++u) {
      const int64_t g = g0 + lane + u * kWarp;
#pragma unroll
      for (int r = 0; r < kNf4Rows; ++r) {
        const int64_t row = t * kNf4Rows + r;
        if (row < n && g < groups) {
          wq[u][r] = __ldcs(codes + row * groups + g);  // streamed: read once
          am[u][r] = __ldg(absmax + row * blocks_per_row + (g >> block_shift));
        } else {
          wq[u][r] = make_uint4(0, 0, 0, 0);
          am[u][r] = 0.0f;
        }
      }
    }
  };
  bool prefetched = false;
  if (tile < tiles) {
    load(tile, 0);
    prefetched = true;
  }

  pdl_wait_then_release();
  if constexpr (VEC) {
    compute_activation_vec<P>(k / 8, reinterpret_cast<const uint4*>(x),
                              reinterpret_cast<const uint4*>(norm_weight), eps, red,
                              reinterpret_cast<uint4*>(smem), [](int64_t w) { return nf4_act_unit(w); });
  } else {
    compute_activation<P>(k, x, norm_weight, eps, red, [&](int64_t i, __nv_bfloat16 v) {
      act[nf4_act_slot(i)] = v;
      if (act_out != nullptr && blockIdx.x == 0) act_out[i] = v;
    });
  }
  __syncthreads();
  if (VEC && act_out != nullptr && blockIdx.x == 0)
    for (int64_t c = tid; c < k / 8; c += blockDim.x)
      reinterpret_cast<uint4*>(act_out)[c] = act4[nf4_act_unit(c)];

  for (; tile < tiles; tile += static_cast<int64_t>(gridDim.x) * kGemvWarps) {
    float acc[kNf4Rows] = {};
    for (int64_t g0 = 0; g0 < groups; g0 += kNf4Unroll * kWarp) {
      if (!prefetched) load(tile, g0);
      prefetched = false;
#pragma unroll
      for (int u = 0; u < kNf4Unroll; ++u) {
        const int64_t g = g0 + lane + u * kWarp;
        if (g >= groups) break;
        // The group's 32 activations: unit q holds elements 8q .. 8q + 7, two per 32-bit word (low half
        // first).
        const int swz = static_cast<int>((g >> 1) & 3);
        float xf[32];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const uint4 v = act4[4 * g + (q ^ swz)];
          const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            xf[8 * q + 2 * b] = __uint_as_float(words[b] << 16);
            xf[8 * q + 2 * b + 1] = __uint_as_float(words[b] & 0xffff0000u);
          }
        }
#pragma unroll
        for (int r = 0; r < kNf4Rows; ++r) {
          // Byte j of the group holds elements 2j (high nibble) and 2j + 1 (low nibble).
          const uint32_t cw[4] = {wq[u][r].x, wq[u][r].y, wq[u][r].z, wq[u][r].w};
          float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            const uint32_t byte = (cw[j / 4] >> (8 * (j % 4))) & 0xffu;
            s0 = fmaf(table[byte >> 4], xf[2 * j], s0);
            s1 = fmaf(table[byte & 0x0fu], xf[2 * j + 1], s1);
          }
          acc[r] = fmaf(s0 + s1, am[u][r], acc[r]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kNf4Rows; ++r) {
      const float sum = warp_sum(acc[r]);
      const int64_t row = tile * kNf4Rows + r;
      if (lane == 0 && row < n) {
        float v = sum;
        if (bias != nullptr) v += bf2f(bias[row]);
        if (residual != nullptr) v += bf2f(residual[row]);
        y[row] = f2bf(v);
      }
    }
  }
}

// Every kernel here is launched with programmatic stream serialization (each starts while the one before it
// finishes; each waits in pdl_wait_then_release before its first dependent read) on cards that have it
// (compute capability 9.0 on). FORJA_DECODE_PDL=0 turns it off, for an A/B in one build.
bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FORJA_DECODE_PDL");
    if (v != nullptr && v[0] == '0') return false;
    int dev = 0, major = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           major >= 9;
  }();
  return on;
}

template <typename... Params, typename... Args>
int launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
           Args&&... args) {
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  return static_cast<int>(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

// FORJA_DECODE_BASELINE=1 runs the earlier GEMV and attention kernels, kept so that one build can time them
// against the current ones in the same run (bench/gpu/decode.sh, DECODE_AB=1).
bool baseline_kernels() {
  static const bool on = [] {
    const char* v = std::getenv("FORJA_DECODE_BASELINE");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

int sm_count() {
  static int count[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 132;
  if (count[dev] == 0) {
    int c = 0;
    if (cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || c <= 0) c = 132;
    count[dev] = c;
  }
  return count[dev];
}

template <ForjaDecodePrologue P, bool VEC>
int launch_gemv(const ForjaDecodeGemv* p, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>((p->k + 7) / 8 * 8) * sizeof(__nv_bfloat16);
  auto kernel = gemv_kernel<P, VEC>;
  if (smem > 40 * 1024) {  // 48 KB less the static shared memory
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  const int64_t want = (p->n + kGemvWarps - 1) / kGemvWarps;
  const int64_t cap = static_cast<int64_t>(sm_count()) * 4;
  const unsigned blocks = static_cast<unsigned>(want < cap ? want : cap);
  return launch(kernel, blocks, kGemvWarps * kWarp, smem, stream, p->n, p->k,
                static_cast<const __nv_bfloat16*>(p->w), static_cast<const __nv_bfloat16*>(p->x),
                static_cast<const __nv_bfloat16*>(p->norm_weight), p->eps,
                static_cast<const __nv_bfloat16*>(p->bias), static_cast<const __nv_bfloat16*>(p->residual),
                static_cast<__nv_bfloat16*>(p->y), static_cast<__nv_bfloat16*>(p->act_out));
}

bool aligned16(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

template <ForjaDecodePrologue P>
int launch_gemv_vec(const ForjaDecodeGemv* p, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(p->k) * sizeof(__nv_bfloat16);
  auto kernel = gemv_vec_kernel<P>;
  if (smem > 40 * 1024) {  // 48 KB less the static shared memory
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  const int64_t want = (p->n + kGemvWarps - 1) / kGemvWarps;
  const int64_t cap = static_cast<int64_t>(sm_count()) * 4;
  const unsigned blocks = static_cast<unsigned>(want < cap ? want : cap);
  return launch(kernel, blocks, kGemvWarps * kWarp, smem, stream, p->n, p->k, static_cast<const uint4*>(p->w),
                static_cast<const uint4*>(p->x), static_cast<const uint4*>(p->norm_weight), p->eps,
                static_cast<const __nv_bfloat16*>(p->bias), static_cast<const __nv_bfloat16*>(p->residual),
                static_cast<__nv_bfloat16*>(p->y), static_cast<uint4*>(p->act_out));
}

template <ForjaDecodePrologue P>
int dispatch_vec(const ForjaDecodeGemv* p, cudaStream_t stream) {
  const bool vec = p->k % 8 == 0 && aligned16(p->w);
  if (!vec) return launch_gemv<P, false>(p, stream);
  // The 16-byte kernel also reads x, the norm weight and act_out in 16-byte words.
  const bool vec_io = aligned16(p->x) && (!kNormed<P> || aligned16(p->norm_weight)) &&
                      (p->act_out == nullptr || aligned16(p->act_out));
  return vec_io && !baseline_kernels() ? launch_gemv_vec<P>(p, stream) : launch_gemv<P, true>(p, stream);
}

template <ForjaDecodePrologue P>
int launch_gemv_nf4(const ForjaDecodeGemvNf4* p, cudaStream_t stream) {
  // The 16-byte prologue reads x, the norm weight and act_out in 16-byte words.
  const bool vec_io = aligned16(p->x) && (!kNormed<P> || aligned16(p->norm_weight)) &&
                      (p->act_out == nullptr || aligned16(p->act_out));
  const size_t smem = static_cast<size_t>(p->k) * sizeof(__nv_bfloat16);
  auto kernel = vec_io && !baseline_kernels() ? gemv_nf4_kernel<P, true> : gemv_nf4_kernel<P, false>;
  if (smem > 40 * 1024) {  // 48 KB less the static shared memory
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  int shift = 0;
  while ((int64_t{32} << shift) < p->block_size) ++shift;  // block_size = 32 · 2^shift (checked)
  const int64_t tiles = (p->n + kNf4Rows - 1) / kNf4Rows;
  const int64_t want = (tiles + kGemvWarps - 1) / kGemvWarps;
  // Two blocks of 256 threads fit an SM at the kernel's ~128 registers a thread: one wave, grid-strided.
  const int64_t cap = static_cast<int64_t>(sm_count()) * 2;
  const unsigned blocks = static_cast<unsigned>(want < cap ? want : cap);
  return launch(kernel, blocks, kGemvWarps * kWarp, smem, stream, p->n, p->k,
                reinterpret_cast<const uint4*>(p->codes), p->absmax, shift,
                static_cast<const __nv_bfloat16*>(p->x), static_cast<const __nv_bfloat16*>(p->norm_weight),
                p->eps, static_cast<const __nv_bfloat16*>(p->bias),
                static_cast<const __nv_bfloat16*>(p->residual), static_cast<__nv_bfloat16*>(p->y),
                static_cast<__nv_bfloat16*>(p->act_out));
}

__global__ void rope_kv_kernel(int64_t heads, int64_t kv_heads, int64_t d, int64_t capacity,
                               __nv_bfloat16* qkv, __nv_bfloat16* cache,
                               const __nv_bfloat16* __restrict__ cos, const __nv_bfloat16* __restrict__ sin,
                               const int64_t* __restrict__ position) {
  pdl_wait_then_release();
  const int64_t h = blockIdx.x, half = d / 2;
  const int64_t pos = *position;
  if (pos < 0 || pos >= capacity) return;  // the caller's bug; nothing is written out of bounds
  __nv_bfloat16* row = qkv + h * d;
  const int64_t kv_plane = kv_heads * capacity * d;
  if (h < heads + kv_heads) {
    __nv_bfloat16* dst = h >= heads ? cache + ((h - heads) * capacity + pos) * d : nullptr;
    const __nv_bfloat16* c = cos + pos * d;
    const __nv_bfloat16* s = sin + pos * d;
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float x1 = bf2f(row[i]), x2 = bf2f(row[i + half]);
      const __nv_bfloat16 o1 = f2bf(round_bf(x1 * bf2f(c[i])) + x2 * bf2f(s[i]));
      const __nv_bfloat16 o2 = f2bf(round_bf(x2 * bf2f(c[i + half])) + x1 * bf2f(s[i + half]));
      row[i] = o1;
      row[i + half] = o2;
      if (dst != nullptr) {
        dst[i] = o1;
        dst[i + half] = o2;
      }
    }
  } else {
    __nv_bfloat16* dst = cache + kv_plane + ((h - heads - kv_heads) * capacity + pos) * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] = row[i];
  }
}

// Gemma 2's bound on the attention scores (cap 0: none; the branch is the same for the whole grid).
__device__ __forceinline__ float soft_capped(float s, float cap) {
  return cap > 0 ? cap * tanhf(s / cap) : s;
}

// D: head_dim; each lane holds D / 32 consecutive elements of a key / value row. kMaxRep: the most query
// heads per kv head this instantiation serves (registers per lane grow with it).
template <int D, int kMaxRep>
__global__ void __launch_bounds__(kAttnWarps* kWarp)
    attention_split_kernel(int64_t heads, int64_t kv_heads, int64_t capacity, int64_t chunk, int64_t window,
                           float scale, float softcap, const __nv_bfloat16* __restrict__ q,
                           const __nv_bfloat16* __restrict__ cache, const int64_t* __restrict__ position,
                           float* __restrict__ scratch) {
  constexpr int E = D / kWarp;
  const int64_t g = blockIdx.y, split = blockIdx.x, splits = gridDim.x;
  const int rep = static_cast<int>(heads / kv_heads);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  pdl_wait_then_release();
  const int64_t pos = *position;
  const int64_t lo = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
  const int64_t begin = split * chunk > lo ? split * chunk : lo;
  const int64_t end = (split + 1) * chunk - 1 < pos ? (split + 1) * chunk - 1 : pos;  // inclusive

  __shared__ float red_m[kAttnWarps][kMaxRep], red_l[kAttnWarps][kMaxRep];
  __shared__ float red_acc[kAttnWarps][kMaxRep][D];

  // This lane's slice of each query head, pre-scaled.
  float qr[kMaxRep][E];
  float m[kMaxRep], l[kMaxRep], acc[kMaxRep][E];
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r) {
    m[r] = -INFINITY;
    l[r] = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      acc[r][e] = 0;
      qr[r][e] = r < rep ? bf2f(q[(g * rep + r) * D + lane * E + e]) * scale : 0.0f;
    }
  }
  const __nv_bfloat16* kbase = cache + g * capacity * D;
  const __nv_bfloat16* vbase = cache + kv_heads * capacity * D + g * capacity * D;
  for (int64_t j = begin + warp; j <= end; j += kAttnWarps) {
    float kf[E], vf[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      kf[e] = bf2f(kbase[j * D + lane * E + e]);
      vf[e] = bf2f(vbase[j * D + lane * E + e]);
    }
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r >= rep) break;
      float dot = 0;
#pragma unroll
      for (int e = 0; e < E; ++e) dot = fmaf(qr[r][e], kf[e], dot);
      const float s = soft_capped(warp_sum(dot), softcap);
      const float mn = fmaxf(m[r], s);
      const float c = expf(m[r] - mn);  // 0 when m was -inf
      const float p = expf(s - mn);
      l[r] = l[r] * c + p;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[r][e] = fmaf(acc[r][e], c, p * vf[e]);
      m[r] = mn;
    }
  }
  // Merge the warps.
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r) {
    if (r >= rep) break;
    if (lane == 0) red_m[warp][r] = m[r], red_l[warp][r] = l[r];
#pragma unroll
    for (int e = 0; e < E; ++e) red_acc[warp][r][lane * E + e] = acc[r][e];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < rep * D; idx += blockDim.x) {
    const int r = idx / D, e = idx % D;
    float mm = -INFINITY;
    for (int w = 0; w < kAttnWarps; ++w) mm = fmaxf(mm, red_m[w][r]);
    float ll = 0, aa = 0;
    if (mm != -INFINITY) {
      for (int w = 0; w < kAttnWarps; ++w) {
        if (red_m[w][r] == -INFINITY) continue;
        const float f = expf(red_m[w][r] - mm);
        ll += red_l[w][r] * f;
        aa += red_acc[w][r][e] * f;
      }
    }
    float* out = scratch + ((g * rep + r) * splits + split) * (D + 2);
    if (e == 0) out[0] = mm, out[1] = ll;
    out[2 + e] = aa;
  }
}

// A lane's E = D / 32 consecutive bf16 of a key or value row, as one 4-, 8- or 16-byte load.
template <int E>
struct LaneSlice;
template <>
struct LaneSlice<2> {
  using type = uint32_t;
};
template <>
struct LaneSlice<4> {
  using type = uint2;
};
template <>
struct LaneSlice<8> {
  using type = uint4;
};

template <int E>
__device__ __forceinline__ void unpack_slice(const typename LaneSlice<E>::type& raw, float (&out)[E]) {
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < E / 2; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// Keys j0, j0 + 4, ..., j0 + 4(G - 1) of a warp: its lane's slices of those key and value rows (rows are
// D / E = 32 slices apart). Keys past `end` read as zeros; their weight is 0.
template <int G, typename Slice>
__device__ __forceinline__ void load_key_group(const Slice* __restrict__ kbase,
                                               const Slice* __restrict__ vbase, int64_t j0, int64_t end,
                                               Slice (&ks)[G], Slice (&vs)[G]) {
#pragma unroll
  for (int t = 0; t < G; ++t) {
    const int64_t j = j0 + t * kAttnWarps;
    ks[t] = j <= end ? kbase[j * kWarp] : Slice{};
    vs[t] = j <= end ? vbase[j * kWarp] : Slice{};
  }
}

// The same split, with each warp taking G of its keys at a time (keys j, j + 4, ..., j + 4(G - 1)): the
// G · kMaxRep dot products are summed across the warp together, so their shuffles overlap instead of running
// one reduction after another, and the online softmax rescales once per G keys. Query heads beyond `rep`
// hold zeros and are carried along unreduced by the merge, which keeps every loop free of branches.
// Each lane reads its slice of a row in one load (the cache must be 16-byte aligned). With kPrefetch, the
// next G keys are requested before this group's arithmetic, so their latency overlaps it: at a long context
// the bytes are few and the waits for them are most of the kernel's time.
template <int D, int kMaxRep, int G, bool kPrefetch>
__global__ void __launch_bounds__(kAttnWarps* kWarp)
    attention_split_grouped_kernel(int64_t heads, int64_t kv_heads, int64_t capacity, int64_t chunk,
                                   int64_t window, float scale, float softcap,
                                   const __nv_bfloat16* __restrict__ q,
                                   const __nv_bfloat16* __restrict__ cache,
                                   const int64_t* __restrict__ position, float* __restrict__ scratch) {
  constexpr int E = D / kWarp;
  const int64_t g = blockIdx.y, split = blockIdx.x, splits = gridDim.x;
  const int rep = static_cast<int>(heads / kv_heads);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  pdl_wait_then_release();
  const int64_t pos = *position;
  const int64_t lo = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
  const int64_t begin = split * chunk > lo ? split * chunk : lo;
  const int64_t end = (split + 1) * chunk - 1 < pos ? (split + 1) * chunk - 1 : pos;  // inclusive

  __shared__ float red_m[kAttnWarps][kMaxRep], red_l[kAttnWarps][kMaxRep];
  __shared__ float red_acc[kAttnWarps][kMaxRep][D];

  float qr[kMaxRep][E];
  float m[kMaxRep], l[kMaxRep], acc[kMaxRep][E];
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r) {
    m[r] = -INFINITY;
    l[r] = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      acc[r][e] = 0;
      qr[r][e] = r < rep ? bf2f(q[(g * rep + r) * D + lane * E + e]) * scale : 0.0f;
    }
  }
  using Slice = typename LaneSlice<E>::type;
  const Slice* kbase = reinterpret_cast<const Slice*>(cache + g * capacity * D) + lane;
  const Slice* vbase =
      reinterpret_cast<const Slice*>(cache + kv_heads * capacity * D + g * capacity * D) + lane;
  Slice kraw[G], vraw[G];
  load_key_group<G>(kbase, vbase, begin + warp, end, kraw, vraw);
  for (int64_t j0 = begin + warp; j0 <= end; j0 += kAttnWarps * G) {
    const int64_t next = j0 + kAttnWarps * G;
    Slice knext[G], vnext[G];
    if constexpr (kPrefetch) load_key_group<G>(kbase, vbase, next, end, knext, vnext);
    float kf[G][E], vf[G][E];
    bool valid[G];
#pragma unroll
    for (int t = 0; t < G; ++t) {
      valid[t] = j0 + t * kAttnWarps <= end;
      unpack_slice<E>(kraw[t], kf[t]);
      unpack_slice<E>(vraw[t], vf[t]);
    }
    float s[kMaxRep][G];
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r)
#pragma unroll
      for (int t = 0; t < G; ++t) {
        float dot = 0;
#pragma unroll
        for (int e = 0; e < E; ++e) dot = fmaf(qr[r][e], kf[t][e], dot);
        s[r][t] = dot;
      }
#pragma unroll
    for (int o = kWarp / 2; o > 0; o /= 2)
#pragma unroll
      for (int r = 0; r < kMaxRep; ++r)
#pragma unroll
        for (int t = 0; t < G; ++t) s[r][t] += __shfl_xor_sync(0xffffffffu, s[r][t], o);
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
#pragma unroll
      for (int t = 0; t < G; ++t) s[r][t] = soft_capped(s[r][t], softcap);
      float mn = m[r];
#pragma unroll
      for (int t = 0; t < G; ++t)
        if (valid[t]) mn = fmaxf(mn, s[r][t]);
      const float c = expf(m[r] - mn);  // 0 when m was -inf (key j0 is valid, so mn is finite)
      float lr = l[r] * c;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[r][e] *= c;
#pragma unroll
      for (int t = 0; t < G; ++t) {
        const float p = valid[t] ? expf(s[r][t] - mn) : 0.0f;
        lr += p;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[r][e] = fmaf(p, vf[t][e], acc[r][e]);
      }
      l[r] = lr;
      m[r] = mn;
    }
    if constexpr (!kPrefetch) load_key_group<G>(kbase, vbase, next, end, knext, vnext);
#pragma unroll
    for (int t = 0; t < G; ++t) kraw[t] = knext[t], vraw[t] = vnext[t];
  }
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r) {
    if (lane == 0) red_m[warp][r] = m[r], red_l[warp][r] = l[r];
#pragma unroll
    for (int e = 0; e < E; ++e) red_acc[warp][r][lane * E + e] = acc[r][e];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < rep * D; idx += blockDim.x) {
    const int r = idx / D, e = idx % D;
    float mm = -INFINITY;
    for (int w = 0; w < kAttnWarps; ++w) mm = fmaxf(mm, red_m[w][r]);
    float ll = 0, aa = 0;
    if (mm != -INFINITY) {
      for (int w = 0; w < kAttnWarps; ++w) {
        if (red_m[w][r] == -INFINITY) continue;
        const float f = expf(red_m[w][r] - mm);
        ll += red_l[w][r] * f;
        aa += red_acc[w][r][e] * f;
      }
    }
    float* out = scratch + ((g * rep + r) * splits + split) * (D + 2);
    if (e == 0) out[0] = mm, out[1] = ll;
    out[2 + e] = aa;
  }
}

// One block of D threads per query head. kStaged (splits <= D): thread s reads split s's max and sum, the
// block reduces them once and keeps each split's weight in shared memory, so every thread's sum over the
// splits is a run of independent loads up to the last split that saw a key. Otherwise each thread walks the
// splits twice, one dependent load after another.
template <int D, bool kStaged>
__global__ void attention_merge_kernel(int64_t splits, const float* __restrict__ scratch,
                                       __nv_bfloat16* out) {
  pdl_wait_then_release();
  const int64_t h = blockIdx.x;
  const int e = threadIdx.x;
  const float* part = scratch + h * splits * (D + 2);
  if constexpr (kStaged) {
    constexpr int W = D / kWarp;
    __shared__ float weight[D], red_max[W], red_sum[W];
    __shared__ int red_last[W];
    const int warp = e / kWarp, lane = e % kWarp;
    const float ms = e < splits ? part[e * (D + 2)] : -INFINITY;
    const float ls = e < splits ? part[e * (D + 2) + 1] : 0.0f;
    float mx = ms;
    int last = ms == -INFINITY ? 0 : e + 1;
#pragma unroll
    for (int o = kWarp / 2; o > 0; o /= 2) {
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
    }
    if (lane == 0) red_max[warp] = mx, red_last[warp] = last;
    __syncthreads();
    float mm = -INFINITY;
    int used = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) mm = fmaxf(mm, red_max[w]), used = max(used, red_last[w]);
    const float f = ms == -INFINITY ? 0.0f : expf(ms - mm);
    weight[e] = f;
    const float lsum = warp_sum(ls * f);
    if (lane == 0) red_sum[warp] = lsum;
    __syncthreads();
    float ll = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) ll += red_sum[w];
    float aa = 0;
#pragma unroll 8
    for (int s = 0; s < used; ++s) aa = fmaf(part[s * (D + 2) + 2 + e], weight[s], aa);
    out[h * D + e] = f2bf(ll > 0 ? aa / ll : 0.0f);
    return;
  }
  float mm = -INFINITY;
  for (int64_t s = 0; s < splits; ++s) mm = fmaxf(mm, part[s * (D + 2)]);
  float ll = 0, aa = 0;
  if (mm != -INFINITY) {
    for (int64_t s = 0; s < splits; ++s) {
      const float ms = part[s * (D + 2)];
      if (ms == -INFINITY) continue;
      const float f = expf(ms - mm);
      ll += part[s * (D + 2) + 1] * f;
      aa += part[s * (D + 2) + 2 + e] * f;
    }
  }
  out[h * D + e] = f2bf(ll > 0 ? aa / ll : 0.0f);
}

// FORJA_DECODE_ATTN=serial runs the grouped attention without its prefetch and the merge without its staged
// weights: the A/B of those two changes in one build (bench/gpu/decode.sh, DECODE_ATTN_AB=1).
bool serial_attention() {
  static const bool on = [] {
    const char* v = std::getenv("FORJA_DECODE_ATTN");
    return v != nullptr && std::string_view(v) == "serial";
  }();
  return on;
}

template <int D, int kMaxRep>
int launch_attention(const ForjaDecodeAttention* p, cudaStream_t stream) {
  const int64_t splits = (p->max_keys + p->chunk - 1) / p->chunk;
  dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(p->kv_heads));
  // Up to 32 dot products reduced together per warp (G keys times kMaxRep heads).
  constexpr int G = kMaxRep >= 16 ? 2 : 4;
  const bool serial = serial_attention();
  // The prefetched group's registers fit beside the query heads' sums only up to 64 floats of them per lane;
  // the last arm names kRoom, not true, so that the prefetching kernel is not even built where it cannot fit.
  constexpr bool kRoom = kMaxRep * D / kWarp < 64;
  auto kernel = baseline_kernels() || !aligned16(p->cache) ? attention_split_kernel<D, kMaxRep>
                : serial || !kRoom ? attention_split_grouped_kernel<D, kMaxRep, G, false>
                                   : attention_split_grouped_kernel<D, kMaxRep, G, kRoom>;
  const int rc = launch(kernel, grid, kAttnWarps * kWarp, 0, stream, p->heads, p->kv_heads, p->capacity,
                        p->chunk, p->window, p->scale, p->softcap, static_cast<const __nv_bfloat16*>(p->q),
                        static_cast<const __nv_bfloat16*>(p->cache), p->position, p->scratch);
  if (rc != 0) return rc;
  auto merge = baseline_kernels() || serial || splits > D ? attention_merge_kernel<D, false>
                                                          : attention_merge_kernel<D, true>;
  return launch(merge, static_cast<unsigned>(p->heads), D, 0, stream, splits, p->scratch,
                static_cast<__nv_bfloat16*>(p->out));
}

// ---- Row RMSNorm ------------------------------------------------------------------------------------------
// One block per row: the sum of squares reduced over the block, then each thread normalizes the elements it
// read (so `out` may alias x or the residual).
template <ForjaDecodePrologue P>
__global__ void __launch_bounds__(kGemvWarps* kWarp)
    rms_norm_rows_kernel(int64_t d, const __nv_bfloat16* x, const __nv_bfloat16* __restrict__ weight,
                         float eps, const __nv_bfloat16* residual, __nv_bfloat16* out) {
  __shared__ float red[kGemvWarps];
  pdl_wait_then_release();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * d;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float v = bf2f(x[base + i]);
    ss += v * v;
  }
  const float r = rsqrtf(block_sum(ss, red) / static_cast<float>(d) + eps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float y = round_bf(normed<P>(bf2f(x[base + i]), r, bf2f(weight[i])));
    if (residual != nullptr) y += bf2f(residual[base + i]);
    out[base + i] = f2bf(y);
  }
}

}  // namespace

extern "C" int forja_decode_rms_norm_bf16(const ForjaDecodeRmsNorm* p, cudaStream_t stream) {
  if (forja_decode_rms_norm_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  auto kernel = p->unit_offset ? rms_norm_rows_kernel<FORJA_DECODE_RMSNORM_UNIT_OFFSET>
                               : rms_norm_rows_kernel<FORJA_DECODE_RMSNORM>;
  return launch(kernel, static_cast<unsigned>(p->rows), kGemvWarps * kWarp, 0, stream, p->d,
                static_cast<const __nv_bfloat16*>(p->x), static_cast<const __nv_bfloat16*>(p->weight), p->eps,
                static_cast<const __nv_bfloat16*>(p->residual), static_cast<__nv_bfloat16*>(p->out));
}

extern "C" int forja_decode_gemv_bf16(const ForjaDecodeGemv* p, cudaStream_t stream) {
  if (forja_decode_gemv_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  switch (p->prologue) {
    case FORJA_DECODE_RMSNORM:
      return dispatch_vec<FORJA_DECODE_RMSNORM>(p, stream);
    case FORJA_DECODE_SWIGLU:
      return dispatch_vec<FORJA_DECODE_SWIGLU>(p, stream);
    case FORJA_DECODE_RMSNORM_UNIT_OFFSET:
      return dispatch_vec<FORJA_DECODE_RMSNORM_UNIT_OFFSET>(p, stream);
    case FORJA_DECODE_GEGLU:
      return dispatch_vec<FORJA_DECODE_GEGLU>(p, stream);
    default:
      return dispatch_vec<FORJA_DECODE_PLAIN>(p, stream);
  }
}

extern "C" int forja_decode_gemv_nf4(const ForjaDecodeGemvNf4* p, cudaStream_t stream) {
  if (forja_decode_gemv_nf4_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  switch (p->prologue) {
    case FORJA_DECODE_RMSNORM:
      return launch_gemv_nf4<FORJA_DECODE_RMSNORM>(p, stream);
    case FORJA_DECODE_SWIGLU:
      return launch_gemv_nf4<FORJA_DECODE_SWIGLU>(p, stream);
    case FORJA_DECODE_RMSNORM_UNIT_OFFSET:
      return launch_gemv_nf4<FORJA_DECODE_RMSNORM_UNIT_OFFSET>(p, stream);
    case FORJA_DECODE_GEGLU:
      return launch_gemv_nf4<FORJA_DECODE_GEGLU>(p, stream);
    default:
      return launch_gemv_nf4<FORJA_DECODE_PLAIN>(p, stream);
  }
}

extern "C" int forja_decode_rope_kv_bf16(const ForjaDecodeRopeKv* p, cudaStream_t stream) {
  if (forja_decode_rope_kv_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t half = p->head_dim / 2;
  const unsigned threads = static_cast<unsigned>(half < 128 ? (half + 31) / 32 * 32 : 128);
  return launch(rope_kv_kernel, static_cast<unsigned>(p->heads + 2 * p->kv_heads), threads, 0, stream,
                p->heads, p->kv_heads, p->head_dim, p->capacity, static_cast<__nv_bfloat16*>(p->qkv),
                static_cast<__nv_bfloat16*>(p->cache), static_cast<const __nv_bfloat16*>(p->cos),
                static_cast<const __nv_bfloat16*>(p->sin), p->position);
}

extern "C" int forja_decode_attention_bf16(const ForjaDecodeAttention* p, cudaStream_t stream) {
  if (forja_decode_attention_check(p) != nullptr || p->scratch == nullptr)
    return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t rep = p->heads / p->kv_heads;
  if (p->head_dim == 256) {  // Gemma (the check keeps rep <= 8: the block's sums fit shared memory)
    if (rep <= 4) return launch_attention<256, 4>(p, stream);
    return launch_attention<256, 8>(p, stream);
  }
  if (p->head_dim == 64) {
    if (rep <= 4) return launch_attention<64, 4>(p, stream);
    if (rep <= 8) return launch_attention<64, 8>(p, stream);
    return launch_attention<64, 16>(p, stream);
  }
  if (rep <= 4) return launch_attention<128, 4>(p, stream);
  if (rep <= 8) return launch_attention<128, 8>(p, stream);
  return launch_attention<128, 16>(p, stream);
}
