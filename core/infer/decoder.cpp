#include "decoder.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <limits>

#include "causal_lm.h"
#include "forja/architecture.h"
#include "forja/error.h"
#include "infer_compat.h"
#include "layers.h"

namespace forja::infer {

std::unique_ptr<Decoder> make_llama_decoder(CausalLM& model, int64_t capacity);
std::unique_ptr<Decoder> make_gpt2_decoder(CausalLM& model, int64_t capacity);

namespace detail {

bool has_param(const CausalLM& model, const std::string& name) {
  return model.named_parameters(/*recurse=*/true).find(name) != nullptr;
}

at::Tensor param(const CausalLM& model, const std::string& name) {
  const at::Tensor* t = model.named_parameters(true).find(name);
  if (t == nullptr)
    throw Error(model.config().path.string() + ": the loaded model has no parameter '" + name + "'",
                "the inference engine reads the parameters by their Hugging Face names");
  return *t;
}

at::Tensor fuse_rows(const std::vector<at::Tensor>& parts) {
  at::NoGradGuard no_grad;
  at::Tensor fused = at::cat(parts, 0);
  int64_t offset = 0;
  for (at::Tensor part : parts) {  // a handle to the same TensorImpl as the model's parameter
    const int64_t rows = part.size(0);
    part.set_(fused.narrow(0, offset, rows));
    offset += rows;
  }
  return fused;
}

Nf4Weight plain_absmax(const Nf4Weight& w) {
  if (!w.double_quant) return w;
  Nf4Weight p = w;
  p.absmax = w.decoded_absmax();
  p.double_quant = false;
  p.absmax_q = p.absmax_scale = at::Tensor();
  p.absmax_offset = 0.0f;
  return p;
}

std::vector<Nf4Weight> fuse_nf4_rows(const std::vector<Nf4Weight>& parts) {
  std::vector<Nf4Weight> plain;
  for (const auto& w : parts) plain.push_back(plain_absmax(w));
  const Nf4Weight& first = plain.front();
  bool whole_blocks = first.shape.size() == 2 && first.shape[1] % first.block_size == 0;
  for (const auto& w : plain)
    whole_blocks = whole_blocks && w.block_size == first.block_size &&
                   w.shape == std::vector<int64_t>{w.shape[0], first.shape[1]};
  if (!whole_blocks || plain.size() == 1) return plain;
  std::vector<at::Tensor> codes, absmax;
  Nf4Weight fused = first;
  fused.shape[0] = 0;
  for (const auto& w : plain) {
    codes.push_back(w.codes);
    absmax.push_back(w.absmax);
    fused.shape[0] += w.shape[0];
  }
  fused.codes = fuse_rows(codes);
  // A double-quantized part's decoded absmax is the decoder's own copy; re-pointing it costs nothing either.
  fused.absmax = fuse_rows(absmax);
  return {fused};
}

}  // namespace detail

int64_t Projection::in_features() const {
  if (!nf4.empty()) return nf4.front().shape[1];
  return in_out ? weight.size(0) : weight.size(1);
}

int64_t Projection::out_features() const {
  if (nf4.empty()) return in_out ? weight.size(1) : weight.size(0);
  int64_t rows = 0;
  for (const auto& part : nf4) rows += part.shape[0];
  return rows;
}

at::Tensor Projection::apply(const at::Tensor& x, bool lora_on, const at::Tensor& residual) const {
  at::Tensor y;
  if (!nf4.empty()) {
    // The 4-bit base: the fused dequantize-GEMV for one token on CUDA, dequantize + GEMM otherwise.
    std::vector<at::Tensor> outs;
    for (const auto& part : nf4) outs.push_back(nf4_matmul(x, part));
    y = outs.size() == 1 ? outs.front() : at::cat(outs, 1);
    if (residual.defined()) y.add_(residual);
    if (bias.defined()) y.add_(bias);
  } else if (residual.defined()) {
    const at::Tensor w = in_out ? weight : weight.t();
    y = at::addmm(residual, x, w);  // residual + x·Wᵀ in one GEMM epilogue
    if (bias.defined()) y.add_(bias);
  } else {
    const at::Tensor w = in_out ? weight : weight.t();
    y = bias.defined() ? at::addmm(bias, x, w) : at::mm(x, w);
  }
  if (lora_on && lora_a.defined()) y = at::addmm(y, at::mm(x, lora_a.t()), lora_b.t());
  return y;
}

Decoder::Decoder(const CausalLM& model, int64_t capacity, int64_t kv_heads, int64_t head_dim)
    : config_(model.config()),
      device_(model.device()),
      dtype_(model.dtype()),
      cache_(config_.num_layers, kv_heads, head_dim, capacity,
             at::TensorOptions().dtype(model.dtype()).device(model.device())),
      kv_heads_(kv_heads),
      head_dim_(head_dim) {
  // The tie decides, as in transformers: a tied model's head is its embedding even if lm_head.weight was
  // saved.
  if (config_.tie_word_embeddings || !detail::has_param(model, "lm_head.weight"))
    head_ = detail::param(model, std::string(architecture(config_.family).embedding));
  else
    head_ = detail::param(model, "lm_head.weight");
  slot_index_ = at::arange(capacity, at::TensorOptions().dtype(at::kLong).device(device_));
  for (const auto& p : model.parameters(true))
    weight_bytes_ += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& b : model.named_buffers(true))  // a 4-bit base's codes and absmax (QLoRA)
    if (b.key().find("_nf4_") != std::string::npos)
      weight_bytes_ += b.value().numel() * static_cast<int64_t>(b.value().element_size());
}

