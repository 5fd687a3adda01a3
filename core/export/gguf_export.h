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

namespace forja {
class CausalLM;

namespace exporter {

// Called as the writer reaches tensor `index` of `count` (it may throw to stop the write: nothing is left).
using GgufTensorHook = std::function<void(size_t index, size_t count)>;

// The architectures and tokenizers written: the Llama family as llama.cpp's "llama" (Llama, Mistral,
// TinyLlama, SmolLM: q/k rows reordered for its interleaved RoPE), Qwen2 as "qwen2" and GPT-2 as "gpt2"
// (Conv1D weights transposed); a byte-level BPE tokenizer.json whose pre-tokenizer llama.cpp knows by name
// (Llama 3, Qwen2, SmolLM, GPT-2) as its "gpt2" tokenizer, or a SentencePiece BPE tokenizer.model (Llama 2,
// Mistral, TinyLlama) as its "llama" one. Anything else is a forja::Error saying what is not supported.
// Matrices go in `file_type` (F32, F16, BF16; a quantized type: llama-quantize's mix, forja/ggml_quant.h),
// norms and biases in F32. What the user should know about the file (a context length cut to a sliding
// window) goes to `notes`. Returns the bytes written.
uint64_t write_gguf(const CausalLM& model, const std::filesystem::path& model_dir,
                    const std::filesystem::path& out_file, quant::GgufFileType file_type,
                    const std::string& name, const GgufTensorHook& on_tensor = {},
                    std::vector<std::string>* notes = nullptr);

}  // namespace exporter
}  // namespace forja
