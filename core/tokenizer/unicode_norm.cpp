// Unicode normalization (UAX #15) over generated tables; Hangul syllables are handled algorithmically.
#include "unicode_norm.h"

#include <algorithm>

#include "utf8.h"

namespace forja::unicode {
namespace {
#include "unicode_tables.inc"

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = kCombiningClass + std::size(kCombiningClass);
  const auto* it =
      std::lower_bound(kCombiningClass, end, cp, [](const uint32_t(&e)[2], uint32_t v) { return e[0] < v; });
  return (it != end && (*it)[0] == cp) ? static_cast<uint8_t>((*it)[1]) : 0;
}

template <size_t N, size_t M>
bool lookup_decomp(const uint32_t (&index)[N][3], const uint32_t (&data)[M], uint32_t cp,
                   std::vector<std::pair<uint32_t, uint32_t>>& out, uint32_t src) {
  const auto* end = index + N;
  const auto* it =
      std::lower_bound(index, end, cp, [](const uint32_t(&e)[3], uint32_t v) { return e[0] < v; });
  if (it == end || (*it)[0] != cp) return false;
  for (uint32_t k = 0; k < (*it)[2]; ++k) out.emplace_back(data[(*it)[1] + k], src);
  return true;
}

void decompose(uint32_t cp, bool compat, std::vector<std::pair<uint32_t, uint32_t>>& out, uint32_t src) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.emplace_back(kLBase + s / kNCount, src);
    out.emplace_back(kVBase + (s % kNCount) / kTCount, src);
    if (s % kTCount) out.emplace_back(kTBase + s % kTCount, src);
    return;
  }
  if (cp < 0xA0) {
    out.emplace_back(cp, src);
    return;
  }
  if (compat && lookup_decomp(kCompatDecomp, kCompatDecompData, cp, out, src)) return;
  if (lookup_decomp(kCanonicalDecomp, kCanonicalDecompData, cp, out, src)) return;
  out.emplace_back(cp, src);
}

uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = kCompositionPairs + std::size(kCompositionPairs);
  const auto* it = std::lower_bound(kCompositionPairs, end, std::make_pair(a, b),
                                    [](const uint32_t(&e)[3], const std::pair<uint32_t, uint32_t>& v) {
                                      return e[0] < v.first || (e[0] == v.first && e[1] < v.second);
                                    });
  return (it != end && (*it)[0] == a && (*it)[1] == b) ? (*it)[2] : 0;
}

}  // namespace

std::string normalize(std::string_view s, Form form, std::vector<uint32_t>* src) {
  bool unchanged =
      std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!unchanged && form == Form::NFC) {
    // NFC leaves text alone when every character is NFC_QC=Yes with combining class 0 and none can start a
    // composition with what follows: below U+0300 (no combining marks there), CJK unified ideographs and
    // Hangul syllables (a trailing jamo after one is outside these ranges, so it takes the full path). This
    // skips the decomposition for most text of Qwen2-style tokenizers.
    unchanged = true;
    for (size_t i = 0; i < s.size() && unchanged;) {
      size_t len = 0;
      const uint32_t cp = utf8::decode(s, i, len);
      unchanged = cp < 0x300 || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3);
      i += len;
    }
  }
  if (unchanged) {
    if (src) {
      src->resize(s.size());
      for (size_t i = 0; i < s.size(); ++i) (*src)[i] = static_cast<uint32_t>(i);
    }
    return std::string(s);
  }
  const bool compat = form == Form::NFKC || form == Form::NFKD;
  std::vector<std::pair<uint32_t, uint32_t>> cps;  // (code point, input byte offset)
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    const uint32_t cp = utf8::decode(s, i, len);
    decompose(cp, compat, cps, static_cast<uint32_t>(i));
    i += len;
  }
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (combining_class(cps[i].first) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j].first) != 0) ++j;
    std::stable_sort(
        cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
        [](const auto& a, const auto& b) { return combining_class(a.first) < combining_class(b.first); });
    i = j;
  }
  if ((form == Form::NFC || form == Form::NFKC) && !cps.empty()) {
    size_t starter = 0, out = 1;
    int last_class = combining_class(cps[0].first) ? 256 : 0;
    for (size_t i = 1; i < cps.size(); ++i) {
      const int cls = combining_class(cps[i].first);
      const uint32_t composite = compose_pair(cps[starter].first, cps[i].first);
      if (composite && (last_class < cls || last_class == 0)) {
        cps[starter].first = composite;
        continue;
      }
      if (cls == 0) starter = out;
      last_class = cls;
      cps[out++] = cps[i];
    }
    cps.resize(out);
  }
  std::string result;
  result.reserve(s.size() + 8);
  if (src) src->clear();
  for (const auto& [cp, from] : cps) {
    const size_t before = result.size();
    utf8::append(result, cp);
    if (src) src->insert(src->end(), result.size() - before, from);
  }
  return result;
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

uint32_t to_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0xC0) return cp;
  if (cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x130) return 'i';
    if (cp == 0x178) return 0xFF;
    const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_upper) return (cp % 2 == 1) ? cp + 1 : cp;
    if (cp == 0x131 || cp == 0x138 || cp == 0x149 || cp == 0x17F) return cp;
    return (cp % 2 == 0) ? cp + 1 : cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

uint32_t to_upper(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0xB5) return cp;
  if (cp == 0xB5) return 0x39C;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x131) return 'I';
    const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_upper) return (cp % 2 == 0) ? cp - 1 : cp;
    if (cp == 0x130 || cp == 0x138 || cp == 0x149 || cp == 0x178) return cp;
    if (cp == 0x17F) return 'S';
    return (cp % 2 == 1) ? cp - 1 : cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

bool is_cased_letter(uint32_t cp) {
  return to_lower(cp) != cp || to_upper(cp) != cp;
}

}  // namespace forja::unicode

namespace forja::utf8 {

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    size_t len = 0;
    const uint32_t cp = decode(s, i, len);
    if (cp != 0xFFFD || len > 1) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    // Maximal subpart: skip the lead byte and the continuation bytes that were still valid for it.
    const size_t need = seq_len(b);
    size_t k = 1;
    if (need > 1) {
      const auto b1 = k < s.size() - i ? static_cast<unsigned char>(s[i + 1]) : 0;
      const bool b1_ok = (b == 0xE0                  ? (b1 >= 0xA0 && b1 <= 0xBF)
                          : b == 0xED                ? (b1 >= 0x80 && b1 <= 0x9F)
                          : b == 0xF0                ? (b1 >= 0x90 && b1 <= 0xBF)
                          : b == 0xF4                ? (b1 >= 0x80 && b1 <= 0x8F)
                          : (b >= 0xC2 && b <= 0xF4) ? (b1 & 0xC0) == 0x80
                                                     : false);
      if (b1_ok) {
        k = 2;
        while (k < need && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80) ++k;
      }
    }
    out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    if (decode(s, i, len) == 0xFFFD && !(len == 3 && s.substr(i, 3) == "\xEF\xBF\xBD")) return false;
    i += len;
  }
  return true;
}

}  // namespace forja::utf8
