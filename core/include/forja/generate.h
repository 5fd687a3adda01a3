// forja::Generator: text generation from a loaded model, the engine behind the chat pane and `forja-cli
// generate`. Plain C++ (no LibTorch, no Qt), so the UI includes it directly.
//
//   forja::Generator gen("models/TinyLlama", {});          // loads the model (bf16 + CUDA graphs on a GPU)
//   gen.load_adapter("runs/7/final");                       // optional LoRA adapter, switchable at run time
//   forja::GenerationConfig cfg;  cfg.max_new_tokens = 256;  cfg.temperature = 0.7;  cfg.top_p = 0.9;
//   auto result = gen.generate(prompt_ids, cfg, [&](const forja::TokenEvent& e) {
//     show(e.text);
//     return !stop_requested;  // false cancels
//   });
//
// A Generator keeps one conversation's KV cache: a prompt that starts with the tokens already fed (the
// previous turns) only prefills the new ones. It is not thread-safe: one generation at a time, from one
// thread (the UI runs it on a worker thread and cancels through the callback or the atomic flag).
//
// ChatSession adds the tokenizer and the model's chat template on top: messages in, streamed text out. It
// needs the tokenizer area (forja_tokenizer); builds without it (the GPU machine) have Generator only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace forja {

struct EngineOptions {
  std::string device = "auto";  // "auto" (CUDA when available), "cpu", "cuda", "cuda:1"
  std::string dtype = "auto";   // "auto" (bf16 on CUDA, fp32 on the CPU), "fp32", "bf16", "fp16"
  int64_t max_context = 0;      // KV cache length; 0: the model's maximum, at most 4096
  bool cuda_graphs = true;      // capture the decode step in CUDA graphs (LibTorch 2.x on CUDA)
  // The base model's projections: "none" (as `dtype` says) or "nf4" (4-bit, as QLoRA trains on; `dtype` is
  // then the compute dtype). Llama family only.
  std::string base_quant = "none";
  bool nf4_double_quant = true;  // with nf4: the block absmax in 8 bits
  bool nf4_cache = true;         // with nf4: read / write the quantized base in the user's cache
};

struct GenerationConfig {
  int64_t max_new_tokens = 256;
  // Sampling: temperature <= 0 is greedy. The filters follow transformers' order: repetition penalty,
  // presence / frequency penalties (OpenAI's, on the answer so far), temperature, top-k, top-p, min-p.
  double temperature = 0.0;
  int64_t top_k = 0;   // 0: off
  double top_p = 1.0;  // 1: off
  double min_p = 0.0;  // 0: off
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  uint64_t seed = 0;  // same seed, same prompt, same settings: same tokens
  // Stops. The model's EOS ids (config.json) stop when stop_at_eos; stop_token_ids adds others (a chat
  // template's end-of-turn tokens). Stop strings are matched on the decoded text, so they need a Detokenizer.
  bool stop_at_eos = true;
  // The model's EOS ids cannot be chosen before this many new tokens (transformers' min_new_tokens).
  int64_t min_new_tokens = 0;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop_strings;
};

enum class StopReason { EndOfSequence, StopToken, StopString, MaxTokens, ContextFull, Cancelled };
const char* stop_reason_name(StopReason reason);

// One generated token, as streamed. `text` is the new text that is now certain: whole UTF-8 characters only,
// held back while it might be the start of a stop string, empty for stop tokens and without a Detokenizer.
struct TokenEvent {
  int32_t id = 0;
  double logprob = 0;  // log-probability of this token under the model's unmodified distribution
  std::string text;
  int64_t index = 0;  // 0 for the first new token
};
// Returns false to cancel the generation.
using TokenCallback = std::function<bool(const TokenEvent&)>;

// Turns ids into text pieces (e.g. forja::StreamingDecoder::push / finish); one fresh instance per
// generation.
struct Detokenizer {
  std::function<std::string(int32_t)> push;
  std::function<std::string()> finish;  // optional: the text held back at the end of the stream
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;  // prompt tokens whose KV was already cached (not prefilled again)
  int64_t new_tokens = 0;
  double first_token_seconds = 0;  // from the call to the first new token chosen (prefill + first choice)
  double decode_seconds = 0;       // from the first new token to the last
  double decode_tokens_per_second() const;
};

struct GenerationResult {
  std::vector<int32_t> tokens;   // the new tokens (a stop token included, as transformers' generate does)
  std::vector<double> logprobs;  // one per token, under the model that generated it
  std::string text;  // decoded text up to (not including) a stop string; empty without a Detokenizer
  StopReason stop = StopReason::MaxTokens;
  GenerationStats stats;
};

