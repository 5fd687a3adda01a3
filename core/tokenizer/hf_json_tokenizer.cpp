// tokenizer.json: builds the pipeline from the file's nodes and runs it. Every node type that Forja does not
// implement is an error naming the file and the type, never a silent fallback.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "added_vocab.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "pipeline.h"
#include "tokenizer_impl.h"
#include "unicode_norm.h"
#include "utf8.h"
#include "util/json_number.h"

namespace forja {
namespace {

using json = nlohmann::json;

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Ctx {
  std::string path;
  bool track = false;
};

[[noreturn]] void bad(const std::string& path, const std::string& what, const std::string& hint = {}) {
  throw_file_error(path, what, hint);
}

std::string type_of(const json& node, const std::string& path, const char* where) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    bad(path, std::string(where) + " node has no \"type\"");
  return node["type"].get<std::string>();
}

// A token id: a whole number that fits TokenId; anything else (a float, a string, 9e127) names the file.
TokenId token_id(const json& v, const std::string& path, const std::string& where) {
  const auto id = json_int(v, 0, std::numeric_limits<TokenId>::max());
  if (!id)
    bad(path, where + " has the id " + v.dump() + ", which is not a whole number from 0 to 2147483647");
  return static_cast<TokenId>(*id);
}

template <typename T>
T get_or(const json& node, const char* key, T fallback) {
  if (!node.contains(key) || node[key].is_null()) return fallback;
  return node[key].get<T>();
}

// pattern: {"String": "..."} or {"Regex": "..."}
std::unique_ptr<Regex> make_pattern(const json& node, const std::string& path, const char* where) {
  if (node.contains("String")) return std::make_unique<Regex>(node["String"].get<std::string>(), true, path);
  if (node.contains("Regex")) return std::make_unique<Regex>(node["Regex"].get<std::string>(), false, path);
  bad(path, std::string(where) + ": pattern must have \"String\" or \"Regex\"");
}

// ---- normalizers ----

struct UnicodeNormalizer : Normalizer {
  unicode::Form form;
  explicit UnicodeNormalizer(unicode::Form f) : form(f) {}
  void apply(Piece& p) const override {
    std::vector<uint32_t> map;
    std::string out = unicode::normalize(p.text, form, p.track ? &map : nullptr);
    if (p.track) {
      std::vector<uint32_t> src(map.size());
      // Canonical reordering can move a mark before its neighbour's origin; offsets must never go backwards.
      for (size_t i = 0; i < map.size(); ++i)
        src[i] = std::max(static_cast<uint32_t>(p.src_at(map[i])), i ? src[i - 1] : 0u);
      p.src = std::move(src);
    }
    p.text = std::move(out);
  }
};

struct PrependNormalizer : Normalizer {
  std::string prefix;
  void apply(Piece& p) const override {
    if (!p.text.empty()) p.prepend(prefix);
  }
};

struct ReplaceNormalizer : Normalizer {
  std::unique_ptr<Regex> pattern;
  std::string content;
  void apply(Piece& p) const override {
    std::vector<std::pair<size_t, size_t>> m;
    pattern->find_all(p.text, m);
    if (m.empty()) return;
    std::string out;
    std::vector<uint32_t> src;
    size_t last = 0;
    for (auto [b, e] : m) {
      out.append(p.text, last, b - last);
      if (p.track) {
        for (size_t i = last; i < b; ++i) src.push_back(static_cast<uint32_t>(p.src_at(i)));
        src.insert(src.end(), content.size(), static_cast<uint32_t>(p.src_at(b)));
      }
      out.append(content);
      last = e;
    }
    out.append(p.text, last);
    if (p.track)
      for (size_t i = last; i < p.text.size(); ++i) src.push_back(static_cast<uint32_t>(p.src_at(i)));
    p.text = std::move(out);
    p.src = std::move(src);
  }
};

struct StripNormalizer : Normalizer {
  bool left = true, right = true;
  void apply(Piece& p) const override {
    size_t b = 0, e = p.text.size();
    while (left && b < e) {
      size_t len = 0;
      if (!unicode::is_whitespace(utf8::decode(p.text, b, len))) break;
      b += len;
    }
    while (right && e > b) {
      size_t s = e - 1;
      while (s > b && (static_cast<unsigned char>(p.text[s]) & 0xC0) == 0x80) --s;
      size_t len = 0;
      if (!unicode::is_whitespace(utf8::decode(p.text, s, len))) break;
      e = s;
    }
    if (b != 0 || e != p.text.size()) p = p.slice(b, e);
  }
};

struct LowercaseNormalizer : Normalizer {
  void apply(Piece& p) const override {
    std::string out;
    for (size_t i = 0; i < p.text.size();) {
      size_t len = 0;
      const uint32_t cp = utf8::decode(p.text, i, len);
      const size_t before = out.size();
      if (len == 1 && cp == 0xFFFD)
        out += p.text[i];
      else
        utf8::append(out, unicode::to_lower(cp));
      if (p.track && out.size() - before != len)
        bad("tokenizer.json", "Lowercase changed a character's length");
      i += len;
    }
    p.text = std::move(out);
  }
};

struct SequenceNormalizer : Normalizer {
  std::vector<NormalizerPtr> items;
  void apply(Piece& p) const override {
    for (const auto& n : items) n->apply(p);
  }
};

NormalizerPtr make_normalizer(const json& node, const std::string& path) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, path, "normalizer");
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode::Form::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode::Form::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode::Form::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode::Form::NFKD);
  if (type == "Prepend") {
    auto n = std::make_unique<PrependNormalizer>();
    n->prefix = node.value("prepend", "");
    return n;
  }
  if (type == "Replace") {
    auto n = std::make_unique<ReplaceNormalizer>();
    n->pattern = make_pattern(node.at("pattern"), path, "normalizer Replace");
    n->content = node.value("content", "");
    return n;
  }
  if (type == "Strip") {
    auto n = std::make_unique<StripNormalizer>();
    n->left = get_or(node, "strip_left", true);
    n->right = get_or(node, "strip_right", true);
    return n;
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Sequence") {
    auto n = std::make_unique<SequenceNormalizer>();
    for (const auto& child : node.at("normalizers"))
      if (auto c = make_normalizer(child, path)) n->items.push_back(std::move(c));
    return n;
  }
  bad(path, "unknown normalizer type \"" + type + "\"",
      "Forja implements NFC, NFD, NFKC, NFKD, Prepend, Replace, Strip, Lowercase and Sequence");
}

