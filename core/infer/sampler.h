// Choosing the next token from the model's logits. The filters follow transformers' logits processors (same
// order and the same tie rules): repetition penalty, then OpenAI-style presence/frequency penalties,
// temperature, top-k, top-p, min-p. The draw itself uses Forja's own seeded generator on the CPU copy of the
// final probabilities, so a seed gives the same tokens on any device and in any LibTorch version.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace forja::infer {

struct SamplingParams {
  double temperature = 0.0;         // <= 0: greedy
  int64_t top_k = 0;                // 0: off
  double top_p = 1.0;               // 1: off
  double min_p = 0.0;               // 0: off
  double repetition_penalty = 1.0;  // transformers: on every token of the prompt and the answer so far
  double presence_penalty = 0.0;    // OpenAI: once per distinct token of the answer so far
  double frequency_penalty = 0.0;   // OpenAI: per occurrence in the answer so far
  uint64_t seed = 0;
};

// The filters, on fp32 logits [vocab] (any device); each returns new logits with removed tokens at -inf.
at::Tensor apply_repetition_penalty(const at::Tensor& logits, const at::Tensor& seen, double penalty);
at::Tensor apply_presence_frequency(const at::Tensor& logits, const at::Tensor& counts, double presence,
                                    double frequency);
at::Tensor apply_top_k(const at::Tensor& logits, int64_t k);
at::Tensor apply_top_p(const at::Tensor& logits, double p);
at::Tensor apply_min_p(const at::Tensor& logits, double min_p);

// splitmix64: small, fast, and the same stream everywhere (std:: distributions are not portable).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1) with 53 random bits

 private:
  uint64_t state_;
};

class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t vocab, at::Device device);

  bool greedy() const { return params_.temperature <= 0.0; }
  // True when the choice needs more than the argmax of the raw logits (so the fast greedy path cannot be
  // used).
  bool needs_logits() const;
  // The prompt (repetition penalty sees it, as in transformers) and each chosen token.
  void observe_prompt(const std::vector<int32_t>& ids);
  void observe(int32_t id);
  // The filtered logits the draw uses (penalties, temperature, top-k/p, min-p applied).
  at::Tensor filtered(const at::Tensor& logits) const;
  // Picks a token from fp32 logits [vocab].
  int32_t choose(const at::Tensor& logits);

 private:
  SamplingParams params_;
  SplitMix64 rng_;
  at::Tensor seen_;    // [vocab] bool: in the prompt or the answer (repetition penalty)
  at::Tensor counts_;  // [vocab] fp32: occurrences in the answer (presence / frequency)
};

}  // namespace forja::infer
