// forja-cli export <model-dir> --adapter DIR --merge --out DIR [--dtype fp32|bf16|fp16] [--base-quant nf4]
// Folds a LoRA adapter (PEFT format) into the base weights and writes a plain Hugging Face model folder that
// transformers loads with from_pretrained: safetensors (sharded past 4 GiB, with
// model.safetensors.index.json), config.json and the tokenizer files copied from the base. With --base-quant
// nf4 (an adapter trained by QLoRA) the base is quantized as training had it and the adapter merged into its
// dequantized weights, in --dtype (bf16 by default).
#include <ATen/core/grad_mode.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "command.h"
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

int run_export(forja::cli::Args& args) {
  args.reject_unknown({"adapter", "out", "dtype", "base-quant", "nf4-double-quant"});
  const fs::path base = args.positional(0, "<model-dir>");
  const auto adapter = args.option("adapter");
  const auto out = args.option("out");
  if (!adapter || !out) throw forja::Error("export needs --adapter DIR and --out DIR");
  if (!args.flag("merge"))
    throw forja::Error("export writes merged models only",
                       "Add --merge (the adapter folder itself is already "
                       "PEFT's format and loads in PEFT as it is).");
  if (fs::exists(*out) && !fs::is_empty(*out))
    throw forja::Error(*out + ": the output folder is not empty",
                       "Choose a new folder for the merged model.");
  forja::LoadOptions lo;
  if (auto d = args.option("dtype")) lo.dtype = forja::parse_dtype_name(*d);
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
  auto adapters = forja::load_peft_adapter(*model, *adapter);
  adapters->merge_into_base(model->dtype());
  forja::dequantize_nf4_base(*model);  // projections the adapter does not touch

  at::NoGradGuard no_grad;
  fs::create_directories(*out);
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
    forja::write_file_atomic(fs::path(*out) / name, forja::serialize_tensors(shards[i], {{"format", "pt"}}));
    for (const auto& [key, t] : shards[i]) weight_map[key] = name;
  }
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    forja::write_file_atomic(fs::path(*out) / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  for (const char* f : kCopied)
    if (fs::exists(base / f))
      fs::copy_file(base / f, fs::path(*out) / f, fs::copy_options::overwrite_existing);
  std::printf("merged %zu adapted projections into %s (%zu file%s, %.1f MiB)\n", adapters->entries().size(),
              out->c_str(), shards.size(), shards.size() == 1 ? "" : "s", double(total) / (1 << 20));
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(export, "Merge a LoRA adapter into its base model and write a Hugging Face model folder",
                  "export <model-dir> --adapter DIR --merge --out DIR [--dtype fp32|bf16|fp16] "
                  "[--base-quant nf4 [--nf4-double-quant on|off]]",
                  run_export,
                  {"merge"});
