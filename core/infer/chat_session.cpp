// ChatSession: the model's chat template and tokenizer over a Generator. Compiled only when the tokenizer
// area is.
#include <memory>

#include "forja/chat_template.h"
#include "forja/error.h"
#include "forja/generate.h"
#include "forja/tokenizer.h"

namespace forja {

namespace {

// Pieces that end an assistant turn in the common templates (ChatML, Llama 3, Phi, Gemma), used when the
// tokenizer has them as single tokens. The tokenizer's EOS is always one.
constexpr const char* kEndOfTurnPieces[] = {"<|im_end|>",    "<|eot_id|>",    "<|end|>",
                                            "<end_of_turn>", "<|endoftext|>", "</s>"};

}  // namespace

struct ChatSession::State {
  State(const std::string& dir, const EngineOptions& options, const std::string& template_name)
      : tokenizer(Tokenizer::load(dir)),
        chat(template_name.empty() ? ChatTemplate::for_tokenizer(tokenizer)
                                   : ChatTemplate::builtin(template_name, &tokenizer)),
        generator(dir, options) {
    if (tokenizer.info().eos_id) end_of_turn.push_back(*tokenizer.info().eos_id);
    for (const char* piece : kEndOfTurnPieces)
      if (auto id = tokenizer.piece_to_id(piece); id && tokenizer.is_special(*id)) end_of_turn.push_back(*id);
  }
  Tokenizer tokenizer;
  ChatTemplate chat;
  Generator generator;
  std::string system;
  std::vector<ChatTurn> history;
  std::vector<int32_t> end_of_turn;
};

ChatSession::ChatSession(const std::string& model_dir, const EngineOptions& options,
                         const std::string& chat_template)
    : state_(std::make_unique<State>(model_dir, options, chat_template)) {}
ChatSession::ChatSession(ChatSession&&) noexcept = default;
ChatSession& ChatSession::operator=(ChatSession&&) noexcept = default;
ChatSession::~ChatSession() = default;

void ChatSession::set_system_prompt(const std::string& text) {
  state_->system = text;
}
const std::vector<ChatTurn>& ChatSession::history() const {
  return state_->history;
}
void ChatSession::clear() {
  state_->history.clear();
}
Generator& ChatSession::generator() {
  return state_->generator;
}

std::vector<int32_t> ChatSession::encode(const std::string& text) const {
  return state_->tokenizer.encode(text, /*add_special_tokens=*/false);
}

std::string ChatSession::decode(const std::vector<int32_t>& ids) const {
  return state_->tokenizer.decode(ids);
}

GenerationResult ChatSession::send(const std::string& user_text, const GenerationConfig& config,
                                   const TokenCallback& on_token, const std::atomic<bool>* cancel) {
  State& s = *state_;
  std::vector<ChatMessage> messages;
  if (!s.system.empty()) messages.push_back({"system", s.system});
  for (const auto& t : s.history) messages.push_back({t.role, t.content});
  messages.push_back({"user", user_text});
  ChatRenderOptions render;
  render.add_generation_prompt = true;
  // The whole conversation each time: its earlier turns are the Generator's cached prefix, so only the new
  // turn is prefilled.
  const std::vector<TokenId> ids = tokenize_chat(s.tokenizer, s.chat.render(messages, render)).ids;

  GenerationConfig c = config;
  c.stop_token_ids.insert(c.stop_token_ids.end(), s.end_of_turn.begin(), s.end_of_turn.end());
  auto streaming = std::make_shared<StreamingDecoder>(s.tokenizer, /*skip_special_tokens=*/true);
  Detokenizer detok;
  detok.push = [streaming](int32_t id) { return streaming->push(id); };
  detok.finish = [streaming] { return streaming->finish(); };
  GenerationResult r = s.generator.generate(ids, c, on_token, detok, cancel);
  s.history.push_back({"user", user_text});
  s.history.push_back({"assistant", r.text});
  return r;
}

}  // namespace forja
