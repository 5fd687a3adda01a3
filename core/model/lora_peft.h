// LoRA adapters in PEFT's on-disk format, so that adapters move freely between Forja and transformers + PEFT:
//   adapter_config.json        {"peft_type": "LORA", "r", "lora_alpha", "lora_dropout", "target_modules",
//                               "use_rslora", "fan_in_fan_out", "bias": "none", "task_type": "CAUSAL_LM",
//                               ...}
//   adapter_model.safetensors  "base_model.model.<module>.lora_A.weight" [r, in] and ".lora_B.weight" [out,
//   r]
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lora_linear.h"

namespace forja {

// Reads adapter_config.json; throws forja::Error naming the file for anything Forja cannot reproduce (DoRA, a
// rank or alpha pattern, LoRA biases, another PEFT type).
LoraOptions read_peft_config(const std::filesystem::path& adapter_dir);

// Writes both files (each atomically). `base_model` goes into base_model_name_or_path.
void save_peft_adapter(const LoraAdapters& adapters, const std::filesystem::path& adapter_dir,
                       const std::string& base_model);

// Copies adapter_model.safetensors into already attached adapters; every adapter must be in the file with the
// right shape, and the file must hold nothing else.
void load_peft_weights(LoraAdapters& adapters, const std::filesystem::path& adapter_dir);

// read_peft_config + LoraAdapters::attach + load_peft_weights.
std::shared_ptr<LoraAdapters> load_peft_adapter(CausalLM& model, const std::filesystem::path& adapter_dir);

// Named tensors as safetensors bytes (copied to the CPU, contiguous, in their own dtype).
std::string serialize_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace forja
