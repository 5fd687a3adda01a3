// The softmax / cross-entropy half of the fused LM-head loss (forja_kernels/fused.h, ForjaCrossEntropy).
//
// One block per row of logits. The first pass reads the row once and keeps an online (max, sum of exp) per
// thread, merged across the block in a fixed order; thread 0 reads the target logit and writes the loss.
// The second pass reads the row again (mostly from L2: a 32k-vocab bf16 row is 64 KiB) and overwrites it with
// (softmax - onehot) * grad_scale. Rows whose length is a multiple of the vector (4 fp32 / 8 bf16) with a
// 16-byte aligned buffer take 16-byte accesses; anything else the element-wise path.
#include <math_constants.h>

#include "common.cuh"

namespace forja_fused {
namespace {

constexpr int kThreads = 512;

// A running softmax denominator: sum of exp(x - max) over the values seen.
struct MaxSum {
  float max, sum;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.max == -CUDART_INF_F) return b;  // also covers both empty: -inf - -inf would be NaN
  if (b.max == -CUDART_INF_F) return a;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

__device__ __forceinline__ MaxSum add(MaxSum a, float x) {
  if (x == -CUDART_INF_F) return a;  // a masked-out logit adds nothing (and -inf - -inf would be NaN)
  if (x > a.max) return {x, a.sum * expf(a.max - x) + 1.0f};  // exp(-inf) = 0 for the first value
  return {a.max, a.sum + expf(x - a.max)};
}

// The merged (max, sum) of the block, returned to every thread; the merge order is fixed by the block size.
__device__ MaxSum block_max_sum(MaxSum v, MaxSum* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum o{__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)};
    v = merge(v, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  MaxSum total{-CUDART_INF_F, 0.0f};
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total = merge(total, scratch[w]);
  return total;
}

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads) cross_entropy_kernel(ForjaCrossEntropy p) {
  __shared__ MaxSum scratch[kThreads / 32];
  const int64_t row = blockIdx.x;
  T* logits = static_cast<T*>(p.logits) + row * p.vocab;
  const int64_t nvec = p.vocab / VEC;

  MaxSum acc{-CUDART_INF_F, 0.0f};
  for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
    float x[VEC];
    load<T, VEC>(logits, v, x);
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc = add(acc, x[j]);
  }
  const MaxSum total = block_max_sum(acc, scratch);
  const float lse = total.max + logf(total.sum);

  const int64_t label = p.labels[row];
  const bool ignored = label == p.ignore_index;
  const bool in_range = label >= 0 && label < p.vocab;
  if (threadIdx.x == 0) {
    float loss = 0.0f;
    if (!ignored) loss = in_range ? lse - to_float(logits[label]) : CUDART_NAN_F;
    p.loss[row] = loss;
    if (p.lse) p.lse[row] = lse;
  }
  if (!p.write_grad) return;
  // Every thread has read logits[label] (thread 0 above) before any thread overwrites it.
  __syncthreads();
  const float invalid = ignored ? 0.0f : CUDART_NAN_F;
  for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
    float x[VEC];
    load<T, VEC>(logits, v, x);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const int64_t c = v * VEC + j;
      if (ignored || !in_range)
        x[j] = invalid;
      else
        x[j] = (expf(x[j] - lse) - (c == label ? 1.0f : 0.0f)) * p.grad_scale;
    }
    store<T, VEC>(logits, v, x);
  }
}

template <typename T, int VEC>
const char* launch(const ForjaCrossEntropy& p, cudaStream_t stream) {
  cross_entropy_kernel<T, VEC><<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(p);
  return launch_error();
}

template <typename T>
const char* dispatch(const ForjaCrossEntropy& p, cudaStream_t stream) {
  constexpr int V = kVec<T>;
  const bool vector = p.vocab % V == 0 && aligned16(p.logits);
  return vector ? launch<T, V>(p, stream) : launch<T, 1>(p, stream);
}

}  // namespace
}  // namespace forja_fused

extern "C" const char* forja_fused_cross_entropy(const ForjaCrossEntropy* p, cudaStream_t stream) {
  using namespace forja_fused;
  if (const char* err = forja_fused_cross_entropy_check(p)) return err;
  if (p->rows == 0) return nullptr;
  if (p->rows > 0x7fffffff) return "cross entropy: more than 2^31 - 1 rows";
  return p->dtype == FORJA_FUSED_F32 ? dispatch<float>(*p, stream) : dispatch<__nv_bfloat16>(*p, stream);
}
