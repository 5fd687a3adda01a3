// Split patterns. The built-in matchers implement what PCRE2 does for the patterns of GPT-2, Llama 3 and
// Qwen2 (first alternative that matches wins, greedy runs, \s+(?!\S) backing off one character before a
// non-space) on code point classes generated from Unicode (unicode_classes.inc); they are also much faster
// than a regex engine. Other patterns go to PCRE2 when the build has it.
#include "regex.h"

#include <array>
#include <cstdint>

#include "forja/error.h"
#include "utf8.h"

#ifdef FORJA_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace forja {
namespace {

#include "unicode_classes.inc"

constexpr uint8_t kOther = 0, kLetter = 1, kNumber = 2, kSpace = 4;

template <size_t N>
bool in_ranges(const uint32_t (&r)[N][2], uint32_t cp) {
  size_t lo = 0, hi = N;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cp < r[mid][0])
      hi = mid;
    else if (cp > r[mid][1])
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

uint8_t slow_class(uint32_t cp) {
  if (in_ranges(kLetterRanges, cp)) return kLetter;
  if (in_ranges(kNumberRanges, cp)) return kNumber;
  if (in_ranges(kSpaceRanges, cp)) return kSpace;
  return kOther;
}

// The Basic Multilingual Plane by table, the rest by binary search.
const std::array<uint8_t, 0x10000>& bmp_classes() {
  static const auto table = [] {
    std::array<uint8_t, 0x10000> t{};
    for (uint32_t cp = 0; cp < 0x10000; ++cp) t[cp] = slow_class(cp);
    return t;
  }();
  return table;
}

// Built when the library loads (no guard to check on every character); nothing splits text before main().
const uint8_t* const kBmp = bmp_classes().data();

struct Ch {
  size_t len = 0;  // 0 at the end of the text
  uint8_t cls = kOther;
  bool newline = false;  // \r or \n
};

inline Ch char_at(std::string_view s, size_t i) {
  Ch c;
  if (i >= s.size()) return c;
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    c.len = 1;
    c.cls = kBmp[b];
    c.newline = b == '\r' || b == '\n';
    return c;
  }
  // Invalid UTF-8 counts as one "other" byte (PCRE2 with MATCH_INVALID_UTF never matches it at all; Forja's
  // texts are valid UTF-8, so this only keeps odd input from being lost).
  const uint32_t cp = utf8::decode(s, i, c.len);
  c.cls = cp < 0x10000 ? kBmp[cp] : slow_class(cp);
  return c;
}

template <typename Pred>
size_t run_while(std::string_view s, size_t i, Pred pred, size_t max_chars = SIZE_MAX) {
  for (size_t n = 0; n < max_chars; ++n) {
    const Ch c = char_at(s, i);
    if (!c.len || !pred(c)) break;
    i += c.len;
  }
  return i;
}

const auto is_letter = [](const Ch& c) { return c.cls == kLetter; };
const auto is_number = [](const Ch& c) { return c.cls == kNumber; };
const auto is_other = [](const Ch& c) { return c.cls == kOther; };

// 's|'t|'re|'ve|'m|'ll|'d at i (s[i] == '\''), in that order; caseless for Llama 3's (?i:...), where PCRE2
// also lets U+017F (long s) match "s".
size_t contraction(std::string_view s, size_t i, bool caseless) {
  static const char* kSuffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
  for (const char* suf : kSuffixes) {
    size_t at = i + 1;
    bool ok = true;
    for (const char* p = suf; *p && ok; ++p) {
      if (at >= s.size()) {
        ok = false;
      } else if (s[at] == *p || (caseless && s[at] == *p - 32)) {
        ++at;
      } else if (caseless && *p == 's' && s.compare(at, 2, "\xC5\xBF") == 0) {
        at += 2;
      } else {
        ok = false;
      }
    }
    if (ok) return at;
  }
  return 0;
}

// \s*[\r\n]+ (Llama 3 only), then \s+(?!\S), then \s+, for a whitespace character at i.
size_t whitespace(std::string_view s, size_t i, bool newline_rule) {
  size_t end = i, last_start = i, chars = 0, after_newline = 0;
  for (Ch c = char_at(s, end); c.len && c.cls == kSpace; c = char_at(s, end)) {
    last_start = end;
    end += c.len;
    ++chars;
    if (c.newline) after_newline = end;
  }
  if (newline_rule && after_newline) return after_newline;
  if (end >= s.size() || chars == 1) return end;
  return last_start;  // leave the last space to the word after it
}

