#include "forja/architecture.h"

#include "forja/error.h"

namespace forja {

namespace {

std::vector<std::string> llama_projections() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

}  // namespace

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
      {.family = Family::Llama,
       .name = "llama",
       .model_type = "llama",
       .models = "Llama 2, Llama 3 / 3.1 / 3.2, TinyLlama, SmolLM",
       .gguf_arch = "llama",
       .gguf_interleaved_rope = true,
       .gguf_lora = true,
       .projections = llama_projections()},
      {.family = Family::Mistral,
       .name = "mistral",
       .model_type = "mistral",
       .models = "Mistral",
       .gguf_arch = "llama",
       .gguf_interleaved_rope = true,
       .projections = llama_projections()},
      {.family = Family::Qwen2,
       .name = "qwen2",
       .model_type = "qwen2",
       .models = "Qwen2, Qwen2.5",
       .gguf_arch = "qwen2",
       .gguf_lora = true,
       .projections = llama_projections()},
      {.family = Family::Qwen3,
       .name = "qwen3",
       .model_type = "qwen3",
       .models = "Qwen3",
       .gguf_arch = "qwen3",
       .gguf_lora = true,
       .qk_norm = true,
       .projections = llama_projections()},
      {.family = Family::Gemma2,
       .name = "gemma2",
       .model_type = "gemma2",
       .models = "Gemma 2",
       .gguf_arch = "gemma2",
       .projections = llama_projections()},
      {.family = Family::Gemma3,
       .name = "gemma3",
       .model_type = "gemma3_text",
       .models = "Gemma 3 (text: 1B, or a text-only checkpoint)",
       .gguf_arch = "gemma3",
       .qk_norm = true,
       .projections = llama_projections()},
      {.family = Family::Phi3,
       .name = "phi3",
       .model_type = "phi3",
       .models = "Phi-3, Phi-3.5-mini",
       .gguf_arch = "phi3",
       .fused_projections = true,
       .projections = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}},
      {.family = Family::Gpt2,
       .name = "gpt2",
       .model_type = "gpt2",
       .models = "GPT-2",
       .gguf_arch = "gpt2",
       .projections = {"c_attn", "c_proj", "c_fc"},
       .block = Block::Gpt2,
       .embedding = "transformer.wte.weight",
       .optional_prefix = "transformer.",
       .nf4_base = false},
  };
  return table;
}

const Architecture& architecture(Family family) {
  for (const auto& a : architectures())
    if (a.family == family) return a;
  throw Error("no architecture entry for family " + std::to_string(static_cast<int>(family)));
}

const Architecture* find_architecture(std::string_view model_type) {
  for (const auto& a : architectures())
    if (a.model_type == model_type) return &a;
  return nullptr;
}

std::string supported_model_types() {
  std::vector<std::string> types;
  for (const auto& a : architectures()) types.emplace_back(a.model_type);
  return joined(types);
}

std::string projection_list(const Architecture& a) {
  return joined(a.projections);
}

}  // namespace forja
