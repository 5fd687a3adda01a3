// The split patterns of the pre-tokenizers. The patterns the supported families use (GPT-2's, Llama 3's,
// Qwen2's, \p{N}, \p{N}+, \s+) and literal strings have built-in matchers that follow PCRE2's semantics for
// them; any other pattern is compiled with PCRE2 (UTF + Unicode properties, JIT when available) when the
// build has it, and is an error naming the file and the pattern when it does not.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forja {

class Regex {
 public:
  enum class Builtin { None, Literal, Gpt2, Llama3, Qwen2, Number, Numbers, Spaces };

  // origin names the file for error messages. literal: the pattern is a plain string.
  Regex(const std::string& pattern, bool literal, const std::string& origin);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty matches, left to right, as byte ranges.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // The same through PCRE2 even for a built-in pattern (tests compare the two); false when the build has no
  // PCRE2.
  bool find_all_pcre2(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  Builtin builtin() const { return builtin_; }
  static bool have_pcre2();

 private:
  Builtin builtin_ = Builtin::None;
  std::string literal_;
  void* code_ = nullptr;  // pcre2_code*, when compiled
};

}  // namespace forja
