#include "llama.h"

#include <cmath>
#include <functional>
#include <optional>

#include "fused_ops.h"
#include "torch_compat.h"

namespace forja {

LlamaAttentionImpl::LlamaAttentionImpl(const ModelConfig& c, WeightProvider& w, const std::string& p,
                                       int64_t layer)
    : heads_(c.num_heads),
      kv_heads_(c.num_kv_heads),
      head_dim_(c.head_dim),
      sliding_window_(c.layer_window(layer)),
      scale_(c.attention_scale()),
      softcap_(c.attn_softcap) {
  if (c.fused_projections) {
    qkv_proj = register_module("qkv_proj", Linear(w, p + ".qkv_proj", c.hidden_size,
                                                  (heads_ + 2 * kv_heads_) * head_dim_, c.qkv_bias));
  } else {
    q_proj =
        register_module("q_proj", Linear(w, p + ".q_proj", c.hidden_size, heads_ * head_dim_, c.qkv_bias));
    k_proj =
        register_module("k_proj", Linear(w, p + ".k_proj", c.hidden_size, kv_heads_ * head_dim_, c.qkv_bias));
    v_proj =
        register_module("v_proj", Linear(w, p + ".v_proj", c.hidden_size, kv_heads_ * head_dim_, c.qkv_bias));
  }
  o_proj = register_module("o_proj", Linear(w, p + ".o_proj", heads_ * head_dim_, c.hidden_size, c.o_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", RMSNorm(w, p + ".q_norm", head_dim_, c.norm_eps, c.gemma_norms));
    k_norm = register_module("k_norm", RMSNorm(w, p + ".k_norm", head_dim_, c.norm_eps, c.gemma_norms));
  }
}

at::Tensor LlamaAttentionImpl::forward(const at::Tensor& x, const Rotary& rope, const at::Tensor& positions,
                                       const PackedSegments& segments, bool selective) {
  const int64_t b = x.size(0), t = x.size(1);
  at::Tensor q, k, v;
  if (qkv_proj) {
    at::Tensor qkv = qkv_proj->forward(x).view({b, t, heads_ + 2 * kv_heads_, head_dim_});
    q = qkv.narrow(2, 0, heads_), k = qkv.narrow(2, heads_, kv_heads_),
    v = qkv.narrow(2, heads_ + kv_heads_, kv_heads_);
  } else {
    q = q_proj->forward(x).view({b, t, heads_, head_dim_});
    k = k_proj->forward(x).view({b, t, kv_heads_, head_dim_});
    v = v_proj->forward(x).view({b, t, kv_heads_, head_dim_});
  }
  if (q_norm) q = q_norm->forward(q), k = k_norm->forward(k);
  q = q.transpose(1, 2), k = k.transpose(1, 2), v = v.transpose(1, 2);
  std::tie(q, k) = rope.apply(q, k, positions);
  const int64_t n_rep = heads_ / kv_heads_;
  const double scale = scale_;
  const int64_t width = heads_ * head_dim_;
  at::Tensor out, merged;
  std::function<at::Tensor()> remake;
  if (segments.cu_seqlens.defined() && softcap_ <= 0) {
    // Packed rows as one stream of b * t tokens cut at cu_seqlens: [B, H, T, D] -> [B * T, H, D], the layout
    // the projections made them in, and the output is already [B, T, H * D] without a transpose.
    auto tokens = [&](const at::Tensor& y, int64_t n) {
      return y.transpose(1, 2).reshape({b * t, n, head_dim_});
    };
    out = compat::varlen_attention(tokens(q, heads_), tokens(k, kv_heads_), tokens(v, kv_heads_),
                                   segments.cu_seqlens, segments.max_seqlen, scale,
                                   sliding_window_ > 0 ? sliding_window_ - 1 : -1);
    if (out.defined()) {
      merged = out.view({b, t, width});
      remake = [out, b, t, width] { return out.view({b, t, width}); };
    }
  }
  if (!out.defined()) {
    at::Tensor same_segment = segments.same_segment;
    if (!same_segment.defined() && segments.segment_ids.defined())
      same_segment = segment_mask(segments.segment_ids);
    const bool plain_causal =
        !same_segment.defined() && softcap_ <= 0 && (sliding_window_ <= 0 || x.size(1) <= sliding_window_);
    if (plain_causal && n_rep > 1) out = compat::causal_sdpa_gqa(q, k, v, scale);
    if (!out.defined())
      out = causal_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), sliding_window_, same_segment,
                             scale, softcap_);
    merged = out.transpose(1, 2).reshape({b, t, width});
    remake = [out, b, t, width] { return out.transpose(1, 2).reshape({b, t, width}); };
  }
  if (!selective) return o_proj->forward(merged);
  // The attention keeps `out` for its own backward; the merged copy is one memory-bound pass away.
  const fused::RecomputableInput keep(merged, remake);
  return o_proj->forward(merged);
}

