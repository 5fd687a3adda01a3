// forja-cli score <model-dir> --ids ids.json [--adapter DIR] [--dtype fp32|bf16|fp16] [--device cpu|cuda]
//                 [--dump-logits f]
// Per-token log-probabilities and perplexity of token sequences (a JSON list of id lists), as JSON on stdout.
#include <ATen/ATen.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "command.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "lora_peft.h"
#include "score.h"
#include "weights.h"

namespace {

std::vector<std::vector<int64_t>> read_ids(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(forja::read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    forja::throw_file_error(path, std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_array())
    forja::throw_file_error(path, "must hold a JSON list of token-id lists, e.g. [[1, 2, 3]]");
  if (!j.empty() && j[0].is_number_integer())
    j = nlohmann::json::array({j});  // a single list is one sequence
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_array())
      forja::throw_file_error(path, "entry " + std::to_string(i) + " is not a list of token ids");
    std::vector<int64_t> s;
    for (const auto& v : j[i]) {
      if (!v.is_number_integer())
        forja::throw_file_error(path, "entry " + std::to_string(i) + " holds a value that is not an integer");
      s.push_back(v.get<int64_t>());
    }
    out.push_back(std::move(s));
  }
  return out;
}

int run_score(forja::cli::Args& args) {
  args.reject_unknown({"ids", "dtype", "device", "dump-logits", "adapter"});
  const std::string dir = args.positional(0, "<model-dir>");
  auto ids_path = args.option("ids");
  if (!ids_path) throw forja::Error("score needs --ids ids.json", "--text comes with the tokenizers.");
  auto sequences = read_ids(*ids_path);
  forja::LoadOptions opts;
  opts.device = forja::parse_device(args.option_or("device", "cpu"));
  opts.dtype = forja::parse_dtype_name(args.option_or("dtype", "fp32"));
  auto model = forja::load_causal_lm(dir, opts);
  std::shared_ptr<forja::LoraAdapters> adapter;  // stays attached while scoring
  if (auto a = args.option("adapter")) adapter = forja::load_peft_adapter(*model, *a);
  std::vector<at::Tensor> logits;
  const auto dump = args.option("dump-logits");
  auto scores = forja::score_sequences(*model, sequences, dump ? &logits : nullptr);

  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : scores)
    out.push_back({{"ids", s.ids},
                   {"token_logprobs", s.token_logprobs},
                   {"total_logprob", s.total_logprob},
                   {"perplexity", s.perplexity}});
  if (dump) {
    for (const auto& l : logits)
      if (l.sizes() != logits[0].sizes())
        throw forja::Error("--dump-logits needs sequences of equal length (one [batch, seq, vocab] tensor)");
    at::Tensor all = at::stack(logits).contiguous();
    auto bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(all.data_ptr()), all.nbytes());
    forja::io::write_safetensors(*dump, {{"logits", forja::io::DType::F32, all.sizes().vec(), bytes}},
                                 {{"model", dir}, {"dtype", args.option_or("dtype", "fp32")}});
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    score, "Per-token log-probs and perplexity of token sequences",
    "score <model-dir> --ids ids.json [--adapter DIR] [--dtype fp32|bf16|fp16] [--device cpu|cuda] "
    "[--dump-logits out.safetensors]",
    run_score, {});
