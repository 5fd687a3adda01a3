// The Llama family: Llama 2/3, Mistral (sliding window), Qwen2 (q/k/v biases), Qwen3 (q/k norms), TinyLlama,
// SmolLM (tied head), Phi-3 (fused q/k/v and gate/up matrices, longrope), and Gemma 2 / 3, which add norms
// after attention and the MLP, (1 + w) norms, a scaled embedding, GeGLU, local (sliding-window) layers with
// their own RoPE, and soft-capping.
// Pre-norm decoder: RMSNorm, GQA attention with RoPE, SwiGLU (GeGLU) MLP.
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include <optional>

#include "causal_lm.h"
#include "layers.h"

namespace forja {

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  LlamaAttentionImpl(const ModelConfig& c, WeightProvider& w, const std::string& prefix, int64_t layer);
  // selective: o_proj's LoRA keeps the attention output's [B, T, H·D] copy as a recipe
  // (fused::RecomputableInput).
  at::Tensor forward(const at::Tensor& x, const Rotary& rope, const at::Tensor& positions,
                     const PackedSegments& segments, bool selective = false);
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  Linear qkv_proj{nullptr};                  // Phi-3: q, k and v in one matrix (then q/k/v_proj are null)
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // over each head (Qwen3, Gemma 3); null elsewhere

 private:
  int64_t heads_, kv_heads_, head_dim_, sliding_window_;
  double scale_, softcap_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  LlamaMlpImpl(const ModelConfig& c, WeightProvider& w, const std::string& prefix);
  // selective: down_proj's LoRA remakes silu(gate) * up in backward instead of keeping it.
  at::Tensor forward(const at::Tensor& x, bool selective = false);
  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  Linear gate_up_proj{nullptr};  // Phi-3: gate and up in one matrix, gate's rows first

 private:
  bool gelu_ = false;  // GeGLU (Gemma) instead of SwiGLU
};
TORCH_MODULE(LlamaMlp);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(const ModelConfig& c, WeightProvider& w, const std::string& prefix, int64_t layer);
  // selective: selective activation checkpointing (ForwardOptions::selective_checkpointing); the LoRA
  // adapters remake their inputs (the norms' outputs, SwiGLU's, the attention output's copy) in backward.
  at::Tensor forward(const at::Tensor& x, const Rotary& rope, const at::Tensor& positions,
                     const PackedSegments& segments, bool selective = false);
  // Gemma: post_attention_layernorm normalises the attention's output, and the MLP has its own pair.
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  RMSNorm pre_feedforward_layernorm{nullptr}, post_feedforward_layernorm{nullptr};
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
};
TORCH_MODULE(LlamaBlock);

class LlamaModel : public CausalLM {
 public:
  LlamaModel(const ModelConfig& c, WeightProvider& w);
  at::Tensor hidden_states(const at::Tensor& input_ids, const ForwardOptions& options) override;
  const at::Tensor& head_weight() const override {
    return lm_head_ ? lm_head_->weight : embed_tokens_->weight;
  }

 private:
  std::shared_ptr<torch::nn::Module> body_;  // "model": embed_tokens, layers, norm
  Embedding embed_tokens_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  RMSNorm norm_{nullptr};
  Linear lm_head_{nullptr};  // null when tied to embed_tokens
  Rotary rope_;
  std::optional<Rotary> rope_long_;   // longrope's long factors (Phi-3)
  std::optional<Rotary> rope_local_;  // the sliding layers' (Gemma 3)
};

}  // namespace forja
