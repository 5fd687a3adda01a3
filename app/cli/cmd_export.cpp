// forja-cli export <model-dir> --adapter DIR --merge --out DIR [--dtype fp32|bf16|fp16] [--base-quant nf4]
//                  [--format hf|gguf]
// Folds a LoRA adapter (PEFT format) into the base weights and writes a plain Hugging Face model folder that
// transformers loads with from_pretrained: safetensors (sharded past 4 GiB, with
// model.safetensors.index.json), config.json and the tokenizer files copied from the base. With --base-quant
// nf4 (an adapter trained by QLoRA) the base is quantized as training had it and the adapter merged into its
// dequantized weights, in --dtype (bf16 by default). With --format gguf, --out is a .gguf file for llama.cpp,
// LM Studio and Ollama, its matrices in --dtype (fp16 by default; export_gguf.h says which models).
#include <ATen/core/grad_mode.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "command.h"
#include "export_gguf.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "lora_peft.h"

namespace {
namespace fs = std::filesystem;

// Files that travel unchanged from the base folder, when present.
const char* const kCopied[] = {"config.json",
                               "generation_config.json",
                               "tokenizer.json",
                               "tokenizer_config.json",
                               "special_tokens_map.json",
                               "tokenizer.model",
                               "vocab.json",
                               "merges.txt",
                               "added_tokens.json",
                               "chat_template.jinja"};
constexpr int64_t kShardBytes = int64_t{4} << 30;

// <out>.partial-<pid>, beside --out; the staging folders of exports that died are removed first.
fs::path stage_folder(const fs::path& target) {
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw forja::Error(parent.string() + ": cannot create the folder: " + ec.message());
  const std::string prefix = target.filename().string() + ".partial-";
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(n.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
  const fs::path staging = parent / (prefix + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) throw forja::Error(staging.string() + ": cannot create the folder: " + ec.message());
  return staging;
}

void publish_folder(const fs::path& staging, const fs::path& target) {
  forja::fsync_directory(staging);
  std::error_code ec;
  fs::remove(target, ec);  // an empty folder the user made for it (checked above); nothing else
  fs::rename(staging, target, ec);
  if (ec) throw forja::Error(target.string() + ": cannot move the export into place: " + ec.message());
  forja::fsync_directory(target.parent_path());
}

int run_export(forja::cli::Args& args) {
  args.reject_unknown({"adapter", "out", "dtype", "base-quant", "nf4-double-quant", "format"});
  const fs::path base = args.positional(0, "<model-dir>");
  const auto adapter = args.option("adapter");
  const auto out = args.option("out");
  const std::string format = args.option_or("format", "hf");
  if (format != "hf" && format != "gguf")
    throw forja::Error("--format takes hf or gguf, got '" + format + "'");
  const bool gguf = format == "gguf";
  // A GGUF file of the base alone is a conversion (a model for llama.cpp); a Hugging Face folder of it would
  // be a copy.
  if (!out || (!adapter && !gguf)) throw forja::Error("export needs --adapter DIR and --out DIR");
  if (adapter && !args.flag("merge"))
    throw forja::Error("export writes merged models only",
                       "Add --merge (the adapter folder itself is already "
                       "PEFT's format and loads in PEFT as it is).");
  if (gguf) {
    if (fs::path(*out).extension() != ".gguf")
      throw forja::Error(*out + ": a GGUF export is one file named *.gguf",
                         "Give --out a path ending in .gguf.");
    if (fs::exists(*out))
      throw forja::Error(*out + ": the file exists",
                         "Choose a new file name; an export never overwrites one.");
  } else if (fs::exists(*out) && !fs::is_empty(*out)) {
    throw forja::Error(*out + ": the output folder is not empty",
                       "Choose a new folder for the merged model.");
  }
  forja::LoadOptions lo;
  std::optional<at::ScalarType> out_dtype;
  if (auto d = args.option("dtype")) out_dtype = forja::parse_dtype_name(*d);
  if (!gguf) lo.dtype = out_dtype;  // GGUF: merged in the checkpoint's dtype, written in --dtype
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant == "nf4") {
    lo.dtype = lo.dtype.value_or(at::kBFloat16);
    lo.nf4 = forja::quant::Nf4Options{};
    const std::string dq = args.option_or("nf4-double-quant", "on");
    if (dq != "on" && dq != "off") throw forja::Error("--nf4-double-quant takes on or off, got '" + dq + "'");
    lo.nf4->double_quant = dq == "on";  // as the training config's nf4_double_quant (default true)
  } else if (base_quant != "none") {
    throw forja::Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  }
  auto model = forja::load_causal_lm(base, lo);
  size_t merged = 0;
  if (adapter) {
    auto adapters = forja::load_peft_adapter(*model, *adapter);
    adapters->merge_into_base(model->dtype());
    merged = adapters->entries().size();
  }
  forja::dequantize_nf4_base(*model);  // projections the adapter does not touch

  at::NoGradGuard no_grad;
  if (gguf) {
    const at::ScalarType t = out_dtype.value_or(at::kHalf);
    const auto type = t == at::kFloat  ? forja::io::GgufType::F32
                      : t == at::kHalf ? forja::io::GgufType::F16
                                       : forja::io::GgufType::BF16;
#if FORJA_HAS_GGUF_EXPORT
    if (auto parent = fs::path(*out).parent_path(); !parent.empty()) fs::create_directories(parent);
    const std::string name =
        base.filename().string() + (adapter ? " + " + fs::path(*adapter).filename().string() : std::string());
    const uint64_t bytes = forja::cli::write_gguf(*model, base, *out, type, name);
    std::printf("merged %zu adapted projections into %s (GGUF, %.1f MiB)\n", merged, out->c_str(),
                double(bytes) / (1 << 20));
    return 0;
#else
    (void)type;
    throw forja::Error("this build of forja-cli has no tokenizer area, so it cannot write GGUF",
                       "Build with the tokenizer (PCRE2 and sentencepiece's development files).");
#endif
  }
  // Everything goes to a staging folder beside --out that is renamed into place when whole: a crash or a full
  // disk mid-export never leaves a folder that looks like a model and is not one.
  const fs::path target = fs::absolute(*out).lexically_normal();
  const fs::path staging = stage_folder(target);
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  int64_t in_shard = 0, total = 0;
  for (const auto& item : model->named_parameters(/*recurse=*/true)) {
    const int64_t bytes = static_cast<int64_t>(item.value().nbytes());
    if (in_shard > 0 && in_shard + bytes > kShardBytes) shards.emplace_back(), in_shard = 0;
    shards.back().emplace_back(item.key(), item.value());
    in_shard += bytes, total += bytes;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    if (shards.size() == 1)
      std::snprintf(name, sizeof name, "model.safetensors");
    else
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    forja::write_file_atomic(staging / name, forja::serialize_tensors(shards[i], {{"format", "pt"}}));
    for (const auto& [key, t] : shards[i]) weight_map[key] = name;
  }
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    forja::write_file_atomic(staging / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  for (const char* f : kCopied)
    if (fs::exists(base / f)) forja::write_file_atomic(staging / f, forja::read_text_file(base / f));
  publish_folder(staging, target);
  std::printf("merged %zu adapted projections into %s (%zu file%s, %.1f MiB)\n", merged, out->c_str(),
              shards.size(), shards.size() == 1 ? "" : "s", double(total) / (1 << 20));
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    export, "Merge a LoRA adapter into its base model and write a Hugging Face model folder, or a GGUF file",
    "export <model-dir> [--adapter DIR --merge] --out DIR|FILE.gguf [--format hf|gguf] "
    "[--dtype fp32|bf16|fp16] [--base-quant nf4 [--nf4-double-quant on|off]]",
    run_export, {"merge"});
