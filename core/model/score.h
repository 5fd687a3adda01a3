// Scoring token sequences: per-token log-probabilities and perplexity under a model. What `forja-cli score` runs,
// and what the reference tests and benchmarks reuse.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "causal_lm.h"

namespace forja {

struct SequenceScore {
  std::vector<int64_t> ids;
  std::vector<double> token_logprobs;  // log p(ids[t] | ids[<t]) for t = 1 .. n-1
  double total_logprob = 0;
  double perplexity = 0;  // exp(-mean token log-prob); 1 for a sequence of fewer than 2 tokens
};

// Checks ids against the model (vocabulary, context length) and throws forja::Error naming the sequence.
void validate_sequences(const CausalLM& model, const std::vector<std::vector<int64_t>>& sequences);

// Scores each sequence on its own (no padding). `logits_out`, if given, receives the fp32 logits of each
// sequence ([T, vocab], on the CPU).
std::vector<SequenceScore> score_sequences(CausalLM& model, const std::vector<std::vector<int64_t>>& sequences,
                                           std::vector<at::Tensor>* logits_out = nullptr);

}  // namespace forja
