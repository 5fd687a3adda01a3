#include "gguf_vocab.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "forja/error.h"
#include "forja/file_util.h"
#include "util/json_number.h"

namespace forja::tokenizer {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

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

// ---- SentencePiece's tokenizer.model: the protobuf fields llama.cpp's "llama" tokenizer needs ----
// ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2; NormalizerSpec
// normalizer_spec = 3; }, SentencePiece { string piece = 1; float score = 2; Type type = 3 (NORMAL = 1) },
// TrainerSpec { ModelType model_type = 3 (UNIGRAM = 1, BPE = 2) }, NormalizerSpec { bool add_dummy_prefix = 3
// }.
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

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::string_view data, const fs::path& file) {
  SentencePieceModel m;
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

namespace {

json read_json(const fs::path& file) {
  try {
    return json::parse(read_text_file(file));
  } catch (const json::exception& e) {
    throw Error(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

GgufVocab read_gguf_vocab(const fs::path& dir, int64_t vocab_size) {
  const fs::path json_file = dir / "tokenizer.json", sp_file = dir / "tokenizer.model";
  const bool has_json = fs::exists(json_file), has_sp = fs::exists(sp_file);
  if (!has_json && !has_sp)
    throw Error(
        dir.string() + ": no tokenizer.json or tokenizer.model",
        "GGUF export writes the model's tokenizer too: copy the base model's tokenizer files beside it.");
  const json t = has_json ? read_json(json_file) : json::object();
  if (!t.is_object() || (t.contains("model") && !t["model"].is_object()))
    throw Error(json_file.string() + ": not a tokenizer.json (a JSON object with a \"model\" object)");
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
  GgufVocab v;
  v.tokens.resize(static_cast<size_t>(vocab_size));
  v.types.assign(static_cast<size_t>(vocab_size), kGgufUnused);
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
    if (!model.contains("vocab") || !model["vocab"].is_object())
      throw Error(json_file.string() + ": a BPE model without a vocabulary object");
    for (const auto& [token, id] : model["vocab"].items()) {
      const auto n = json_int(id);
      if (!n)
        throw Error(json_file.string() + ": the vocabulary's token " + token +
                    " has an id that is not a whole number");
      put(token, *n, kGgufNormal);
    }
    for (const auto& m : model.value("merges", json::array()))
      v.merges.push_back(m.is_string() ? m.get<std::string>()
                                       : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  } else {
    const SentencePieceModel sp = parse_sentencepiece_model(read_text_file(sp_file), sp_file);
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
    const auto known = a.is_object() && a.contains("id") ? json_int(a["id"]) : std::nullopt;
    if (!known) throw Error(json_file.string() + ": an added token without a whole-number id");
    const int64_t id = *known;
    if (id >= 0 && id < vocab_size && have[id] && v.tokens[id] == a.value("content", "")) {
      if (a.value("special", false)) v.types[id] = kGgufControl;
      continue;  // a piece of the model marked special
    }
    put(a.value("content", ""), id, a.value("special", false) ? kGgufControl : kGgufUserDefined);
  }
  for (int64_t i = 0; i < vocab_size; ++i)
    if (!have[i]) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  return v;
}

}  // namespace forja::tokenizer
