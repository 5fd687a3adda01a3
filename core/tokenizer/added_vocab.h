// Added and special tokens (tokenizer.json "added_tokens", tokenizer_config.json "added_tokens_decoder"):
// matched in the text before the model runs, leftmost-longest, with HF's lstrip / rstrip / single_word rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "forja/tokenizer.h"

namespace forja {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

class AddedVocab {
 public:
  struct Segment {
    size_t begin = 0, end = 0;  // byte range in the text handed to split()
    std::optional<TokenId> id;  // set for a matched added token
  };

  void add(const AddedToken& token);
  bool empty() const { return tokens_.empty(); }
  // Splits text on the tokens whose `normalized` flag equals normalized_pass.
  std::vector<Segment> split(std::string_view text, bool normalized_pass) const;
  bool has_normalized() const { return has_normalized_; }

  const AddedToken* by_id(TokenId id) const;
  const AddedToken* by_content(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  // First byte -> indexes of tokens starting with it, longest first.
  std::vector<size_t> by_first_[256];
  bool has_normalized_ = false;
};

}  // namespace forja
