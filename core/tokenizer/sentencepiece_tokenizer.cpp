// tokenizer.model through libsentencepiece, with the conventions of HF's LlamaTokenizer on top: special
// tokens are matched first, the leading "▁" follows `legacy` (every segment) or not (only the start of the
// text), spaces become "▁", BOS/EOS follow add_bos_token / add_eos_token. The model's own dummy prefix is
// switched off so that Forja decides where "▁" goes, as HF's converted tokenizer does; a model whose
// normalizer collapses whitespace runs as sentencepiece runs it, between the special tokens.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "added_vocab.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "pipeline.h"
#include "sp_processor.h"
#include "tokenizer_impl.h"
#include "utf8.h"

namespace forja {
namespace {

using json = nlohmann::json;
const std::string kSpace = "\xE2\x96\x81";

bool read_varint(const std::string& s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; i < s.size() && shift < 64; shift += 7) {
    const auto b = static_cast<unsigned char>(s[i++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void write_varint(std::string& out, uint64_t v) {
  do {
    unsigned char b = v & 0x7F;
    v >>= 7;
    if (v) b |= 0x80;
    out += static_cast<char>(b);
  } while (v);
}

// Copies a protobuf message, calling keep(field) to decide which fields survive; returns false on damage.
template <typename F>
bool filter_message(const std::string& in, std::string& out, F&& on_field) {
  for (size_t i = 0; i < in.size();) {
    const size_t start = i;
    uint64_t tag = 0;
    if (!read_varint(in, i, tag)) return false;
    const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = tag & 7;
    uint64_t len = 0;
    switch (wire) {
      case 0:
        if (!read_varint(in, i, len)) return false;
        break;
      case 1:
        i += 8;
        break;
      case 5:
        i += 4;
        break;
      case 2:
        if (!read_varint(in, i, len) || i + len > in.size()) return false;
        i += len;
        break;
      default:
        return false;
    }
    if (i > in.size()) return false;
    on_field(field, wire, in.substr(start, i - start), in, i - (wire == 2 ? len : 0), len, out);
  }
  return true;
}

// ModelProto.normalizer_spec (3): add_dummy_prefix (3) and remove_extra_whitespaces (4) set to false.
std::string without_dummy_prefix(const std::string& proto, const std::string& path) {
  std::string out;
  bool ok = filter_message(proto, out,
                           [&](uint32_t field, uint32_t wire, const std::string& raw, const std::string& in,
                               size_t payload, uint64_t len, std::string& o) {
                             if (field != 3 || wire != 2) {
                               o += raw;
                               return;
                             }
                             std::string inner;
                             filter_message(in.substr(payload, len), inner,
                                            [](uint32_t f, uint32_t, const std::string& r, const std::string&,
                                               size_t, uint64_t, std::string& io) {
                                              if (f != 3 && f != 4) io += r;
                                            });
                             inner += std::string("\x18\x00\x20\x00", 4);
                             write_varint(o, (3u << 3) | 2u);
                             write_varint(o, inner.size());
                             o += inner;
                           });
  if (!ok) throw_file_error(path, "is not a valid SentencePiece model (the protobuf is damaged)");
  return out;
}

// What the model's normalizer_spec (ModelProto field 3) says about whitespace: add_dummy_prefix (3) and
// remove_extra_whitespaces (4), both true when absent, as in sentencepiece.proto.
struct WhitespaceRules {
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
};

WhitespaceRules whitespace_rules(const std::string& proto) {
  WhitespaceRules rules;
  std::string unused;
  filter_message(proto, unused,
                 [&](uint32_t field, uint32_t wire, const std::string&, const std::string& in, size_t payload,
                     uint64_t len, std::string&) {
                   if (field != 3 || wire != 2) return;
                   std::string inner_unused;
                   filter_message(in.substr(payload, len), inner_unused,
                                  [&](uint32_t f, uint32_t w, const std::string&, const std::string&, size_t,
                                      uint64_t value, std::string&) {
                                    if (w != 0) return;
                                    if (f == 3) rules.add_dummy_prefix = value != 0;
                                    if (f == 4) rules.remove_extra_whitespaces = value != 0;
                                  });
                 });
  return rules;
}

std::string token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return {};
}

class SentencePieceTokenizer final : public Tokenizer::Impl {
 public:
  SentencePieceTokenizer(const std::string& path, const json& config) : path_(path) {
    // A model that collapses whitespace (sentencepiece's default, nmt_nfkc models) is run as sentencepiece
    // runs it, normalizer, dummy prefix and all, on each stretch between special tokens: HF's "▁" handling
    // assumes spaces survive normalization. Others (Llama 2's identity spec) get HF's conventions.
    const std::string proto = read_text_file(path);
    const WhitespaceRules rules = whitespace_rules(proto);
    native_ = rules.remove_extra_whitespaces;
    const auto status = sp_.LoadFromSerializedProto(native_ ? proto : without_dummy_prefix(proto, path));
    if (!status.ok()) throw_file_error(path, "is not a SentencePiece model: " + status.ToString());

    legacy_ = config.is_object() && config.contains("legacy") && config["legacy"].is_boolean()
                  ? config["legacy"].get<bool>()
                  : true;
    // The leading "▁": tokenizer_config's add_prefix_space when it says, else the model's own dummy prefix.
    const bool configured = !native_ && config.is_object() && config.contains("add_prefix_space") &&
                            config["add_prefix_space"].is_boolean();
    add_prefix_ = configured ? config["add_prefix_space"].get<bool>() : rules.add_dummy_prefix;
    add_bos_ = config.is_object() ? config.value("add_bos_token", true) : true;
    add_eos_ = config.is_object() ? config.value("add_eos_token", false) : false;

    auto add_special = [&](const std::string& content) {
      if (content.empty() || added_.by_content(content)) return;
      const int id = sp_.PieceToId(content);
      if (id == sp_.unk_id() && content != sp_.IdToPiece(sp_.unk_id())) return;
      added_.add({content, id, true, false, false, false, false});
    };
    if (config.is_object() && config.contains("added_tokens_decoder") &&
        config["added_tokens_decoder"].is_object()) {
      for (auto it = config["added_tokens_decoder"].begin(); it != config["added_tokens_decoder"].end();
           ++it) {
        const json& t = it.value();
        AddedToken a;
        a.content = t.value("content", "");
        a.id = static_cast<TokenId>(std::stol(it.key()));
        a.special = t.value("special", false);
        a.lstrip = t.value("lstrip", false);
        a.rstrip = t.value("rstrip", false);
        a.single_word = t.value("single_word", false);
        added_.add(a);
      }
    }
    for (const char* key : {"bos_token", "eos_token", "unk_token"})
      if (config.is_object() && config.contains(key)) add_special(token_content(config[key]));
    for (int id = 0; id < sp_.GetPieceSize(); ++id)
      if (sp_.IsControl(id) || sp_.IsUnknown(id)) add_special(sp_.IdToPiece(id));
    bos_ = config.is_object() && config.contains("bos_token")
               ? piece_to_id(token_content(config["bos_token"]))
               : std::optional<TokenId>(sp_.bos_id());
    eos_ = config.is_object() && config.contains("eos_token")
               ? piece_to_id(token_content(config["eos_token"]))
               : std::optional<TokenId>(sp_.eos_id());
    if (bos_ && *bos_ < 0) bos_.reset();
    if (eos_ && *eos_ < 0) eos_.reset();
    // A tokenizer.model alone names its special tokens itself (tokenizer_config.json, when there, decides).
    if (bos_) info.bos_token = sp_.IdToPiece(*bos_);
    if (eos_) info.eos_token = sp_.IdToPiece(*eos_);
    if (sp_.unk_id() >= 0) info.unk_token = sp_.IdToPiece(sp_.unk_id());

    auto seq = std::make_unique<SequenceDecoder>();
    auto replace = std::make_unique<ReplaceDecoder>();
    replace->from = kSpace;
    replace->to = " ";
    seq->items.push_back(std::move(replace));
    seq->items.push_back(std::make_unique<ByteFallbackDecoder>());
    seq->items.push_back(std::make_unique<FuseDecoder>());
    if (add_prefix_) {
      auto strip = std::make_unique<StripDecoder>();
      strip->start = 1;
      seq->items.push_back(std::move(strip));
    }
    decoder_ = std::move(seq);
    info.backend = "sentencepiece";
  }

  Encoding encode(std::string_view text, bool add_special, bool want_spans) const override {
    Encoding enc;
    if (add_special && add_bos_ && bos_) push(enc, *bos_, 0, 0, want_spans);
    for (const auto& seg : added_.split(text, false)) {
      if (seg.id) {
        push(enc, *seg.id, seg.begin, seg.end, want_spans);
        continue;
      }
      if (native_) {
        encode_native(text.substr(seg.begin, seg.end - seg.begin), seg.begin, enc, want_spans);
        continue;
      }
      // What is handed to sentencepiece, and for each of its bytes the input offset it came from.
      std::string fed;
      std::vector<uint32_t> src;
      const std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
      const bool starts_with_space = !part.empty() && part[0] == ' ';
      const bool prefix = add_prefix_ && (legacy_ ? true : (seg.begin == 0 && !starts_with_space));
      if (prefix) {
        fed = kSpace;
        src.assign(3, static_cast<uint32_t>(seg.begin));
      }
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] == ' ') {
          fed += kSpace;
          src.insert(src.end(), 3, static_cast<uint32_t>(seg.begin + i));
        } else {
          fed += part[i];
          src.push_back(static_cast<uint32_t>(seg.begin + i));
        }
      }
      std::vector<int> ids;
      const auto status = sp_.Encode(fed, &ids);
      if (!status.ok()) throw Error(path_ + ": sentencepiece failed to encode: " + status.ToString());
      size_t at = 0;
      for (int id : ids) {
        size_t len = 1;
        if (sp_.IsByte(id)) {
          len = 1;
        } else if (sp_.IsUnknown(id)) {
          len = at < fed.size() ? utf8::seq_len(static_cast<unsigned char>(fed[at])) : 1;
        } else {
          len = sp_.IdToPiece(id).size();
        }
        const size_t b = at < src.size() ? src[at] : seg.end;
        at = std::min(fed.size(), at + len);
        const size_t e = at < src.size() ? src[at] : seg.end;
        push(enc, id, b, e, want_spans);
      }
    }
    if (add_special && add_eos_ && eos_) push(enc, *eos_, text.size(), text.size(), want_spans);
    return enc;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special, bool raw) const override {
    std::vector<std::string> tokens;
    for (TokenId id : ids) {
      if (const AddedToken* a = added_.by_id(id)) {
        if (!(skip_special && a->special)) tokens.push_back(a->content);
      } else if (id >= 0 && id < sp_.GetPieceSize()) {
        tokens.push_back(sp_.IdToPiece(id));
      }
    }
    decoder_->apply(tokens, raw);
    std::string out;
    for (const auto& t : tokens) out += t;
    return raw ? out : utf8::lossy(out);
  }