LlamaMlpImpl::LlamaMlpImpl(const ModelConfig& c, WeightProvider& w, const std::string& p)
    : gelu_(c.hidden_act == "gelu_pytorch_tanh") {
  if (c.fused_projections) {
    gate_up_proj = register_module(
        "gate_up_proj", Linear(w, p + ".gate_up_proj", c.hidden_size, 2 * c.intermediate_size, c.mlp_bias));
  } else {
    gate_proj = register_module("gate_proj",
                                Linear(w, p + ".gate_proj", c.hidden_size, c.intermediate_size, c.mlp_bias));
    up_proj =
        register_module("up_proj", Linear(w, p + ".up_proj", c.hidden_size, c.intermediate_size, c.mlp_bias));
  }
  down_proj = register_module("down_proj",
                              Linear(w, p + ".down_proj", c.intermediate_size, c.hidden_size, c.mlp_bias));
}

at::Tensor LlamaMlpImpl::forward(const at::Tensor& x, bool selective) {
  at::Tensor gate, up;
  if (gate_up_proj) {
    at::Tensor both = gate_up_proj->forward(x);
    const int64_t inter = both.size(-1) / 2;
    gate = both.narrow(-1, 0, inter), up = both.narrow(-1, inter, inter);
  } else {
    gate = gate_proj->forward(x), up = up_proj->forward(x);
  }
  auto activate = [gelu = gelu_](const at::Tensor& g, const at::Tensor& u) {
    return gelu ? geglu(g, u) : swiglu(g, u);
  };
  at::Tensor act = activate(gate, up);
  if (!selective) return down_proj->forward(act);
  // The activation keeps gate and up for its backward anyway; its output is remade from them.
  const fused::RecomputableInput keep(act, [gate, up, activate] { return activate(gate, up); });
  return down_proj->forward(act);
}

LlamaBlockImpl::LlamaBlockImpl(const ModelConfig& c, WeightProvider& w, const std::string& p, int64_t layer) {
  auto norm = [&](const char* name) {
    return register_module(name, RMSNorm(w, p + "." + name, c.hidden_size, c.norm_eps, c.gemma_norms));
  };
  input_layernorm = norm("input_layernorm");
  self_attn = register_module("self_attn", LlamaAttention(c, w, p + ".self_attn", layer));
  post_attention_layernorm = norm("post_attention_layernorm");
  if (c.gemma_norms) {
    pre_feedforward_layernorm = norm("pre_feedforward_layernorm");
    post_feedforward_layernorm = norm("post_feedforward_layernorm");
  }
  mlp = register_module("mlp", LlamaMlp(c, w, p + ".mlp"));
}

