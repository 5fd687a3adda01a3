// forja-cli chat <model-dir> [--adapter DIR] [--system TEXT] [--template NAME] [sampling]
// An interactive chat in the terminal with the model's own chat template. A line starting with / is a command
// (chat_help() lists them), also when the input is piped, so a scripted /save or /reset never reaches the
// model; "//text" sends "/text".
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "command.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/generate.h"
#include "generation_args.h"

namespace forja::cli {

namespace {

std::string chat_help() {
  return "Commands (a line starting with / is always a command, also when the input is piped, and never\n"
         "goes to the model; write //text to send a message that starts with /):\n"
         "  /help            this list\n"
         "  /system TEXT     set the system prompt (/system alone removes it); the conversation stays\n"
         "  /reset           forget the conversation (the system prompt stays)\n"
         "  /save FILE       write the conversation as one training record, {\"messages\": [...]} (the chat\n"
         "                   shape of training data: a line of a JSONL dataset)\n"
         "  /adapter on|off  answer with or without the LoRA adapter given by --adapter\n"
         "  /quit            end (as does the end of the input)\n";
}

// The conversation in the training data's chat shape: {"messages": [{"role", "content"}, ...]}.
std::string conversation_record(const std::string& system, const std::vector<ChatTurn>& history) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  for (const ChatTurn& t : history) messages.push_back({{"role", t.role}, {"content", t.content}});
  return nlohmann::ordered_json{{"messages", messages}}.dump() + "\n";
}

// A command line (it starts with /): true when the chat goes on.
bool run_command(const std::string& line, ChatSession& chat, std::string& system) {
  const size_t space = line.find(' ');
  const std::string word = line.substr(0, space);
  std::string rest = space == std::string::npos ? std::string() : line.substr(space + 1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.pop_back();
  if (word == "/quit" || word == "/exit") return false;
  if (word == "/help") {
    std::printf("%s", chat_help().c_str());
  } else if (word == "/system") {
    system = rest;
    chat.set_system_prompt(system);
    std::printf(system.empty() ? "system prompt removed\n" : "system prompt set\n");
  } else if (word == "/reset") {
    chat.clear();
    chat.generator().reset();
    std::printf("conversation cleared\n");
  } else if (word == "/save") {
    if (rest.empty()) {
      std::fprintf(stderr, "/save needs a file name: /save FILE\n");
    } else {
      try {
        write_file_atomic(rest, conversation_record(system, chat.history()));
        std::printf("saved %zu messages to %s\n", chat.history().size() + (system.empty() ? 0 : 1),
                    rest.c_str());
      } catch (const Error& e) {
        std::fprintf(stderr, "cannot save: %s\n", e.message().c_str());
      }
    }
  } else if (word == "/adapter") {
    if (rest != "on" && rest != "off") {
      std::fprintf(stderr, "/adapter takes on or off\n");
    } else if (!chat.generator().has_adapter()) {
      std::fprintf(stderr, "no adapter is loaded: start the chat with --adapter DIR\n");
    } else {
      chat.generator().set_adapter_enabled(rest == "on");
      std::printf("adapter %s\n", chat.generator().adapter_enabled() ? "on" : "off");
    }
  } else {
    std::fprintf(stderr, "unknown command %s: /help lists the commands (//text sends /text)\n", word.c_str());
  }
  return true;
}

int run_chat(Args& args) {
  args.reject_unknown({"device", "dtype", "base-quant", "max-context", "adapter", "max-new", "temperature",
                       "top-k", "top-p", "min-p", "repetition-penalty", "presence-penalty",
                       "frequency-penalty", "seed", "stop", "system", "template"});
#if !FORJA_INFER_HAS_TOKENIZER
  throw Error("this forja-cli was built without the tokenizer, which chat needs for the chat template",
              "build with the tokenizer area, or use forja-cli generate --prompt-ids");
#else
  const std::string dir = forja::cli::model_dir_arg(args, 0);
  GenerationConfig config = generation_config_from(args);
  if (!args.option("max-new")) config.max_new_tokens = 1024;  // a chat answer, not a benchmark
  ChatSession chat(dir, engine_options_from(args), args.option_or("template", ""));
  if (auto adapter = args.option("adapter")) chat.generator().load_adapter(*adapter);
  std::string system = args.option_or("system", "");
  if (!system.empty()) chat.set_system_prompt(system);
  const ModelFacts facts = chat.generator().facts();
  // Piped input gets no prompts: the output is then the answers and the commands' replies only.
  const bool interactive = isatty(fileno(stdin));
  std::printf("%s on %s (%s), context %lld tokens%s. /help lists the commands\n", facts.family.c_str(),
              facts.device.c_str(), facts.dtype.c_str(), static_cast<long long>(facts.max_context),
              chat.generator().has_adapter() ? ", adapter on" : "");
  std::string line;
  while (true) {
    if (interactive) std::printf("\n> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '/' && line.rfind("//", 0) != 0) {
      if (!run_command(line, chat, system)) break;
      continue;
    }
    const std::string message = line.rfind("//", 0) == 0 ? line.substr(1) : line;
    auto r = chat.send(message, config, [](const TokenEvent& e) {
      std::fputs(e.text.c_str(), stdout);
      std::fflush(stdout);
      return true;
    });
    if (!interactive) std::printf("\n");
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

FORJA_CLI_COMMAND(
    chat, "Chat with a model in the terminal (its chat template; optional LoRA adapter)",
    "chat <model-dir|org/name> [--pull] [--adapter DIR] [--system TEXT] [--template NAME] [--max-new N] "
    "[--temperature T] [--top-p P] [--top-k K] [--min-p P] [--repetition-penalty R] [--seed S] "
    "[--device cpu|cuda] [--dtype fp32|bf16|fp16] [--base-quant none|nf4] [--max-context N] [--no-graphs]",
    forja::cli::run_chat, {"no-graphs", "pull"});
FORJA_CLI_MORE_HELP(chat, forja::cli::chat_help);