std::unique_ptr<Decoder> Decoder::create(CausalLM& model, int64_t capacity) {
  if (capacity <= 0) throw Error("the KV cache needs a positive capacity, got " + std::to_string(capacity));
  return architecture(model.config().family).block == Block::Gpt2 ? make_gpt2_decoder(model, capacity)
                                                                  : make_llama_decoder(model, capacity);
}

at::Tensor Decoder::prefill(const at::Tensor& ids, int64_t start, bool all_logits) {
  const int64_t t = ids.size(0);
  if (start < 0 || start + t > capacity())
    throw Error("the conversation needs " + std::to_string(start + t) + " positions but the KV cache holds " +
                    std::to_string(capacity()),
                "start a new conversation, or load the model with a longer context");
  at::NoGradGuard no_grad;
  Attend a;
  a.positions = at::arange(start, start + t, at::TensorOptions().dtype(at::kLong).device(device_));
  a.start = start;
  a.keys = start + t;
  at::Tensor h = hidden(ids.to(device_, at::kLong), a);
  if (!all_logits) h = h.narrow(0, t - 1, 1);
  return head_logits(h);
}

at::Tensor Decoder::head_logits(const at::Tensor& h) const {
  at::Tensor logits = at::mm(h, head_.t());
  return config_.final_softcap > 0 ? soft_cap(logits, config_.final_softcap) : logits;
}

at::Tensor Decoder::decode(const at::Tensor& ids, const at::Tensor& positions, int64_t keys) {
  at::NoGradGuard no_grad;
  Attend a;
  a.positions = positions;
  a.keys = keys;
  a.decode = true;
  if (decode_uses_mask()) {
    // Additive mask over the `keys` slots: 0 where slot j is at or before the position (and, with a sliding
    // window, less than `window` behind it), -inf elsewhere. Built from the device position so a graph
    // replays it.
    at::Tensor behind = positions - slot_index_.narrow(0, 0, keys);
    const at::Tensor causal = behind >= 0;
    auto additive = [&](const at::Tensor& allowed) {
      return at::zeros({keys}, at::TensorOptions().dtype(dtype_).device(device_))
          .masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
    };
    a.mask = additive(causal);
    if (const int64_t window = config_.sliding_window.value_or(0); window > 0)
      a.local_mask = additive(causal & (behind < window));
  }
  return head_logits(hidden(ids, a));
}

