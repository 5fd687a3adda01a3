#include "layers.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "fused_ops.h"
#include "torch_compat.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

namespace forja {

LinearImpl::LinearImpl(WeightProvider& w, const std::string& name, int64_t in, int64_t out, bool has_bias) {
  if (w.nf4() && quant::should_quantize_nf4(name + ".weight")) {
    nf4 = w.get_nf4(name + ".weight", {out, in});
    nf4.codes = register_buffer("weight_nf4_codes", nf4.codes);
    if (nf4.double_quant) {
      nf4.absmax_q = register_buffer("weight_nf4_absmax_q", nf4.absmax_q);
      nf4.absmax_scale = register_buffer("weight_nf4_absmax_scale", nf4.absmax_scale);
    } else {
      nf4.absmax = register_buffer("weight_nf4_absmax", nf4.absmax);
    }
  } else {
    weight = register_parameter("weight", w.get(name + ".weight", {out, in}), /*requires_grad=*/false);
  }
  if (has_bias) bias = register_parameter("bias", w.get(name + ".bias", {out}), false);
}

void LinearImpl::dequantize_weight(at::ScalarType dtype) {
  if (!nf4.defined()) return;
  weight = register_parameter("weight", dequantize_nf4_weight(nf4, dtype), /*requires_grad=*/false);
  nf4 = Nf4Weight{};
}

at::Tensor LinearImpl::forward(const at::Tensor& x) {
  at::Tensor y = nf4.defined() ? nf4_linear(x, nf4, bias) : at::linear(x, weight, bias);
  return lora && lora->enabled ? lora->add_to(y, x) : y;
}

Conv1DImpl::Conv1DImpl(WeightProvider& w, const std::string& name, int64_t in, int64_t out) {
  weight = register_parameter("weight", w.get(name + ".weight", {in, out}), false);
  bias = register_parameter("bias", w.get(name + ".bias", {out}), false);
}

at::Tensor Conv1DImpl::forward(const at::Tensor& x) {
  auto flat = x.reshape({-1, x.size(-1)});
  auto out_shape = x.sizes().vec();
  out_shape.back() = weight.size(1);
  at::Tensor y = at::addmm(bias, flat, weight).view(out_shape);
  return lora && lora->enabled ? lora->add_to(y, x) : y;
}

RMSNormImpl::RMSNormImpl(WeightProvider& w, const std::string& name, int64_t dim, double eps_, bool plus_one_)
    : eps(eps_), plus_one(plus_one_) {
  weight = register_parameter("weight", w.get(name + ".weight", {dim}), false);
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  if (plus_one) return rms_norm_plus_one(x, weight, eps);
  if (fused::applies({x, weight})) return fused::rms_norm(x, weight, eps);
  // Training on CUDA: the fused kernel rounds once where the formulation below rounds twice (bf16 parity
  // stays within the bf16 bar; the fp32 CPU path, which the parity tests pin, is unchanged).
  if (at::GradMode::is_enabled())
    if (at::Tensor fused = compat::fused_rms_norm(x, weight, eps); fused.defined()) return fused;
  at::Tensor xf = x.to(at::kFloat);
  xf = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * xf.to(x.scalar_type());
}

std::pair<at::Tensor, at::Tensor> RMSNormImpl::forward_with_residual(const at::Tensor& x,
                                                                     const at::Tensor& residual) {
  if (!plus_one && fused::applies({x, residual, weight}))
    return fused::add_rms_norm(x, residual, weight, eps);
  at::Tensor h = x + residual;
  return {h, forward(h)};
}

LayerNormImpl::LayerNormImpl(WeightProvider& w, const std::string& name, int64_t dim, double eps_)
    : eps(eps_) {
  weight = register_parameter("weight", w.get(name + ".weight", {dim}), false);
  bias = register_parameter("bias", w.get(name + ".bias", {dim}), false);
}

at::Tensor LayerNormImpl::forward(const at::Tensor& x) {
  return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
}

EmbeddingImpl::EmbeddingImpl(WeightProvider& w, const std::string& name, int64_t count, int64_t dim) {
  weight = register_parameter("weight", w.get(name + ".weight", {count, dim}), false);
}

at::Tensor EmbeddingImpl::forward(const at::Tensor& ids) {
  return at::embedding(weight, ids);
}

at::Tensor rope_inv_freq(const RopeConfig& rope, int64_t head_dim, bool long_factors) {
  // transformers: 1 / (base ** (arange(0, dim, 2).float() / dim)), in fp32.
  at::Tensor exponent = at::arange(0, head_dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(head_dim);
  if (rope.type == "longrope") {  // 1 / (factor_i · base^(2i/dim))
    const auto& f = long_factors ? rope.long_factor : rope.short_factor;
    at::Tensor factors = at::tensor(std::vector<float>(f.begin(), f.end()), at::kFloat);
    return 1.0 / (factors * at::pow(rope.theta, exponent));
  }
  at::Tensor inv_freq = 1.0 / at::pow(rope.theta, exponent);
  if (rope.type == "linear") return inv_freq / rope.factor;
  if (rope.type == "llama3") {
    const double old_len = static_cast<double>(rope.original_max_position_embeddings);
    const double low_freq_wavelen = old_len / rope.low_freq_factor;
    const double high_freq_wavelen = old_len / rope.high_freq_factor;
    at::Tensor wavelen = 2 * std::numbers::pi / inv_freq;
    at::Tensor scaled = at::where(wavelen > low_freq_wavelen, inv_freq / rope.factor, inv_freq);
    at::Tensor smooth =
        (old_len / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
    at::Tensor medium =
        (wavelen < high_freq_wavelen).logical_not() & (wavelen > low_freq_wavelen).logical_not();
    return at::where(medium, smoothed, scaled);
  }
  return inv_freq;
}

Rotary::Rotary(const RopeConfig& rope, int64_t head_dim, bool long_factors)
    : inv_freq_(rope_inv_freq(rope, head_dim, long_factors)),
      attention_factor_(rope.type == "longrope" ? rope.attention_factor : 1.0) {}

namespace {
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}
}  // namespace

std::pair<at::Tensor, at::Tensor> Rotary::apply(const at::Tensor& q, const at::Tensor& k,
                                                const at::Tensor& positions) const {
  // freqs[t, i] = pos[t] * inv_freq[i] in fp32; emb = [freqs, freqs]; cos/sin cast to the activations' dtype.
  at::Tensor inv = inv_freq_.to(q.device());
  at::Tensor freqs = positions.to(q.device(), at::kFloat).unsqueeze(-1) * inv;
  const double af = attention_factor_;
  auto cos_of = [af](const at::Tensor& x) { return af == 1.0 ? x.cos() : x.cos() * af; };
  auto sin_of = [af](const at::Tensor& x) { return af == 1.0 ? x.sin() : x.sin() * af; };
  // The fused kernel takes q, k in the [B, T, H, D] layout the projections are made in (the attention views
  // them as [B, H, T, D]) and one fp32 cos/sin row of D/2 angles per token.
  const at::Tensor q_bthd = q.transpose(1, 2), k_bthd = k.transpose(1, 2);
  if (fused::applies({q_bthd, k_bthd})) {
    at::Tensor per_token = freqs.expand({q.size(0), q.size(2), freqs.size(-1)}).reshape({-1, freqs.size(-1)});
    auto [qr, kr] =
        fused::rotary(q_bthd, k_bthd, cos_of(per_token).contiguous(), sin_of(per_token).contiguous());
    return {qr.transpose(1, 2), kr.transpose(1, 2)};
  }
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  if (positions.dim() == 2) emb = emb.unsqueeze(1);  // [B, T, D] -> [B, 1, T, D], broadcast over heads
  at::Tensor cos = cos_of(emb).to(q.scalar_type());
  at::Tensor sin = sin_of(emb).to(q.scalar_type());
  return {q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin};
}

namespace {

// silu(gate) * up keeping only gate and up for backward (autograd would also keep silu(gate), a third
// [tokens, intermediate] tensor per layer). Backward uses the same kernels autograd would, so results are
// identical.
struct SwiGlu : torch::autograd::Function<SwiGlu> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& gate,
                            const at::Tensor& up) {
    ctx->save_for_backward({gate, up});
    return at::silu(gate) * up;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& gate = saved[0];
    const at::Tensor& up = saved[1];
    at::Tensor grad_up = grads[0] * at::silu(gate);
    at::Tensor grad_gate = at::silu_backward(grads[0] * up, gate);
    return {grad_gate, grad_up};
  }
};

}  // namespace

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (fused::applies({gate, up})) return fused::swiglu(gate, up);
  if (at::GradMode::is_enabled() && (gate.requires_grad() || up.requires_grad()))
    return SwiGlu::apply(gate, up);
  return at::silu(gate) * up;
}

