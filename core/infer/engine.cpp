// The generation loop (prefill, choose, stream, stop, decode) and the public Generator around it.
#include "engine.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "causal_lm.h"
#include "forja/error.h"
#include "stop_text.h"

namespace forja {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

infer::SamplingParams sampling_params(const GenerationConfig& c) {
  infer::SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.repetition_penalty = c.repetition_penalty;
  p.presence_penalty = c.presence_penalty;
  p.frequency_penalty = c.frequency_penalty;
  p.seed = c.seed;
  return p;
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::EndOfSequence:
      return "eos";
    case StopReason::StopToken:
      return "stop_token";
    case StopReason::StopString:
      return "stop_string";
    case StopReason::MaxTokens:
      return "max_tokens";
    case StopReason::ContextFull:
      return "context_full";
    case StopReason::Cancelled:
      return "cancelled";
  }
  return "?";
}

double GenerationStats::decode_tokens_per_second() const {
  return decode_seconds > 0 && new_tokens > 1 ? static_cast<double>(new_tokens - 1) / decode_seconds : 0.0;
}

at::Device resolve_device(const std::string& text) {
  if (text.empty() || text == "auto") return at::hasCUDA() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  return parse_device(text);
}

at::ScalarType resolve_dtype(const std::string& text, const at::Device& device) {
  // bf16 on CUDA (decode reads every weight once per token: half the bytes of fp32); fp32 on the CPU, where
  // LibTorch's bf16 matmuls are slow.
  if (text.empty() || text == "auto") return device.is_cuda() ? at::kBFloat16 : at::kFloat;
  return parse_dtype_name(text);
}

Generator::Impl::Impl(std::shared_ptr<CausalLM> model, const EngineOptions& options, std::string model_dir)
    : model_(std::move(model)), model_dir_(std::move(model_dir)) {
  const ModelConfig& c = model_->config();
  int64_t capacity = options.max_context;
  if (capacity <= 0)
    capacity = c.max_position_embeddings > 0 ? std::min<int64_t>(c.max_position_embeddings, 4096) : 4096;
  // The KV cache is allocated for the whole context up front: past the model's positions it is both
  // meaningless and, for a typo like 1e11, an allocation that cannot succeed.
  if (c.max_position_embeddings > 0 && capacity > c.max_position_embeddings)
    throw Error(
        "the context of " + std::to_string(capacity) + " tokens is beyond the model's " +
            std::to_string(c.max_position_embeddings) + " (max_position_embeddings)",
        "Ask for a context in [1, " + std::to_string(c.max_position_embeddings) + "], or 0 for the default.");
  decoder_ = infer::Decoder::create(*model_, capacity);
  runner_ = std::make_unique<infer::DecodeRunner>(*decoder_, options.cuda_graphs);
}

void Generator::Impl::check_ids(const std::vector<int32_t>& ids, const char* what) const {
  const int64_t vocab = decoder_->vocab_size();
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw Error(std::string(what) + " holds token id " + std::to_string(id) +
                      ", outside the model's vocabulary of " + std::to_string(vocab),
                  "the ids must come from this model's tokenizer");
}

void Generator::Impl::throw_non_finite() const {
  if (decoder_->adapter_enabled())
    throw Error(
        "the model with its adapter produces non-finite values (NaN or Inf) in its logits",
        "The adapter's or the model's weights hold NaN or Inf: check them, or try without the adapter.");
  throw Error(
      "the model produces non-finite values (NaN or Inf) in its logits",
      "Its weights hold NaN or Inf, or its config.json has a bad value: re-download or re-export it.");
}

void Generator::Impl::reset() {
  cached_.clear();
}

void Generator::Impl::load_adapter(const std::string& dir) {
  infer::PeftAdapter adapter = infer::read_peft_adapter(*model_, dir);
  runner_->invalidate();
  decoder_->set_adapter(adapter);
  reset();
}

void Generator::Impl::unload_adapter() {
  runner_->invalidate();
  decoder_->clear_adapter();
  reset();
}

