#include "export_gguf.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/tokenizer.h"

namespace forja::cli {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

// llama.cpp's token types (llama_token_type).
enum : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

// The pre-tokenizer names llama.cpp's BPE tokenizer knows, for the tokenizer.json pre-tokenizers that Forja's
// supported models ship (llama.cpp tells them apart by a hash of their output; here, by their definition).
std::string pre_tokenizer_name(const json& pre, const fs::path& file) {
  const std::string llama3 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const std::string qwen2 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  auto byte_level = [](const json& p, bool use_regex) {
    return p.is_object() && p.value("type", "") == "ByteLevel" && p.value("use_regex", true) == use_regex;
  };
  if (byte_level(pre, true)) return "gpt-2";
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    const json& seq = pre["pretokenizers"];
    if (seq.size() == 2 && seq[0].value("type", "") == "Digits" && seq[0].value("individual_digits", false) &&
        byte_level(seq[1], true))
      return "smollm";
    if (seq.size() == 2 && seq[0].value("type", "") == "Split" && byte_level(seq[1], false)) {
      const std::string regex = seq[0].contains("pattern") ? seq[0]["pattern"].value("Regex", "") : "";
      if (regex == llama3) return "llama-bpe";
      if (regex == qwen2) return "qwen2";
    }
  }
  throw Error(
      file.string() + ": its pre-tokenizer is not one llama.cpp knows by name",
      "GGUF export supports the tokenizers of Llama 3, Qwen2, SmolLM and GPT-2; export a Hugging Face "
      "folder instead (without --format gguf) and convert it with llama.cpp's own script.");
}

struct Vocab {
  std::string model;  // llama.cpp's tokenizer: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // gpt2
  std::string pre;                  // gpt2
  std::vector<float> scores;        // llama
  bool add_space_prefix = true;     // llama
};

// ---- SentencePiece's tokenizer.model: the protobuf fields llama.cpp's "llama" tokenizer needs ----
// ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2; NormalizerSpec
// normalizer_spec = 3; }, SentencePiece { string piece = 1; float score = 2; Type type = 3 (NORMAL = 1) },
// TrainerSpec { ModelType model_type = 3 (UNIGRAM = 1, BPE = 2) }, NormalizerSpec { bool add_dummy_prefix = 3
// }.
struct SpModel {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;  // SentencePiece's Type numbers are llama.cpp's token types
  int model_type = 1;
  bool add_dummy_prefix = true;
};

class Proto {
 public:
  Proto(std::string_view d, const fs::path& file) : d_(d), file_(file) {}
  bool done() const { return pos_ >= d_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail();
      const auto b = static_cast<uint8_t>(d_[pos_++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80u) == 0) return v;
    }
    fail();
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > d_.size() - pos_) fail();
    const std::string_view s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  float fixed32() {
    if (d_.size() - pos_ < 4) fail();
    float f;
    std::memcpy(&f, d_.data() + pos_, 4);
    pos_ += 4;
    return f;
  }
  void skip(uint32_t wire) {
    if (wire == 0) {
      varint();
    } else if (wire == 1) {
      if (d_.size() - pos_ < 8) fail();
      pos_ += 8;
    } else if (wire == 2) {
      bytes();
    } else if (wire == 5) {
      fixed32();
    } else {
      fail();
    }
  }
  [[noreturn]] void fail() const {
    throw Error(file_.string() + ": not a SentencePiece model Forja can read (broken protobuf at byte " +
                std::to_string(pos_) + ")");
  }

 private:
  std::string_view d_;
  const fs::path& file_;
  size_t pos_ = 0;
};

