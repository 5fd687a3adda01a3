// A LoRA adapter (PEFT format) as the GGUF file llama.cpp's --lora and Ollama's ADAPTER load, beside the base
// model's GGUF file: the names, transposition and metadata of llama.cpp's convert_lora_to_gguf.py. No
// LibTorch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace forja::exporter {

// For each adapted projection of the base (`model_dir`'s config.json), "<gguf name>.lora_a" = PEFT's A
// ([r, in], so that llama.cpp reads ne = {in, r}) and "<gguf name>.lora_b" = B ([out, r]; for the Llama
// family's q/k its rows reordered as the base file's are), in F32; general.type "adapter", adapter.type
// "lora", adapter.lora.alpha (rsLoRA's alpha/sqrt(r) written as the alpha that llama.cpp's alpha/r equals).
// The Llama family and Qwen2 only. Throws forja::Error naming the file and the problem for anything llama.cpp
// would compute differently (DoRA, LoRA biases, per-module alphas, adapted embeddings, modules_to_save).
// Returns the bytes written.
uint64_t write_gguf_lora(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                         const std::filesystem::path& out_file, const std::string& name);

}  // namespace forja::exporter
