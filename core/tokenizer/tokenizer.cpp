// forja::Tokenizer: finds the tokenizer files of a model folder, reads the HF config around them, and
// forwards to the backend. Also the streaming decoder.
#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "forja/error.h"
#include "forja/file_util.h"
#include "tokenizer_impl.h"
#include "utf8.h"

namespace forja {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  const std::string text = read_text_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw_file_error(path.string(), std::string("is not valid JSON: ") + e.what());
  }
}

std::optional<std::string> token_content(const json& cfg, const char* key) {
  if (!cfg.is_object() || !cfg.contains(key)) return std::nullopt;
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return std::nullopt;
}

void fill_info(TokenizerInfo& info, const Tokenizer::Impl& impl, const json& config, const json& smap,
               const fs::path& dir) {
  auto pick = [&](const char* key) {
    auto v = token_content(config, key);
    if (!v && !(config.is_object() && config.contains(key) && config[key].is_null()))
      v = token_content(smap, key);
    return v;
  };
  // A key neither file names keeps what the tokenizer file itself says (a tokenizer.model's own pieces).
  auto set = [&](std::optional<std::string>& field, const char* key) {
    const bool named =
        (config.is_object() && config.contains(key)) || (smap.is_object() && smap.contains(key));
    if (auto v = pick(key); v || named) field = v;
  };
  set(info.bos_token, "bos_token");
  set(info.eos_token, "eos_token");
  set(info.unk_token, "unk_token");
  set(info.pad_token, "pad_token");
  auto id_of = [&](const std::optional<std::string>& t) -> std::optional<TokenId> {
    if (!t) return std::nullopt;
    return impl.piece_to_id(*t);
  };
  info.bos_id = id_of(info.bos_token);
  info.eos_id = id_of(info.eos_token);
  info.unk_id = id_of(info.unk_token);
  info.pad_id = id_of(info.pad_token);
  if (config.is_object() && config.contains("chat_template")) {
    const std::string cfg_path = (dir / "tokenizer_config.json").string();
    const json& t = config["chat_template"];
    if (t.is_string()) {
      info.chat_template = t.get<std::string>();
    } else if (t.is_array()) {
      for (size_t k = 0; k < t.size(); ++k) {
        const json& entry = t[k];
        const std::string where = "chat_template[" + std::to_string(k) + "]";
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
            !entry.contains("template") || !entry["template"].is_string())
          throw_file_error(cfg_path, where + " is not an object with string \"name\" and \"template\"",
                           "write chat_template as a string or as [{\"name\": \"default\", \"template\": "
                           "\"...\"}]");
        if (entry["name"].get<std::string>() == "default")
          info.chat_template = entry["template"].get<std::string>();
      }
      if (!info.chat_template)
        throw_file_error(cfg_path, "chat_template is a list without an entry named \"default\"");
    } else if (!t.is_null()) {
      throw_file_error(cfg_path,
                       "chat_template is a " + std::string(t.type_name()) + ", not a string or a list",
                       "write chat_template as a string or as [{\"name\": \"default\", \"template\": "
                       "\"...\"}]");
    }
  }
  if (!info.chat_template && fs::exists(dir / "chat_template.jinja")) {
    info.chat_template = read_text_file(dir / "chat_template.jinja");
  }
  if (config.is_object() && config.contains("clean_up_tokenization_spaces") &&
      config["clean_up_tokenization_spaces"].is_boolean())
    info.clean_up_tokenization_spaces = config["clean_up_tokenization_spaces"].get<bool>();
}

}  // namespace