// ---- pre-tokenizers ----

struct RegexSplit : PreTokenizer {
  std::unique_ptr<Regex> re;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  void apply(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    std::vector<std::pair<size_t, size_t>> m;
    for (const auto& p : pieces) {
      m.clear();
      re->find_all(p.text, m);
      out.reserve(out.size() + 2 * m.size() + 1);  // at most a piece per match and per gap
      split_piece(p, m, behavior, invert, out);
    }
    pieces = std::move(out);
  }
};

struct ByteLevelPre : PreTokenizer {
  bool add_prefix_space = false;
  std::unique_ptr<Regex> re;  // null when use_regex is false
  void apply(std::vector<Piece>& pieces) const override {
    if (add_prefix_space)
      for (auto& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.prepend(" ");
    if (!re) return;
    std::vector<Piece> out;
    std::vector<std::pair<size_t, size_t>> m;
    for (const auto& p : pieces) {
      m.clear();
      re->find_all(p.text, m);
      out.reserve(out.size() + 2 * m.size() + 1);
      split_piece(p, m, SplitBehavior::Isolated, false, out);
    }
    pieces = std::move(out);
  }
  bool is_byte_level() const override { return true; }
};

struct MetaspacePre : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";
  enum class Scheme { Always, First, Never } scheme = Scheme::Always;
  bool split = true;
  void apply(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (auto& p : pieces) {
      p.replace_all(" ", replacement);
      const bool starts = p.text.compare(0, replacement.size(), replacement) == 0;
      if (!starts && (scheme == Scheme::Always || (scheme == Scheme::First && p.begin == 0)))
        p.prepend(replacement);
      if (!split) {
        out.push_back(std::move(p));
        continue;
      }
      std::vector<std::pair<size_t, size_t>> m;
      for (size_t at = p.text.find(replacement); at != std::string::npos;
           at = p.text.find(replacement, at + 1))
        m.emplace_back(at, at + replacement.size());
      split_piece(p, m, SplitBehavior::MergedWithNext, false, out);
    }
    pieces = std::move(out);
  }
};

