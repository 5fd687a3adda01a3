// Generator::Impl: the id-level generation loop over a Decoder, its KV cache and a DecodeRunner. Internal
// (LibTorch types); the tests and the benchmark build one around an already loaded CausalLM.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode_runner.h"
#include "decoder.h"
#include "forja/generate.h"
#include "sampler.h"

namespace forja {
class CausalLM;
}

namespace forja {

class Generator::Impl {
 public:
  // `model` is kept alive by the Impl; its q/k/v and gate/up parameters are re-pointed at fused buffers.
  Impl(std::shared_ptr<CausalLM> model, const EngineOptions& options, std::string model_dir = {});

  void load_adapter(const std::string& dir);
  void unload_adapter();
  void set_adapter_enabled(bool on);

  GenerationResult generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                            const TokenCallback& on_token, Detokenizer detokenizer,
                            const std::atomic<bool>* cancel);
  std::vector<double> score(const std::vector<int32_t>& prompt, const std::vector<int32_t>& continuation,
                            bool with_adapter);
  void reset();

  infer::Decoder& decoder() { return *decoder_; }
  infer::DecodeRunner& runner() { return *runner_; }
  CausalLM& model() { return *model_; }
  const std::vector<int32_t>& cached() const { return cached_; }
  ModelFacts facts() const;

 private:
  // Makes the cache hold `ids` minus what can be reused, and returns the logits after the last of them (fp32
  // on the device; [vocab], or [ids.size() - from, vocab] with all_logits from position `from`).
  at::Tensor feed(const std::vector<int32_t>& ids, bool all_logits, int64_t& reused);
  void check_ids(const std::vector<int32_t>& ids, const char* what) const;
  [[noreturn]] void throw_non_finite() const;

  std::shared_ptr<CausalLM> model_;
  std::string model_dir_;
  std::unique_ptr<infer::Decoder> decoder_;
  std::unique_ptr<infer::DecodeRunner> runner_;
  std::vector<int32_t> cached_;  // tokens whose K/V are in the cache, positions 0..size-1
  bool cached_with_adapter_ = false;
};

// The defaults EngineOptions "auto" resolves to.
at::Device resolve_device(const std::string& text);
at::ScalarType resolve_dtype(const std::string& text, const at::Device& device);

}  // namespace forja
