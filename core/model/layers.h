// Building blocks shared by the architectures. Parameters are registered under Hugging Face's names, so a
// module's named_parameters() are the checkpoint's keys.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>

#include "forja/model_config.h"
#include "lora_linear.h"
#include "nf4_weight.h"
#include "weights.h"

namespace forja {

// y = x Wᵀ + b, W stored [out, in] (nn.Linear). When the weight provider asks for NF4 (QLoRA) and the weight
// is a decoder projection, W is held quantized in `nf4` (its tensors registered as buffers: they move with
// the module but are not parameters) and `weight` stays undefined.
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(WeightProvider& w, const std::string& name, int64_t in, int64_t out, bool bias);
  at::Tensor forward(const at::Tensor& x);
  // NF4 only: replaces the 4-bit weight by its dequantized values in `dtype`, registered as the `weight`
  // parameter again (merging an adapter for export).
  void dequantize_weight(at::ScalarType dtype);
  int64_t in_features() const { return nf4.defined() ? nf4.shape[1] : weight.size(1); }
  int64_t out_features() const { return nf4.defined() ? nf4.shape[0] : weight.size(0); }
  at::Tensor weight, bias;
  Nf4Weight nf4;
  std::shared_ptr<LoraAdapter> lora;  // attached by LoraAdapters; null for a plain projection
};
TORCH_MODULE(Linear);

// y = x W + b, W stored [in, out] (GPT-2's Conv1D).
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(WeightProvider& w, const std::string& name, int64_t in, int64_t out);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight, bias;
  std::shared_ptr<LoraAdapter> lora;
};
TORCH_MODULE(Conv1D);

// Llama's RMSNorm: normalise in fp32, cast back, then scale (the order transformers uses). Gemma's
// (plus_one) scales by (1 + weight) in fp32 and casts after.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(WeightProvider& w, const std::string& name, int64_t dim, double eps, bool plus_one = false);
  at::Tensor forward(const at::Tensor& x);
  // h = x + residual and forward(h), in one fused kernel where it applies; returns {h, forward(h)}.
  std::pair<at::Tensor, at::Tensor> forward_with_residual(const at::Tensor& x, const at::Tensor& residual);
  at::Tensor weight;
  double eps;
  bool plus_one = false;
};
TORCH_MODULE(RMSNorm);

class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(WeightProvider& w, const std::string& name, int64_t dim, double eps);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight, bias;
  double eps;
};
TORCH_MODULE(LayerNorm);

class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(WeightProvider& w, const std::string& name, int64_t count, int64_t dim);
  at::Tensor forward(const at::Tensor& ids);
  at::Tensor weight;
};
TORCH_MODULE(Embedding);

// Rotary position embedding: inverse frequencies per config (default / linear / llama3 / longrope), cos/sin
// per position. longrope has two sets of factors; `long_factors` picks the one for sequences beyond the
// original length (the model decides per forward, as transformers does).
class Rotary {
 public:
  Rotary(const RopeConfig& rope, int64_t head_dim, bool long_factors = false);
  // q, k: [B, H, T, D]; positions: [T] or [B, T] (int64). Returns the rotated pair.
  std::pair<at::Tensor, at::Tensor> apply(const at::Tensor& q, const at::Tensor& k,
                                          const at::Tensor& positions) const;
  const at::Tensor& inv_freq() const { return inv_freq_; }  // fp32, CPU

 private:
  at::Tensor inv_freq_;
  double attention_factor_ = 1.0;  // cos and sin are multiplied by it (longrope)
};

// Inverse frequencies as transformers computes them, in fp32; `long_factors` picks longrope's long set.
at::Tensor rope_inv_freq(const RopeConfig& rope, int64_t head_dim, bool long_factors = false);

// silu(gate) * up (Llama's MLP); under autograd it keeps only its inputs for backward.
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

// GELU with the tanh approximation (GPT-2's gelu_new).
at::Tensor gelu_tanh(const at::Tensor& x);

// Gemma's embedding scale: sqrt(hidden) rounded to the activations' dtype first, as transformers has it.
double gemma_embed_scale(int64_t hidden, at::ScalarType dtype);

// Gemma's RMSNorm: normalise and scale by (1 + weight) in fp32, then round to x's dtype.
at::Tensor rms_norm_plus_one(const at::Tensor& x, const at::Tensor& weight, double eps);

// gelu_tanh(gate) * up (Gemma's MLP).
at::Tensor geglu(const at::Tensor& gate, const at::Tensor& up);

// cap·tanh(x / cap): Gemma 2's soft-capping of attention scores and logits.
at::Tensor soft_cap(const at::Tensor& x, double cap);

// [B, KV, T, D] -> [B, KV * n_rep, T, D] (kv head h serves query heads h*n_rep .. h*n_rep+n_rep-1).
at::Tensor repeat_kv(const at::Tensor& x, int64_t n_rep);

// Causal attention over [B, H, T, D]; `sliding_window` > 0 limits each query to that many most recent
// positions; `same_segment` ([B, 1, T, T] bool, from segment_mask) keeps packed examples from seeing each
// other. `scale` 0 is 1/sqrt(D); `softcap` > 0 soft-caps the scaled scores before the mask (then computed
// without SDPA).
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t sliding_window, const at::Tensor& same_segment = {}, double scale = 0,
                            double softcap = 0);

// [B, T] segment ids -> [B, 1, T, T] bool, true where query and key belong to the same segment.
at::Tensor segment_mask(const at::Tensor& segment_ids);

// How the examples packed into rows are kept apart in attention: either the dense [B, 1, T, T] mask (the CPU
// and fp32 reference) or the cumulative lengths of the runs of equal segment id over the flattened B * T
// tokens, for variable-length attention (CUDA, half precision), which never builds a [T, T] mask. A row's
// padding is a run of its own: it attends only to itself and carries no loss.
struct PackedSegments {
  at::Tensor same_segment;  // [B, 1, T, T] bool, or undefined
  at::Tensor cu_seqlens;    // [runs + 1] int32 on the model's device, or undefined
  int64_t max_seqlen = 0;   // the longest run
  at::Tensor segment_ids;   // [B, T], kept for the dense fallback where the varlen kernel declines
  bool defined() const { return same_segment.defined() || cu_seqlens.defined(); }
};

// From [B, T] segment ids (undefined: one example per row, nothing to keep apart). `varlen` picks the
// cumulative lengths over the mask; they are counted on the host (one copy of the ids per forward).
PackedSegments packed_segments(const at::Tensor& segment_ids, bool varlen);

}  // namespace forja
