// Unicode normalization forms (NFC, NFD, NFKC, NFKD) from generated tables, with a byte map back to the
// input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace forja::unicode {

enum class Form { NFC, NFD, NFKC, NFKD };

// Normalizes s. When src is not null, (*src)[k] is the input byte offset that output byte k comes from
// (every output byte of a composed or decomposed cluster maps to the cluster's first input byte).
std::string normalize(std::string_view s, Form form, std::vector<uint32_t>* src = nullptr);

bool is_whitespace(uint32_t cp);  // Python str.isspace()
// Simple one-to-one case mapping for the Jinja string methods; ASCII, Latin-1, Latin Extended-A, Greek,
// Cyrillic.
uint32_t to_lower(uint32_t cp);
uint32_t to_upper(uint32_t cp);
bool is_cased_letter(uint32_t cp);

}  // namespace forja::unicode
