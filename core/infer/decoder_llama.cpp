// The Llama family's decode graph: RMSNorm, fused q/k/v with RoPE (default, linear, llama3 frequencies), GQA
// attention over the KV cache (Mistral's sliding window), fused gate/up SwiGLU. Qwen2's q/k/v biases and
// Llama's attention/MLP biases come along when the checkpoint has them; Qwen3's per-head q/k norms run
// between the q/k/v projection and RoPE. Gemma 2 / 3 take the stock step: (1 + w) norms before and after
// attention and the MLP, the scaled embedding, GeGLU, per-layer windows and RoPE, and soft-capping.
#include <ATen/core/grad_mode.h>

#include "causal_lm.h"
#include "decode_kernels.h"
#include "decoder.h"
#include "infer_compat.h"
#include "layers.h"

namespace forja::infer {

namespace {

using detail::has_param;
using detail::param;

// The module's 4-bit weight (QLoRA), or an undefined one for a plain projection.
Nf4Weight nf4_of(const CausalLM& m, const std::string& name) {
  auto modules = m.named_modules("", false);
  const auto* module = modules.find(name);
  const auto* linear = module != nullptr ? (*module)->as<LinearImpl>() : nullptr;
  return linear != nullptr ? linear->nf4 : Nf4Weight{};
}

Projection linear(const CausalLM& m, const std::string& name) {
  Projection p;
  if (Nf4Weight w = nf4_of(m, name); w.defined())
    p.nf4 = {detail::plain_absmax(w)};
  else
    p.weight = param(m, name + ".weight");
  if (has_param(m, name + ".bias")) p.bias = param(m, name + ".bias");
  return p;
}

// Parts fused row-wise (q/k/v, gate/up): one weight, and one bias when the parts have them.
Projection fused(const CausalLM& m, const std::vector<std::string>& names) {
  std::vector<at::Tensor> weights, biases;
  std::vector<Nf4Weight> nf4;
  for (const auto& n : names) {
    if (Nf4Weight w = nf4_of(m, n); w.defined())
      nf4.push_back(std::move(w));
    else
      weights.push_back(param(m, n + ".weight"));
    if (has_param(m, n + ".bias")) biases.push_back(param(m, n + ".bias"));
  }
  Projection p;
  if (!nf4.empty())
    p.nf4 = detail::fuse_nf4_rows(nf4);
  else
    p.weight = detail::fuse_rows(weights);
  if (!biases.empty()) p.bias = detail::fuse_rows(biases);
  return p;
}

class LlamaDecoder final : public Decoder {
 public:
  LlamaDecoder(CausalLM& m, int64_t capacity)
      : Decoder(m, capacity, m.config().num_kv_heads, m.config().head_dim),
        heads_(config_.num_heads),
        gemma_(config_.gemma_norms) {
    at::NoGradGuard no_grad;
    embed_ = param(m, "model.embed_tokens.weight");
    final_norm_ = param(m, "model.norm.weight");
    for (int64_t i = 0; i < config_.num_layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i);
      Layer l;
      l.window = config_.layer_window(i);
      l.local_rope = config_.rope_local && config_.local_layer(i);
      l.input_norm = param(m, p + ".input_layernorm.weight");
      l.post_norm = param(m, p + ".post_attention_layernorm.weight");
      if (gemma_) {
        l.pre_ff_norm = param(m, p + ".pre_feedforward_layernorm.weight");
        l.post_ff_norm = param(m, p + ".post_feedforward_layernorm.weight");
      }
      const std::string a = p + ".self_attn.", f = p + ".mlp.";
      l.qkv = config_.fused_projections ? linear(m, a + "qkv_proj")
                                        : fused(m, {a + "q_proj", a + "k_proj", a + "v_proj"});
      if (config_.qk_norm) l.q_norm = param(m, a + "q_norm.weight"), l.k_norm = param(m, a + "k_norm.weight");
      l.o = linear(m, a + "o_proj");
      l.gate_up = config_.fused_projections ? linear(m, f + "gate_up_proj")
                                            : fused(m, {f + "gate_proj", f + "up_proj"});
      l.down = linear(m, f + "down_proj");
      l.prefix = p;
      layers_.push_back(std::move(l));
    }
    // cos/sin of every cache position, computed in fp32 as transformers does and cast to the model's dtype.
    // The sine is stored with rotate_half's sign folded in: rotate_half(x)·sin = [x₂, x₁]·[-sin₁, sin₂].
    std::tie(cos_, sin_signed_) = rope_table(config_.rope, capacity);
    if (config_.rope.type == "longrope")
      std::tie(cos_long_, sin_long_) = rope_table(config_.rope, capacity, /*long_factors=*/true);
    if (config_.rope_local) std::tie(cos_local_, sin_local_) = rope_table(*config_.rope_local, capacity);
    if (gemma_) embed_scale_ = gemma_embed_scale(config_.hidden_size, dtype_);
    kernels_fit_ = kernels_fit();
    if (kernels_fit_)  // sized for any number of keys, so that a graph capture never allocates it
      attn_scratch_ = at::empty({decode_kernels::attention_scratch_floats(heads_, head_dim_)},
                                at::TensorOptions().dtype(at::kFloat).device(device_));
  }

