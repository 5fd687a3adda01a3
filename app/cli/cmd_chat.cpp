// forja-cli chat <model-dir> [--adapter DIR] [--system TEXT] [--template NAME] [sampling]
// An interactive chat in the terminal with the model's own chat template. Lines starting with / are commands:
// /adapter on|off, /reset, /quit.
#include <cstdio>
#include <iostream>
#include <string>

#include "command.h"
#include "forja/error.h"
#include "forja/generate.h"

namespace forja::cli {

EngineOptions engine_options_from(const Args& args);        // cmd_generate.cpp
GenerationConfig generation_config_from(const Args& args);  // cmd_generate.cpp

namespace {

int run_chat(Args& args) {
  args.reject_unknown({"device", "dtype", "base-quant", "max-context", "adapter", "max-new", "temperature", "top-k",
                       "top-p", "min-p", "repetition-penalty", "presence-penalty", "frequency-penalty",
                       "seed", "stop", "system", "template"});
#if !FORJA_INFER_HAS_TOKENIZER
  throw Error("this forja-cli was built without the tokenizer, which chat needs for the chat template",
              "build with the tokenizer area, or use forja-cli generate --prompt-ids");
#else
  const std::string dir = args.positional(0, "<model-dir>");
  GenerationConfig config = generation_config_from(args);
  if (!args.option("max-new")) config.max_new_tokens = 1024;  // a chat answer, not a benchmark
  ChatSession chat(dir, engine_options_from(args), args.option_or("template", ""));
  if (auto adapter = args.option("adapter")) chat.generator().load_adapter(*adapter);
  if (auto system = args.option("system")) chat.set_system_prompt(*system);
  const ModelFacts facts = chat.generator().facts();
  std::printf("%s on %s (%s), context %lld tokens%s. /adapter on|off, /reset, /quit\n", facts.family.c_str(),
              facts.device.c_str(), facts.dtype.c_str(), static_cast<long long>(facts.max_context),
              chat.generator().has_adapter() ? ", adapter on" : "");
  std::string line;
  while (true) {
    std::printf("\n> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/quit") break;
    if (line.empty()) continue;
    if (line == "/reset") {
      chat.clear();
      chat.generator().reset();
      continue;
    }
    if (line == "/adapter on" || line == "/adapter off") {
      chat.generator().set_adapter_enabled(line == "/adapter on");
      std::printf("adapter %s\n", chat.generator().adapter_enabled() ? "on" : "off");
      continue;
    }
    auto r = chat.send(line, config, [](const TokenEvent& e) {
      std::fputs(e.text.c_str(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fprintf(
        stderr, "\n[%lld new tokens, %lld of %lld prompt tokens reused, first token %.0f ms, %.1f tok/s, %s]",
        static_cast<long long>(r.stats.new_tokens), static_cast<long long>(r.stats.reused_tokens),
        static_cast<long long>(r.stats.prompt_tokens), r.stats.first_token_seconds * 1e3,
        r.stats.decode_tokens_per_second(), stop_reason_name(r.stop));
  }
  std::printf("\n");
  return 0;
#endif
}

}  // namespace
}  // namespace forja::cli

FORJA_CLI_COMMAND(chat, "Chat with a model in the terminal (its chat template; optional LoRA adapter)",
                  "chat <model-dir> [--adapter DIR] [--system TEXT] [--template NAME] [--max-new N] "
                  "[--temperature T] [--top-p P] [--top-k K] [--min-p P] [--repetition-penalty R] [--seed S] "
                  "[--device cpu|cuda] [--dtype fp32|bf16|fp16] [--base-quant none|nf4] [--max-context N] [--no-graphs]",
                  forja::cli::run_chat, {"no-graphs"});
