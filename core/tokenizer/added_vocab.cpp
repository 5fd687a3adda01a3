// Leftmost-longest matching of added tokens; a handful to a few hundred patterns, so a first-byte index is
// enough.
#include "added_vocab.h"

#include <algorithm>
#include <cstring>

#include "unicode_norm.h"
#include "utf8.h"

namespace forja {
namespace {

bool is_word_char(uint32_t cp) {
  return cp == '_' || (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
         (cp >= 0x80 && !unicode::is_whitespace(cp) && cp != 0xFFFD);
}

uint32_t cp_before(std::string_view s, size_t pos) {
  if (pos == 0) return 0;
  size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t len = 0;
  return utf8::decode(s, start, len);
}

}  // namespace

void AddedVocab::add(const AddedToken& token) {
  if (token.content.empty() || by_content_.count(token.content)) return;
  const size_t index = tokens_.size();
  tokens_.push_back(token);
  by_id_[token.id] = index;
  by_content_[token.content] = index;
  auto& bucket = by_first_[static_cast<unsigned char>(token.content[0])];
  bucket.push_back(index);
  std::stable_sort(bucket.begin(), bucket.end(),
                   [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
  has_normalized_ = has_normalized_ || token.normalized;
}

const AddedToken* AddedVocab::by_id(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::by_content(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

std::vector<AddedVocab::Segment> AddedVocab::split(std::string_view text, bool normalized_pass) const {
  std::vector<Segment> out;
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* hit = nullptr;
    for (size_t index : by_first_[static_cast<unsigned char>(text[pos])]) {
      const AddedToken& t = tokens_[index];
      if (t.normalized != normalized_pass || t.content.size() > text.size() - pos) continue;
      if (std::memcmp(text.data() + pos, t.content.data(), t.content.size()) != 0) continue;
      if (t.single_word) {
        size_t len = 0;
        const uint32_t after =
            pos + t.content.size() < text.size() ? utf8::decode(text, pos + t.content.size(), len) : 0;
        if ((after && is_word_char(after)) || (pos > 0 && is_word_char(cp_before(text, pos)))) continue;
      }
      hit = &t;
      break;
    }
    if (!hit) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + hit->content.size();
    if (hit->lstrip) {
      while (begin > plain_start) {
        const uint32_t cp = cp_before(text, begin);
        if (!unicode::is_whitespace(cp)) break;
        size_t len = 0;
        size_t start = begin - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        utf8::decode(text, start, len);
        begin = start;
      }
    }
    if (hit->rstrip) {
      while (end < text.size()) {
        size_t len = 0;
        const uint32_t cp = utf8::decode(text, end, len);
        if (!unicode::is_whitespace(cp)) break;
        end += len;
      }
    }
    if (begin > plain_start) out.push_back({plain_start, begin, std::nullopt});
    out.push_back({begin, end, hit->id});
    plain_start = pos = end;
  }
  if (plain_start < text.size()) out.push_back({plain_start, text.size(), std::nullopt});
  return out;
}

}  // namespace forja