at::Tensor gelu_tanh(const at::Tensor& x) {
  if (fused::applies({x})) return fused::gelu_tanh(x);
  return at::gelu(x, "tanh");
}

double gemma_embed_scale(int64_t hidden, at::ScalarType dtype) {
  return at::scalar_tensor(std::sqrt(static_cast<double>(hidden)), at::kFloat).to(dtype).item<double>();
}

at::Tensor rms_norm_plus_one(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  xf = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (xf * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

at::Tensor geglu(const at::Tensor& gate, const at::Tensor& up) {
  return gelu_tanh(gate) * up;
}

at::Tensor soft_cap(const at::Tensor& x, double cap) {
  return at::tanh(x / cap) * cap;
}

at::Tensor repeat_kv(const at::Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const auto b = x.size(0), kv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, n_rep, t, d}).reshape({b, kv * n_rep, t, d});
}

at::Tensor segment_mask(const at::Tensor& segment_ids) {
  return (segment_ids.unsqueeze(-1) == segment_ids.unsqueeze(-2)).unsqueeze(1);
}

PackedSegments packed_segments(const at::Tensor& segment_ids, bool varlen) {
  PackedSegments out;
  if (!segment_ids.defined()) return out;
  out.segment_ids = segment_ids;
  if (!varlen) {
    out.same_segment = segment_mask(segment_ids);
    return out;
  }
  TORCH_CHECK(segment_ids.dim() == 2, "segment_ids must be [batch, seq]");
  const at::Tensor ids = segment_ids.to(at::kCPU, at::kLong).contiguous();
  const int64_t rows = ids.size(0), t = ids.size(1);
  const int64_t* p = ids.data_ptr<int64_t>();
  std::vector<int32_t> cu{0};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t start = 0;
    for (int64_t i = 1; i <= t; ++i) {
      if (i < t && p[r * t + i] == p[r * t + i - 1]) continue;
      out.max_seqlen = std::max(out.max_seqlen, i - start);
      cu.push_back(static_cast<int32_t>(r * t + i));
      start = i;
    }
  }
  out.cu_seqlens = at::tensor(cu, at::TensorOptions().dtype(at::kInt)).to(segment_ids.device());
  return out;
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t sliding_window, const at::Tensor& same_segment, double scale,
                            double softcap) {
  if (scale <= 0) scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const int64_t tq = q.size(-2), tk = k.size(-2);
  // Query i (at absolute position i + tk - tq) sees keys j with 0 <= pos_i - j (< sliding_window).
  auto allowed_keys = [&] {
    auto qi = at::arange(tk - tq, tk, q.options().dtype(at::kLong)).unsqueeze(1);
    auto kj = at::arange(0, tk, q.options().dtype(at::kLong)).unsqueeze(0);
    auto dist = qi - kj;
    at::Tensor allowed = dist >= 0;
    if (sliding_window > 0) allowed = allowed & (dist < sliding_window);
    return same_segment.defined() ? same_segment & allowed : allowed;
  };
  if (softcap > 0) {
    // transformers' eager order: scale, cap, mask, softmax in fp32 rounded to the activations' dtype.
    at::Tensor scores = soft_cap(at::matmul(q, k.transpose(-2, -1)) * scale, softcap);
    scores = scores.masked_fill(allowed_keys().logical_not(), -std::numeric_limits<double>::infinity());
    at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    return at::matmul(probs, v);
  }
  // An explicit mask replaces is_causal in SDPA, so causality (and the window) go into it.
  if (same_segment.defined()) return compat::sdpa(q, k, v, allowed_keys(), /*is_causal=*/false, scale);
  at::Tensor mask;
  if (sliding_window > 0 && tk > sliding_window) mask = allowed_keys();
  return compat::sdpa(q, k, v, mask, /*is_causal=*/true, scale);
}

}  // namespace forja