void Generator::Impl::set_adapter_enabled(bool on) {
  if (on && !decoder_->has_adapter())
    throw Error("no adapter is loaded", "load one (an adapter folder written by training or by PEFT) first");
  decoder_->set_adapter_enabled(on);
}

at::Tensor Generator::Impl::feed(const std::vector<int32_t>& ids, bool all_logits, int64_t& reused) {
  // Reuse the longest cached prefix computed with the same adapter state, but always feed at least the last
  // token: its logits are what the caller needs (and with all_logits, every row from `reused` on).
  size_t common = 0;
  if (cached_with_adapter_ == decoder_->adapter_enabled())
    while (common < cached_.size() && common < ids.size() && cached_[common] == ids[common]) ++common;
  common = std::min(common, ids.size() - 1);
  cached_.resize(common);
  std::vector<int64_t> fresh(ids.begin() + static_cast<std::ptrdiff_t>(common), ids.end());
  at::Tensor logits =
      decoder_->prefill(at::tensor(fresh, at::kLong), static_cast<int64_t>(common), all_logits);
  // One reduction per prefill: NaN or Inf weights would otherwise come out as null scores or a run of token
  // 0.
  if (!at::isfinite(logits).all().item<bool>()) {
    cached_.clear();
    throw_non_finite();
  }
  cached_ = ids;
  cached_with_adapter_ = decoder_->adapter_enabled();
  reused = static_cast<int64_t>(common);
  return logits.to(at::kFloat);
}

GenerationResult Generator::Impl::generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                                           const TokenCallback& on_token, Detokenizer detokenizer,
                                           const std::atomic<bool>* cancel) {
  if (prompt.empty())
    throw Error("the prompt is empty", "generation continues a prompt of at least one token");
  check_ids(prompt, "the prompt");
  if (config.max_new_tokens < 0) throw Error("max_new_tokens must not be negative");
  if (config.min_new_tokens < 0) throw Error("min_new_tokens must not be negative");
  if (!config.stop_strings.empty() && !detokenizer.push)
    throw Error("stop strings need the decoded text",
                "pass a Detokenizer (the tokenizer's StreamingDecoder)");
  at::NoGradGuard no_grad;
  const auto t0 = Clock::now();
  GenerationResult r;
  r.stats.prompt_tokens = static_cast<int64_t>(prompt.size());
  if (config.max_new_tokens == 0) return r;

  infer::Sampler sampler(sampling_params(config), decoder_->vocab_size(), decoder_->device());
  sampler.observe_prompt(prompt);
  std::set<int32_t> eos, stop_ids(config.stop_token_ids.begin(), config.stop_token_ids.end());
  if (config.stop_at_eos)
    for (int64_t id : model_->config().eos_token_ids) eos.insert(static_cast<int32_t>(id));
  infer::StopText stop_text(config.stop_strings);
  at::Tensor suppressed;  // the EOS ids while fewer than min_new_tokens are out
  if (config.min_new_tokens > 0) {
    std::vector<int64_t> ids;
    for (int64_t id : model_->config().eos_token_ids)
      if (id >= 0 && id < decoder_->vocab_size()) ids.push_back(id);
    if (!ids.empty()) suppressed = at::tensor(ids, at::kLong).to(decoder_->device());
  }

  at::Tensor logits = feed(prompt, false, r.stats.reused_tokens).view({-1});
  infer::StepOutput step;
  Clock::time_point first_token_at;
  for (int64_t i = 0;; ++i) {
    const at::Tensor& current = i == 0 ? logits : step.logits;
    int32_t token = 0;
    double logprob = 0;
    if (suppressed.defined() && i < config.min_new_tokens) {
      token = sampler.choose(current.index_fill(0, suppressed, -std::numeric_limits<double>::infinity()));
      logprob = (current[token] - at::logsumexp(current, {0})).item<double>();
    } else if (sampler.needs_logits()) {
      token = sampler.choose(current);
      logprob = (current[token] - at::logsumexp(current, {0})).item<double>();
    } else if (i == 0) {
      std::tie(token, logprob) = infer::DecodeRunner::best_of(current);
    } else {
      token = step.best;  // the runner already took the argmax and its log-prob on the device
      logprob = step.best_logprob;
    }
    // The chosen token's log-prob is on the host already: a NaN anywhere in the row makes it NaN as well.
    if (!std::isfinite(logprob)) {
      cached_.clear();
      throw_non_finite();
    }
    if (i == 0) {
      first_token_at = Clock::now();
      r.stats.first_token_seconds = seconds_since(t0);
    }
    sampler.observe(token);
    r.tokens.push_back(token);
    r.logprobs.push_back(logprob);

    TokenEvent event;
    event.id = token;
    event.logprob = logprob;
    event.index = i;
    bool last = true;
    if (eos.count(token))
      r.stop = StopReason::EndOfSequence;
    else if (stop_ids.count(token))
      r.stop = StopReason::StopToken;
    else
      last = false;
    if (!last && detokenizer.push && stop_text.add(detokenizer.push(token), event.text)) {
      r.stop = StopReason::StopString;
      last = true;
    }
    if (!last && i + 1 >= config.max_new_tokens) r.stop = StopReason::MaxTokens, last = true;
    if (!last && static_cast<int64_t>(cached_.size()) >= decoder_->capacity())
      r.stop = StopReason::ContextFull, last = true;
    if (last && r.stop != StopReason::StopString) {
      std::string tail;
      if (detokenizer.finish && stop_text.add(detokenizer.finish(), tail)) r.stop = StopReason::StopString;
      event.text += tail + stop_text.flush();
    }
    r.text += event.text;
    if (on_token && !on_token(event)) {
      r.stop = StopReason::Cancelled;
      break;
    }
    if (last) break;
    if (cancel != nullptr && cancel->load()) {
      r.stop = StopReason::Cancelled;
      break;
    }
    step = runner_->step(token, static_cast<int64_t>(cached_.size()));
    cached_.push_back(token);
  }
  r.stats.new_tokens = static_cast<int64_t>(r.tokens.size());
  r.stats.decode_seconds = seconds_since(first_token_at);
  return r;
}

