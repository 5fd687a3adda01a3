// Scoring a loaded model's token sequences; forja/score.h is the door that loads the model.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "causal_lm.h"
#include "forja/score.h"

namespace forja {

// Checks ids against the model (vocabulary, context length) and throws forja::Error naming the sequence.
void validate_sequences(const CausalLM& model, const std::vector<std::vector<int64_t>>& sequences);

// Scores each sequence on its own (no padding). `logits_out`, if given, receives the fp32 logits of each
// sequence ([T, vocab], on the CPU).
std::vector<SequenceScore> score_sequences(CausalLM& model,
                                           const std::vector<std::vector<int64_t>>& sequences,
                                           std::vector<at::Tensor>* logits_out = nullptr);

}  // namespace forja
