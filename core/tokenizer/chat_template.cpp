// forja::ChatTemplate: renders a conversation with the Jinja interpreter in the variables transformers passes
// (messages, add_generation_prompt, bos_token, eos_token, raise_exception, ...) and finds the assistant
// spans.
#include "forja/chat_template.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "forja/error.h"
#include "jinja.h"

namespace forja {
namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_chat_templates();
}

struct ChatTemplate::State {
  std::string source;
  std::string origin;
  std::string bos, eos;
  jinja::Template tpl;
  State(std::string s, std::string o, std::string b, std::string e)
      : source(std::move(s)),
        origin(std::move(o)),
        bos(std::move(b)),
        eos(std::move(e)),
        tpl(source, origin) {}
};

namespace {

jinja::Dict variables(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                      const std::string& bos, const std::string& eos, const jinja::Value& extra) {
  using jinja::Value;
  jinja::List list;
  for (const auto& m : messages)
    list.push_back(
        Value::make_dict({{"role", Value::string(m.role)}, {"content", Value::string(m.content)}}));
  jinja::Dict vars;
  // transformers passes the tokenizer's special tokens only when they are set; an unset one is undefined.
  if (!bos.empty()) vars.emplace_back("bos_token", Value::string(bos));
  if (!eos.empty()) vars.emplace_back("eos_token", Value::string(eos));
  vars.emplace_back("messages", Value::make_list(std::move(list)));
  vars.emplace_back("add_generation_prompt", Value::boolean(add_generation_prompt));
  vars.emplace_back("raise_exception", Value::function([](std::vector<Value>& args, jinja::Kwargs&) -> Value {
                      throw jinja::TemplateException{args.empty() ? std::string() : jinja::Value(args[0]).s};
                    }));
  vars.emplace_back("strftime_now", Value::function([](std::vector<Value>& args, jinja::Kwargs&) -> Value {
                      const std::time_t now =
                          std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
                      std::tm tm{};
                      localtime_r(&now, &tm);
                      char buf[128];
                      const std::string fmt = args.empty() ? std::string("%Y-%m-%d") : args[0].s;
                      const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
                      return Value::string(std::string(buf, n));
                    }));
  if (extra.type == Value::Type::Dict)
    for (const auto& entry : *extra.dict) {
      const auto& key = entry.first;  // clang 14 cannot capture a structured binding in a lambda
      auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& p) { return p.first == key; });
      if (it != vars.end())
        it->second = entry.second;
      else
        vars.emplace_back(key, entry.second);
    }
  return vars;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string origin, std::string bos_token,
                           std::string eos_token)
    : state_(std::make_unique<State>(std::move(source), std::move(origin), std::move(bos_token),
                                     std::move(eos_token))) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

const std::string& ChatTemplate::source() const {
  return state_->source;
}
const std::string& ChatTemplate::origin() const {
  return state_->origin;
}

std::vector<std::string> ChatTemplate::builtin_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::builtin_chat_templates()) names.emplace_back(name);
  return names;
}

const std::string& ChatTemplate::builtin_source(std::string_view name) {
  // Kept as std::string for the reference-returning API; built once.
  static const std::vector<std::pair<std::string, std::string>> sources = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [n, t] : detail::builtin_chat_templates())
      out.emplace_back(std::string(n), std::string(t));
    return out;
  }();
  for (const auto& [n, t] : sources)
    if (n == name) return t;
  std::string known;
  for (const auto& [n, t] : sources) known += (known.empty() ? "" : ", ") + n;
  throw Error("there is no built-in chat template named \"" + std::string(name) + "\"",
              "use one of: " + known);
}

ChatTemplate ChatTemplate::builtin(std::string_view name, const Tokenizer* tokenizer) {
  const std::string& src = builtin_source(name);
  std::string bos, eos;
  if (tokenizer) {
    bos = tokenizer->info().bos_token.value_or("");
    eos = tokenizer->info().eos_token.value_or("");
  }
  return ChatTemplate(src, "built-in " + std::string(name), bos, eos);
}

ChatTemplate ChatTemplate::for_tokenizer(const Tokenizer& tokenizer, std::string_view family_hint) {
  const TokenizerInfo& info = tokenizer.info();
  if (info.chat_template)
    return ChatTemplate(*info.chat_template,
                        info.model_dir.empty() ? std::string("chat_template")
                                               : info.model_dir + "/tokenizer_config.json (chat_template)",
                        info.bos_token.value_or(""), info.eos_token.value_or(""));
  if (!family_hint.empty()) return builtin(family_hint, &tokenizer);
  // No template and no hint: the special tokens say which family the vocabulary was made for.
  auto has = [&](const char* piece) { return tokenizer.piece_to_id(piece).has_value(); };
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return builtin("llama3", &tokenizer);
  if (has("<|im_start|>") && has("<|im_end|>"))
    return builtin(has("<think>") && has("</think>") ? "qwen3" : "chatml", &tokenizer);
  if (has("<|user|>") && has("<|assistant|>") && has("<|end|>")) return builtin("phi3", &tokenizer);
  if (has("<|user|>") && has("<|assistant|>")) return builtin("zephyr", &tokenizer);
  if (has("<start_of_turn>") && has("<end_of_turn>")) return builtin("gemma", &tokenizer);
  if (has("[INST]")) return builtin("mistral", &tokenizer);
  if (info.backend == "sentencepiece" || (info.bos_token && *info.bos_token == "<s>"))
    return builtin("llama2", &tokenizer);
  return builtin("gpt2", &tokenizer);
}

