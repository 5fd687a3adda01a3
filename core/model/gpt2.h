// GPT-2: learned positions, pre-LayerNorm blocks, fused qkv in a Conv1D ([in, out] weights), GELU-tanh MLP,
// head tied to the token embedding.
#pragma once

#include <torch/nn/modules/container/modulelist.h>

#include "causal_lm.h"
#include "layers.h"

namespace forja {

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  Gpt2BlockImpl(const ModelConfig& c, WeightProvider& w, const std::string& prefix);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& same_segment);
  LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Conv1D c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};

 private:
  int64_t heads_, head_dim_;
  std::string act_;
};
TORCH_MODULE(Gpt2Block);

class Gpt2Model : public CausalLM {
 public:
  Gpt2Model(const ModelConfig& c, WeightProvider& w);
  at::Tensor hidden_states(const at::Tensor& input_ids, const ForwardOptions& options) override;
  const at::Tensor& head_weight() const override { return wte_->weight; }

 private:
  std::shared_ptr<torch::nn::Module> body_;  // "transformer": wte, wpe, h, ln_f
  Embedding wte_{nullptr}, wpe_{nullptr};
  torch::nn::ModuleList h_{nullptr};
  LayerNorm ln_f_{nullptr};
};

}  // namespace forja
