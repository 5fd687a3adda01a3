#include "gguf_export.h"

#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "causal_lm.h"
#include "forja/architecture.h"
#include "forja/error.h"
#include "forja/ggml_quant.h"
#include "forja/tokenizer.h"
#include "tokenizer/gguf_vocab.h"

namespace forja::exporter {
namespace {
namespace fs = std::filesystem;

std::string bytes_of(const at::Tensor& t, io::GgufType type) {
  const at::ScalarType st = type == io::GgufType::F32   ? at::kFloat
                            : type == io::GgufType::F16 ? at::kHalf
                                                        : at::kBFloat16;
  const at::Tensor c = t.detach().to(at::kCPU).to(st).contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

// A tensor's bytes in the file: as it is in F32 / F16 / BF16, or quantized from its fp32 values, which are
// converted into `scratch`: one buffer for the whole file, so its pages are faulted in once, not per tensor.
std::string tensor_bytes(const at::Tensor& t, io::GgufType type, bool quantized, const std::string& name,
                         std::vector<float>& scratch) {
  if (!quantized || type == io::GgufType::F32) return bytes_of(t, type);
  const auto n = static_cast<size_t>(t.numel());
  if (scratch.size() < n) scratch.resize(n);
  at::from_blob(scratch.data(), t.sizes(), at::kFloat).copy_(t.detach());
  const int64_t cols = t.size(-1);
  return quant::quantize_rows(type, {scratch.data(), n}, static_cast<int64_t>(n) / cols, cols,
                              "GGUF tensor " + name);
}

// What the exporter does to a checkpoint tensor before writing it (a reordering, a scale), applied when that
// tensor is written, so that one transformed copy at a time is in memory.
using Transform = std::function<at::Tensor(const at::Tensor&)>;

// HF's q/k rows are [heads, 2, d/2] halves (rotate_half); llama.cpp's "llama" RoPE rotates adjacent pairs, so
// its rows are [heads, d/2, 2]: the reordering llama.cpp's converter applies.
at::Tensor interleave_rope_rows(const at::Tensor& w, int64_t heads) {
  const auto shape = w.sizes().vec();
  return w.reshape({heads, 2, shape[0] / heads / 2, -1}).transpose(1, 2).reshape(shape);
}

// llama3 RoPE: the per-frequency divisors llama.cpp reads from a rope_freqs tensor (its converter computes
// them the same way from rope_scaling).
at::Tensor llama3_rope_factors(const RopeConfig& r, int64_t head_dim) {
  std::vector<float> f;
  const double old_ctx = static_cast<double>(r.original_max_position_embeddings);
  const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(r.theta, static_cast<double>(i) / static_cast<double>(head_dim));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      f.push_back(static_cast<float>(r.factor));
    } else {
      const double smooth =
          (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      f.push_back(static_cast<float>(1.0 / ((1 - smooth) / r.factor + smooth)));
    }
  }
  return at::tensor(f);
}

// GPT-2 under llama.cpp's "gpt2" names. Its Conv1D weights are stored [in, out]: written as [out, in], as
// every other matrix; the LM head is the token embedding, written again as output.weight (llama.cpp's
// converter does the same).
template <typename Take, typename Add>
void add_gpt2_tensors(const ModelConfig& c, Take&& take, Add&& add) {
  add("token_embd.weight", take("transformer.wte.weight"));
  add("position_embd.weight", take("transformer.wpe.weight"));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string hf = "transformer.h." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    const std::pair<const char*, const char*> parts[] = {
        {"ln_1", "attn_norm"}, {"attn.c_attn", "attn_qkv"}, {"attn.c_proj", "attn_output"},
        {"ln_2", "ffn_norm"},  {"mlp.c_fc", "ffn_up"},      {"mlp.c_proj", "ffn_down"}};
    for (const auto& [from, to] : parts) {
      at::Tensor weight = take(hf + from + ".weight");
      add(g + to + ".weight", weight.dim() == 2 ? weight.t() : weight);
      add(g + to + ".bias", take(hf + from + ".bias"));
    }
  }
  add("output_norm.weight", take("transformer.ln_f.weight"));
  add("output_norm.bias", take("transformer.ln_f.bias"));
  add("output.weight", take("transformer.wte.weight"));
}

// One layer's tensor under llama.cpp's name and the Hugging Face one, and what the exporter does to it: a
// matrix or norm as it is; Gemma's norms as (1 + w), as llama.cpp's converter writes them; q (or, where
// Gemma 3 normalizes each head of q, that norm) scaled so that llama.cpp's fixed attention scale is the
// config's.
enum class Part { AsIs, UnitNorm, Q, QNorm, KNorm };
struct LayerTensor {
  const char* gguf;
  const char* hf;
  Part part = Part::AsIs;
};

constexpr LayerTensor kGemmaLayer[] = {{"attn_norm", "input_layernorm", Part::UnitNorm},
                                       {"attn_q", "self_attn.q_proj", Part::Q},
                                       {"attn_k", "self_attn.k_proj"},
                                       {"attn_v", "self_attn.v_proj"},
                                       {"attn_output", "self_attn.o_proj"},
                                       {"attn_q_norm", "self_attn.q_norm", Part::QNorm},
                                       {"attn_k_norm", "self_attn.k_norm", Part::KNorm},
                                       {"post_attention_norm", "post_attention_layernorm", Part::UnitNorm},
                                       {"ffn_norm", "pre_feedforward_layernorm", Part::UnitNorm},
                                       {"ffn_gate", "mlp.gate_proj"},
                                       {"ffn_up", "mlp.up_proj"},
                                       {"ffn_down", "mlp.down_proj"},
                                       {"post_ffw_norm", "post_feedforward_layernorm", Part::UnitNorm}};

// Phi-3's fused projections are written as they are: q, k, v rows; gate rows, then up.
constexpr LayerTensor kPhi3Layer[] = {
    {"attn_norm", "input_layernorm"},    {"attn_qkv", "self_attn.qkv_proj"},
    {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_up", "mlp.gate_up_proj"},      {"ffn_down", "mlp.down_proj"}};

// Gemma 2 and 3 under llama.cpp's "gemma2" / "gemma3"; Phi-3 under "phi3", with longrope's two factor sets as
// the global tensors llama.cpp reads.
template <typename Take, typename Add>
void add_layered_tensors(const ModelConfig& c, const GgufLayout& layout, std::span<const LayerTensor> layer,
                         Take&& take, Add&& add) {
  const bool unit_norms = c.gemma_norms;
  add("token_embd.weight", take("model.embed_tokens.weight"));
  if (c.rope.type == "longrope") {
    const std::vector<float> long_f(c.rope.long_factor.begin(), c.rope.long_factor.end());
    const std::vector<float> short_f(c.rope.short_factor.begin(), c.rope.short_factor.end());
    add("rope_factors_long.weight", at::tensor(long_f));
    add("rope_factors_short.weight", at::tensor(short_f));
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    for (const LayerTensor& t : layer) {
      const bool qk_norm = t.part == Part::QNorm || t.part == Part::KNorm;
      if (qk_norm && !c.qk_norm) continue;
      const bool unit = t.part == Part::UnitNorm || qk_norm;
      const double scale = t.part == Part::QNorm || (t.part == Part::Q && !c.qk_norm) ? layout.q_scale : 1.0;
      Transform f;
      if (unit || scale != 1.0)
        f = [unit, scale](const at::Tensor& w) {
          at::Tensor x = unit ? w.to(at::kFloat) + 1 : w;
          return scale != 1.0 ? x.to(at::kFloat) * scale : x;
        };
      add(g + t.gguf + ".weight", take(hf + t.hf + ".weight"), f);
    }
  }
  add("output_norm.weight", take("model.norm.weight"),
      unit_norms ? Transform([](const at::Tensor& w) { return w.to(at::kFloat) + 1; }) : Transform());
  if (!c.tie_word_embeddings) add("output.weight", take("lm_head.weight"));
}

}  // namespace

GgufLayout gguf_layout(const ModelConfig& c) {
  const Architecture& a = architecture(c.family);
  const std::string where = c.path.string() + ": ";
  if (a.gguf_arch.empty())
    throw Error(where + "GGUF export is not written for " + std::string(a.name) + " models yet",
                "Export a Hugging Face folder (--format hf); llama.cpp's convert_hf_to_gguf.py reads it.");
  GgufLayout layout;
  const bool gemma = c.family == Family::Gemma2 || c.family == Family::Gemma3;
  const std::string fix = "Export a Hugging Face folder (--format hf) instead.";
  if (c.family == Family::Phi3 && c.num_heads * c.head_dim != c.hidden_size)
    throw Error(where +
                    "llama.cpp's Phi-3 takes q as wide as the hidden size, and here heads × head_dim is " +
                    std::to_string(c.num_heads * c.head_dim) + ", not " + std::to_string(c.hidden_size),
                fix);
  if (!gemma) return layout;
  // llama.cpp scales q by 1/sqrt(head_dim), or by 1/sqrt(hidden / heads) for the 27B models it knows by
  // their layer count; the ratio to query_pre_attn_scalar's scale is folded into the weights.
  const bool llama_cpp_27b = c.num_layers == (c.family == Family::Gemma2 ? 46 : 62);
  const double llama_cpp_scale =
      1.0 / std::sqrt(static_cast<double>(llama_cpp_27b ? c.hidden_size / c.num_heads : c.head_dim));
  layout.q_scale = c.attention_scale() / llama_cpp_scale;
  // Its local layers are those with i % period < period - 1 (one global layer closing each period).
  const int64_t layers = c.num_layers;
  for (int64_t p = 1; p <= layers + 1; ++p) {
    bool fits = true;
    for (int64_t i = 0; i < layers && fits; ++i) fits = c.local_layer(i) == (i % p < p - 1);
    if (fits) {
      layout.swa_period = static_cast<uint32_t>(p);
      break;
    }
  }
  if (layout.swa_period == 0)
    throw Error(where +
                    "llama.cpp knows Gemma's local layers only as a repeating pattern closed by one "
                    "global layer, and this model's layer_types follow none",
                fix);
  if (c.family == Family::Gemma2) {
    // Its Gemma 2 graph always caps the scores and the logits, and always reuses the embedding as the head.
    if (c.attn_softcap <= 0 || c.final_softcap <= 0)
      throw Error(where +
                      "llama.cpp always soft-caps Gemma 2's attention scores and logits, and this "
                      "config turns a cap off",
                  fix);
    if (!c.tie_word_embeddings)
      throw Error(where +
                      "llama.cpp reads Gemma 2's output layer as the token embedding, and this model "
                      "has its own (tie_word_embeddings is false)",
                  fix);
  } else if (c.attn_softcap > 0) {
    throw Error(where + "llama.cpp's Gemma 3 has no attention soft-cap, and this config sets one", fix);
  }
  // The local layers keep their own base, unscaled; the scaling applies to the global ones alone (Gemma 3),
  // or to all as one RoPE (Gemma 2).
  const RopeConfig& global = c.rope;
  if (global.type != "default" && global.type != "linear")
    throw Error(where + "llama.cpp's Gemma takes linear RoPE scaling only, not " + global.type, fix);
  if (c.rope_local && c.rope_local->type != "default")
    throw Error(where + "llama.cpp's Gemma 3 does not scale the local layers' RoPE, and this config does (" +
                    c.rope_local->type + ")",
                fix);
  return layout;
}

uint64_t write_gguf(const CausalLM& model, const fs::path& model_dir, const fs::path& out_file,
                    quant::GgufFileType file_type, const std::string& name, const GgufTensorHook& on_tensor,
                    std::vector<std::string>* notes) {
  const ModelConfig& c = model.config();
  const Architecture& a = architecture(c.family);
  const GgufLayout layout = gguf_layout(c);
  const std::string arch(a.gguf_arch);
  const bool gemma = c.family == Family::Gemma2 || c.family == Family::Gemma3;
  const tokenizer::GgufVocab vocab = tokenizer::read_gguf_vocab(model_dir, c.vocab_size);
  const Tokenizer tok = Tokenizer::load(model_dir.string());
  const TokenizerInfo& info = tok.info();

  io::GgufWriter w;
  w.set("general.architecture", arch);
  w.set("general.name", name);
  w.set("general.file_type", static_cast<uint32_t>(file_type));  // llama_ftype
  const bool quantized = quant::is_quantized_file_type(file_type);
  if (quantized) w.set("general.quantization_version", uint32_t{2});  // ggml's GGML_QNT_VERSION
  // llama.cpp's "llama" and "phi3" attend to the whole context: a sliding-window model (Mistral v0.1,
  // Phi-3-mini-4k) is only the same model within its window, so that is the context the file declares. Its
  // Gemma has the local layers' window.
  int64_t context = c.max_position_embeddings;
  if (!gemma && c.sliding_window && *c.sliding_window < context) {
    context = *c.sliding_window;
    if (notes)
      notes->push_back(
          "llama.cpp has no sliding-window attention for this architecture; the GGUF's context length is the "
          "window, " +
          std::to_string(context) + " tokens, within which it computes what the model does");
  }
  w.set(arch + ".context_length", static_cast<uint32_t>(context));
  w.set(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set(arch + ".block_count", static_cast<uint32_t>(c.num_layers));
  w.set(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set(arch + ".attention.head_count", static_cast<uint32_t>(c.num_heads));
  w.set(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (a.block == Block::Gpt2) {
    w.set(arch + ".attention.layer_norm_epsilon", static_cast<float>(c.norm_eps));
  } else {
    w.set(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_kv_heads));
    w.set(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.set(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
    w.set(arch + ".rope.dimension_count", static_cast<uint32_t>(c.head_dim));
    w.set(arch + ".rope.freq_base", static_cast<float>(c.rope.theta));
    w.set(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
    if (c.rope.type == "linear") {
      w.set(arch + ".rope.scaling.type", std::string("linear"));
      w.set(arch + ".rope.scaling.factor", static_cast<float>(c.rope.factor));
    }
  }
  if (gemma) {
    if (c.sliding_window) w.set(arch + ".attention.sliding_window", static_cast<uint32_t>(*c.sliding_window));
    w.set(arch + ".attention.sliding_window_pattern", layout.swa_period);
    w.set(arch + ".rope.freq_base_swa",
          static_cast<float>(c.rope_local ? c.rope_local->theta : c.rope.theta));
    if (c.attn_softcap > 0) w.set(arch + ".attn_logit_softcapping", static_cast<float>(c.attn_softcap));
    if (c.final_softcap > 0) w.set(arch + ".final_logit_softcapping", static_cast<float>(c.final_softcap));
  }
  if (c.rope.type == "longrope") {
    w.set(arch + ".rope.scaling.original_context_length",
          static_cast<uint32_t>(c.rope.original_max_position_embeddings));
    w.set(arch + ".rope.scaling.attn_factor", static_cast<float>(c.rope.attention_factor));
    if (notes)
      notes->push_back(
          "llama.cpp takes Phi-3's long RoPE factors for every position once its context is longer "
          "than " +
          std::to_string(c.rope.original_max_position_embeddings) +
          " tokens, and the short ones otherwise; transformers switches when a sequence passes "
          "that length");
  }

  w.set("tokenizer.ggml.model", vocab.model);
  if (vocab.model == "gpt2") w.set("tokenizer.ggml.pre", vocab.pre);
  w.set("tokenizer.ggml.tokens", vocab.tokens);
  if (vocab.model == "llama") w.set("tokenizer.ggml.scores", vocab.scores);
  w.set("tokenizer.ggml.token_type", vocab.types);
  if (vocab.model == "gpt2") w.set("tokenizer.ggml.merges", vocab.merges);
  if (vocab.model == "llama") w.set("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  // BOS / EOS at the ends of an encoding, as the Hugging Face tokenizer adds them.
  const std::vector<TokenId> with = tok.encode("a", true), without = tok.encode("a", false);
  // The special token an encoding starts (ends) with that the plain encoding lacks: BOS (EOS) as the
  // tokenizer adds it, whether or not a tokenizer_config.json names it.
  const size_t extra = with.size() - without.size();
  const bool adds_bos =
      extra > 0 && tok.is_special(with.front()) && (!info.bos_id || with.front() == *info.bos_id);
  const bool adds_eos = extra > (adds_bos ? 1u : 0u) && tok.is_special(with.back()) &&
                        (!info.eos_id || with.back() == *info.eos_id);
  auto id_of = [&](const std::optional<TokenId>& known, const char* piece) -> std::optional<int64_t> {
    if (known) return *known;
    if (auto id = tok.piece_to_id(piece)) return *id;
    return std::nullopt;
  };
  std::optional<int64_t> bos = adds_bos ? std::optional<int64_t>(with.front()) : id_of(info.bos_id, "<s>");
  std::optional<int64_t> eos = id_of(info.eos_id, "</s>");
  if (!eos && !c.eos_token_ids.empty()) eos = c.eos_token_ids.front();
  const std::optional<int64_t> unk = id_of(info.unk_id, "<unk>");
  if (bos) w.set("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*bos));
  if (eos) w.set("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eos));
  if (info.pad_id) w.set("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*info.pad_id));
  if (unk) w.set("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(*unk));
  w.set("tokenizer.ggml.add_bos_token", adds_bos);
  w.set("tokenizer.ggml.add_eos_token", adds_eos);
  if (info.chat_template) w.set("tokenizer.chat_template", *info.chat_template);

  // The tensors, by their Hugging Face names.
  std::map<std::string, at::Tensor> p;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) p[item.key()] = item.value();
  auto take = [&](const std::string& hf) {
    auto it = p.find(hf);
    if (it == p.end()) throw Error("GGUF export: the model has no parameter " + hf);
    return it->second;
  };
  // The tensors are gathered first: a quantized mix picks each one's type knowing them all (is the LM head
  // tied, how many layers).
  struct Source {
    std::string name;
    at::Tensor tensor;  // as the model holds it (a view of the mapped checkpoint, unless merged or converted)
    Transform transform;  // shape-preserving
  };
  std::vector<Source> tensors;
  auto add = [&](const std::string& gguf_name, at::Tensor t, Transform f = {}) {
    tensors.push_back({gguf_name, std::move(t), std::move(f)});
  };
  // Matrices in the chosen type; norms, biases and the RoPE factors in F32, as llama.cpp's converter does. A
  // quantized file takes llama-quantize's type for each tensor, quantized from its fp32 values one tensor at
  // a time on all cores.
  auto write = [&] {
    std::vector<quant::MixTensor> mix;
    for (const Source& s : tensors) mix.push_back({s.name, s.tensor.sizes().vec()});
    const std::vector<io::GgufType> types = quant::assign_quant_types(file_type, mix, c.num_layers);
    std::vector<float> scratch;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const io::GgufType tt = types[i];
      const Source& s = tensors[i];
      w.add_tensor({s.name, s.tensor.sizes().vec(), tt, [&s, tt, i, quantized, &on_tensor, &w, &scratch] {
                      if (on_tensor) on_tensor(i, w.tensor_count());
                      const std::string bytes = tensor_bytes(s.transform ? s.transform(s.tensor) : s.tensor,
                                                             tt, quantized, s.name, scratch);
                      // Done with this checkpoint tensor: its pages of the mapped file need not stay
                      // resident.
                      if (s.tensor.device().is_cpu())
                        io::release_pages(s.tensor.storage().data(), s.tensor.storage().nbytes());
                      return bytes;
                    }});
    }
    w.write(out_file);
    return fs::file_size(out_file);
  };
  if (a.block == Block::Gpt2) {
    add_gpt2_tensors(c, take, add);
    return write();
  }
  if (gemma || c.family == Family::Phi3) {
    add_layered_tensors(c, layout, gemma ? std::span<const LayerTensor>(kGemmaLayer) : kPhi3Layer, take, add);
    return write();
  }
  add("token_embd.weight", take("model.embed_tokens.weight"));
  if (c.rope.type == "llama3") add("rope_freqs.weight", llama3_rope_factors(c.rope, c.head_dim));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    at::Tensor q = take(hf + "self_attn.q_proj.weight"), k = take(hf + "self_attn.k_proj.weight");
    auto interleave = [&](int64_t heads) {
      return a.gguf_interleaved_rope
                 ? Transform([heads](const at::Tensor& w) { return interleave_rope_rows(w, heads); })
                 : Transform();
    };
    add(g + "attn_norm.weight", take(hf + "input_layernorm.weight"));
    add(g + "attn_q.weight", q, interleave(c.num_heads));
    add(g + "attn_k.weight", k, interleave(c.num_kv_heads));
    add(g + "attn_v.weight", take(hf + "self_attn.v_proj.weight"));
    add(g + "attn_output.weight", take(hf + "self_attn.o_proj.weight"));
    if (c.qk_norm) {
      add(g + "attn_q_norm.weight", take(hf + "self_attn.q_norm.weight"));
      add(g + "attn_k_norm.weight", take(hf + "self_attn.k_norm.weight"));
    }
    if (c.qkv_bias) {
      at::Tensor qb = take(hf + "self_attn.q_proj.bias"), kb = take(hf + "self_attn.k_proj.bias");
      if (a.gguf_interleaved_rope)
        qb = interleave_rope_rows(qb.unsqueeze(1), c.num_heads).squeeze(1),
        kb = interleave_rope_rows(kb.unsqueeze(1), c.num_kv_heads).squeeze(1);
      add(g + "attn_q.bias", qb);
      add(g + "attn_k.bias", kb);
      add(g + "attn_v.bias", take(hf + "self_attn.v_proj.bias"));
    }
    if (c.o_bias || c.mlp_bias)
      throw Error("GGUF export does not write output-projection or MLP biases yet",
                  "Export a Hugging Face folder instead (without --format gguf).");
    add(g + "ffn_norm.weight", take(hf + "post_attention_layernorm.weight"));
    add(g + "ffn_gate.weight", take(hf + "mlp.gate_proj.weight"));
    add(g + "ffn_up.weight", take(hf + "mlp.up_proj.weight"));
    add(g + "ffn_down.weight", take(hf + "mlp.down_proj.weight"));
  }
  add("output_norm.weight", take("model.norm.weight"));
  if (!c.tie_word_embeddings) add("output.weight", take("lm_head.weight"));
  return write();
}

}  // namespace forja::exporter