struct SequencePre : PreTokenizer {
  std::vector<PreTokenizerPtr> items;
  void apply(std::vector<Piece>& pieces) const override {
    for (const auto& p : items) p->apply(pieces);
  }
  bool is_byte_level() const override {
    for (const auto& p : items)
      if (p->is_byte_level()) return true;
    return false;
  }
};

SplitBehavior parse_behavior(const std::string& s, const std::string& path) {
  if (s == "Removed") return SplitBehavior::Removed;
  if (s == "Isolated") return SplitBehavior::Isolated;
  if (s == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (s == "Contiguous") return SplitBehavior::Contiguous;
  bad(path, "unknown Split behavior \"" + s + "\"");
}

PreTokenizerPtr make_pre_tokenizer(const json& node, const std::string& path) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, path, "pre_tokenizer");
  if (type == "ByteLevel") {
    auto p = std::make_unique<ByteLevelPre>();
    p->add_prefix_space = get_or(node, "add_prefix_space", true);
    if (get_or(node, "use_regex", true)) p->re = std::make_unique<Regex>(kGpt2Pattern, false, path);
    return p;
  }
  if (type == "Split") {
    auto p = std::make_unique<RegexSplit>();
    p->re = make_pattern(node.at("pattern"), path, "pre_tokenizer Split");
    p->behavior = parse_behavior(node.value("behavior", "Isolated"), path);
    p->invert = get_or(node, "invert", false);
    return p;
  }
  if (type == "Metaspace") {
    auto p = std::make_unique<MetaspacePre>();
    p->replacement = node.value("replacement", "\xE2\x96\x81");
    p->split = get_or(node, "split", true);
    const std::string scheme = get_or<std::string>(
        node, "prepend_scheme", get_or(node, "add_prefix_space", true) ? "always" : "never");
    if (scheme == "always")
      p->scheme = MetaspacePre::Scheme::Always;
    else if (scheme == "first")
      p->scheme = MetaspacePre::Scheme::First;
    else if (scheme == "never")
      p->scheme = MetaspacePre::Scheme::Never;
    else
      bad(path, "unknown Metaspace prepend_scheme \"" + scheme + "\"");
    return p;
  }
  if (type == "Digits") {
    auto p = std::make_unique<RegexSplit>();
    const bool individual = get_or(node, "individual_digits", false);
    p->re = std::make_unique<Regex>(individual ? "\\p{N}" : "\\p{N}+", false, path);
    p->behavior = SplitBehavior::Isolated;
    return p;
  }
  if (type == "Whitespace") {
    auto p = std::make_unique<RegexSplit>();
    p->re = std::make_unique<Regex>("\\w+|[^\\w\\s]+", false, path);
    p->behavior = SplitBehavior::Removed;
    p->invert = true;
    return p;
  }
  if (type == "WhitespaceSplit") {
    auto p = std::make_unique<RegexSplit>();
    p->re = std::make_unique<Regex>("\\s+", false, path);
    p->behavior = SplitBehavior::Removed;
    return p;
  }
  if (type == "Sequence") {
    auto p = std::make_unique<SequencePre>();
    for (const auto& child : node.at("pretokenizers"))
      if (auto c = make_pre_tokenizer(child, path)) p->items.push_back(std::move(c));
    return p;
  }
  bad(path, "unknown pre_tokenizer type \"" + type + "\"",
      "Forja implements ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit and Sequence");
}

// ---- post-processors ----

struct TemplatePost : PostProcessor {
  struct Item {
    bool is_sequence = false;
    std::vector<TokenId> ids;
  };
  std::vector<Item> single;
  void apply(Encoding& enc) const override {
    const bool with_spans = enc.spans.size() == enc.ids.size();
    Encoding out;
    for (const auto& item : single) {
      if (item.is_sequence) {
        out.ids.insert(out.ids.end(), enc.ids.begin(), enc.ids.end());
        out.spans.insert(out.spans.end(), enc.spans.begin(), enc.spans.end());
      } else {
        for (TokenId id : item.ids) {
          out.ids.push_back(id);
          if (with_spans) out.spans.push_back({0, 0});
        }
      }
    }
    enc = std::move(out);
  }
};