std::string printable_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t len = 0;
    const uint32_t cp = utf8::decode(bytes, i, len);
    if (cp == 0xFFFD && len == 1) {
      static const char* hex = "0123456789ABCDEF";
      const auto b = static_cast<unsigned char>(bytes[i]);
      out += "<0x";
      out += hex[b >> 4];
      out += hex[b & 0xF];
      out += '>';
    } else {
      out.append(bytes, i, len);
    }
    i += len;
  }
  return out;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& model_dir) {
  const fs::path dir(model_dir);
  if (!fs::is_directory(dir)) throw_file_error(model_dir, "is not a folder", "pass the model's folder");
  json config =
      fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json") : json::object();
  json smap = fs::exists(dir / "special_tokens_map.json") ? read_json(dir / "special_tokens_map.json")
                                                          : json::object();
  std::unique_ptr<Impl> impl;
  if (fs::exists(dir / "tokenizer.json"))
    impl = make_hf_json_tokenizer((dir / "tokenizer.json").string(), &config);
  else if (fs::exists(dir / "tokenizer.model"))
    impl = make_sentencepiece_tokenizer((dir / "tokenizer.model").string(), config);
  else
    throw_file_error(model_dir, "has neither tokenizer.json nor tokenizer.model",
                     "copy the tokenizer files of the model into this folder");
  impl->info.model_dir = model_dir;
  fill_info(impl->info, *impl, config, smap, dir);
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_tokenizer_json(const std::string& path) {
  auto impl = make_hf_json_tokenizer(path, nullptr);
  fill_info(impl->info, *impl, json::object(), json::object(), fs::path(path).parent_path());
  return Tokenizer(std::move(impl));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, false).ids;
}

Encoding Tokenizer::encode_with_spans(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, true);
}

std::vector<std::vector<TokenId>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens, unsigned threads) const {
  std::vector<std::vector<TokenId>> out(texts.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, texts.size()));
  if (threads <= 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = encode(texts[i], add_special_tokens);
    return out;
  }
  // Texts are handed out in small blocks from a shared counter, so long and short texts even out across
  // threads.
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      constexpr size_t kBlock = 16;
      for (size_t b = next.fetch_add(kBlock); b < texts.size(); b = next.fetch_add(kBlock))
        for (size_t i = b; i < std::min(texts.size(), b + kBlock); ++i)
          out[i] = encode(texts[i], add_special_tokens);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  // clean_up_tokenization_spaces is read into info() but not applied: transformers 5 (the reference the
  // fixtures come from) returns the decoder's text as it is, even for a config that sets it.
  return impl_->decode(ids, skip_special_tokens, false);
}

std::string Tokenizer::decode_bytes(std::span<const TokenId> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens, true);
}

std::string Tokenizer::id_to_piece(TokenId id) const {
  return impl_->id_to_piece(id);
}
std::optional<TokenId> Tokenizer::piece_to_id(std::string_view piece) const {
  return impl_->piece_to_id(piece);
}
size_t Tokenizer::vocab_size() const {
  return impl_->vocab_size();
}
bool Tokenizer::is_special(TokenId id) const {
  return impl_->is_special(id);
}
const TokenizerInfo& Tokenizer::info() const {
  return impl_->info;
}

// ---- streaming ----

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamingDecoder::push(TokenId id) {
  ids_.push_back(id);
  // Decode a window that starts one token before the new ones, so rules that treat the first token specially
  // (SentencePiece's leading space) only ever touch text that was already returned.
  const std::span<const TokenId> all(ids_);
  const std::string before = tokenizer_.decode_bytes(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string now = tokenizer_.decode_bytes(all.subspan(prefix_), skip_special_);
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return {};
  std::string tail = now.substr(before.size());
  if (utf8::incomplete_tail(tail) > 0) return {};
  prefix_ = read_;
  read_ = ids_.size();
  return utf8::lossy(tail);
}

std::string StreamingDecoder::finish() {
  const std::span<const TokenId> all(ids_);
  const std::string before = tokenizer_.decode_bytes(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string now = tokenizer_.decode_bytes(all.subspan(prefix_), skip_special_);
  prefix_ = read_ = ids_.size();
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return {};
  return utf8::lossy(now.substr(before.size()));
}

}  // namespace forja
