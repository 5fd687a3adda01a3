// The backend interface behind forja::Tokenizer, and the factories of the two backends.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "forja/tokenizer.h"

namespace forja {

class Tokenizer::Impl {
 public:
  virtual ~Impl() = default;
  virtual Encoding encode(std::string_view text, bool add_special, bool want_spans) const = 0;
  // raw: keep bytes as they are (streaming); otherwise repair invalid UTF-8 the way HF's decoders do.
  virtual std::string decode(std::span<const TokenId> ids, bool skip_special, bool raw) const = 0;
  virtual std::string id_to_piece(TokenId id) const = 0;
  virtual std::optional<TokenId> piece_to_id(std::string_view piece) const = 0;
  virtual size_t vocab_size() const = 0;
  virtual bool is_special(TokenId id) const = 0;

  TokenizerInfo info;
};

// tokenizer.json; config may be null (no tokenizer_config.json).
std::unique_ptr<Tokenizer::Impl> make_hf_json_tokenizer(const std::string& path,
                                                        const nlohmann::json* config);
// tokenizer.model with the conventions of HF's LlamaTokenizer taken from config.
std::unique_ptr<Tokenizer::Impl> make_sentencepiece_tokenizer(const std::string& path,
                                                              const nlohmann::json& config);

}  // namespace forja
