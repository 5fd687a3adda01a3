// Pipeline pieces shared by both backends: piece slicing with offset tracking, HF's split behaviours, the BPE
// model (merge by rank, byte fallback, ignore_merges, a word cache) and the decoders.
#include "pipeline.h"

#include <array>
#include <atomic>
#include <climits>

#include "forja/error.h"
#include "utf8.h"

namespace forja {

Piece Piece::slice(size_t b, size_t e) const {
  Piece out;
  out.text = text.substr(b, e - b);
  out.track = track;
  out.begin = track ? src_at(b) : begin + b;
  out.end = track ? (e < text.size() ? src_at(e) : end) : begin + e;
  if (track)
    out.src.assign(src.begin() + static_cast<std::ptrdiff_t>(b),
                   src.begin() + static_cast<std::ptrdiff_t>(e));
  return out;
}

void Piece::prepend(std::string_view s) {
  text.insert(0, s);
  if (track) src.insert(src.begin(), s.size(), static_cast<uint32_t>(src.empty() ? begin : src[0]));
}

void Piece::replace_all(std::string_view from, std::string_view to) {
  if (from.empty() || text.find(from) == std::string::npos) return;
  std::string out;
  std::vector<uint32_t> nsrc;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, from.size(), from) == 0) {
      out.append(to);
      if (track) nsrc.insert(nsrc.end(), to.size(), src_at(i));
      i += from.size();
    } else {
      out += text[i];
      if (track) nsrc.push_back(src_at(i));
      ++i;
    }
  }
  text = std::move(out);
  src = std::move(nsrc);
}