at::Tensor LlamaBlockImpl::forward(const at::Tensor& x, const Rotary& rope, const at::Tensor& positions,
                                   const PackedSegments& segments, bool selective) {
  at::Tensor attn;
  {
    at::Tensor normed = input_layernorm->forward(x);
    // The norms keep their input (the residual stream) for their own backward; their output is remade from
    // it.
    std::optional<fused::RecomputableInput> keep;
    if (selective) keep.emplace(normed, [norm = input_layernorm.get(), x] { return norm->forward(x); });
    attn = self_attn->forward(normed, rope, positions, segments, selective);
  }
  at::Tensor h, normed;
  RMSNormImpl* pre_mlp = post_attention_layernorm.get();
  if (pre_feedforward_layernorm) {
    h = x + post_attention_layernorm->forward(attn);
    pre_mlp = pre_feedforward_layernorm.get();
    normed = pre_mlp->forward(h);
  } else {
    std::tie(h, normed) = post_attention_layernorm->forward_with_residual(x, attn);
  }
  std::optional<fused::RecomputableInput> keep;
  if (selective) keep.emplace(normed, [pre_mlp, h] { return pre_mlp->forward(h); });
  at::Tensor out = mlp->forward(normed, selective);
  return h + (post_feedforward_layernorm ? post_feedforward_layernorm->forward(out) : out);
}

LlamaModel::LlamaModel(const ModelConfig& c, WeightProvider& w) : CausalLM(c), rope_(c.rope, c.head_dim) {
  if (c.rope_local) rope_local_.emplace(*c.rope_local, c.head_dim);
  if (c.rope.type == "longrope") rope_long_.emplace(c.rope, c.head_dim, /*long_factors=*/true);
  body_ = register_module("model", std::make_shared<torch::nn::Module>());
  embed_tokens_ =
      body_->register_module("embed_tokens", Embedding(w, "model.embed_tokens", c.vocab_size, c.hidden_size));
  layers_ = body_->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i)
    layers_->push_back(LlamaBlock(c, w, "model.layers." + std::to_string(i), i));
  norm_ = body_->register_module("norm", RMSNorm(w, "model.norm", c.hidden_size, c.norm_eps, c.gemma_norms));
  // A checkpoint may carry lm_head.weight even when tied; the tie decides, as in transformers.
  if (!c.tie_word_embeddings)
    lm_head_ = register_module("lm_head", Linear(w, "lm_head", c.hidden_size, c.vocab_size, false));
  else if (w.has("lm_head.weight"))
    w.get("lm_head.weight", {c.vocab_size, c.hidden_size});
}

at::Tensor LlamaModel::hidden_states(const at::Tensor& input_ids, const ForwardOptions& options) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [batch, seq]");
  const int64_t t = input_ids.size(1);
  at::Tensor positions = options.position_ids.defined() ? options.position_ids
                                                        : at::arange(t, input_ids.options().dtype(at::kLong));
  at::Tensor h = embed_tokens_->forward(input_ids);
  if (config_.gemma_norms) h = h * gemma_embed_scale(config_.hidden_size, h.scalar_type());
  const bool varlen = config_.attn_softcap <= 0 && compat::varlen_attention_applies(h, config_.head_dim);
  const PackedSegments segments = packed_segments(options.segment_ids, varlen);
  // longrope: the long factors for the whole forward once its furthest position is beyond the original
  // length (a host read only when the positions are given).
  const Rotary* global = &rope_;
  if (rope_long_) {
    const int64_t furthest = options.position_ids.defined() ? positions.max().item<int64_t>() + 1 : t;
    if (furthest > config_.rope.original_max_position_embeddings) global = &*rope_long_;
  }
  for (int64_t i = 0; i < static_cast<int64_t>(layers_->size()); ++i) {
    auto* block = (*layers_)[i]->as<LlamaBlock>();
    const Rotary& rope = rope_local_ && config_.local_layer(i) ? *rope_local_ : *global;
    auto run = [block, &rope, positions, segments, selective = options.selective_checkpointing](
                   const at::Tensor& x) { return block->forward(x, rope, positions, segments, selective); };
    h = options.recompute_blocks ? recompute_in_backward(run, h) : run(h);
  }
  return norm_->forward(h);
}

}  // namespace forja