RenderedChat ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                  const ChatRenderOptions& options) const {
  const jinja::Value extra = options.extra_variables_json.empty()
                                 ? jinja::Value()
                                 : jinja::from_json_text(options.extra_variables_json);
  if (extra.defined() && extra.type != jinja::Value::Type::Dict)
    throw Error(state_->origin + ": extra chat template variables must be a JSON object");
  auto run = [&](const std::vector<ChatMessage>& msgs, bool gen) {
    try {
      return state_->tpl.render(variables(msgs, gen, state_->bos, state_->eos, extra));
    } catch (const jinja::TemplateException& e) {
      throw Error(state_->origin + ": the chat template refused this conversation: " + e.message,
                  "check the order of roles (many templates need user/assistant alternation)");
    }
  };

  RenderedChat out;
  jinja::Template::Output full = run(messages, options.add_generation_prompt);
  out.text = std::move(full.text);

  // 1. {% generation %} blocks mark the assistant output exactly (what transformers' assistant mask uses).
  if (!full.generation_spans.empty()) {
    for (const auto& [b, e] : full.generation_spans)
      if (e > b) out.assistant_spans.emplace_back(b, e);
    std::sort(out.assistant_spans.begin(), out.assistant_spans.end());
    return out;
  }

  size_t search_from = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant") continue;
    // 2. Prefix rendering: what the template writes for messages[:i] with the generation prompt is a prefix
    // of what it writes once turn i is there; the rest is the assistant turn, end-of-turn token included.
    std::optional<std::pair<size_t, size_t>> span;
    try {
      const std::vector<ChatMessage> before(messages.begin(),
                                            messages.begin() + static_cast<std::ptrdiff_t>(i));
      const std::vector<ChatMessage> upto(messages.begin(),
                                          messages.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      const std::string prompt = run(before, true).text;
      const std::string with_turn = run(upto, false).text;
      if (starts_with(with_turn, prompt) && starts_with(out.text, with_turn) &&
          prompt.size() >= search_from && with_turn.size() > prompt.size()) {
        // The turn ends with its end-of-turn token; whitespace the template writes after it (ChatML's "\n"
        // after <|im_end|>) separates turns and is not something the model learns to say.
        size_t end = with_turn.size();
        while (end > prompt.size() && (with_turn[end - 1] == '\n' || with_turn[end - 1] == ' ')) --end;
        if (state_->eos.empty() || end == with_turn.size() || end < state_->eos.size() ||
            with_turn.compare(end - state_->eos.size(), state_->eos.size(), state_->eos) != 0)
          end = with_turn.size();
        span = std::make_pair(prompt.size(), end);
      }
    } catch (const Error&) {
      // A template that cannot render a prefix (e.g. it reads messages[0] of an empty list) falls through.
    }
    // 3. Find the assistant's words in the text after the previous span, then take the end-of-turn token with
    // it.
    if (!span) {
      const std::string& content = messages[i].content;
      std::string needle = content;
      size_t at = out.text.find(needle, search_from);
      if (at == std::string::npos) {
        const size_t b = needle.find_first_not_of(" \t\r\n"), e = needle.find_last_not_of(" \t\r\n");
        needle = b == std::string::npos ? std::string() : needle.substr(b, e - b + 1);
        at = needle.empty() ? std::string::npos : out.text.find(needle, search_from);
      }
      if (at == std::string::npos || needle.empty())
        throw Error(
            state_->origin + ": cannot tell where assistant turn " + std::to_string(i) +
                " is in the rendered conversation",
            "the template neither has {% generation %} blocks nor renders prefixes of the conversation "
            "consistently; add {% generation %} ... {% endgeneration %} around the assistant output");
      size_t end = at + needle.size();
      size_t k = end;
      while (k < out.text.size() && (out.text[k] == ' ')) ++k;
      if (!state_->eos.empty() && out.text.compare(k, state_->eos.size(), state_->eos) == 0)
        end = k + state_->eos.size();
      span = std::make_pair(at, end);
    }
    out.assistant_spans.push_back(*span);
    search_from = span->second;
  }
  return out;
}

TokenizedChat tokenize_chat(const Tokenizer& tokenizer, const RenderedChat& chat) {
  TokenizedChat out;
  Encoding enc = tokenizer.encode_with_spans(chat.text, false);
  out.ids = std::move(enc.ids);
  out.train_mask.assign(out.ids.size(), 0);
  // Both lists are sorted by position, so one forward walk marks every token that overlaps a span.
  size_t s = 0;
  for (size_t t = 0; t < out.ids.size(); ++t) {
    const TokenSpan& tok = enc.spans[t];
    while (s < chat.assistant_spans.size() && chat.assistant_spans[s].second <= tok.begin) ++s;
    for (size_t k = s; k < chat.assistant_spans.size() && chat.assistant_spans[k].first < tok.end; ++k)
      if (tok.end > chat.assistant_spans[k].first && tok.begin < chat.assistant_spans[k].second) {
        out.train_mask[t] = 1;
        break;
      }
  }
  return out;
}

}  // namespace forja
