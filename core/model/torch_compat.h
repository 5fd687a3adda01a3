// The one place where LibTorch 1.13 (Debian, CPU) and 2.x (the CUDA wheel) differ for Forja.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <optional>
#include <tuple>

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

// AdamW over all parameters in one fused kernel (torch.optim.AdamW(fused=True)): LibTorch 2.x on CUDA only.
// Returns false where it does not apply, and the caller runs the per-tensor formulation. `step` is the step number
// after incrementing (1 on the first update).
inline bool fused_adamw(std::vector<at::Tensor>& params, std::vector<at::Tensor>& exp_avg,
                        std::vector<at::Tensor>& exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                        double weight_decay, double eps) {
#if FORJA_TORCH_AT_LEAST(2, 1)
  if (params.empty() || !params.front().is_cuda()) return false;
  std::vector<at::Tensor> p, g, m, v;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].grad().defined()) continue;
    p.push_back(params[i]), g.push_back(params[i].grad()), m.push_back(exp_avg[i]), v.push_back(exp_avg_sq[i]);
  }
  if (p.empty()) return true;
  at::Tensor step_t = at::full({}, static_cast<double>(step), p.front().options().dtype(at::kFloat));
  std::vector<at::Tensor> steps(p.size(), step_t);
  at::_fused_adamw_(p, g, m, v, {}, steps, lr, beta1, beta2, weight_decay, eps, /*amsgrad=*/false,
                    /*maximize=*/false);
  return true;
#else
  (void)params, (void)exp_avg, (void)exp_avg_sq, (void)step, (void)lr, (void)beta1, (void)beta2, (void)weight_decay,
      (void)eps;
  return false;
#endif
}

// Causal attention with fewer k/v heads than q heads (GQA) without materialising the repeated k/v: SDPA's
// enable_gqa (LibTorch >= 2.5, CUDA). Returns an undefined tensor where it does not apply; the caller then repeats
// k/v itself.
inline at::Tensor causal_sdpa_gqa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
#if FORJA_TORCH_AT_LEAST(2, 5)
  if (q.is_cuda())
    return at::scaled_dot_product_attention(q, k, v, c10::nullopt, 0.0, /*is_causal=*/true, scale,
                                            /*enable_gqa=*/true);
#endif
  (void)q, (void)k, (void)v, (void)scale;
  return at::Tensor();
}

// RMSNorm on CUDA with LibTorch >= 2.8: one fused kernel (fp32 inside) that keeps only the input and 1/rms for
// backward, instead of the fp32 copies the op-by-op formulation saves. Undefined where it does not apply.
inline at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
#if FORJA_TORCH_AT_LEAST(2, 8)
  if (x.is_cuda()) return at::rms_norm(x, {x.size(-1)}, weight, eps);
#endif
  (void)x, (void)weight, (void)eps;
  return at::Tensor();
}

#if FORJA_TORCH_CUDA && FORJA_TORCH_AT_LEAST(2, 1)
namespace detail {
// Flash attention over packed variable-length sequences (LibTorch >= 2.1 on CUDA). Its argument list grew
// across releases (the window sizes, seqused_k, alibi slopes), so the call is checked against this build's
// declaration instead of being spelled by version; `T` is at::Tensor, dependent so that a declaration that
// does not match makes the requires-expression false rather than an error.
template <typename T>
at::Tensor flash_varlen(const T& q, const T& k, const T& v, const T& cu_seqlens, int64_t max_seqlen,
                        double scale, int64_t window_left) {
  const std::optional<int64_t> left = window_left >= 0 ? std::optional<int64_t>(window_left) : std::nullopt;
  const std::optional<int64_t> right = window_left >= 0 ? std::optional<int64_t>(0) : std::nullopt;
  if constexpr (requires {
                  at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, 0.0,
                                               true, false, scale, left, right, std::optional<T>(),
                                               std::optional<T>());
                }) {
    return std::get<0>(at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                                    0.0,
                                                    /*is_causal=*/true, /*return_debug_mask=*/false, scale,
                                                    left, right, std::optional<T>(), std::optional<T>()));
  } else if constexpr (requires {
                         at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                                      0.0, true, false, scale);
                       }) {
    if (window_left >= 0) return T();  // this LibTorch's kernel has no sliding window
    return std::get<0>(at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                                    0.0, true, false, scale));
  } else {
    (void)q, (void)k, (void)v, (void)cu_seqlens, (void)max_seqlen, (void)scale, (void)left, (void)right;
    return T();
  }
}
}  // namespace detail
#endif

// Whether varlen_attention can run on tensors of this device and dtype: CUDA, half precision, a head size the
// flash kernels take. Where not, the caller uses the dense segment mask (the CPU reference).
inline bool varlen_attention_applies(const at::Tensor& q, int64_t head_dim) {
#if FORJA_TORCH_CUDA && FORJA_TORCH_AT_LEAST(2, 1)
  return q.is_cuda() && (q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf) &&
         head_dim % 8 == 0 && head_dim <= 256;
#else
  (void)q, (void)head_dim;
  return false;
#endif
}

// Causal attention inside each of the packed sequences that `cu_seqlens` ([n + 1] int32, cumulative lengths
// over the flattened tokens) delimits, without a [T, T] mask: q [tokens, H, D], k and v [tokens, KV, D] with
// H a multiple of KV (GQA without repeating k/v). `window_left` >= 0 lets a query see only that many earlier
// keys of its sequence (Mistral's sliding window minus one). Differentiable. Undefined where this LibTorch
// cannot.
inline at::Tensor varlen_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const at::Tensor& cu_seqlens, int64_t max_seqlen, double scale,
                                   int64_t window_left) {
#if FORJA_TORCH_CUDA && FORJA_TORCH_AT_LEAST(2, 1)
  return detail::flash_varlen(q, k, v, cu_seqlens, max_seqlen, scale, window_left);
#else
  (void)q, (void)k, (void)v, (void)cu_seqlens, (void)max_seqlen, (void)scale, (void)window_left;
  return at::Tensor();
#endif
}

inline std::string torch_version_string() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace forja::compat
