// forja::ChatTemplate: a conversation rendered with the model's own Jinja chat template (tokenizer_config.json's
// chat_template, or chat_template.jinja), or with one of Forja's built-in templates for models that ship none.
// The same rendering gives the byte ranges of the assistant turns, from which tokenize_chat() derives the
// per-token training mask (loss only on what the assistant says, including its end-of-turn token).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forja/tokenizer.h"

namespace forja {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (ShareGPT's human/gpt are mapped by the data loader)
  std::string content;
};

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  // Extra template variables as a JSON object text (e.g. {"tools": [...]}); empty for none.
  std::string extra_variables_json;
};

struct RenderedChat {
  std::string text;
  // Byte ranges [begin, end) of `text` that are assistant output: each assistant turn's rendering, from just after
  // the generation prompt to the end of the turn (end-of-turn token included). Sorted, non-overlapping.
  std::vector<std::pair<size_t, size_t>> assistant_spans;
};

struct TokenizedChat {
  std::vector<TokenId> ids;
  std::vector<uint8_t> train_mask;  // one per id: 1 when the token is (part of) an assistant span
};

class ChatTemplate {
 public:
  // source: the Jinja text; origin: where it came from, for error messages (a file path or "built-in chatml").
  // bos/eos: the strings the template sees as bos_token / eos_token.
  ChatTemplate(std::string source, std::string origin, std::string bos_token = {}, std::string eos_token = {});
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // The model's own template when its tokenizer has one, else the built-in template for its family
  // (`family_hint`: "llama2", "llama3", "mistral", "chatml", "zephyr", "gpt2"; empty: chosen from the special tokens).
  static ChatTemplate for_tokenizer(const Tokenizer& tokenizer, std::string_view family_hint = {});
  // A built-in template by name; throws forja::Error listing the names for an unknown one.
  static ChatTemplate builtin(std::string_view name, const Tokenizer* tokenizer = nullptr);
  static std::vector<std::string> builtin_names();
  // The raw text of a built-in template.
  static const std::string& builtin_source(std::string_view name);

  // Renders the conversation. Throws forja::Error for a template error (naming the origin and line) or for a
  // raise_exception() in the template (with the template's own message).
  RenderedChat render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options = {}) const;

  const std::string& source() const;
  const std::string& origin() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Tokenizes a rendered chat as HF's apply_chat_template(tokenize=True) does (no extra special tokens added), and
// marks the tokens whose bytes overlap an assistant span.
TokenizedChat tokenize_chat(const Tokenizer& tokenizer, const RenderedChat& chat);

}  // namespace forja
