#include "sampler.h"

#include <limits>

#include "forja/error.h"

namespace forja::infer {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}

at::Tensor apply_repetition_penalty(const at::Tensor& logits, const at::Tensor& seen, double penalty) {
  // transformers' RepetitionPenaltyLogitsProcessor: a seen token's logit is divided by the penalty when
  // positive and multiplied by it when negative, so a penalty > 1 always makes it less likely.
  at::Tensor penalised = at::where(logits < 0, logits * penalty, logits / penalty);
  return at::where(seen, penalised, logits);
}

at::Tensor apply_presence_frequency(const at::Tensor& logits, const at::Tensor& counts, double presence,
                                    double frequency) {
  return logits - counts * frequency - (counts > 0).to(logits.scalar_type()) * presence;
}

at::Tensor apply_top_k(const at::Tensor& logits, int64_t k) {
  // TopKLogitsWarper: drop every logit below the k-th largest (ties with it stay).
  if (k <= 0 || k >= logits.size(-1)) return logits;
  at::Tensor kth = std::get<0>(at::topk(logits, k)).narrow(-1, k - 1, 1);
  return logits.masked_fill(logits < kth, kNegInf);
}

at::Tensor apply_top_p(const at::Tensor& logits, double p) {
  // TopPLogitsWarper: sort ascending, drop the tokens whose cumulative probability is <= 1 - p (the low
  // tail), always keeping the most likely token.
  if (p >= 1.0) return logits;
  auto [sorted, order] = at::sort(logits, /*dim=*/-1, /*descending=*/false);
  at::Tensor cumulative = at::softmax(sorted, -1).cumsum(-1);
  at::Tensor drop_sorted = cumulative <= (1.0 - p);
  drop_sorted.narrow(-1, logits.size(-1) - 1, 1).fill_(false);
  at::Tensor drop = at::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
  return logits.masked_fill(drop, kNegInf);
}

at::Tensor apply_min_p(const at::Tensor& logits, double min_p) {
  // MinPLogitsWarper: drop tokens whose probability is below min_p times the top token's.
  if (min_p <= 0.0) return logits;
  at::Tensor probs = at::softmax(logits, -1);
  at::Tensor threshold = std::get<0>(probs.max(-1, /*keepdim=*/true)) * min_p;
  return logits.masked_fill(probs < threshold, kNegInf);
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

Sampler::Sampler(const SamplingParams& params, int64_t vocab, at::Device device)
    : params_(params), rng_(params.seed) {
  if (params.temperature < 0 || params.top_p <= 0 || params.top_p > 1 || params.min_p < 0 ||
      params.min_p > 1 || params.top_k < 0 || params.repetition_penalty <= 0)
    throw Error(
        "sampling settings out of range (temperature >= 0, 0 < top_p <= 1, 0 <= min_p <= 1, top_k >= 0, "
        "repetition_penalty > 0)");
  auto opts = at::TensorOptions().device(device);
  if (params.repetition_penalty != 1.0) seen_ = at::zeros({vocab}, opts.dtype(at::kBool));
  if (params.presence_penalty != 0.0 || params.frequency_penalty != 0.0)
    counts_ = at::zeros({vocab}, opts.dtype(at::kFloat));
}

bool Sampler::needs_logits() const {
  return !greedy() || seen_.defined() || counts_.defined();
}

void Sampler::observe_prompt(const std::vector<int32_t>& ids) {
  if (!seen_.defined() || ids.empty()) return;
  at::Tensor index = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).to(seen_.device());
  seen_.index_fill_(0, index, true);
}

void Sampler::observe(int32_t id) {
  if (seen_.defined()) seen_.narrow(0, id, 1).fill_(true);
  if (counts_.defined()) counts_.narrow(0, id, 1).add_(1);
}

at::Tensor Sampler::filtered(const at::Tensor& logits) const {
  at::Tensor x = logits;
  if (seen_.defined()) x = apply_repetition_penalty(x, seen_, params_.repetition_penalty);
  if (counts_.defined())
    x = apply_presence_frequency(x, counts_, params_.presence_penalty, params_.frequency_penalty);
  if (greedy()) return x;
  x = x / params_.temperature;
  x = apply_top_k(x, params_.top_k);
  x = apply_top_p(x, params_.top_p);
  return apply_min_p(x, params_.min_p);
}

int32_t Sampler::choose(const at::Tensor& logits) {
  at::Tensor x = filtered(logits);
  if (greedy()) return static_cast<int32_t>(x.argmax().item<int64_t>());
  // Inverse-CDF draw in double on the CPU: the same seed picks the same token wherever the logits came from.
  at::Tensor probs = at::softmax(x.to(at::kFloat), -1).to(at::kCPU, at::kDouble).contiguous();
  const double* p = probs.data_ptr<double>();
  const int64_t n = probs.numel();
  const double u = rng_.uniform();
  double cumulative = 0;
  int64_t last_nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] <= 0) continue;
    last_nonzero = i;
    cumulative += p[i];
    if (u < cumulative) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_nonzero);  // rounding left u just above the total
}

}  // namespace forja::infer
