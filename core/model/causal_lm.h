// A loaded causal language model: token ids in, next-token logits out. One subclass per architecture family
// (llama.cpp's split): llama.cpp (Llama, Mistral, Qwen2, TinyLlama, SmolLM) and gpt2.cpp.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forja/model_config.h"

namespace forja {

class WeightProvider;

struct LoadOptions {
  std::optional<at::ScalarType> dtype;  // unset: the checkpoint's own (dominant) dtype
  at::Device device = at::kCPU;
};

class CausalLM : public torch::nn::Module {
 public:
  explicit CausalLM(ModelConfig config) : config_(std::move(config)) {}
  // input_ids: [B, T] int64 on the model's device. Returns logits [B, T, vocab] in the model's dtype.
  virtual at::Tensor forward(const at::Tensor& input_ids) = 0;
  const ModelConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 protected:
  ModelConfig config_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  friend std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig&, WeightProvider&);
};

// Builds the architecture named by the config, taking every parameter from `weights`.
std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig& config, WeightProvider& weights);

// Loads config.json and the safetensors weights of a Hugging Face model folder.
std::shared_ptr<CausalLM> load_causal_lm(const std::filesystem::path& model_dir, const LoadOptions& options = {});

// "cpu" / "cuda" / "cuda:1" and "fp32" / "bf16" / "fp16" as the CLI and the UI spell them; errors say what is
// wrong (e.g. CUDA asked for on a build or machine without it).
at::Device parse_device(const std::string& text);
at::ScalarType parse_dtype_name(const std::string& text);

}  // namespace forja
