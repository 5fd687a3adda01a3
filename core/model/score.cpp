#include "score.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include <nlohmann/json.hpp>
#include <span>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "lora_peft.h"
#include "util/json_number.h"

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
                    std::to_string(s[t]) + " is outside the vocabulary (0.." +
                    std::to_string(c.vocab_size - 1) + ")");
  }
}

std::vector<SequenceScore> score_sequences(CausalLM& model,
                                           const std::vector<std::vector<int64_t>>& sequences,
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
      at::Tensor picked =
          logp.gather(1, ids.squeeze(0).narrow(0, 1, ids.size(1) - 1).unsqueeze(1)).squeeze(1).cpu();
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

std::vector<std::vector<int64_t>> read_id_sequences(const std::filesystem::path& file) {
  const std::string path = file.string();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw_file_error(path, std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_array()) throw_file_error(path, "must hold a JSON list of token-id lists, e.g. [[1, 2, 3]]");
  if (!j.empty() && j[0].is_number()) j = nlohmann::json::array({j});  // a single list is one sequence
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_array())
      throw_file_error(path, "entry " + std::to_string(i) + " is not a list of token ids");
    std::vector<int64_t> s;
    for (const auto& v : j[i]) {
      const auto id = json_int(v);
      if (!id)
        throw_file_error(path, "entry " + std::to_string(i) + " holds a value that is not a whole number");
      s.push_back(*id);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SequenceScore> score_model(const ScoreOptions& options,
                                       const std::vector<std::vector<int64_t>>& sequences) {
  LoadOptions lo;
  lo.device = parse_device(options.device);
  lo.dtype = parse_dtype_name(options.dtype);
  auto model = load_causal_lm(options.model_dir, lo);
  std::shared_ptr<LoraAdapters> adapter;  // stays attached while scoring
  if (options.adapter_dir) adapter = load_peft_adapter(*model, *options.adapter_dir);
  std::vector<at::Tensor> logits;
  auto scores = score_sequences(*model, sequences, options.dump_logits ? &logits : nullptr);
  if (options.dump_logits) {
    for (const auto& l : logits)
      if (l.sizes() != logits[0].sizes())
        throw Error("dumping logits needs sequences of equal length (one [batch, seq, vocab] tensor)");
    at::Tensor all = at::stack(logits).contiguous();
    auto bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(all.data_ptr()), all.nbytes());
    io::write_safetensors(*options.dump_logits, {{"logits", io::DType::F32, all.sizes().vec(), bytes}},
                          {{"model", options.model_dir.string()}, {"dtype", options.dtype}});
  }
  return scores;
}

}  // namespace forja
