// A Hugging Face config.json, parsed into the typed settings the model code needs.
// Reads both the transformers 4.x layout (rope_theta + rope_scaling) and the 5.x one (rope_parameters).
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace forja {

enum class Family { Llama, Mistral, Qwen2, Qwen3, Gemma2, Gemma3, Phi3, Gpt2 };
const char* family_name(Family f);

struct RopeConfig {
  std::string type = "default";  // default | linear | llama3 | longrope
  double theta = 10000.0;
  double factor = 1.0;
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, longrope
  // longrope (Phi-3): one divisor per frequency, the short set while the sequence fits the original length
  // and the long set beyond it, and the factor cos and sin are multiplied by.
  std::vector<double> short_factor, long_factor;
  double attention_factor = 1.0;
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
  bool qk_norm = false;            // RMSNorm over each head's q and k before RoPE (Qwen3)
  bool fused_projections = false;  // one qkv_proj and one gate_up_proj per layer (Phi-3)
  // "silu" (Llama family: SwiGLU), "gelu_pytorch_tanh" (Gemma: GeGLU), "gelu_new" / "gelu" (GPT-2)
  std::string hidden_act;
  std::optional<int64_t>
      sliding_window;  // attend to at most this many positions (Mistral; Gemma's local layers)
  // Which layers use sliding_window; empty: every layer (Mistral). Gemma alternates local and global layers.
  std::vector<bool> sliding_layers;
  RopeConfig rope;                       // unused by GPT-2 (learned positions)
  std::optional<RopeConfig> rope_local;  // the sliding layers' own RoPE (Gemma 3); unset: `rope` everywhere
  // Gemma: RMSNorm scales by (1 + weight) in fp32; norms after attention and the MLP as well as before them;
  // embeddings multiplied by sqrt(hidden_size) rounded to the activations' dtype.
  bool gemma_norms = false;
  double attn_scale = 0;     // the scores' scale; 0: 1/sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2)
  double attn_softcap = 0;   // scores -> cap·tanh(scores / cap) before the mask; 0: off (Gemma 2)
  double final_softcap = 0;  // the same on the logits (Gemma 2)
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;  // "float32", "bfloat16", ... as recorded ("" when absent)

  // Layer i's sliding window (0: it attends to the whole context) and RoPE; whether it is a local layer.
  int64_t layer_window(int64_t layer) const;
  bool local_layer(int64_t layer) const;
  const RopeConfig& layer_rope(int64_t layer) const;
  double attention_scale() const { return attn_scale > 0 ? attn_scale : 1.0 / std::sqrt(double(head_dim)); }
};

// Throws forja::Error naming the file and the field for anything missing, mistyped or unsupported.
ModelConfig parse_model_config(const std::filesystem::path& config_json);
ModelConfig parse_model_config_text(const std::string& text, const std::string& source_name);

}  // namespace forja