struct SequencePost : PostProcessor {
  std::vector<PostProcessorPtr> items;
  void apply(Encoding& enc) const override {
    for (const auto& p : items) p->apply(enc);
  }
};

PostProcessorPtr make_post_processor(const json& node, const std::string& path) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, path, "post_processor");
  if (type == "ByteLevel") return nullptr;  // only adjusts offsets
  if (type == "TemplateProcessing") {
    auto p = std::make_unique<TemplatePost>();
    const json& specials = node.value("special_tokens", json::object());
    for (const auto& item : node.at("single")) {
      TemplatePost::Item it;
      if (item.contains("Sequence")) {
        it.is_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].at("id").get<std::string>();
        if (!specials.contains(name))
          bad(path, "post_processor TemplateProcessing uses special token \"" + name +
                        "\" that is not in its special_tokens");
        for (const auto& id : specials[name].at("ids"))
          it.ids.push_back(token_id(id, path, "post_processor special token \"" + name + "\""));
      } else {
        bad(path, "post_processor TemplateProcessing has an item that is neither Sequence nor SpecialToken");
      }
      p->single.push_back(std::move(it));
    }
    return p;
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto p = std::make_unique<TemplatePost>();
    p->single.push_back({false, {token_id(node.at("cls").at(1), path, "post_processor cls")}});
    p->single.push_back({true, {}});
    p->single.push_back({false, {token_id(node.at("sep").at(1), path, "post_processor sep")}});
    return p;
  }
  if (type == "Sequence") {
    auto p = std::make_unique<SequencePost>();
    for (const auto& child : node.at("processors"))
      if (auto c = make_post_processor(child, path)) p->items.push_back(std::move(c));
    return p;
  }
  bad(path, "unknown post_processor type \"" + type + "\"",
      "Forja implements TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing and Sequence");
}

// ---- decoders ----

struct ByteLevelDecoder : Decoder {
  void apply(std::vector<std::string>& tokens, bool raw) const override {
    std::string all;
    for (const auto& t : tokens) all += byte_level_to_bytes(t);
    tokens.assign(1, raw ? std::move(all) : utf8::lossy(all));
  }
};

DecoderPtr make_decoder(const json& node, const std::string& path) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, path, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    auto d = std::make_unique<MetaspaceDecoder>();
    d->replacement = node.value("replacement", "\xE2\x96\x81");
    const std::string scheme = get_or<std::string>(
        node, "prepend_scheme", get_or(node, "add_prefix_space", true) ? "always" : "never");
    d->strip_first = scheme != "never";
    return d;
  }
  if (type == "Replace") {
    auto d = std::make_unique<ReplaceDecoder>();
    const json& pat = node.at("pattern");
    if (!pat.contains("String")) bad(path, "decoder Replace: only a String pattern is supported");
    d->from = pat["String"].get<std::string>();
    d->to = node.value("content", "");
    return d;
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    auto d = std::make_unique<StripDecoder>();
    d->content = node.value("content", " ");
    d->start = get_or<size_t>(node, "start", 0);
    d->stop = get_or<size_t>(node, "stop", 0);
    return d;
  }
  if (type == "Sequence") {
    auto d = std::make_unique<SequenceDecoder>();
    for (const auto& child : node.at("decoders"))
      if (auto c = make_decoder(child, path)) d->items.push_back(std::move(c));
    return d;
  }
  bad(path, "unknown decoder type \"" + type + "\"",
      "Forja implements ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence");
}

// ---- the tokenizer ----