size_t match_gpt2(std::string_view s, size_t i) {
  if (s[i] == '\'')
    if (size_t e = contraction(s, i, false)) return e;
  const size_t j = s[i] == ' ' ? i + 1 : i;  // " ?"
  const Ch c = char_at(s, j);
  if (c.len) {
    if (c.cls == kLetter) return run_while(s, j, is_letter);
    if (c.cls == kNumber) return run_while(s, j, is_number);
    if (c.cls == kOther) return run_while(s, j, is_other);
  }
  return whitespace(s, i, false);
}

size_t match_llama3(std::string_view s, size_t i, size_t max_digits) {
  if (s[i] == '\'')
    if (size_t e = contraction(s, i, true)) return e;
  const Ch c = char_at(s, i);
  if (c.cls == kLetter) return run_while(s, i, is_letter);
  if (!c.newline && c.cls != kNumber && char_at(s, i + c.len).cls == kLetter && char_at(s, i + c.len).len)
    return run_while(s, i + c.len, is_letter);  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.cls == kNumber) return run_while(s, i, is_number, max_digits);
  const size_t j = s[i] == ' ' ? i + 1 : i;
  const Ch o = char_at(s, j);
  if (o.len && o.cls == kOther) {  //  ?[^\s\p{L}\p{N}]+[\r\n]*
    size_t e = run_while(s, j, is_other);
    while (e < s.size() && (s[e] == '\r' || s[e] == '\n')) ++e;
    return e;
  }
  if (c.cls == kSpace) return whitespace(s, i, true);
  return i + c.len;  // not reached for valid text: every character is in one of the classes above
}

const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Regex::Builtin builtin_for(const std::string& pattern) {
  if (pattern == kGpt2) return Regex::Builtin::Gpt2;
  if (pattern == kLlama3) return Regex::Builtin::Llama3;
  if (pattern == kQwen2) return Regex::Builtin::Qwen2;
  if (pattern == "\\p{N}") return Regex::Builtin::Number;
  if (pattern == "\\p{N}+") return Regex::Builtin::Numbers;
  if (pattern == "\\s+") return Regex::Builtin::Spaces;
  return Regex::Builtin::None;
}

}  // namespace

bool Regex::have_pcre2() {
#ifdef FORJA_HAVE_PCRE2
  return true;
#else
  return false;
#endif
}

Regex::Regex(const std::string& pattern, bool literal, const std::string& origin) {
  builtin_ = literal ? Builtin::Literal : builtin_for(pattern);
  if (literal) literal_ = pattern;
  if (literal && pattern.empty()) throw_file_error(origin, "a split pattern is an empty string");
#ifdef FORJA_HAVE_PCRE2
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
#else
  if (builtin_ == Builtin::None)
    throw_file_error(origin,
                     "the split pattern \"" + pattern + "\" needs PCRE2, and this build of Forja has none",
                     "build Forja with libpcre2-dev installed");
#endif
}

Regex::~Regex() {
#ifdef FORJA_HAVE_PCRE2
  pcre2_code_free(static_cast<pcre2_code*>(code_));
#endif
}

bool Regex::find_all_pcre2(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
#ifdef FORJA_HAVE_PCRE2
  // One match-data block per thread: the regex is shared, the scratch space is not.
  thread_local pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  size_t start = 0;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (start <= text.size()) {
    const int rc = pcre2_match(static_cast<pcre2_code*>(code_), subject, text.size(), start, 0, md, nullptr);
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
  return true;
#else
  (void)text;
  (void)out;
  return false;
#endif
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  switch (builtin_) {
    case Builtin::None:
      find_all_pcre2(text, out);
      return;
    case Builtin::Literal:
      for (size_t at = text.find(literal_); at != std::string_view::npos;
           at = text.find(literal_, at + literal_.size()))
        out.emplace_back(at, at + literal_.size());
      return;
    case Builtin::Number:
    case Builtin::Numbers:
    case Builtin::Spaces: {
      const uint8_t want = builtin_ == Builtin::Spaces ? kSpace : kNumber;
      const size_t max_chars = builtin_ == Builtin::Number ? 1 : SIZE_MAX;
      for (size_t i = 0; i < text.size();) {
        const Ch c = char_at(text, i);
        if (c.cls != want) {
          i += c.len;
          continue;
        }
        const size_t e = run_while(
            text, i, [&](const Ch& x) { return x.cls == want; }, max_chars);
        out.emplace_back(i, e);
        i = e;
      }
      return;
    }
    case Builtin::Gpt2:
    case Builtin::Llama3:
    case Builtin::Qwen2:
      // These patterns match at every position, so the matches tile the text.
      for (size_t i = 0; i < text.size();) {
        const size_t e = builtin_ == Builtin::Gpt2     ? match_gpt2(text, i)
                         : builtin_ == Builtin::Llama3 ? match_llama3(text, i, 3)
                                                       : match_llama3(text, i, 1);
        out.emplace_back(i, e);
        i = e;
      }
      return;
  }
}

}  // namespace forja
