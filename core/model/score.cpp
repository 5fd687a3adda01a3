#include "score.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include "forja/error.h"

namespace forja {

void validate_sequences(const CausalLM& model, const std::vector<std::vector<int64_t>>& sequences) {
  const auto& c = model.config();
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto& s = sequences[i];
    if (s.empty()) throw Error("sequence " + std::to_string(i) + " is empty");
    if (static_cast<int64_t>(s.size()) > c.max_position_embeddings)
      throw Error("sequence " + std::to_string(i) + " has " + std::to_string(s.size()) +
                  " tokens, more than the model's context of " + std::to_string(c.max_position_embeddings));
    for (size_t t = 0; t < s.size(); ++t)
      if (s[t] < 0 || s[t] >= c.vocab_size)
        throw Error("sequence " + std::to_string(i) + ", position " + std::to_string(t) + ": token id " +
                    std::to_string(s[t]) + " is outside the vocabulary (0.." + std::to_string(c.vocab_size - 1) + ")");
  }
}

std::vector<SequenceScore> score_sequences(CausalLM& model, const std::vector<std::vector<int64_t>>& sequences,
                                           std::vector<at::Tensor>* logits_out) {
  validate_sequences(model, sequences);
  at::NoGradGuard no_grad;
  std::vector<SequenceScore> out;
  for (const auto& s : sequences) {
    at::Tensor ids = at::tensor(s, at::kLong).to(model.device()).unsqueeze(0);
    at::Tensor logits = model.forward(ids).squeeze(0).to(at::kFloat);
    SequenceScore r;
    r.ids = s;
    if (s.size() > 1) {
      at::Tensor logp = at::log_softmax(logits.narrow(0, 0, ids.size(1) - 1), -1);
      at::Tensor picked = logp.gather(1, ids.squeeze(0).narrow(0, 1, ids.size(1) - 1).unsqueeze(1)).squeeze(1).cpu();
      auto acc = picked.to(at::kDouble).contiguous();
      const double* p = acc.data_ptr<double>();
      r.token_logprobs.assign(p, p + acc.numel());
      for (double v : r.token_logprobs) r.total_logprob += v;
      r.perplexity = std::exp(-r.total_logprob / static_cast<double>(r.token_logprobs.size()));
    } else {
      r.perplexity = 1.0;
    }
    if (logits_out) logits_out->push_back(logits.cpu().contiguous());
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace forja
