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

  // The conversation, then `user_text` and the assistant's opening, as token ids.
  std::vector<int32_t> prompt_ids(const std::string& user_text) const;
  // `messages` and the assistant's opening, as token ids.
  std::vector<int32_t> render(const std::vector<ChatMessage>& messages) const;
  // `config` plus the template's end-of-turn tokens as stops.
  GenerationConfig with_turn_stops(const GenerationConfig& config) const;
  // A fresh streaming decoder (special tokens not shown) for one answer.
  Detokenizer detokenizer() const;
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

std::vector<int32_t> ChatSession::encode(const std::string& text, bool add_special_tokens) const {
  return state_->tokenizer.encode(text, add_special_tokens);
}

std::string ChatSession::decode(const std::vector<int32_t>& ids) const {
  return state_->tokenizer.decode(ids);
}

void ChatSession::set_history(std::vector<ChatTurn> turns) {
  state_->history = std::move(turns);
}

std::vector<int32_t> ChatSession::State::prompt_ids(const std::string& user_text) const {
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  for (const auto& t : history) messages.push_back({t.role, t.content});
  messages.push_back({"user", user_text});
  // The whole conversation each time: its earlier turns are the Generator's cached prefix, so only the new
  // turn is prefilled.
  return render(messages);
}

std::vector<int32_t> ChatSession::State::render(const std::vector<ChatMessage>& messages) const {
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  return tokenize_chat(tokenizer, chat.render(messages, options)).ids;
}

std::vector<int32_t> ChatSession::prompt_ids(const std::vector<ChatTurn>& messages) const {
  std::vector<ChatMessage> rendered;
  rendered.reserve(messages.size());
  for (const auto& t : messages) rendered.push_back({t.role, t.content});
  return state_->render(rendered);
}

GenerationConfig ChatSession::with_turn_stops(const GenerationConfig& config) const {
  return state_->with_turn_stops(config);
}

Detokenizer ChatSession::detokenizer() const {
  return state_->detokenizer();
}

GenerationConfig ChatSession::State::with_turn_stops(const GenerationConfig& config) const {
  GenerationConfig c = config;
  c.stop_token_ids.insert(c.stop_token_ids.end(), end_of_turn.begin(), end_of_turn.end());
  return c;
}

Detokenizer ChatSession::State::detokenizer() const {
  auto streaming = std::make_shared<StreamingDecoder>(tokenizer, /*skip_special_tokens=*/true);
  Detokenizer detok;
  detok.push = [streaming](int32_t id) { return streaming->push(id); };
  detok.finish = [streaming] { return streaming->finish(); };
  return detok;
}

GenerationResult ChatSession::send(const std::string& user_text, const GenerationConfig& config,
                                   const TokenCallback& on_token, const std::atomic<bool>* cancel) {
  State& s = *state_;
  GenerationResult r = s.generator.generate(s.prompt_ids(user_text), s.with_turn_stops(config), on_token,
                                            s.detokenizer(), cancel);
  s.history.push_back({"user", user_text});
  s.history.push_back({"assistant", r.text});
  return r;
}

CompareResult ChatSession::compare(const std::string& user_text, const GenerationConfig& config,
                                   const std::function<bool(bool adapted, const TokenEvent&)>& on_token,
                                   const std::atomic<bool>* cancel) {
  State& s = *state_;
  return s.generator.compare(
      s.prompt_ids(user_text), s.with_turn_stops(config), on_token, [&s] { return s.detokenizer(); }, cancel);
}

}  // namespace forja
