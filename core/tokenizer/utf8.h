// Small UTF-8 helpers shared by the tokenizer pieces: decoding one code point, appending one, lossy repair.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace forja::utf8 {

// Length of the UTF-8 sequence that starts with byte b (1 for an invalid lead byte, so callers always
// advance).
inline size_t seq_len(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b >> 5) == 0x6) return 2;
  if ((b >> 4) == 0xE) return 3;
  if ((b >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[i]; sets len to the bytes consumed. Invalid bytes give 0xFFFD with len 1.
inline uint32_t decode(std::string_view s, size_t i, size_t& len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = seq_len(b0);
  if (n == 1 || i + n > s.size()) {
    len = 1;
    return b0 < 0x80 ? b0 : 0xFFFD;
  }
  uint32_t cp = n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and out-of-range values are invalid, as in Rust's from_utf8.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    len = 1;
    return 0xFFFD;
  }
  len = n;
  return cp;
}

inline void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Number of bytes at the end of s that form an incomplete (but so far valid) UTF-8 sequence.
inline size_t incomplete_tail(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;
    const size_t need = seq_len(b);
    return (need > back && need > 1) ? back : 0;
  }
  return 0;
}

// Replaces each invalid sequence with U+FFFD, following Rust's String::from_utf8_lossy (maximal subparts).
std::string lossy(std::string_view s);

bool is_valid(std::string_view s);

}  // namespace forja::utf8