  bool decode_uses_mask() const override { return !use_kernels(); }

 protected:
  at::Tensor hidden(const at::Tensor& ids, const Attend& a) override {
    if (a.decode && use_kernels()) return hidden_decode_kernels(ids, a);
    const int64_t t = ids.size(0), kv = kv_heads_, d = head_dim_, half = d / 2;
    const bool lora = adapter_on_;
    const double eps = config_.norm_eps;
    // [T, 1, d], shared by the layers of each RoPE.
    at::Tensor cos = cos_.index_select(0, a.positions).unsqueeze(1);
    at::Tensor sin = sin_signed_.index_select(0, a.positions).unsqueeze(1);
    if (cos_long_.defined()) {
      // longrope: the long factors once the furthest new position is beyond the original length, decided on
      // the device so that a captured decode step replays it.
      at::Tensor beyond = (a.positions.max() + 1).gt(config_.rope.original_max_position_embeddings);
      cos = at::where(beyond, cos_long_.index_select(0, a.positions).unsqueeze(1), cos);
      sin = at::where(beyond, sin_long_.index_select(0, a.positions).unsqueeze(1), sin);
    }
    at::Tensor cos_local, sin_local;
    if (cos_local_.defined()) {
      cos_local = cos_local_.index_select(0, a.positions).unsqueeze(1);
      sin_local = sin_local_.index_select(0, a.positions).unsqueeze(1);
    }
    at::Tensor h = at::embedding(embed_, ids);
    if (gemma_) h = h * embed_scale_;
    for (size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      at::Tensor x = norm(h, l.input_norm);
      at::Tensor qkv = l.qkv.apply(x, lora);
      norm_qk(qkv, l);
      // RoPE on q and k together, in place: x·cos + [x₂, x₁]·sin_signed.
      at::Tensor qk = qkv.view({t, heads_ + 2 * kv, d}).narrow(1, 0, heads_ + kv);
      at::Tensor swapped = at::cat({qk.narrow(2, half, half), qk.narrow(2, 0, half)}, 2);
      at::Tensor scaled = qk * (l.local_rope ? cos_local : cos);
      at::addcmul_out(qk, scaled, swapped, l.local_rope ? sin_local : sin);
      at::Tensor attn = attention(qkv, cache_.layer(static_cast<int64_t>(i)), heads_, l.window, a);
      if (!gemma_) {
        h = l.o.apply(attn, lora, h);
        x = compat::rms_norm(h, l.post_norm, eps);
      } else {
        h = h + norm(l.o.apply(attn, lora), l.post_norm);
        x = norm(h, l.pre_ff_norm);
      }
      at::Tensor gu = l.gate_up.apply(x, lora);
      const int64_t inter = gu.size(1) / 2;
      at::Tensor gate = gu.narrow(1, 0, inter);
      at::Tensor act = (gemma_ ? at::gelu(gate, "tanh") : at::silu(gate)).mul_(gu.narrow(1, inter, inter));
      h = gemma_ ? h + norm(l.down.apply(act, lora), l.post_ff_norm) : l.down.apply(act, lora, h);
    }
    return norm(h, final_norm_);
  }

  std::vector<NamedProjection> projections() override {
    std::vector<NamedProjection> out;
    const int64_t q_rows = heads_ * head_dim_, kv_rows = kv_heads_ * head_dim_;
    for (auto& l : layers_) {
      const std::string a = l.prefix + ".self_attn.", f = l.prefix + ".mlp.";
      const int64_t inter = l.gate_up.out_features() / 2;
      if (config_.fused_projections) {
        out.push_back({&l.qkv, {a + "qkv_proj"}, {l.qkv.out_features()}});
        out.push_back({&l.gate_up, {f + "gate_up_proj"}, {l.gate_up.out_features()}});
      } else {
        out.push_back({&l.qkv, {a + "q_proj", a + "k_proj", a + "v_proj"}, {q_rows, kv_rows, kv_rows}});
        out.push_back({&l.gate_up, {f + "gate_proj", f + "up_proj"}, {inter, inter}});
      }
      out.push_back({&l.o, {a + "o_proj"}, {l.o.out_features()}});
      out.push_back({&l.down, {f + "down_proj"}, {l.down.out_features()}});
    }
    return out;
  }

