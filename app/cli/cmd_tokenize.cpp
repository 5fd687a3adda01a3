// forja-cli tokenize <model-dir> "text" | --batch strings.json | --chat conversation.json: the model's own
// tokenization as Forja computes it, to compare with Hugging Face by hand or from a script.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "forja/chat_template.h"
#include "forja/error.h"
#include "forja/tokenizer.h"

namespace {

using json = nlohmann::ordered_json;

json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) forja::throw_file_error(path, "cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    forja::throw_file_error(path, std::string("is not valid JSON: ") + e.what());
  }
}

// A conversation file: a list of {"role", "content"} messages, or an object with "messages" (and optionally
// "add_generation_prompt").
std::vector<forja::ChatMessage> read_conversation(const std::string& path, const json& j) {
  const json& list = j.is_object() && j.contains("messages") ? j["messages"] : j;
  if (!list.is_array())
    forja::throw_file_error(path, "is not a list of messages",
                            "write [{\"role\": \"user\", \"content\": \"...\"}]");
  std::vector<forja::ChatMessage> out;
  for (const auto& m : list) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      forja::throw_file_error(path, "has a message without string \"role\" and \"content\": " + m.dump());
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return out;
}

int run_tokenize(forja::cli::Args& args) {
  args.reject_unknown({"batch", "chat", "template"});
  const forja::Tokenizer tok = forja::Tokenizer::load(forja::cli::model_dir_arg(args, 0));
  const bool add_special = !args.flag("no-special");

  if (auto batch = args.option("batch")) {
    const json j = read_json_file(*batch);
    if (!j.is_array()) forja::throw_file_error(*batch, "is not a JSON list of strings");
    std::vector<std::string> texts;
    for (const auto& s : j) {
      if (!s.is_string()) forja::throw_file_error(*batch, "has an entry that is not a string: " + s.dump());
      texts.push_back(s.get<std::string>());
    }
    json out = json::array();
    for (auto& ids : tok.encode_batch(texts, add_special)) out.push_back(std::move(ids));
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }

  if (auto chat = args.option("chat")) {
    const json j = read_json_file(*chat);
    const auto messages = read_conversation(*chat, j);
    forja::ChatRenderOptions opt;
    opt.add_generation_prompt =
        args.flag("generation-prompt") || (j.is_object() && j.value("add_generation_prompt", false));
    const forja::ChatTemplate tpl = args.option("template")
                                        ? forja::ChatTemplate::builtin(*args.option("template"), &tok)
                                        : forja::ChatTemplate::for_tokenizer(tok);
    const forja::RenderedChat r = tpl.render(messages, opt);
    const forja::TokenizedChat t = forja::tokenize_chat(tok, r);
    json spans = json::array();
    for (const auto& [b, e] : r.assistant_spans) spans.push_back({b, e});
    const json out = {{"template", tpl.origin()},
                      {"text", r.text},
                      {"ids", t.ids},
                      {"mask", t.train_mask},
                      {"assistant_spans", spans}};
    std::printf("%s\n", out.dump(args.flag("json") ? -1 : 2).c_str());
    return 0;
  }

  const std::string& text = args.positional(1, "\"text\" (or --batch FILE / --chat FILE)");
  const forja::Encoding enc = tok.encode_with_spans(text, add_special);
  if (args.flag("json")) {
    json pieces = json::array();
    for (auto id : enc.ids) pieces.push_back(forja::printable_bytes(tok.id_to_piece(id)));
    const json out = {{"ids", enc.ids}, {"pieces", pieces}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("%zu tokens (%s, %s special tokens)\nids: ", enc.ids.size(), tok.info().backend.c_str(),
              add_special ? "with" : "without");
  for (size_t i = 0; i < enc.ids.size(); ++i) std::printf("%s%d", i ? " " : "", enc.ids[i]);
  std::printf("\n");
  // A byte-level piece or span may hold part of a character: such bytes print as <0xNN>, so that the output
  // stays valid UTF-8 (and nlohmann's dump, which refuses invalid UTF-8, cannot throw).
  for (size_t i = 0; i < enc.ids.size(); ++i) {
    const auto& sp = enc.spans[i];
    const std::string piece = forja::printable_bytes(tok.id_to_piece(enc.ids[i]));
    const std::string span =
        forja::printable_bytes(std::string_view(text).substr(sp.begin, sp.end - sp.begin));
    std::printf("%8d  %-24s  [%zu, %zu) %s\n", enc.ids[i], json(piece).dump().c_str(), sp.begin, sp.end,
                json(span).dump().c_str());
  }
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(tokenize, "Tokenize text, a batch of strings or a chat the way the model's tokenizer does",
                  "tokenize <model-dir|org/name> \"text\" [--pull] [--no-special] [--json]\n"
                  "       forja-cli tokenize <model-dir> --batch strings.json [--no-special]\n"
                  "       forja-cli tokenize <model-dir> --chat conversation.json [--template NAME] "
                  "[--generation-prompt] [--json]",
                  run_tokenize, {"json", "no-special", "generation-prompt", "pull"});
