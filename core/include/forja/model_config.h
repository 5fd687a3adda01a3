// A Hugging Face config.json, parsed into the typed settings the model code needs.
// Reads both the transformers 4.x layout (rope_theta + rope_scaling) and the 5.x one (rope_parameters).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace forja {

enum class Family { Llama, Mistral, Qwen2, Qwen3, Gpt2 };
const char* family_name(Family f);

struct RopeConfig {
  std::string type = "default";  // default | linear | llama3
  double theta = 10000.0;
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;  // llama3
};

struct ModelConfig {
  std::filesystem::path path;  // the config.json it came from
  std::string architecture;    // "LlamaForCausalLM", ...
  std::string model_type;      // "llama", ...
  Family family = Family::Llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // q/k/v projections have a bias (Qwen2; Llama with attention_bias)
  bool o_bias = false;    // o_proj has a bias (Llama with attention_bias)
  bool mlp_bias = false;
  bool qk_norm = false;   // RMSNorm over each head's q and k before RoPE (Qwen3)
  std::string hidden_act;  // "silu" (Llama family) or "gelu_new" / "gelu_pytorch_tanh" (GPT-2)
  std::optional<int64_t> sliding_window;  // Mistral: attend to at most this many positions
  RopeConfig rope;  // unused by GPT-2 (learned positions)
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;  // "float32", "bfloat16", ... as recorded ("" when absent)
};

// Throws forja::Error naming the file and the field for anything missing, mistyped or unsupported.
ModelConfig parse_model_config(const std::filesystem::path& config_json);
ModelConfig parse_model_config_text(const std::string& text, const std::string& source_name);

}  // namespace forja
