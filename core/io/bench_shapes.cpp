// The benchmark shapes (forja/bench.h): each real model's config.json, as its repository gives it.
#include "forja/bench.h"
#include "forja/error.h"

namespace forja::bench {

const char* const kShapeNames = "tinyllama, mistral7b, qwen3_1_7b, gemma3_1b and gemma2_2b";

std::string shape_config_json(const std::string& shape) {
  if (shape == "tinyllama")  // TinyLlama-1.1B
    return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
               "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32,
               "num_key_value_heads": 4, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
               "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu",
               "bos_token_id": 1, "eos_token_id": 2})";
  if (shape == "mistral7b")  // Mistral-7B-v0.1 without its sliding window, as v0.2 has it
    return R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": 32000,
               "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
               "rope_theta": 10000.0, "sliding_window": null, "tie_word_embeddings": false, "hidden_act": "silu",
               "bos_token_id": 1, "eos_token_id": 2})";
  if (shape == "qwen3_1_7b")  // Qwen3-1.7B
    return R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936,
               "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28, "num_attention_heads": 16,
               "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
               "rope_theta": 1000000, "tie_word_embeddings": true, "hidden_act": "silu", "attention_bias": false,
               "bos_token_id": 151643, "eos_token_id": 151645})";
  if (shape ==
      "gemma3_1b")  // Gemma-3-1B (text): every sixth layer global, the rest local with their own RoPE
    return R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 262144,
               "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4,
               "num_key_value_heads": 1, "head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 512,
               "sliding_window_pattern": 6, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
               "rope_theta": 1000000, "rope_local_base_freq": 10000, "hidden_activation": "gelu_pytorch_tanh",
               "tie_word_embeddings": true, "bos_token_id": 2, "eos_token_id": 1})";
  if (shape == "gemma2_2b")  // Gemma-2-2B: local and global layers alternating, soft-capped scores and logits
    return R"({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "vocab_size": 256000,
               "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
               "num_key_value_heads": 4, "head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 4096,
               "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
               "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
               "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true, "bos_token_id": 2,
               "eos_token_id": 1})";
  throw Error("unknown shape '" + shape + "'", std::string("the shapes are ") + kShapeNames);
}

ModelConfig shape_config(const std::string& shape) {
  return parse_model_config_text(shape_config_json(shape), "bench:" + shape);
}

}  // namespace forja::bench
