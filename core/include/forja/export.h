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

enum class ExportFormat { HfFolder, Gguf };

struct ExportOptions {
  std::filesystem::path model_dir;                   // the base model's Hugging Face folder
  std::optional<std::filesystem::path> adapter_dir;  // merged into the weights; required for a HfFolder
  std::filesystem::path out;                         // a new or empty folder, or a new file named *.gguf
  ExportFormat format = ExportFormat::HfFolder;
  // "fp32", "bf16" or "fp16". Unset: the checkpoint's own dtype (HfFolder; bf16 with base_nf4) or fp16
  // (Gguf).
  std::optional<std::string> dtype;
  // The adapter was trained by QLoRA: the base is quantized to NF4 as training had it, and the adapter merged
  // into its dequantized weights.
  bool base_nf4 = false;
  bool nf4_double_quant = true;  // as the training config's nf4_double_quant
  std::string name;              // GGUF general.name; empty: the model's folder name (+ the adapter's)
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

// "hf" or "gguf"; anything else is a forja::Error.
ExportFormat export_format_from_name(const std::string& name);
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
