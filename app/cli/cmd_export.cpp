// forja-cli export <model-dir> --adapter DIR --merge --out DIR [--dtype fp32|bf16|fp16] [--base-quant nf4]
//                  [--format hf|gguf]
// Folds a LoRA adapter (PEFT format) into the base weights and writes a plain Hugging Face model folder that
// transformers loads with from_pretrained: safetensors (sharded past 4 GiB, with
// model.safetensors.index.json), config.json and the tokenizer files copied from the base. With --base-quant
// nf4 (an adapter trained by QLoRA) the base is quantized as training had it and the adapter merged into its
// dequantized weights, in --dtype (bf16 by default). With --format gguf, --out is a .gguf file for llama.cpp,
// LM Studio and Ollama, its matrices in --dtype (fp16 by default, or one of llama.cpp's quantized file types:
// q8_0, q6_k, q5_k_m, q4_k_m, q4_0, each tensor's type and blocks as llama-quantize makes them);
// forja/export.h says which models. With --format gguf-lora (no --merge), --out is the adapter alone as a
// GGUF LoRA adapter for llama.cpp's --lora and Ollama's ADAPTER, beside the base model's GGUF file. With
// --format ollama, --out is a new folder with model.gguf (in --dtype) and a Modelfile (the chat template as
// Ollama's Go template, its stop strings, --system as SYSTEM).
#include <cstdio>

#include "command.h"
#include "forja/error.h"
#include "forja/export.h"

namespace {

int run_export(forja::cli::Args& args) {
  args.reject_unknown({"adapter", "out", "dtype", "base-quant", "nf4-double-quant", "format", "system"});
  forja::ExportOptions o;
  o.model_dir = forja::cli::model_dir_arg(args, 0);
  const auto adapter = args.option("adapter");
  const auto out = args.option("out");
  const std::string format = args.option_or("format", "hf");
  if (format != "hf" && format != "gguf" && format != "gguf-lora" && format != "ollama")
    throw forja::Error("--format takes hf, gguf, gguf-lora or ollama, got '" + format + "'");
  o.format = forja::export_format_from_name(format);
  // A GGUF file of the base alone is a conversion (a model for llama.cpp); a Hugging Face folder of it would
  // be a copy.
  if (!out || (!adapter && o.format == forja::ExportFormat::HfFolder))
    throw forja::Error("export needs --adapter DIR and --out DIR");
  if (o.format == forja::ExportFormat::GgufLora && (!adapter || !out))
    throw forja::Error("--format gguf-lora needs --adapter DIR and --out FILE.gguf");
  if (adapter && !args.flag("merge") && o.format != forja::ExportFormat::GgufLora)
    throw forja::Error("export writes merged models only",
                       "Add --merge (the adapter folder itself is already "
                       "PEFT's format and loads in PEFT as it is).");
  o.out = *out;
  if (adapter) o.adapter_dir = *adapter;
  o.dtype = args.option("dtype");
  o.system_prompt = args.option("system");
  if (o.system_prompt && o.format != forja::ExportFormat::Ollama)
    throw forja::Error("--system goes in an Ollama Modelfile: it needs --format ollama");
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant != "none" && base_quant != "nf4")
    throw forja::Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  o.base_nf4 = base_quant == "nf4";
  const std::string dq = args.option_or("nf4-double-quant", "on");
  if (dq != "on" && dq != "off") throw forja::Error("--nf4-double-quant takes on or off, got '" + dq + "'");
  o.nf4_double_quant = dq == "on";

  const forja::ExportResult r = forja::export_model(o);
  for (const auto& note : r.notes) std::printf("note: %s\n", note.c_str());
  if (o.format == forja::ExportFormat::Ollama)
    std::printf("wrote %s/model.gguf and %s/Modelfile (%.1f MiB)\n", out->c_str(), out->c_str(),
                double(r.bytes) / (1 << 20));
  else if (o.format == forja::ExportFormat::GgufLora)
    std::printf("wrote the adapter to %s (GGUF LoRA, %.1f MiB)\n", out->c_str(), double(r.bytes) / (1 << 20));
  else if (o.format == forja::ExportFormat::Gguf)
    std::printf("merged %zu adapted projections into %s (GGUF, %.1f MiB)\n", r.merged_projections,
                out->c_str(), double(r.bytes) / (1 << 20));
  else
    std::printf("merged %zu adapted projections into %s (%zu file%s, %.1f MiB)\n", r.merged_projections,
                out->c_str(), r.files, r.files == 1 ? "" : "s", double(r.bytes) / (1 << 20));
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    export, "Merge a LoRA adapter into its base model and write a Hugging Face model folder, or a GGUF file",
    "export <model-dir|org/name> [--pull] [--adapter DIR --merge] --out DIR|FILE.gguf [--format "
    "hf|gguf|gguf-lora|ollama] [--system TEXT] "
    "[--dtype fp32|bf16|fp16|q8_0|q6_k|q5_k_m|q4_k_m|q4_0] [--base-quant nf4 [--nf4-double-quant on|off]]",
    run_export, {"merge", "pull"});
