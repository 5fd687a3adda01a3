// forja-cli score <model-dir> --ids ids.json [--adapter DIR] [--dtype fp32|bf16|fp16] [--device cpu|cuda]
//                 [--dump-logits f]
// Per-token log-probabilities and perplexity of token sequences (a JSON list of id lists), as JSON on stdout.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "forja/error.h"
#include "forja/score.h"

namespace {

int run_score(forja::cli::Args& args) {
  args.reject_unknown({"ids", "dtype", "device", "dump-logits", "adapter"});
  forja::ScoreOptions o;
  o.model_dir = forja::cli::model_dir_arg(args, 0);
  auto ids_path = args.option("ids");
  if (!ids_path) throw forja::Error("score needs --ids ids.json", "--text comes with the tokenizers.");
  const auto sequences = forja::read_id_sequences(*ids_path);
  o.device = args.option_or("device", "cpu");
  o.dtype = args.option_or("dtype", "fp32");
  if (auto a = args.option("adapter")) o.adapter_dir = *a;
  if (auto d = args.option("dump-logits")) o.dump_logits = *d;
  const auto scores = forja::score_model(o, sequences);

  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : scores)
    out.push_back({{"ids", s.ids},
                   {"token_logprobs", s.token_logprobs},
                   {"total_logprob", s.total_logprob},
                   {"perplexity", s.perplexity}});
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(score, "Per-token log-probs and perplexity of token sequences",
                  "score <model-dir|org/name> [--pull] --ids ids.json [--adapter DIR] [--dtype "
                  "fp32|bf16|fp16] [--device cpu|cuda] "
                  "[--dump-logits out.safetensors]",
                  run_score, {"pull"});
