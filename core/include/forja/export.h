// Exporting a model, with a LoRA adapter (PEFT format) merged into its weights, in the formats other tools
// load: a Hugging Face folder (transformers' from_pretrained) or one GGUF file (llama.cpp, LM Studio,
// Ollama). What `forja-cli export` and the Runs pane call. Nothing is ever left half-written at the
// destination: the export goes to a temporary beside it and is renamed into place when whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace forja {

// GgufLora: the adapter alone, as a GGUF LoRA adapter for llama.cpp's --lora (Ollama's ADAPTER) beside the
// base model's GGUF file.
// Ollama: a folder with the GGUF file (model.gguf, in `dtype`) and a Modelfile (forja/ollama.h).
enum class ExportFormat { HfFolder, Gguf, GgufLora, Ollama };

struct ExportOptions {
  std::filesystem::path model_dir;                   // the base model's Hugging Face folder
  std::optional<std::filesystem::path> adapter_dir;  // merged into the weights; required for a HfFolder
  std::filesystem::path out;                         // a new or empty folder, or a new file named *.gguf
  ExportFormat format = ExportFormat::HfFolder;
  // "fp32", "bf16" or "fp16"; for Gguf also llama.cpp's quantized file types "q8_0", "q6_k", "q5_k_m",
  // "q4_k_m", "q4_0" (any case), with llama-quantize's type per tensor and its blocks byte for byte
  // (forja/ggml_quant.h). Unset: the checkpoint's own dtype (HfFolder; bf16 with base_nf4) or fp16 (Gguf).
  std::optional<std::string> dtype;
  // The adapter was trained by QLoRA: the base is quantized to NF4 as training had it, and the adapter merged
  // into its dequantized weights.
  bool base_nf4 = false;
  bool nf4_double_quant = true;  // as the training config's nf4_double_quant
  std::string name;              // GGUF general.name; empty: the model's folder name (+ the adapter's)
  std::optional<std::string> system_prompt;  // Ollama: the Modelfile's SYSTEM
};

struct ExportProgress {
  enum class Stage { Loading, Merging, Writing } stage = Stage::Loading;
  size_t done = 0, total = 0;  // tensors written of those to write (Writing)
};

struct ExportResult {
  size_t merged_projections = 0;   // adapted projections folded into the base
  uint64_t bytes = 0;              // written
  size_t files = 0;                // model files (safetensors shards, or 1 GGUF file)
  std::vector<std::string> notes;  // what the user should know about the result
};

// "hf", "gguf", "gguf-lora" or "ollama"; anything else is a forja::Error.
ExportFormat export_format_from_name(const std::string& name);
// About how many bytes a GGUF file of `parameters` weights takes in `dtype` (the names ExportOptions takes),
// from the types' bits per weight; the K-quant mixes at the share of higher-precision tensors llama.cpp's
// mixes give a 7B model. Without the tokenizer's metadata. Throws forja::Error for an unknown dtype.
uint64_t estimated_gguf_bytes(int64_t parameters, const std::string& dtype);
// Whether this build writes GGUF (it needs the tokenizer area).
bool gguf_export_available();

// Checks the options (the destination must be new, the format and dtype known) before anything is loaded,
// then loads, merges and writes. Throws forja::Error naming the file and the problem. `cancelled` is polled
// between tensors (GGUF) or files (Hugging Face); when it returns true the export stops with an Error and
// leaves nothing at `out`.
ExportResult export_model(const ExportOptions& options,
                          const std::function<void(const ExportProgress&)>& progress = {},
                          const std::function<bool()>& cancelled = {});

}  // namespace forja
