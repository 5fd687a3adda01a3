// GPT-2's decode graph: learned positions, LayerNorm, the fused c_attn (Conv1D, [in, out] weights),
// multi-head attention over the KV cache, GELU (tanh approximation for gelu_new) MLP.
#include <ATen/core/grad_mode.h>

#include "causal_lm.h"
#include "decoder.h"
#include "forja/error.h"

namespace forja::infer {

namespace {

using detail::param;

Projection conv1d(const CausalLM& m, const std::string& name) {
  Projection p;
  p.weight = param(m, name + ".weight");
  p.bias = param(m, name + ".bias");
  p.in_out = true;
  return p;
}

class Gpt2Decoder final : public Decoder {
 public:
  Gpt2Decoder(CausalLM& m, int64_t capacity)
      : Decoder(m, capacity, m.config().num_heads, m.config().head_dim), heads_(config_.num_heads) {
    if (capacity > config_.max_position_embeddings)
      throw Error(
          config_.path.string() + ": GPT-2 has " + std::to_string(config_.max_position_embeddings) +
              " learned positions; a context of " + std::to_string(capacity) + " cannot be served",
          "ask for a context of at most " + std::to_string(config_.max_position_embeddings) + " tokens");
    wte_ = param(m, "transformer.wte.weight");
    wpe_ = param(m, "transformer.wpe.weight");
    lnf_w_ = param(m, "transformer.ln_f.weight");
    lnf_b_ = param(m, "transformer.ln_f.bias");
    exact_gelu_ = config_.hidden_act == "gelu";
    for (int64_t i = 0; i < config_.num_layers; ++i) {
      const std::string p = "transformer.h." + std::to_string(i);
      Layer l;
      l.prefix = p;
      l.ln1_w = param(m, p + ".ln_1.weight");
      l.ln1_b = param(m, p + ".ln_1.bias");
      l.ln2_w = param(m, p + ".ln_2.weight");
      l.ln2_b = param(m, p + ".ln_2.bias");
      l.c_attn = conv1d(m, p + ".attn.c_attn");
      l.attn_proj = conv1d(m, p + ".attn.c_proj");
      l.c_fc = conv1d(m, p + ".mlp.c_fc");
      l.mlp_proj = conv1d(m, p + ".mlp.c_proj");
      layers_.push_back(std::move(l));
    }
  }

 protected:
  at::Tensor hidden(const at::Tensor& ids, const Attend& a) override {
    const bool lora = adapter_on_;
    const double eps = config_.norm_eps;
    const int64_t d = config_.hidden_size;
    at::Tensor h = at::embedding(wte_, ids) + wpe_.index_select(0, a.positions);
    for (size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      at::Tensor x = at::layer_norm(h, {d}, l.ln1_w, l.ln1_b, eps);
      at::Tensor qkv = l.c_attn.apply(x, lora);  // [T, 3d] = q, k, v heads: the shared attention's layout
      at::Tensor attn = attention(qkv, cache_.layer(static_cast<int64_t>(i)), heads_, 0, a);
      h = l.attn_proj.apply(attn, lora, h);
      x = at::layer_norm(h, {d}, l.ln2_w, l.ln2_b, eps);
      at::Tensor m = l.c_fc.apply(x, lora);
      m = exact_gelu_ ? at::gelu(m) : at::gelu(m, "tanh");
      h = l.mlp_proj.apply(m, lora, h);
    }
    return at::layer_norm(h, {d}, lnf_w_, lnf_b_, eps);
  }

  std::vector<NamedProjection> projections() override {
    std::vector<NamedProjection> out;
    for (auto& l : layers_) {
      for (auto [proj, name] : {std::pair{&l.c_attn, ".attn.c_attn"}, std::pair{&l.attn_proj, ".attn.c_proj"},
                                std::pair{&l.c_fc, ".mlp.c_fc"}, std::pair{&l.mlp_proj, ".mlp.c_proj"}})
        out.push_back({proj, {l.prefix + name}, {proj->out_features()}});
    }
    return out;
  }

 private:
  struct Layer {
    std::string prefix;
    at::Tensor ln1_w, ln1_b, ln2_w, ln2_b;
    Projection c_attn, attn_proj, c_fc, mlp_proj;
  };
  int64_t heads_;
  bool exact_gelu_ = false;
  at::Tensor wte_, wpe_, lnf_w_, lnf_b_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Decoder> make_gpt2_decoder(CausalLM& model, int64_t capacity) {
  return std::make_unique<Gpt2Decoder>(model, capacity);
}

}  // namespace forja::infer