SpModel read_sentencepiece(const fs::path& file) {
  const std::string data = read_text_file(file);
  SpModel m;
  Proto top(data, file);
  while (!top.done()) {
    const uint64_t key = top.varint();
    const auto field = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    if (wire != 2) {
      top.skip(wire);
      continue;
    }
    Proto sub(top.bytes(), file);
    if (field == 1) {
      std::string piece;
      float score = 0;
      int32_t type = 1;
      while (!sub.done()) {
        const uint64_t k = sub.varint();
        if (k == (1 << 3 | 2))
          piece = std::string(sub.bytes());
        else if (k == (2 << 3 | 5))
          score = sub.fixed32();
        else if (k == (3 << 3 | 0))
          type = static_cast<int32_t>(sub.varint());
        else
          sub.skip(static_cast<uint32_t>(k & 7));
      }
      m.pieces.push_back(std::move(piece)), m.scores.push_back(score), m.types.push_back(type);
    } else if (field == 2 || field == 3) {
      while (!sub.done()) {
        const uint64_t k = sub.varint();
        if (field == 2 && k == (3 << 3 | 0))
          m.model_type = static_cast<int>(sub.varint());
        else if (field == 3 && k == (3 << 3 | 0))
          m.add_dummy_prefix = sub.varint() != 0;
        else
          sub.skip(static_cast<uint32_t>(k & 7));
      }
    }
  }
  if (m.pieces.empty()) throw Error(file.string() + ": a SentencePiece model without pieces");
  return m;
}

