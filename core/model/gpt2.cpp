#include "gpt2.h"

#include "forja/error.h"

namespace forja {

Gpt2BlockImpl::Gpt2BlockImpl(const ModelConfig& c, WeightProvider& w, const std::string& p)
    : heads_(c.num_heads), head_dim_(c.head_dim), act_(c.hidden_act) {
  const int64_t d = c.hidden_size;
  ln_1 = register_module("ln_1", LayerNorm(w, p + ".ln_1", d, c.norm_eps));
  auto attn = register_module("attn", std::make_shared<torch::nn::Module>());
  c_attn = attn->register_module("c_attn", Conv1D(w, p + ".attn.c_attn", d, 3 * d));
  attn_proj = attn->register_module("c_proj", Conv1D(w, p + ".attn.c_proj", d, d));
  ln_2 = register_module("ln_2", LayerNorm(w, p + ".ln_2", d, c.norm_eps));
  auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
  c_fc = mlp->register_module("c_fc", Conv1D(w, p + ".mlp.c_fc", d, c.intermediate_size));
  mlp_proj = mlp->register_module("c_proj", Conv1D(w, p + ".mlp.c_proj", c.intermediate_size, d));
}

at::Tensor Gpt2BlockImpl::forward(const at::Tensor& x, const at::Tensor& same_segment) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  auto qkv = c_attn->forward(ln_1->forward(x)).split(d, -1);
  auto heads = [&](const at::Tensor& y) { return y.view({b, t, heads_, head_dim_}).transpose(1, 2); };
  at::Tensor a = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), 0, same_segment);
  at::Tensor h = x + attn_proj->forward(a.transpose(1, 2).reshape({b, t, d}));
  at::Tensor m = c_fc->forward(ln_2->forward(h));
  m = act_ == "gelu" ? at::gelu(m) : gelu_tanh(m);
  return h + mlp_proj->forward(m);
}

Gpt2Model::Gpt2Model(const ModelConfig& c, WeightProvider& w) : CausalLM(c) {
  if (!c.tie_word_embeddings) throw Error(c.path.string() + ": GPT-2 with an untied head is not supported");
  body_ = register_module("transformer", std::make_shared<torch::nn::Module>());
  wte_ = body_->register_module("wte", Embedding(w, "transformer.wte", c.vocab_size, c.hidden_size));
  wpe_ = body_->register_module("wpe", Embedding(w, "transformer.wpe", c.max_position_embeddings, c.hidden_size));
  h_ = body_->register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) h_->push_back(Gpt2Block(c, w, "transformer.h." + std::to_string(i)));
  ln_f_ = body_->register_module("ln_f", LayerNorm(w, "transformer.ln_f", c.hidden_size, c.norm_eps));
  if (w.has("lm_head.weight")) w.get("lm_head.weight", {c.vocab_size, c.hidden_size});
}

at::Tensor Gpt2Model::hidden_states(const at::Tensor& input_ids, const ForwardOptions& options) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [batch, seq]");
  const int64_t t = input_ids.size(1);
  TORCH_CHECK(t <= config_.max_position_embeddings, "sequence of ", t, " tokens is longer than GPT-2's ",
              config_.max_position_embeddings, " positions");
  at::Tensor positions = options.position_ids.defined() ? options.position_ids
                                                         : at::arange(t, input_ids.options().dtype(at::kLong));
  at::Tensor same_segment = options.segment_ids.defined() ? segment_mask(options.segment_ids) : at::Tensor();
  at::Tensor h = wte_->forward(input_ids) + wpe_->forward(positions);
  for (const auto& layer : *h_) {
    auto* block = layer->as<Gpt2Block>();
    auto run = [block, same_segment](const at::Tensor& x) { return block->forward(x, same_segment); };
    h = options.recompute_blocks ? recompute_in_backward(run, h) : run(h);
  }
  return ln_f_->forward(h);
}

}  // namespace forja