 private:
  // The single-token step in kernels/decode: per layer four GEMVs (the RMSNorm before q/k/v and gate/up and
  // the SwiGLU before down computed inside them, the residual adds in their epilogue; or cuBLAS after the
  // stock RMSNorm / SwiGLU where that measured faster for the shape; on a 4-bit base the NF4 GEMV, or the
  // stock prologue and kernels/nf4's GEMV where that measured faster), one RoPE + cache write and one
  // split-K attention (two launches). The adapter's branch, when on, adds its two small GEMMs.
  at::Tensor hidden_decode_kernels(const at::Tensor& ids, const Attend& a) {
    namespace dk = decode_kernels;
    const bool lora = adapter_on_;
    const double eps = config_.norm_eps;
    at::Tensor h = at::embedding(embed_, ids);  // [1, hidden]
    if (gemma_) h = h * embed_scale_;  // a tensor of its own: Gemma's residual adds below write into it
    // Gemma's norms scale by (1 + w) and its MLP gates with GELU; its attention scale is its own.
    const dk::Prologue pre_norm = gemma_ ? dk::Prologue::RmsNormUnitOffset : dk::Prologue::RmsNorm;
    const dk::Prologue gate = gemma_ ? dk::Prologue::GeGlu : dk::Prologue::SwiGlu;
    const double scale = config_.attention_scale();
    // The LoRA branch's input when that projection has an adapter: the activation the GEMV computed.
    auto act_for = [&](const Projection& p) {
      return lora && p.lora_a.defined() ? at::empty({1, p.in_features()}, h.options()) : at::Tensor();
    };
    auto add_lora = [](at::Tensor y, const Projection& p, const at::Tensor& act) {
      return act.defined() ? at::addmm(y, at::mm(act, p.lora_a.t()), p.lora_b.t()) : y;
    };
    // The projection's GEMV, bf16 or 4-bit (QLoRA's base), with the prologue and the residual fused.
    auto gemv = [&](const Projection& p, const at::Tensor& x, dk::Prologue prologue, const at::Tensor& norm,
                    const at::Tensor& residual, const at::Tensor& act_out) {
      return p.nf4.empty()
                 ? dk::gemv_fastest(p.weight, x, prologue, norm, eps, p.bias, residual, act_out)
                 : dk::gemv_nf4_fastest(p.nf4.front(), x, prologue, norm, eps, p.bias, residual, act_out);
    };
    for (size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      at::Tensor& cache = cache_.layer(static_cast<int64_t>(i));
      at::Tensor x = act_for(l.qkv);
      at::Tensor qkv = add_lora(gemv(l.qkv, h, pre_norm, l.input_norm, {}, x), l.qkv, x);
      if (l.q_norm.defined()) {  // each q head, then each k head, in place
        at::Tensor q = qkv.narrow(1, 0, heads_ * head_dim_);
        at::Tensor k = qkv.narrow(1, heads_ * head_dim_, kv_heads_ * head_dim_);
        dk::rms_norm(q, l.q_norm, eps, gemma_, {}, q);
        dk::rms_norm(k, l.k_norm, eps, gemma_, {}, k);
      }
      dk::rope_kv(qkv, cache, l.local_rope ? cos_local_ : cos_, l.local_rope ? sin_local_ : sin_signed_,
                  a.positions, heads_);
      at::Tensor attn = dk::attention(qkv, cache, a.positions, heads_, a.keys, l.window, scale,
                                      config_.attn_softcap, attn_scratch_);
      const at::Tensor o_act = lora && l.o.lora_a.defined() ? attn : at::Tensor();
      // Llama adds each projection to the residual in the GEMV's epilogue; Gemma normalizes the projection
      // first, so its residual add follows.
      if (gemma_)
        dk::rms_norm(add_lora(gemv(l.o, attn, dk::Prologue::Plain, {}, {}, {}), l.o, o_act), l.post_norm, eps,
                     true, h, h);
      else
        h = add_lora(gemv(l.o, attn, dk::Prologue::Plain, {}, h, {}), l.o, o_act);
      x = act_for(l.gate_up);
      at::Tensor gu =
          add_lora(gemv(l.gate_up, h, pre_norm, gemma_ ? l.pre_ff_norm : l.post_norm, {}, x), l.gate_up, x);
      x = act_for(l.down);
      if (gemma_)
        dk::rms_norm(add_lora(gemv(l.down, gu, gate, {}, {}, x), l.down, x), l.post_ff_norm, eps, true, h, h);
      else
        h = add_lora(gemv(l.down, gu, gate, {}, h, x), l.down, x);
    }
    at::Tensor out = at::empty_like(h);
    dk::rms_norm(h, final_norm_, eps, gemma_, {}, out);
    return out;
  }

