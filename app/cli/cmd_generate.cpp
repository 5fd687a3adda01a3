// forja-cli generate <model-dir> (--prompt-ids 1,2,3 | --prompt "text") [--adapter DIR [--compare]]
// [sampling] One prompt, one answer, streamed to stdout; --json prints the tokens, their log-probs and the
// timings instead.
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "command.h"
#include "forja/error.h"
#include "forja/generate.h"
#include "generation_args.h"
#if FORJA_INFER_HAS_TOKENIZER
#include "forja/tokenizer.h"
#endif

namespace forja::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      throw Error("--prompt-ids: '" + item + "' is not a token id", "give comma-separated ids, e.g. 1,415,2");
    }
  }
  return ids;
}

nlohmann::ordered_json result_json(const GenerationResult& r) {
  return {{"tokens", r.tokens},
          {"logprobs", r.logprobs},
          {"text", r.text},
          {"stop", stop_reason_name(r.stop)},
          {"prompt_tokens", r.stats.prompt_tokens},
          {"reused_tokens", r.stats.reused_tokens},
          {"new_tokens", r.stats.new_tokens},
          {"first_token_ms", r.stats.first_token_seconds * 1e3},
          {"decode_seconds", r.stats.decode_seconds},
          {"decode_tokens_per_second", r.stats.decode_tokens_per_second()}};
}

int run_generate(Args& args) {
  args.reject_unknown({"device", "dtype", "base-quant", "max-context", "adapter", "max-new", "min-new",
                       "temperature", "top-k", "top-p", "min-p", "repetition-penalty", "presence-penalty",
                       "frequency-penalty", "seed", "stop", "prompt", "prompt-ids"});
  const std::string dir = forja::cli::model_dir_arg(args, 0);
  const bool json = args.flag("json");
  const auto prompt_ids = args.option("prompt-ids");
  const auto prompt_text = args.option("prompt");
  if (prompt_ids.has_value() == prompt_text.has_value())
    throw Error("generate needs exactly one of --prompt-ids and --prompt");
  GenerationConfig config = generation_config_from(args);
  Generator gen(dir, engine_options_from(args));
  if (auto adapter = args.option("adapter")) gen.load_adapter(*adapter);
  if (args.flag("compare") && !gen.has_adapter()) throw Error("--compare needs --adapter");

  std::vector<int32_t> prompt;
  std::function<Detokenizer()> make_detokenizer;
#if FORJA_INFER_HAS_TOKENIZER
  std::optional<Tokenizer> tokenizer;
  if (prompt_text) {
    tokenizer.emplace(Tokenizer::load(dir));
    prompt = tokenizer->encode(*prompt_text);
    make_detokenizer = [&tokenizer] {
      auto d = std::make_shared<StreamingDecoder>(*tokenizer, /*skip_special_tokens=*/true);
      return Detokenizer{[d](int32_t id) { return d->push(id); }, [d] { return d->finish(); }};
    };
  }
#else
  if (prompt_text)
    throw Error("this forja-cli was built without the tokenizer, so it cannot encode --prompt",
                "pass token ids with --prompt-ids, or build with the tokenizer area");
#endif
  if (prompt_ids) prompt = parse_ids(*prompt_ids);

  // Streaming to the terminal: the text when there is a tokenizer, else the ids.
  auto print_event = [&](const TokenEvent& e) {
    if (json) return true;
    if (make_detokenizer)
      std::fputs(e.text.c_str(), stdout);
    else
      std::printf("%d ", e.id);
    std::fflush(stdout);
    return true;
  };
  auto footer = [](const GenerationResult& r) {
    std::fprintf(
        stderr, "\n[%lld prompt tokens (%lld reused), %lld new, stop: %s, first token %.1f ms, %.1f tok/s]\n",
        static_cast<long long>(r.stats.prompt_tokens), static_cast<long long>(r.stats.reused_tokens),
        static_cast<long long>(r.stats.new_tokens), stop_reason_name(r.stop),
        r.stats.first_token_seconds * 1e3, r.stats.decode_tokens_per_second());
  };

  const ModelFacts facts = gen.facts();
  nlohmann::ordered_json out = {{"model", dir},
                                {"device", facts.device},
                                {"dtype", facts.dtype},
                                {"cuda_graphs", facts.cuda_graphs},
                                {"prompt", prompt}};
  if (args.flag("compare")) {
    if (!json) std::printf("--- adapter off ---\n");
    bool printed_on = false;
    auto c = gen.compare(
        prompt, config,
        [&](bool adapted, const TokenEvent& e) {
          if (adapted && !printed_on && !json) std::printf("\n--- adapter on ---\n");
          printed_on = printed_on || adapted;
          return print_event(e);
        },
        make_detokenizer);
    out["base"] = result_json(c.base);
    out["adapted"] = result_json(c.adapted);
    out["base"]["logprobs_with_adapter"] = c.base_under_adapter;
    out["adapted"]["logprobs_without_adapter"] = c.adapted_under_base;
    if (!json) footer(c.adapted);
  } else {
    auto r = gen.generate(prompt, config, print_event, make_detokenizer ? make_detokenizer() : Detokenizer{});
    out["adapter"] = gen.has_adapter();
    out["result"] = result_json(r);
    if (!json) footer(r);
  }
  if (json) std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_CLI_COMMAND(
    generate, "Generate a continuation of one prompt (streamed; --json for tokens, log-probs, timings)",
    "generate <model-dir|org/name> [--pull] (--prompt-ids 1,2,3 | --prompt TEXT) [--adapter DIR [--compare]] "
    "[--max-new N] [--min-new N] [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty "
    "R] "
    "[--presence-penalty P] [--frequency-penalty F] [--seed S] [--stop TEXT] [--device cpu|cuda] "
    "[--dtype fp32|bf16|fp16] [--base-quant none|nf4] [--max-context N] [--no-graphs] [--json]",
    forja::cli::run_generate, {"json", "compare", "no-graphs", "pull"});
