// Scoring token sequences under a model: per-token log-probabilities and perplexity, with or without a LoRA
// adapter. What `forja-cli score` runs; the reference tests compare it with transformers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace forja {

struct SequenceScore {
  std::vector<int64_t> ids;
  std::vector<double> token_logprobs;  // log p(ids[t] | ids[<t]) for t = 1 .. n-1
  double total_logprob = 0;
  double perplexity = 0;  // exp(-mean token log-prob); 1 for a sequence of fewer than 2 tokens
};

struct ScoreOptions {
  std::filesystem::path model_dir;
  std::optional<std::filesystem::path> adapter_dir;  // a PEFT adapter, attached while scoring
  std::string device = "cpu";                        // "cpu", "cuda", "cuda:1"
  std::string dtype = "fp32";                        // "fp32", "bf16", "fp16"
  // The fp32 logits of every sequence as one [batch, seq, vocab] tensor "logits" in a safetensors file (the
  // sequences must then be of one length).
  std::optional<std::filesystem::path> dump_logits;
};

// A JSON list of token-id lists ([[1, 2, 3], [4, 5]]; a single flat list is one sequence). Throws
// forja::Error naming the file and the entry that is not a list of whole numbers.
std::vector<std::vector<int64_t>> read_id_sequences(const std::filesystem::path& file);

// Loads the model (and adapter) and scores each sequence on its own. Ids outside the vocabulary or sequences
// longer than the context are a forja::Error naming the sequence.
std::vector<SequenceScore> score_model(const ScoreOptions& options,
                                       const std::vector<std::vector<int64_t>>& sequences);

}  // namespace forja