  // Whether the decode kernels can run this model at all: CUDA, bf16, plain [out, in] weights (bf16, or
  // 4-bit ones the NF4 GEMV takes), and the head sizes the attention kernel has.
  bool kernels_fit() const {
    if (!decode_kernels::compiled_in() || !device_.is_cuda() || dtype_ != at::kBFloat16) return false;
    // The kernels know no RoPE chosen per step (longrope).
    if (config_.rope.type == "longrope") return false;
    if (head_dim_ != 64 && head_dim_ != 128 && head_dim_ != 256) return false;
    if (heads_ % kv_heads_ != 0 || heads_ / kv_heads_ > (head_dim_ == 256 ? 8 : 16)) return false;
    for (const auto& l : layers_)
      for (const Projection* p : {&l.qkv, &l.o, &l.gate_up, &l.down}) {
        if (p->in_out || p->in_features() > 32768) return false;
        // A 4-bit base: one NF4 weight the fused kernel takes (a fused projection whose parts are not whole
        // blocks stays on the stock step).
        if (!p->nf4.empty()) {
          if (p->nf4.size() != 1 || !decode_kernels::gemv_nf4_fits(p->nf4.front())) return false;
          continue;
        }
        if (!p->weight.defined() || p->weight.scalar_type() != at::kBFloat16 || !p->weight.is_contiguous())
          return false;
      }
    return true;
  }
  bool use_kernels() const { return kernels_fit_ && decode_kernels::active(); }

  struct Layer {
    std::string prefix;
    int64_t window = 0;       // this layer's sliding window; 0: the whole context
    bool local_rope = false;  // the local layers' RoPE (Gemma 3)
    at::Tensor input_norm, post_norm;
    at::Tensor pre_ff_norm, post_ff_norm;  // Gemma: post_norm follows attention, these surround the MLP
    at::Tensor q_norm, k_norm;             // Qwen3, Gemma 3: over each head of q and k; undefined elsewhere
    Projection qkv, o, gate_up, down;
  };
  // Per-head RMSNorm of q and k (Qwen3, Gemma 3), in place in the [T, q | k | v] projection output, before
  // RoPE.
  void norm_qk(at::Tensor& qkv, const Layer& l) const {
    if (!l.q_norm.defined()) return;
    const int64_t t = qkv.size(0);
    at::Tensor heads = qkv.view({t, heads_ + 2 * kv_heads_, head_dim_});
    at::Tensor q = heads.narrow(1, 0, heads_), k = heads.narrow(1, heads_, kv_heads_);
    q.copy_(norm(q, l.q_norm));
    k.copy_(norm(k, l.k_norm));
  }
  // RMSNorm as the family has it: Gemma's scales by (1 + w) in fp32 before rounding.
  at::Tensor norm(const at::Tensor& x, const at::Tensor& w) const {
    return gemma_ ? rms_norm_plus_one(x, w, config_.norm_eps) : compat::rms_norm(x, w, config_.norm_eps);
  }
  // cos and sin of every cache position, computed in fp32 as transformers does and cast to the model's dtype.
  // The sine is stored with rotate_half's sign folded in: rotate_half(x)·sin = [x₂, x₁]·[-sin₁, sin₂].
  // longrope's are multiplied by its attention factor in fp32.
  std::pair<at::Tensor, at::Tensor> rope_table(const RopeConfig& rope, int64_t capacity,
                                               bool long_factors = false) const {
    const int64_t half = head_dim_ / 2;
    at::Tensor freqs = at::arange(capacity, at::kLong).to(at::kFloat).unsqueeze(1) *
                       rope_inv_freq(rope, head_dim_, long_factors);
    at::Tensor emb = at::cat({freqs, freqs}, -1);
    const double af = rope.type == "longrope" ? rope.attention_factor : 1.0;
    at::Tensor sin = (emb.sin() * af).to(dtype_);
    return {(emb.cos() * af).to(dtype_).to(device_),
            at::cat({-sin.narrow(1, 0, half), sin.narrow(1, half, half)}, 1).to(device_)};
  }

  int64_t heads_;
  bool gemma_;
  double embed_scale_ = 1.0;
  at::Tensor embed_, final_norm_, cos_, sin_signed_, cos_local_, sin_local_;
  at::Tensor cos_long_, sin_long_;  // longrope's long factors
  std::vector<Layer> layers_;
  bool kernels_fit_ = false;
  at::Tensor attn_scratch_;
};

}  // namespace

std::unique_ptr<Decoder> make_llama_decoder(CausalLM& model, int64_t capacity) {
  return std::make_unique<LlamaDecoder>(model, capacity);
}

}  // namespace forja::infer
