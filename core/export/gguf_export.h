// A loaded (merged) model and its folder's tokenizer as one GGUF file that llama.cpp, LM Studio and Ollama
// load, with the tensor names, metadata and tokenizer keys of llama.cpp's own converter
// (convert_hf_to_gguf.py).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "forja/ggml_quant.h"
#include "forja/gguf.h"
#include "forja/model_config.h"

namespace forja {
class CausalLM;

namespace exporter {

// What llama.cpp's graph fixes that the file cannot say, as the export meets it: the factor q is scaled by so
// that llama.cpp's attention scale is the config's (Gemma), and the period of Gemma's local and global
// layers.
struct GgufLayout {
  double q_scale = 1.0;
  uint32_t swa_period = 0;
};
// Throws forja::Error, naming config.json and the setting, for a model llama.cpp would compute differently
// (or has no writer here): checked before anything is loaded.
GgufLayout gguf_layout(const ModelConfig& c);

// Called as the writer reaches tensor `index` of `count` (it may throw to stop the write: nothing is left).
using GgufTensorHook = std::function<void(size_t index, size_t count)>;

// The architectures and tokenizers written: the Llama family as llama.cpp's "llama" (Llama, Mistral,
// TinyLlama, SmolLM: q/k rows reordered for its interleaved RoPE), Qwen2 / Qwen3 as "qwen2" / "qwen3", Gemma
// 2 and 3 as "gemma2" / "gemma3", Phi-3 as "phi3" and GPT-2 as "gpt2" (Conv1D weights transposed); a
// byte-level BPE tokenizer.json whose pre-tokenizer llama.cpp knows by name (Llama 3, Qwen2, SmolLM, GPT-2)
// as its "gpt2" tokenizer, or a SentencePiece BPE tokenizer.model (Llama 2, Mistral, TinyLlama) as its
// "llama" one. Anything else is a forja::Error saying what is not supported. Matrices go in `file_type` (F32,
// F16, BF16; a quantized type: llama-quantize's mix, forja/ggml_quant.h), norms and biases in F32. What the
// user should know about the file (a context length cut to a sliding window) goes to `notes`. Returns the
// bytes written.
uint64_t write_gguf(const CausalLM& model, const std::filesystem::path& model_dir,
                    const std::filesystem::path& out_file, quant::GgufFileType file_type,
                    const std::string& name, const GgufTensorHook& on_tensor = {},
                    std::vector<std::string>* notes = nullptr);

}  // namespace exporter
}  // namespace forja
