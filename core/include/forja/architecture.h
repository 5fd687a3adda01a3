// What Forja knows about each supported architecture, in one table: the config.json model_type that selects
// it, the name llama.cpp gives it, its projections as PEFT names them, and what sets its layers apart. The
// config parser, the LoRA set-up, the estimator and the exporters read this table instead of branching on the
// family, so a new family is a row here and the code for what is new in its layers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "forja/model_config.h"

namespace forja {

// The layer computation a family shares, each in its block file: the Llama family's pre-norm RoPE block with
// a gated MLP (model/llama.cpp, infer/decoder_llama.cpp), or GPT-2's LayerNorm block with learned positions
// and Conv1D weights (model/gpt2.cpp, infer/decoder_gpt2.cpp).
enum class Block { Llama, Gpt2 };

struct Architecture {
  Family family;
  std::string_view name;        // family_name(): "llama", "qwen3", ...
  std::string_view model_type;  // config.json's model_type
  std::string_view models;      // the checkpoints it covers, for messages and the docs
  std::string_view gguf_arch;   // llama.cpp's general.architecture
  // llama.cpp's "llama" RoPE rotates adjacent pairs where transformers rotates halves: q/k rows are
  // reordered.
  bool gguf_interleaved_rope = false;
  bool gguf_lora = false;  // a GGUF LoRA adapter is written for it (llama.cpp applies it by tensor name)
  bool qk_norm = false;    // RMSNorm over each head's q and k before RoPE
  bool fused_projections = false;  // qkv_proj and gate_up_proj, each one matrix in the checkpoint
  // One layer's projections as PEFT names them, attention's first: the LoRA targets a user may pick, and the
  // ones the Train pane offers by default.
  std::vector<std::string> projections;
  Block block = Block::Llama;
  // Checkpoint names: the token embedding (the head when tied), and a prefix that checkpoints saved from the
  // bare model leave out (GPT2Model's "transformer.").
  std::string_view embedding = "model.embed_tokens.weight";
  std::string_view optional_prefix = {};
  bool nf4_base = true;  // QLoRA's 4-bit base is implemented for its projections
};

const std::vector<Architecture>& architectures();
const Architecture& architecture(Family family);
// nullptr when no supported architecture has this model_type.
const Architecture* find_architecture(std::string_view model_type);
// "llama, mistral, qwen2, qwen3 and gpt2": the model_type values Forja loads, for messages.
std::string supported_model_types();
// "q_proj, k_proj, ... and down_proj"
std::string projection_list(const Architecture& a);

}  // namespace forja