std::vector<double> Generator::Impl::score(const std::vector<int32_t>& prompt,
                                           const std::vector<int32_t>& continuation, bool with_adapter) {
  if (prompt.empty()) throw Error("scoring needs a prompt of at least one token");
  if (continuation.empty()) return {};
  check_ids(prompt, "the prompt");
  check_ids(continuation, "the continuation");
  at::NoGradGuard no_grad;
  const bool was_on = decoder_->adapter_enabled();
  set_adapter_enabled(with_adapter);
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), continuation.begin(), continuation.end() - 1);
  // Cap reuse so that the logits of the last prompt position (which predict the first continuation token) are
  // computed: feed() always recomputes at least the last token; here we need every row from prompt.size() - 1
  // on.
  const size_t need_from = prompt.size() - 1;
  if (cached_.size() > need_from) cached_.resize(need_from);
  int64_t reused = 0;
  at::Tensor logits;
  try {
    logits = feed(seq, /*all_logits=*/true, reused);
  } catch (...) {
    decoder_->set_adapter_enabled(was_on);
    throw;
  }
  decoder_->set_adapter_enabled(was_on);
  at::Tensor logp = at::log_softmax(
      logits.narrow(0, static_cast<int64_t>(need_from) - reused, static_cast<int64_t>(continuation.size())),
      -1);
  at::Tensor targets = at::tensor(std::vector<int64_t>(continuation.begin(), continuation.end()), at::kLong);
  at::Tensor picked =
      logp.gather(1, targets.to(logp.device()).unsqueeze(1)).squeeze(1).to(at::kCPU, at::kDouble);
  return std::vector<double>(picked.data_ptr<double>(), picked.data_ptr<double>() + picked.numel());
}