  std::string id_to_piece(TokenId id) const override {
    if (const AddedToken* a = added_.by_id(id)) return a->content;
    return id >= 0 && id < sp_.GetPieceSize() ? sp_.IdToPiece(id) : std::string();
  }
  std::optional<TokenId> piece_to_id(std::string_view piece) const override {
    if (const AddedToken* a = added_.by_content(piece)) return a->id;
    const int id = sp_.PieceToId(std::string(piece));
    if (id == sp_.unk_id() && piece != sp_.IdToPiece(sp_.unk_id())) return std::nullopt;
    return id;
  }
  size_t vocab_size() const override {
    size_t n = static_cast<size_t>(sp_.GetPieceSize());
    for (const auto& t : added_.tokens())
      if (t.id >= sp_.GetPieceSize()) ++n;
    return n;
  }
  bool is_special(TokenId id) const override {
    const AddedToken* a = added_.by_id(id);
    return a && a->special;
  }

 private:
  static void push(Encoding& enc, TokenId id, size_t b, size_t e, bool spans) {
    enc.ids.push_back(id);
    if (spans) enc.spans.push_back({b, e});
  }

  // One stretch of text as sentencepiece itself encodes it; its spans map the pieces back to the input.
  void encode_native(std::string_view part, size_t offset, Encoding& enc, bool want_spans) const {
    std::vector<int> ids;
    std::vector<std::pair<size_t, size_t>> spans;
    const auto status = sp_.EncodeWithSpans(part, &ids, &spans);
    if (!status.ok()) throw Error(path_ + ": sentencepiece failed to encode: " + status.ToString());
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t b = std::min(spans[i].first, part.size()), e = std::min(spans[i].second, part.size());
      push(enc, ids[i], offset + b, offset + std::max(b, e), want_spans);
    }
  }

  std::string path_;
  SpProcessor sp_;
  AddedVocab added_;
  DecoderPtr decoder_;
  bool legacy_ = true, add_prefix_ = true, add_bos_ = true, add_eos_ = false;
  bool native_ = false;  // sentencepiece's own normalization and whitespace rules (encode_native)
  std::optional<TokenId> bos_, eos_;
};

}  // namespace

std::unique_ptr<Tokenizer::Impl> make_sentencepiece_tokenizer(const std::string& path, const json& config) {
  return std::make_unique<SentencePieceTokenizer>(path, config);
}

}  // namespace forja