class HfJsonTokenizer final : public Tokenizer::Impl {
 public:
  HfJsonTokenizer(const std::string& path, const json& root) : path_(path) {
    if (!root.is_object()) bad(path, "is not a JSON object");
    if (!root.contains("model") || !root["model"].is_object()) bad(path, "has no \"model\" object");
    normalizer_ = make_normalizer(root.value("normalizer", json()), path);
    pre_ = make_pre_tokenizer(root.value("pre_tokenizer", json()), path);
    post_ = make_post_processor(root.value("post_processor", json()), path);
    decoder_ = make_decoder(root.value("decoder", json()), path);
    const json& model = root["model"];
    const std::string mtype = model.value("type", "BPE");
    if (mtype != "BPE")
      bad(path, "unknown model type \"" + mtype + "\"", "Forja implements the BPE model of tokenizer.json");
    if (!model.contains("vocab") || !model["vocab"].is_object()) bad(path, "model.vocab is missing");
    if (!model.contains("merges") || !model["merges"].is_array()) bad(path, "model.merges is missing");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
        bad(path, std::string("model.") + key + " is set; Forja's BPE does not implement it");
    if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
      bad(path, "model.dropout is set; dropout is for training a tokenizer, not for using one",
          "set \"dropout\": null in tokenizer.json");

    std::vector<std::string> id_to_token;
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
      const auto id = json_int(it.value(), 0, 10'000'000).value_or(-1);
      if (id < 0) bad(path, "model.vocab has an invalid id for \"" + it.key() + "\"");
      if (static_cast<size_t>(id) >= id_to_token.size()) id_to_token.resize(static_cast<size_t>(id) + 1);
      id_to_token[static_cast<size_t>(id)] = it.key();
    }
    model_vocab_count_ = model["vocab"].size();
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(model["merges"].size());
    for (const auto& m : model["merges"]) {
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          bad(path, "model.merges entry \"" + s + "\" is not two tokens separated by one space");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        bad(path, "model.merges has an entry that is neither \"a b\" nor [\"a\", \"b\"]: " + m.dump());
      }
    }
    BpeModel::Options opt;
    opt.byte_level = pre_ && pre_->is_byte_level();
    opt.byte_fallback = get_or(model, "byte_fallback", false);
    opt.fuse_unk = get_or(model, "fuse_unk", false);
    opt.ignore_merges = get_or(model, "ignore_merges", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const std::string unk = model["unk_token"].get<std::string>();
      for (size_t i = 0; i < id_to_token.size(); ++i)
        if (id_to_token[i] == unk) opt.unk = static_cast<TokenId>(i);
    }
    bpe_ = std::make_unique<BpeModel>(std::move(id_to_token), merges, opt, path);

    for (const auto& t : root.value("added_tokens", json::array())) {
      AddedToken a;
      a.content = t.at("content").get<std::string>();
      a.id = token_id(t.at("id"), path, "added token \"" + a.content + "\"");
      a.special = get_or(t, "special", false);
      a.lstrip = get_or(t, "lstrip", false);
      a.rstrip = get_or(t, "rstrip", false);
      a.single_word = get_or(t, "single_word", false);
      a.normalized = get_or(t, "normalized", !a.special);
      added_.add(a);
      if (!bpe_->token_to_id(a.content)) ++extra_added_;
    }
    info.backend = "tokenizer.json";
  }

  Encoding encode(std::string_view text, bool add_special, bool want_spans) const override {
    Encoding enc;
    std::vector<std::pair<size_t, size_t>> spans;
    std::vector<Piece> pieces;
    auto run_model = [&](std::vector<Piece>& ps) {
      for (const auto& p : ps) {
        const size_t before = enc.ids.size();
        spans.clear();
        bpe_->tokenize(p.text, enc.ids, want_spans ? &spans : nullptr);
        if (want_spans)
          for (size_t k = 0; k < enc.ids.size() - before; ++k) {
            const size_t b = p.src_at(spans[k].first);
            size_t j = spans[k].second;
            size_t e = j < p.text.size() ? p.src_at(j) : p.end;
            // A normalizer maps every byte of a character (or a composed cluster) to the character's start,
            // so a token that ends inside it (byte-level BPE splitting "É" into two byte tokens) would end
            // where it begins. Such a token covers the whole character, as HF's offsets do: an empty span
            // would drop it from the assistant mask of a turn that starts with that character.
            while (e <= b && j < p.text.size()) e = ++j < p.text.size() ? p.src_at(j) : p.end;
            enc.spans.push_back({b, std::max(b, e)});
          }
      }
    };
    auto emit_token = [&](TokenId id, size_t b, size_t e) {
      enc.ids.push_back(id);
      if (want_spans) enc.spans.push_back({b, e});
    };
    for (const auto& seg : added_.split(text, false)) {
      if (seg.id) {
        emit_token(*seg.id, seg.begin, seg.end);
        continue;
      }
      Piece p = make_piece(text, seg.begin, seg.end, want_spans);
      if (normalizer_) normalizer_->apply(p);
      pieces.clear();
      if (added_.has_normalized()) {
        for (const auto& sub : added_.split(p.text, true)) {
          if (sub.id) {
            if (!pieces.empty()) pre_tokenize_and_run(pieces, run_model);
            emit_token(*sub.id, p.src_at(sub.begin), sub.end < p.text.size() ? p.src_at(sub.end) : p.end);
          } else {
            pieces.push_back(p.slice(sub.begin, sub.end));
          }
        }
      } else {
        pieces.push_back(std::move(p));
      }
      if (!pieces.empty()) pre_tokenize_and_run(pieces, run_model);
    }
    if (add_special && post_) post_->apply(enc);
    return enc;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special, bool raw) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (TokenId id : ids) {
      if (const AddedToken* a = added_.by_id(id)) {
        if (!(skip_special && a->special)) tokens.push_back(a->content);
        continue;
      }
      if (id >= 0 && static_cast<size_t>(id) < bpe_->id_to_token().size() && !bpe_->id_to_token()[id].empty())
        tokens.push_back(bpe_->id_to_token()[id]);
    }
    if (!decoder_) {
      std::string out;
      for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
      return raw ? out : utf8::lossy(out);
    }
    decoder_->apply(tokens, raw);
    std::string out;
    for (const auto& t : tokens) out += t;
    return raw ? out : utf8::lossy(out);
  }

  std::string id_to_piece(TokenId id) const override {
    if (const AddedToken* a = added_.by_id(id)) return a->content;
    if (id >= 0 && static_cast<size_t>(id) < bpe_->id_to_token().size()) return bpe_->id_to_token()[id];
    return {};
  }
  std::optional<TokenId> piece_to_id(std::string_view piece) const override {
    if (const AddedToken* a = added_.by_content(piece)) return a->id;
    return bpe_->token_to_id(piece);
  }
  size_t vocab_size() const override { return model_vocab_count_ + extra_added_; }
  bool is_special(TokenId id) const override {
    const AddedToken* a = added_.by_id(id);
    return a && a->special;
  }

 private:
  static Piece make_piece(std::string_view text, size_t b, size_t e, bool track) {
    Piece p;
    p.text.assign(text.substr(b, e - b));
    p.begin = b;
    p.end = e;
    p.track = track;
    if (track) {
      p.src.resize(e - b);
      for (size_t i = 0; i < e - b; ++i) p.src[i] = static_cast<uint32_t>(b + i);
    }
    return p;
  }

  template <typename F>
  void pre_tokenize_and_run(std::vector<Piece>& pieces, F& run_model) const {
    if (pre_) pre_->apply(pieces);
    run_model(pieces);
    pieces.clear();
  }

  std::string path_;
  NormalizerPtr normalizer_;
  PreTokenizerPtr pre_;
  PostProcessorPtr post_;
  DecoderPtr decoder_;
  std::unique_ptr<BpeModel> bpe_;
  AddedVocab added_;
  size_t model_vocab_count_ = 0;
  size_t extra_added_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer::Impl> make_hf_json_tokenizer(const std::string& path, const json*) {
  const std::string text = read_text_file(path);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw_file_error(path, std::string("is not valid JSON: ") + e.what(),
                     "the download may be incomplete; fetch tokenizer.json again");
  }
  try {
    return std::make_unique<HfJsonTokenizer>(path, root);
  } catch (const Error&) {
    throw;
  } catch (const json::exception& e) {
    throw_file_error(path, std::string("has an unexpected structure: ") + e.what());
  }
}

}  // namespace forja
