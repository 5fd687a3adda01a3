// The pieces of HF's fast-tokenizer pipeline that the supported model families use: normalizers,
// pre-tokenizers, the BPE model, post-processors and decoders, each built from its tokenizer.json node (see
// pipeline_json.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "forja/tokenizer.h"
#include "regex.h"

namespace forja {

// A piece of text on its way through the pipeline. src (only kept when spans are wanted) gives, for every
// byte, the byte offset in the original input it came from; end is the original offset just past the piece.
struct Piece {
  std::string text;
  std::vector<uint32_t> src;
  size_t begin = 0;  // original offset of the piece's start
  size_t end = 0;
  bool track = false;

  size_t src_at(size_t i) const { return i < src.size() ? src[i] : end; }
  Piece slice(size_t b, size_t e) const;
  void prepend(std::string_view s);
  void replace_all(std::string_view from, std::string_view to);
};

// ---- normalizers ----
struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void apply(Piece& p) const = 0;
};
using NormalizerPtr = std::unique_ptr<Normalizer>;

// ---- pre-tokenizers ----
struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  // Splits each piece further; pieces are in text order.
  virtual void apply(std::vector<Piece>& pieces) const = 0;
  virtual bool is_byte_level() const { return false; }
};
using PreTokenizerPtr = std::unique_ptr<PreTokenizer>;

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
// Splits p at the given match ranges according to behavior (HF's NormalizedString::split).
void split_piece(const Piece& p, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<Piece>& out);

// ---- BPE model ----
class BpeModel {
 public:
  struct Options {
    bool byte_level = false;  // symbols are raw bytes (vocab keys converted from the GPT-2 byte alphabet)
    bool byte_fallback = false;
    bool fuse_unk = false;
    bool ignore_merges = false;
    std::optional<TokenId> unk;
  };
  BpeModel(std::vector<std::string> id_to_token,
           const std::vector<std::pair<std::string, std::string>>& merges, Options options,
           const std::string& origin);

  void tokenize(std::string_view word, std::vector<TokenId>& ids,
                std::vector<std::pair<size_t, size_t>>* spans) const;
  const std::vector<std::string>& id_to_token() const { return id_to_token_; }
  std::optional<TokenId> token_to_id(std::string_view token) const;

 private:
  void bpe(std::string_view word, std::vector<TokenId>& ids, std::vector<uint32_t>& lens) const;

  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, TokenId> token_ids_;  // original token strings
  std::unordered_map<std::string, TokenId> key_ids_;    // BPE keys: raw bytes in byte-level mode
  std::unordered_map<uint64_t, std::pair<uint32_t, TokenId>> merges_;  // (left, right) -> (rank, merged)
  TokenId byte_ids_[256];
  Options opt_;
  uint64_t instance_ = 0;  // tells this model's entries apart in the per-thread word cache
};

// ---- post-processors ----
struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void apply(Encoding& enc) const = 0;
};
using PostProcessorPtr = std::unique_ptr<PostProcessor>;

// ---- decoders: operate on the token strings, as HF's do ----
struct Decoder {
  virtual ~Decoder() = default;
  // raw: keep invalid UTF-8 bytes (streaming); otherwise repair them as HF would.
  virtual void apply(std::vector<std::string>& tokens, bool raw) const = 0;
};
using DecoderPtr = std::unique_ptr<Decoder>;

struct MetaspaceDecoder : Decoder {
  std::string replacement = "\xE2\x96\x81";
  bool strip_first = true;
  void apply(std::vector<std::string>& tokens, bool raw) const override;
};
struct ReplaceDecoder : Decoder {
  std::string from, to;
  void apply(std::vector<std::string>& tokens, bool raw) const override;
};
struct ByteFallbackDecoder : Decoder {
  void apply(std::vector<std::string>& tokens, bool raw) const override;
};
struct FuseDecoder : Decoder {
  void apply(std::vector<std::string>& tokens, bool raw) const override;
};
struct StripDecoder : Decoder {
  std::string content = " ";
  size_t start = 0, stop = 0;
  void apply(std::vector<std::string>& tokens, bool raw) const override;
};
struct SequenceDecoder : Decoder {
  std::vector<DecoderPtr> items;
  void apply(std::vector<std::string>& tokens, bool raw) const override {
    for (const auto& d : items) d->apply(tokens, raw);
  }
};

// GPT-2's byte <-> printable character table.
const std::string& byte_to_char(uint8_t b);
// Maps a byte-level token string back to bytes; characters outside the table keep their UTF-8 bytes.
std::string byte_level_to_bytes(std::string_view token);

}  // namespace forja
