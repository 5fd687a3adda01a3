// PCRE2 wrapper. Invalid UTF-8 in the input is tolerated (PCRE2_MATCH_INVALID_UTF) so odd bytes never crash a
// split.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex.h"

#include <pcre2.h>

#include "forja/error.h"

namespace forja {
namespace {
pcre2_code* code(void* p) {
  return static_cast<pcre2_code*>(p);
}
}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& origin) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL refuses PCRE2_UCP (it has no character classes to apply it to).
  const uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err,
                                &offset, nullptr);
  if (!c) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw_file_error(origin, "the split pattern \"" + pattern + "\" does not compile at offset " +
                                 std::to_string(offset) + ": " + reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
  code_ = c;
}

Regex::~Regex() {
  pcre2_code_free(code(code_));
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  // One match-data block per thread: the regex is shared, the scratch space is not.
  thread_local pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  size_t start = 0;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (start <= text.size()) {
    const int rc = pcre2_match(code(code_), subject, text.size(), start, 0, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] > ov[0]) {
      out.emplace_back(ov[0], ov[1]);
      start = ov[1];
    } else {
      start = ov[0] + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
}

std::string Regex::replace_all(std::string_view text, std::string_view with,
                               std::vector<std::pair<size_t, size_t>>* ranges) const {
  std::vector<std::pair<size_t, size_t>> m;
  find_all(text, m);
  std::string out;
  size_t last = 0;
  for (auto [b, e] : m) {
    out.append(text.substr(last, b - last));
    out.append(with);
    last = e;
  }
  out.append(text.substr(last));
  if (ranges) *ranges = std::move(m);
  return out;
}

}  // namespace forja