at::Tensor Decoder::attention(const at::Tensor& qkv, at::Tensor& layer_cache, int64_t heads,
                              int64_t sliding_window, const Attend& a) const {
  const int64_t t = qkv.size(0), kv = kv_heads_, d = head_dim_, n_rep = heads / kv_heads_;
  at::Tensor split = qkv.view({t, heads + 2 * kv, d});
  // K and V of the new tokens, [2, kv, T, d], into their slots in one copy.
  at::Tensor new_kv = split.narrow(1, heads, 2 * kv).view({t, 2, kv, d}).permute({1, 2, 0, 3});
  layer_cache.index_copy_(2, a.positions, new_kv);
  at::Tensor k = layer_cache[0].narrow(1, 0, a.keys);  // [kv, keys, d]
  at::Tensor v = layer_cache[1].narrow(1, 0, a.keys);
  const double scale = config_.attention_scale(), softcap = config_.attn_softcap;

  if (a.decode) {
    // The n_rep query heads that share a KV head attend as n_rep rows of one batch entry: GQA without
    // repeating the cache, and batched GEMMs that spread over the whole context (a fused kernel would use one
    // block per head).
    at::Tensor q = split.narrow(1, 0, heads).reshape({kv, n_rep, d});
    const at::Tensor& mask = sliding_window > 0 ? a.local_mask : a.mask;
    at::Tensor scores =
        softcap > 0 ? soft_cap(at::bmm(q, k.transpose(1, 2)) * scale, softcap) + mask.view({1, 1, a.keys})
                    : at::baddbmm(mask.view({1, 1, a.keys}), q, k.transpose(1, 2), 1.0, scale);
    // Softmax computed in fp32 and rounded to the activations' dtype, as transformers does. On CUDA the
    // kernel accumulates half-precision inputs in fp32 itself, so one launch gives the same values as the two
    // below (LibTorch's CPU softmax has no fp16 kernel in 1.13).
    at::Tensor probs =
        qkv.is_cuda() ? at::softmax(scores, -1) : at::softmax(scores, -1, at::kFloat).to(qkv.scalar_type());
    return at::bmm(probs, v).view({1, heads * d});
  }

  at::Tensor q = split.narrow(1, 0, heads).transpose(0, 1).unsqueeze(0);  // [1, heads, T, d]
  at::Tensor kr = repeat_kv(k.unsqueeze(0), n_rep), vr = repeat_kv(v.unsqueeze(0), n_rep);
  at::Tensor out;
  if (softcap > 0) {
    // The new tokens are the last T of the `keys` slots, as causal_attention takes them.
    out = causal_attention(q, kr, vr, sliding_window, {}, scale, softcap);
  } else if (a.start == 0 && (sliding_window <= 0 || a.keys <= sliding_window)) {
    out = forja::compat::sdpa(q, kr, vr, {}, /*is_causal=*/true, scale);
  } else {
    // New token i sits at position start + i and sees slots j with 0 <= start + i - j (< window).
    at::Tensor qi = a.positions.unsqueeze(1);
    at::Tensor kj = slot_index_.narrow(0, 0, a.keys).unsqueeze(0);
    at::Tensor behind = qi - kj;
    at::Tensor allowed = behind >= 0;
    if (sliding_window > 0) allowed = allowed & (behind < sliding_window);
    out = forja::compat::sdpa(q, kr, vr, allowed, /*is_causal=*/false, scale);
  }
  return out.squeeze(0).transpose(0, 1).reshape({t, heads * d});
}

void Decoder::clear_adapter() {
  for (auto& np : projections()) {
    np.projection->lora_a = at::Tensor();
    np.projection->lora_b = at::Tensor();
  }
  has_adapter_ = adapter_on_ = false;
}

void Decoder::set_adapter(const PeftAdapter& adapter) {
  clear_adapter();
  const std::string where = adapter.dir.string();
  size_t used = 0;
  auto opts = at::TensorOptions().dtype(dtype_).device(device_);
  for (auto& np : projections()) {
    Projection& p = *np.projection;
    // Which parts carry an adapter, and the rows each part covers in the fused output.
    std::vector<const LoraModule*> mods;
    int64_t rank_total = 0;
    for (const auto& name : np.parts) {
      auto it = adapter.modules.find(name);
      mods.push_back(it == adapter.modules.end() ? nullptr : &it->second);
      if (it != adapter.modules.end()) rank_total += it->second.a.size(0), ++used;
    }
    if (rank_total == 0) continue;
    at::Tensor a_all = at::zeros({rank_total, p.in_features()}, opts);
    at::Tensor b_all =
        at::zeros({p.out_features(), rank_total}, opts);  // block-diagonal over the fused parts
    int64_t r0 = 0, row0 = 0;
    for (size_t i = 0; i < np.parts.size(); ++i) {
      const LoraModule* m = mods[i];
      const int64_t rows = np.rows[i];
      if (m != nullptr) {
        if (m->a.size(1) != p.in_features() || m->b.size(0) != rows)
          throw Error(where + ": the adapter's " + np.parts[i] + " maps " + std::to_string(m->a.size(1)) +
                          " -> " + std::to_string(m->b.size(0)) +
                          " features but the model's projection maps " + std::to_string(p.in_features()) +
                          " -> " + std::to_string(rows),
                      "the adapter was trained on a different base model");
        const int64_t r = m->a.size(0);
        a_all.narrow(0, r0, r).copy_(m->a);
        // PEFT's scale folded into B, applied in fp32 before the cast to the model's dtype.
        b_all.narrow(0, row0, rows).narrow(1, r0, r).copy_(m->b.to(at::kFloat) * adapter.scale);
        r0 += r;
      }
      row0 += rows;
    }
    p.lora_a = a_all;
    p.lora_b = b_all;
  }
  if (used != adapter.modules.size()) {
    for (const auto& [name, m] : adapter.modules) {
      bool found = false;
      for (auto& np : projections())
        for (const auto& part : np.parts) found = found || part == name;
      if (!found) {
        clear_adapter();
        throw Error(where + ": the adapter has weights for '" + name + "', which this " +
                        family_name(config_.family) + " model does not have",
                    "the adapter was trained on a different base model");
      }
    }
  }
  has_adapter_ = true;
  adapter_on_ = true;
}

}  // namespace forja::infer
