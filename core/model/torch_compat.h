// The one place where LibTorch 1.13 (Debian, CPU) and 2.x (the CUDA wheel) differ for Forja.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#define FORJA_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace forja::compat {

inline constexpr bool kHasFusedSdpa = FORJA_TORCH_AT_LEAST(2, 0);

// Scaled dot-product attention over [B, H, T, D] tensors (same head count for q, k, v). `mask` is boolean
// (true = attend) or undefined for plain causal. 2.x uses the fused kernels; 1.13 the math formulation, which is
// also what transformers' eager attention computes.
inline at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                       bool is_causal, double scale) {
#if FORJA_TORCH_AT_LEAST(2, 1)
  if (q.is_cuda()) {
    return at::scaled_dot_product_attention(q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                            0.0, is_causal && !mask.defined(), scale);
  }
#endif
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  at::Tensor allowed = mask;
  if (!allowed.defined() && is_causal) {
    const int64_t tq = q.size(-2), tk = k.size(-2);
    allowed = at::ones({tq, tk}, q.options().dtype(at::kBool)).tril(tk - tq);
  }
  if (allowed.defined()) scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  // Softmax in fp32, as transformers' eager attention does, then back to the activations' dtype.
  at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs, v);
}

inline std::string torch_version_string() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace forja::compat