json read_json(const fs::path& file) {
  try {
    return json::parse(read_text_file(file));
  } catch (const json::exception& e) {
    throw Error(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// The model's vocab_size tokens by id (ids no token has are "[PAD<id>]", unused, as llama.cpp's converter
// writes them) and their types: from tokenizer.json's byte-level BPE (vocabulary, merges, pre-tokenizer), or
// from SentencePiece's tokenizer.model (pieces, scores, types) with tokenizer.json's added tokens on top.
Vocab read_vocab(const fs::path& dir, int64_t vocab_size) {
  const fs::path json_file = dir / "tokenizer.json", sp_file = dir / "tokenizer.model";
  const bool has_json = fs::exists(json_file), has_sp = fs::exists(sp_file);
  if (!has_json && !has_sp)
    throw Error(
        dir.string() + ": no tokenizer.json or tokenizer.model",
        "GGUF export writes the model's tokenizer too: copy the base model's tokenizer files beside it.");
  const json t = has_json ? read_json(json_file) : json::object();
  const json model = t.value("model", json::object());
  const bool byte_level_bpe =
      has_json && model.value("type", "") == "BPE" && !model.value("byte_fallback", false);
  if (!byte_level_bpe && !has_sp)
    throw Error(
        json_file.string() + ": a " + model.value("type", std::string("?")) +
            (model.value("byte_fallback", false) ? " model with byte fallback (SentencePiece style)"
                                                 : " model") +
            " and no tokenizer.model beside it",
        "GGUF export writes byte-level BPE tokenizers (Llama 3, Qwen2, SmolLM, GPT-2) and SentencePiece BPE "
        "models from tokenizer.model (Llama 2, Mistral, TinyLlama).");
  Vocab v;
  v.tokens.resize(static_cast<size_t>(vocab_size));
  v.types.assign(static_cast<size_t>(vocab_size), kUnused);
  std::vector<bool> have(static_cast<size_t>(vocab_size), false);
  const fs::path& source = byte_level_bpe ? json_file : sp_file;
  auto put = [&](const std::string& token, int64_t id, int32_t type) {
    if (id < 0 || id >= vocab_size)
      throw Error(source.string() + ": token " + token + " has id " + std::to_string(id) +
                  ", outside the model's vocabulary of " + std::to_string(vocab_size));
    v.tokens[id] = token, v.types[id] = type, have[id] = true;
  };
  if (byte_level_bpe) {
    v.model = "gpt2";
    v.pre = pre_tokenizer_name(t.value("pre_tokenizer", json()), json_file);
    for (const auto& [token, id] : model["vocab"].items()) put(token, id.get<int64_t>(), kNormal);
    for (const auto& m : model.value("merges", json::array()))
      v.merges.push_back(m.is_string() ? m.get<std::string>()
                                       : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  } else {
    SpModel sp = read_sentencepiece(sp_file);
    if (sp.model_type != 2)
      throw Error(
          sp_file.string() + ": a SentencePiece " + (sp.model_type == 1 ? "unigram" : "word or char") +
              " model",
          "llama.cpp's SentencePiece tokenizer reproduces BPE models; export a Hugging Face folder instead.");
    v.model = "llama";
    v.add_space_prefix = sp.add_dummy_prefix;
    v.scores.assign(static_cast<size_t>(vocab_size), -1000.0f);
    for (size_t i = 0; i < sp.pieces.size(); ++i) {
      put(sp.pieces[i], static_cast<int64_t>(i), sp.types[i]);
      v.scores[i] = sp.scores[i];
    }
  }
  for (const auto& a : t.value("added_tokens", json::array())) {
    const int64_t id = a.value("id", int64_t{-1});
    if (id >= 0 && id < vocab_size && have[id] && v.tokens[id] == a.value("content", "")) {
      if (a.value("special", false)) v.types[id] = kControl;
      continue;  // a piece of the model marked special
    }
    put(a.value("content", ""), id, a.value("special", false) ? kControl : kUserDefined);
  }
  for (int64_t i = 0; i < vocab_size; ++i)
    if (!have[i]) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  return v;
}

std::string bytes_of(const at::Tensor& t, io::GgufType type) {
  const at::ScalarType st = type == io::GgufType::F32   ? at::kFloat
                            : type == io::GgufType::F16 ? at::kHalf
                                                        : at::kBFloat16;
  const at::Tensor c = t.detach().to(at::kCPU).to(st).contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

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

}  // namespace

uint64_t write_gguf(const CausalLM& model, const fs::path& model_dir, const fs::path& out_file,
                    io::GgufType type, const std::string& name) {
  const ModelConfig& c = model.config();
  const std::string arch = c.family == Family::Qwen2 ? "qwen2" : c.family == Family::Gpt2 ? "gpt2" : "llama";
  const Vocab vocab = read_vocab(model_dir, c.vocab_size);
  const Tokenizer tok = Tokenizer::load(model_dir.string());
  const TokenizerInfo& info = tok.info();

  io::GgufWriter w;
  w.set("general.architecture", arch);
  w.set("general.name", name);
  w.set("general.file_type", uint32_t{type == io::GgufType::F32   ? 0u
                                      : type == io::GgufType::F16 ? 1u
                                                                  : 32u});  // llama_ftype
  // llama.cpp's "llama" architecture attends to the whole context: a sliding-window model (Mistral v0.1) is
  // only the same model within its window, so that is the context the file declares.
  int64_t context = c.max_position_embeddings;
  if (c.sliding_window && *c.sliding_window < context) {
    context = *c.sliding_window;
    std::printf(
        "note: llama.cpp has no sliding-window attention for this architecture; the GGUF's context "
        "length is the window, %lld tokens, within which it computes what the model does\n",
        static_cast<long long>(context));
  }
  w.set(arch + ".context_length", static_cast<uint32_t>(context));
  w.set(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set(arch + ".block_count", static_cast<uint32_t>(c.num_layers));
  w.set(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set(arch + ".attention.head_count", static_cast<uint32_t>(c.num_heads));
  w.set(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (arch == "gpt2") {
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
  // Matrices in the chosen type; norms, biases and the RoPE factors in F32, as llama.cpp's converter does.
  auto add = [&](const std::string& gguf_name, at::Tensor t) {
    const io::GgufType tt = t.dim() == 1 ? io::GgufType::F32 : type;
    w.add_tensor({gguf_name, t.sizes().vec(), tt, [t, tt] { return bytes_of(t, tt); }});
  };
  if (arch == "gpt2") {
    add_gpt2_tensors(c, take, add);
    w.write(out_file);
    return fs::file_size(out_file);
  }
  add("token_embd.weight", take("model.embed_tokens.weight"));
  if (c.rope.type == "llama3") add("rope_freqs.weight", llama3_rope_factors(c.rope, c.head_dim));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    at::Tensor q = take(hf + "self_attn.q_proj.weight"), k = take(hf + "self_attn.k_proj.weight");
    if (arch == "llama")
      q = interleave_rope_rows(q, c.num_heads), k = interleave_rope_rows(k, c.num_kv_heads);
    add(g + "attn_norm.weight", take(hf + "input_layernorm.weight"));
    add(g + "attn_q.weight", q);
    add(g + "attn_k.weight", k);
    add(g + "attn_v.weight", take(hf + "self_attn.v_proj.weight"));
    add(g + "attn_output.weight", take(hf + "self_attn.o_proj.weight"));
    if (c.qkv_bias) {
      at::Tensor qb = take(hf + "self_attn.q_proj.bias"), kb = take(hf + "self_attn.k_proj.bias");
      if (arch == "llama")
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
  w.write(out_file);
  return fs::file_size(out_file);
}

}  // namespace forja::cli
