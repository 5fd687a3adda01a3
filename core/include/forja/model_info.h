// What a Hugging Face model folder holds, read from config.json and the safetensors headers alone (no weights
// are loaded): plain C++ so the UI can show it without LibTorch headers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace forja {

struct ModelInfo {
  std::filesystem::path dir;
  std::string architecture;      // config.json "architectures"[0], e.g. "LlamaForCausalLM"
  std::string family;            // family_name(): "llama", "mistral", "qwen2", "qwen3" or "gpt2"
  std::string model_type;        // config.json "model_type"
  int64_t parameters = 0;        // counted from the checkpoint's tensors (tied weights once)
  std::string checkpoint_dtype;  // dtype of most parameter bytes: "F32", "BF16", "F16"
  int64_t checkpoint_bytes = 0;
  int64_t layers = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  bool tied_embeddings = false;
  std::vector<std::string> lora_targets;  // the architecture's projections as PEFT names them
  std::string rope;  // e.g. "theta 10000", "llama3 ×8, theta 500000"; empty for learned positions
  int64_t bf16_weight_bytes = 0;          // parameters × 2
  std::vector<std::string> weight_files;  // safetensors files, relative to dir
  std::vector<std::string>
      tokenizer_files;  // tokenizer.json / tokenizer.model / tokenizer_config.json present
};

// Throws forja::Error naming the file and the problem for anything that is missing or malformed.
ModelInfo inspect_model(const std::filesystem::path& dir);

}  // namespace forja
