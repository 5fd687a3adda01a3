// A model folder's tokenizer as llama.cpp's GGUF keys hold it (tokenizer.ggml.*): the tokens by id with their
// types, and the BPE merges and pre-tokenizer name or the SentencePiece scores. What the GGUF exporter
// writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace forja::tokenizer {

// llama.cpp's token types (llama_token_type).
enum GgufTokenType : int32_t { kGgufNormal = 1, kGgufControl = 3, kGgufUserDefined = 4, kGgufUnused = 5 };

struct GgufVocab {
  std::string model;  // llama.cpp's tokenizer: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // gpt2
  std::string pre;                  // gpt2: the pre-tokenizer's name in llama.cpp
  std::vector<float> scores;        // llama
  bool add_space_prefix = true;     // llama
};

// The model's vocab_size tokens by id (ids no token has are "[PAD<id>]", unused, as llama.cpp's converter
// writes them): from tokenizer.json's byte-level BPE (vocabulary, merges, pre-tokenizer), or from
// SentencePiece's tokenizer.model (pieces, scores, types) with tokenizer.json's added tokens on top. A
// tokenizer llama.cpp cannot reproduce is a forja::Error naming the file and saying what to do instead.
GgufVocab read_gguf_vocab(const std::filesystem::path& model_dir, int64_t vocab_size);

// What read_gguf_vocab takes from a SentencePiece tokenizer.model.
struct SentencePieceModel {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;  // SentencePiece's Type numbers are llama.cpp's token types
  int model_type = 1;          // UNIGRAM = 1, BPE = 2, WORD = 3, CHAR = 4
  bool add_dummy_prefix = true;
};
// Reads the protobuf `data` (the bytes of `file`, named in errors).
SentencePieceModel parse_sentencepiece_model(std::string_view data, const std::filesystem::path& file);

}  // namespace forja::tokenizer