// One prompt answered with the adapter off and on; each answer scored under both models.
struct CompareResult {
  GenerationResult base, adapted;
  std::vector<double> base_under_adapter;  // per-token log-probs of base.tokens with the adapter on
  std::vector<double> adapted_under_base;  // per-token log-probs of adapted.tokens with the adapter off
};

struct ModelFacts {
  std::string model_dir, family, device, dtype;
  int64_t vocab_size = 0, max_context = 0, parameters = 0, weight_bytes = 0, kv_cache_bytes = 0;
  std::vector<int32_t> eos_token_ids;
  bool cuda_graphs = false;
};

class Generator {
 public:
  class Impl;

  // Loads the model folder (config.json + safetensors). Throws forja::Error naming the file and the problem.
  explicit Generator(const std::string& model_dir, const EngineOptions& options = {});
  explicit Generator(std::unique_ptr<Impl> impl);
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  ~Generator();

  // A PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors), applied on top of the
  // loaded base; it starts enabled. Loading another replaces it.
  void load_adapter(const std::string& adapter_dir);
  void unload_adapter();
  bool has_adapter() const;
  void set_adapter_enabled(
      bool enabled);  // no reload; the cached conversation is recomputed on the next call
  bool adapter_enabled() const;

  // Generates a continuation of `prompt`. `cancel` (optional) is polled before every decode step.
  GenerationResult generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                            const TokenCallback& on_token = {}, Detokenizer detokenizer = {},
                            const std::atomic<bool>* cancel = nullptr);
  // Per-token log-probs of `continuation` after `prompt`, with the adapter on or off.
  std::vector<double> score(const std::vector<int32_t>& prompt, const std::vector<int32_t>& continuation,
                            bool with_adapter);
  // Needs an adapter. `on_token` gets the base answer's events first, then the adapted one's (`adapted`
  // tells).
  CompareResult compare(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                        const std::function<bool(bool adapted, const TokenEvent&)>& on_token = {},
                        const std::function<Detokenizer()>& make_detokenizer = {},
                        const std::atomic<bool>* cancel = nullptr);

  void reset();                                       // forgets the cached conversation
  const std::vector<int32_t>& cached_tokens() const;  // the tokens whose K/V the cache holds
  ModelFacts facts() const;

  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct ChatTurn {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// A conversation with the model's chat template and tokenizer (needs the tokenizer area). Each send() renders
// the whole conversation, so the cached earlier turns are reused and only the new turn is prefilled.
class ChatSession {
 public:
  // Loads the model and its tokenizer from the same folder. `chat_template`: a built-in template name to use
  // instead of the model's own (empty: the model's, else one chosen from its special tokens).
  ChatSession(const std::string& model_dir, const EngineOptions& options = {},
              const std::string& chat_template = {});
  ChatSession(ChatSession&&) noexcept;
  ChatSession& operator=(ChatSession&&) noexcept;
  ~ChatSession();

  void set_system_prompt(const std::string& text);
  // Adds the user's message, generates the assistant's reply (streamed through on_token's text), and adds it.
  // Stops at the template's end-of-turn tokens as well as config's stops.
  GenerationResult send(const std::string& user_text, const GenerationConfig& config,
                        const TokenCallback& on_token = {}, const std::atomic<bool>* cancel = nullptr);
  // The next user message answered with the adapter off and on (Generator::compare on the rendered
  // conversation, with the template's stops); neither answer joins the history. Needs an adapter.
  CompareResult compare(const std::string& user_text, const GenerationConfig& config,
                        const std::function<bool(bool adapted, const TokenEvent&)>& on_token = {},
                        const std::atomic<bool>* cancel = nullptr);
  const std::vector<ChatTurn>& history() const;
  // Replaces the conversation, e.g. with a chat reopened from the journal; the next send() continues it.
  void set_history(std::vector<ChatTurn> turns);
  void clear();  // the system prompt stays

  Generator& generator();
  // The token ids a text encodes to (special tokens added only when asked, as HF's encode does), and back.
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = false) const;
  std::string decode(const std::vector<int32_t>& ids) const;

  // The pieces send() is made of, for a caller that brings the whole conversation each time (the API
  // server): `messages` rendered with the template and its generation prompt, as token ids (the history and
  // system prompt are not used); `config` with the template's end-of-turn tokens added to its stops; a fresh
  // streaming decoder (special tokens not shown) for one answer.
  std::vector<int32_t> prompt_ids(const std::vector<ChatTurn>& messages) const;
  GenerationConfig with_turn_stops(const GenerationConfig& config) const;
  Detokenizer detokenizer() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace forja