void split_piece(const Piece& p, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
  // (range, is_match) covering the whole piece, as HF's find_matches produces.
  std::vector<std::tuple<size_t, size_t, bool>> parts;
  size_t last = 0;
  for (auto [b, e] : matches) {
    if (b > last) parts.emplace_back(last, b, invert);
    parts.emplace_back(b, e, !invert);
    last = e;
  }
  if (last < p.text.size()) parts.emplace_back(last, p.text.size(), invert);

  std::vector<std::pair<size_t, size_t>> ranges;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (auto [b, e, m] : parts)
        if (!m) ranges.emplace_back(b, e);
      break;
    case SplitBehavior::Isolated:
      for (auto [b, e, m] : parts) ranges.emplace_back(b, e);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool prev_match = false;
      for (auto [b, e, m] : parts) {
        if (m && !ranges.empty() && !prev_match)
          ranges.back().second = e;
        else
          ranges.emplace_back(b, e);
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev_match = false;
      for (auto [b, e, m] : parts) {
        if (!m && prev_match && !ranges.empty())
          ranges.back().second = e;
        else
          ranges.emplace_back(b, e);
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::Contiguous: {
      bool prev_match = false;
      for (auto [b, e, m] : parts) {
        if (m && prev_match && !ranges.empty())
          ranges.back().second = e;
        else
          ranges.emplace_back(b, e);
        prev_match = m;
      }
      break;
    }
  }
  for (auto [b, e] : ranges)
    if (e > b) out.push_back(p.slice(b, e));
}

// ---------------------------------------------------------------------------------------------------------------
// Byte-level alphabet

namespace {
struct ByteTables {
  std::array<std::string, 256> to_char;
  std::unordered_map<uint32_t, uint8_t> from_cp;
  ByteTables() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + extra++);
      utf8::append(to_char[b], cp);
      from_cp[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteTables& byte_tables() {
  static const ByteTables t;
  return t;
}
}  // namespace

const std::string& byte_to_char(uint8_t b) {
  return byte_tables().to_char[b];
}

std::string byte_level_to_bytes(std::string_view token) {
  const auto& t = byte_tables();
  std::string out;
  for (size_t i = 0; i < token.size();) {
    size_t len = 0;
    const uint32_t cp = utf8::decode(token, i, len);
    auto it = t.from_cp.find(cp);
    if (it != t.from_cp.end())
      out += static_cast<char>(it->second);
    else
      out.append(token.substr(i, len));
    i += len;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// BPE

namespace {
uint64_t pair_key(TokenId a, TokenId b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

std::string byte_fallback_name(unsigned b) {
  static const char* hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}
}  // namespace

namespace {

// Words repeat (Zipf), so each thread remembers the BPE result of the words it has seen: no lock on the hot
// path, and lookups by string_view do not allocate. One model at a time per thread; switching models starts
// afresh.
struct WordCache {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
  };
  struct Entry {
    std::vector<TokenId> ids;
    std::vector<uint32_t> lens;
  };
  uint64_t owner = 0;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> map;
};

std::atomic<uint64_t> next_instance{1};
constexpr size_t kCacheMaxWord = 64;         // longer pieces are rare and would crowd the cache
constexpr size_t kCacheMaxEntries = 262144;  // a few tens of MB at most; cleared when full

}  // namespace

BpeModel::BpeModel(std::vector<std::string> id_to_token,
                   const std::vector<std::pair<std::string, std::string>>& merges, Options options,
                   const std::string& origin)
    : id_to_token_(std::move(id_to_token)), opt_(options), instance_(next_instance.fetch_add(1)) {
  for (size_t i = 0; i < id_to_token_.size(); ++i) {
    if (id_to_token_[i].empty()) continue;
    const auto id = static_cast<TokenId>(i);
    token_ids_.emplace(id_to_token_[i], id);
    key_ids_.emplace(opt_.byte_level ? byte_level_to_bytes(id_to_token_[i]) : id_to_token_[i], id);
  }
  for (unsigned b = 0; b < 256; ++b) {
    byte_ids_[b] = -1;
    if (opt_.byte_level) {
      auto it = token_ids_.find(byte_to_char(static_cast<uint8_t>(b)));
      if (it != token_ids_.end()) byte_ids_[b] = it->second;
    } else if (opt_.byte_fallback) {
      auto it = token_ids_.find(byte_fallback_name(b));
      if (it != token_ids_.end()) byte_ids_[b] = it->second;
    }
  }
  uint32_t rank = 0;
  for (const auto& [a, b] : merges) {
    auto ia = token_ids_.find(a), ib = token_ids_.find(b), im = token_ids_.find(a + b);
    if (ia == token_ids_.end() || ib == token_ids_.end() || im == token_ids_.end())
      throw_file_error(origin,
                       "merge #" + std::to_string(rank) + " (\"" + a + "\" \"" + b +
                           "\") uses a token that is not in model.vocab",
                       "the file is damaged or was edited by hand; download tokenizer.json again");
    merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank, im->second));
    ++rank;
  }
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  auto it = token_ids_.find(std::string(token));
  if (it == token_ids_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::bpe(std::string_view word, std::vector<TokenId>& ids, std::vector<uint32_t>& lens) const {
  ids.clear();
  lens.clear();
  if (opt_.ignore_merges) {
    auto it = key_ids_.find(std::string(word));
    if (it != key_ids_.end()) {
      ids.push_back(it->second);
      lens.push_back(static_cast<uint32_t>(word.size()));
      return;
    }
  }
  // Initial symbols: bytes (byte-level) or characters; unknown characters fall back to bytes or to unk.
  std::vector<bool> mergeable;
  for (size_t i = 0; i < word.size();) {
    if (opt_.byte_level) {
      const TokenId id = byte_ids_[static_cast<unsigned char>(word[i])];
      if (id < 0) {
        if (!opt_.unk)
          throw Error("tokenizer: byte " + std::to_string(static_cast<unsigned char>(word[i])) +
                      " has no token and the model has no unk_token");
        ids.push_back(*opt_.unk);
      } else {
        ids.push_back(id);
      }
      lens.push_back(1);
      mergeable.push_back(id >= 0);
      ++i;
      continue;
    }
    size_t len = utf8::seq_len(static_cast<unsigned char>(word[i]));
    if (i + len > word.size()) len = 1;
    auto it = key_ids_.find(std::string(word.substr(i, len)));
    if (it != key_ids_.end()) {
      ids.push_back(it->second);
      lens.push_back(static_cast<uint32_t>(len));
      mergeable.push_back(true);
    } else {
      bool all_bytes = opt_.byte_fallback;
      for (size_t k = 0; all_bytes && k < len; ++k)
        all_bytes = byte_ids_[static_cast<unsigned char>(word[i + k])] >= 0;
      if (all_bytes) {
        for (size_t k = 0; k < len; ++k) {
          ids.push_back(byte_ids_[static_cast<unsigned char>(word[i + k])]);
          lens.push_back(1);
          mergeable.push_back(false);
        }
      } else {
        if (!opt_.unk) throw Error("tokenizer: a character has no token and the model has no unk_token");
        if (opt_.fuse_unk && !ids.empty() && ids.back() == *opt_.unk && !mergeable.back()) {
          lens.back() += static_cast<uint32_t>(len);
        } else {
          ids.push_back(*opt_.unk);
          lens.push_back(static_cast<uint32_t>(len));
          mergeable.push_back(false);
        }
      }
    }
    i += len;
  }
  // Repeatedly merge the adjacent pair with the lowest rank (leftmost on ties), as HF's BPE does.
  while (ids.size() > 1) {
    uint32_t best_rank = UINT32_MAX;
    size_t best = 0;
    TokenId merged = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      if (!mergeable[i] || !mergeable[i + 1]) continue;
      auto it = merges_.find(pair_key(ids[i], ids[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best = i;
        merged = it->second.second;
      }
    }
    if (best_rank == UINT32_MAX) break;
    ids[best] = merged;
    lens[best] += lens[best + 1];
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    lens.erase(lens.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    mergeable.erase(mergeable.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<TokenId>& ids,
                        std::vector<std::pair<size_t, size_t>>* spans) const {
  thread_local WordCache cache;
  thread_local std::vector<TokenId> wids;
  thread_local std::vector<uint32_t> wlens;
  if (cache.owner != instance_) {
    cache.map.clear();
    cache.owner = instance_;
  }
  const std::vector<TokenId>* rids = &wids;
  const std::vector<uint32_t>* rlens = &wlens;
  auto hit = word.size() <= kCacheMaxWord ? cache.map.find(word) : cache.map.end();
  if (hit != cache.map.end()) {
    rids = &hit->second.ids;
    rlens = &hit->second.lens;
  } else {
    bpe(word, wids, wlens);
    if (word.size() <= kCacheMaxWord) {
      if (cache.map.size() >= kCacheMaxEntries) cache.map.clear();
      auto ins = cache.map.emplace(std::string(word), WordCache::Entry{wids, wlens}).first;
      rids = &ins->second.ids;
      rlens = &ins->second.lens;
    }
  }
  ids.insert(ids.end(), rids->begin(), rids->end());
  if (spans) {
    size_t at = 0;
    for (uint32_t len : *rlens) {
      spans->emplace_back(at, at + len);
      at += len;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Decoders

void MetaspaceDecoder::apply(std::vector<std::string>& tokens, bool) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string out;
    const std::string& t = tokens[i];
    for (size_t k = 0; k < t.size();) {
      if (t.compare(k, replacement.size(), replacement) == 0) {
        out += ' ';
        k += replacement.size();
      } else {
        out += t[k++];
      }
    }
    if (i == 0 && strip_first && !out.empty() && out[0] == ' ') out.erase(0, 1);
    tokens[i] = std::move(out);
  }
}

void ReplaceDecoder::apply(std::vector<std::string>& tokens, bool) const {
  for (auto& t : tokens) {
    Piece p;
    p.text = std::move(t);
    p.replace_all(from, to);
    t = std::move(p.text);
  }
}

void ByteFallbackDecoder::apply(std::vector<std::string>& tokens, bool raw) const {
  std::vector<std::string> out;
  std::string bytes;
  size_t nbytes = 0;
  auto flush = [&] {
    if (!nbytes) return;
    if (raw || utf8::is_valid(bytes)) {
      out.push_back(bytes);
    } else {
      // HF turns a byte group that is not valid UTF-8 into one U+FFFD per byte token.
      std::string rep;
      for (size_t i = 0; i < nbytes; ++i) rep += "\xEF\xBF\xBD";
      out.push_back(rep);
    }
    bytes.clear();
    nbytes = 0;
  };
  for (auto& t : tokens) {
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
        isxdigit(static_cast<unsigned char>(t[3])) && isxdigit(static_cast<unsigned char>(t[4]))) {
      bytes += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
      ++nbytes;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

void FuseDecoder::apply(std::vector<std::string>& tokens, bool) const {
  std::string all;
  for (auto& t : tokens) all += t;
  tokens.assign(1, std::move(all));
}

void StripDecoder::apply(std::vector<std::string>& tokens, bool) const {
  for (auto& t : tokens) {
    size_t b = 0, e = t.size();
    for (size_t i = 0; i < start && t.compare(b, content.size(), content) == 0 && b + content.size() <= e;
         ++i)
      b += content.size();
    for (size_t i = 0;
         i < stop && e >= b + content.size() && t.compare(e - content.size(), content.size(), content) == 0;
         ++i)
      e -= content.size();
    t = t.substr(b, e - b);
  }
}

}  // namespace forja
