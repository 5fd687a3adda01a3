// A LoRA adapter as PEFT saves it (adapter_config.json + adapter_model.safetensors), in the form the decoder
// applies: per module, A [r, in] and B [out, r], and PEFT's scale. The decoder computes y = x·Wᵀ +
// scale·(x·Aᵀ)·Bᵀ on top of the unchanged base, so the adapter is switched on and off between two answers
// without reloading. Reading and validating the folder against the model is core/model's lora_peft (the
// trainer's own format code).
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <string>

namespace forja {
class CausalLM;
}

namespace forja::infer {

struct LoraModule {
  at::Tensor a;  // [r, in], fp32
  at::Tensor b;  // [out, r], fp32
};

struct PeftAdapter {
  std::filesystem::path dir;
  double scale = 1.0;  // alpha / r, or alpha / sqrt(r) with rsLoRA (PEFT's scaling)
  // By Hugging Face module name, e.g. "model.layers.0.self_attn.q_proj".
  std::map<std::string, LoraModule> modules;
};

// Reads the adapter folder and checks it against `model` (every targeted projection present, shapes right,
// nothing else in the file); throws forja::Error naming the file otherwise. The model is left exactly as it
// was.
PeftAdapter read_peft_adapter(CausalLM& model, const std::filesystem::path& dir);

}  // namespace forja::infer
