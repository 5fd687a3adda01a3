// A loaded causal language model: token ids in, next-token logits out. One subclass per architecture family
// (llama.cpp's split): llama.cpp (Llama, Mistral, Qwen2, TinyLlama, SmolLM) and gpt2.cpp.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forja/model_config.h"
#include "forja/nf4.h"

namespace forja {

class WeightProvider;

// What training adds to a forward pass. All optional: an empty ForwardOptions is plain causal attention over
// positions 0..T-1, exactly forward(input_ids).
struct ForwardOptions {
  at::Tensor
      position_ids;  // [B, T] int64: position of each token within its own example (packing restarts it)
  at::Tensor segment_ids;  // [B, T] int64: attention stays inside equal ids (packed examples); undefined: one
                           // example per row
  bool recompute_blocks =
      false;  // activation checkpointing: keep only each block's input, recompute in backward
  // Selective activation checkpointing (Llama family; GPT-2 ignores it): the GEMM outputs are kept, and the
  // LoRA adapters remake their inputs that are cheap memory-bound functions of kept tensors (the norms'
  // outputs, SwiGLU's output, the attention output's merged copy) in backward instead of keeping them.
  bool selective_checkpointing = false;
};

struct LoadOptions {
  LoadOptions() = default;
  // The common case, `{dtype, device}`, spelled as before the NF4 fields came.
  LoadOptions(std::optional<at::ScalarType> dtype_, at::Device device_ = at::kCPU)
      : dtype(dtype_), device(device_) {}
  std::optional<at::ScalarType> dtype;  // unset: the checkpoint's own (dominant) dtype
  at::Device device = at::kCPU;
  // QLoRA: the decoder layers' projection weights (quant::should_quantize_nf4) are quantized to NF4 as they
  // are read, one at a time on `device`, and held in 4 bits; `dtype` is then the compute dtype. Llama family
  // only.
  std::optional<quant::Nf4Options> nf4;
  // With nf4: a cache of the quantized tensors. Read when it exists and was made from the same checkpoint
  // files with the same options; otherwise (absent, stale or unreadable) written after quantizing, and
  // `notes` says why it was rebuilt.
  std::filesystem::path nf4_cache;
  std::function<void(const std::string&)> notes;
};

class CausalLM : public torch::nn::Module {
 public:
  explicit CausalLM(ModelConfig config) : config_(std::move(config)) {}
  // input_ids: [B, T] int64 on the model's device. Returns logits [B, T, vocab] in the model's dtype.
  at::Tensor forward(const at::Tensor& input_ids) { return logits(hidden_states(input_ids, {})); }
  // The final-norm hidden states [B, T, hidden]; the trainer feeds them to a chunked loss so that the
  // [tokens, vocab] logits never exist at once.
  virtual at::Tensor hidden_states(const at::Tensor& input_ids, const ForwardOptions& options) = 0;
  // The output projection [vocab, hidden] (the embedding when tied); no bias in any supported family.
  virtual const at::Tensor& head_weight() const = 0;
  // With Gemma 2's final soft-capping, cap·tanh(logits / cap) in the logits' dtype, as transformers does.
  at::Tensor logits(const at::Tensor& hidden) const {
    at::Tensor out = at::linear(hidden, head_weight());
    const double cap = config_.final_softcap;
    return cap > 0 ? at::tanh(out / cap) * cap : out;
  }
  const ModelConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 protected:
  ModelConfig config_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  friend std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig&, WeightProvider&);
};

// Activation checkpointing for one block: runs `block(x)` without keeping its intermediate activations and
// runs it again in backward to get them. If x does not require grad it is made to (as transformers'
// enable_input_require_grads does) so that the adapters inside the first block still receive gradients.
at::Tensor recompute_in_backward(std::function<at::Tensor(const at::Tensor&)> block, at::Tensor x);

// Where a model's NF4 cache goes by default: <cache>/nf4/<the model folder's absolute path, as a file
// name>-b<block>
// [-dq<dq block>].safetensors, <cache> being $FORJA_CACHE_DIR, else $XDG_CACHE_HOME/forja, else
// ~/.cache/forja. Empty when none of those is set. The cache itself records which checkpoint files it was
// made from.
std::filesystem::path default_nf4_cache_path(const std::filesystem::path& model_dir,
                                             const quant::Nf4Options& options);

// Builds the architecture named by the config, taking every parameter from `weights`.
std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig& config, WeightProvider& weights);

// Replaces every NF4 projection (QLoRA) by its dequantized weights in the model's dtype, as a plain `weight`
// parameter: the model's named_parameters() are then the checkpoint's keys again (export).
void dequantize_nf4_base(CausalLM& model);

// Loads config.json and the safetensors weights of a Hugging Face model folder.
std::shared_ptr<CausalLM> load_causal_lm(const std::filesystem::path& model_dir,
                                         const LoadOptions& options = {});

// "cpu" / "cuda" / "cuda:1" and "fp32" / "bf16" / "fp16" as the CLI and the UI spell them; errors say what is
// wrong (e.g. CUDA asked for on a build or machine without it).
at::Device parse_device(const std::string& text);
at::ScalarType parse_dtype_name(const std::string& text);

}  // namespace forja