ModelFacts Generator::Impl::facts() const {
  ModelFacts f;
  const ModelConfig& c = model_->config();
  f.model_dir = model_dir_;
  f.family = family_name(c.family);
  f.device = decoder_->device().str();
  f.dtype = c10::toString(decoder_->dtype());
  f.vocab_size = decoder_->vocab_size();
  f.max_context = decoder_->capacity();
  for (const auto& p : model_->parameters(true)) f.parameters += p.numel();
  f.weight_bytes = decoder_->weight_bytes();
  f.kv_cache_bytes = decoder_->cache().bytes();
  for (int64_t id : c.eos_token_ids) f.eos_token_ids.push_back(static_cast<int32_t>(id));
  f.cuda_graphs = runner_->uses_cuda_graphs();
  return f;
}

// ---- the public, torch-free face ----

Generator::Generator(const std::string& model_dir, const EngineOptions& options) {
  const at::Device device = resolve_device(options.device);
  LoadOptions load;
  load.device = device;
  load.dtype = resolve_dtype(options.dtype, device);
  if (options.base_quant == "nf4") {
    if (*load.dtype != at::kFloat && *load.dtype != at::kBFloat16)
      throw Error("a 4-bit (nf4) base computes in fp32 or bf16, not " + options.dtype,
                  "Use --dtype auto, bf16 or fp32.");
    load.nf4 = quant::Nf4Options{};
    load.nf4->double_quant = options.nf4_double_quant;
    if (options.nf4_cache) load.nf4_cache = default_nf4_cache_path(model_dir, *load.nf4);
  } else if (options.base_quant != "none") {
    throw Error("base quantization '" + options.base_quant + "' is not none or nf4");
  }
  impl_ = std::make_unique<Impl>(load_causal_lm(model_dir, load), options, model_dir);
}

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

void Generator::load_adapter(const std::string& adapter_dir) {
  impl_->load_adapter(adapter_dir);
}
void Generator::unload_adapter() {
  impl_->unload_adapter();
}
bool Generator::has_adapter() const {
  return impl_->decoder().has_adapter();
}
void Generator::set_adapter_enabled(bool enabled) {
  impl_->set_adapter_enabled(enabled);
}
bool Generator::adapter_enabled() const {
  return impl_->decoder().adapter_enabled();
}
void Generator::reset() {
  impl_->reset();
}
const std::vector<int32_t>& Generator::cached_tokens() const {
  return impl_->cached();
}
ModelFacts Generator::facts() const {
  return impl_->facts();
}

GenerationResult Generator::generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                                     const TokenCallback& on_token, Detokenizer detokenizer,
                                     const std::atomic<bool>* cancel) {
  return impl_->generate(prompt, config, on_token, std::move(detokenizer), cancel);
}

std::vector<double> Generator::score(const std::vector<int32_t>& prompt,
                                     const std::vector<int32_t>& continuation, bool with_adapter) {
  return impl_->score(prompt, continuation, with_adapter);
}

CompareResult Generator::compare(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                                 const std::function<bool(bool, const TokenEvent&)>& on_token,
                                 const std::function<Detokenizer()>& make_detokenizer,
                                 const std::atomic<bool>* cancel) {
  if (!has_adapter()) throw Error("compare needs an adapter", "load an adapter first");
  const bool was_on = adapter_enabled();
  CompareResult out;
  for (bool adapted : {false, true}) {
    impl_->set_adapter_enabled(adapted);
    TokenCallback cb;
    if (on_token) cb = [&on_token, adapted](const TokenEvent& e) { return on_token(adapted, e); };
    (adapted ? out.adapted : out.base) =
        impl_->generate(prompt, config, cb, make_detokenizer ? make_detokenizer() : Detokenizer{}, cancel);
  }
  out.base_under_adapter = impl_->score(prompt, out.base.tokens, true);
  out.adapted_under_base = impl_->score(prompt, out.adapted.tokens, false);
  impl_->set_adapter_enabled(was_on);
  return out;
}

}  // namespace forja
