// The LibTorch version differences the inference engine cares about, in one place (core/model/torch_compat.h
// is the model's; this header adds what only decoding needs).
#pragma once

#include <ATen/ATen.h>

#include "torch_compat.h"

// CUDA graphs need LibTorch 2.x built with CUDA (FORJA_TORCH_CUDA comes from cmake/ForjaTorch.cmake).
#if FORJA_TORCH_CUDA && FORJA_TORCH_AT_LEAST(2, 1)
#define FORJA_INFER_CUDA_GRAPHS 1
#else
#define FORJA_INFER_CUDA_GRAPHS 0
#endif

namespace forja::infer::compat {

inline constexpr bool kHasCudaGraphs = FORJA_INFER_CUDA_GRAPHS;

// Llama's RMSNorm. On CUDA with LibTorch >= 2.4 the fused at::rms_norm (one kernel instead of seven, which
// matters for batch-1 decode where every launch counts); elsewhere transformers' exact order: normalise in
// fp32, cast back to the activations' dtype, then scale.
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
#if FORJA_TORCH_AT_LEAST(2, 4)
  if (x.is_cuda()) return at::rms_norm(x, {x.size(-1)}, weight, eps);
#endif
  at::Tensor xf = x.to(at::kFloat);
  xf = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * xf.to(x.scalar_type());
}

}  // namespace forja::infer::compat
