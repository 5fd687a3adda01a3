// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) for the pre-tokenizer splits.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forja {

class Regex {
 public:
  // origin names the file for error messages. literal: the pattern is a plain string.
  Regex(const std::string& pattern, bool literal, const std::string& origin);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty matches, left to right, as byte ranges.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // Replaces every match with `with`.
  std::string replace_all(std::string_view text, std::string_view with,
                          std::vector<std::pair<size_t, size_t>>* ranges) const;

 private:
  void* code_ = nullptr;
};

}  // namespace forja
