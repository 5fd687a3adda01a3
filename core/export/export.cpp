#include "forja/export.h"

#include <algorithm>
#include <cctype>

#include <ATen/core/grad_mode.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/ggml_quant.h"
#include "lora_peft.h"
#if FORJA_EXPORT_HAS_GGUF
#include "gguf_export.h"
#endif
#include "forja/model_config.h"
#include "gguf_lora.h"
#if FORJA_EXPORT_HAS_GGUF
#include "forja/ollama.h"
#include "forja/tokenizer.h"
#endif

namespace forja {
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
// The most bytes of tensors one safetensors shard holds; a larger model is split and indexed.
constexpr int64_t kShardBytes = int64_t{4} << 30;

[[noreturn]] void throw_cancelled(const fs::path& out) {
  throw Error(out.string() + ": the export was cancelled; nothing was written there");
}

// <out>.partial-<pid>, beside `target`; the staging folders of exports that died are removed first.
fs::path stage_folder(const fs::path& target) {
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(parent.string() + ": cannot create the folder: " + ec.message());
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
  if (ec) throw Error(staging.string() + ": cannot create the folder: " + ec.message());
  return staging;
}

void publish_folder(const fs::path& staging, const fs::path& target) {
  fsync_directory(staging);
  std::error_code ec;
  fs::remove(target, ec);  // an empty folder the user made for it (checked before); nothing else
  fs::rename(staging, target, ec);
  if (ec) throw Error(target.string() + ": cannot move the export into place: " + ec.message());
  fsync_directory(target.parent_path());
}

// Removes the staging folder unless the export reached its rename.
struct StagingGuard {
  fs::path path;
  ~StagingGuard() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

void check_destination(const ExportOptions& o) {
  if (o.out.empty())
    throw Error("an export needs a destination", "Give --out a new folder or a *.gguf file.");
  if (o.format == ExportFormat::HfFolder && !o.adapter_dir)
    // A Hugging Face folder of the base alone would be a copy; a GGUF file of it is a conversion.
    throw Error("a Hugging Face export merges an adapter: none was given",
                "Give the adapter folder to merge.");
  if (o.format == ExportFormat::GgufLora && !o.adapter_dir)
    throw Error("a GGUF LoRA export writes an adapter: none was given",
                "Give the adapter folder (--adapter).");
  if (o.format == ExportFormat::Gguf || o.format == ExportFormat::GgufLora) {
    if (o.out.extension() != ".gguf")
      throw Error(o.out.string() + ": a GGUF export is one file named *.gguf",
                  "Give a path ending in .gguf.");
    if (fs::exists(o.out))
      throw Error(o.out.string() + ": the file exists",
                  "Choose a new file name; an export never overwrites one.");
  } else if (fs::exists(o.out) && (!fs::is_directory(o.out) || !fs::is_empty(o.out))) {
    throw Error(o.out.string() + ": the output folder is not empty",
                "Choose a new folder for the merged model.");
  }
}

ExportResult write_hf_folder(CausalLM& model, const ExportOptions& o,
                             const std::function<void(const ExportProgress&)>& progress,
                             const std::function<bool()>& cancelled) {
  // Everything goes to a staging folder beside `out` that is renamed into place when whole: a crash or a full
  // disk mid-export never leaves a folder that looks like a model and is not one.
  const fs::path target = fs::absolute(o.out).lexically_normal();
  StagingGuard staging{stage_folder(target)};
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  int64_t in_shard = 0, total = 0;
  size_t tensors = 0;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const int64_t bytes = static_cast<int64_t>(item.value().nbytes());
    if (in_shard > 0 && in_shard + bytes > kShardBytes) shards.emplace_back(), in_shard = 0;
    shards.back().emplace_back(item.key(), item.value());
    in_shard += bytes, total += bytes, ++tensors;
  }
  ExportResult result;
  nlohmann::json weight_map = nlohmann::json::object();
  size_t done = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (cancelled && cancelled()) throw_cancelled(o.out);
    if (progress) progress({ExportProgress::Stage::Writing, done, tensors});
    char name[64];
    if (shards.size() == 1)
      std::snprintf(name, sizeof name, "model.safetensors");
    else
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_file_atomic(staging.path / name, serialize_tensors(shards[i], {{"format", "pt"}}));
    for (const auto& [key, t] : shards[i]) weight_map[key] = name;
    done += shards[i].size();
  }
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomic(staging.path / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  for (const char* f : kCopied)
    if (fs::exists(o.model_dir / f)) write_file_atomic(staging.path / f, read_text_file(o.model_dir / f));
  if (cancelled && cancelled()) throw_cancelled(o.out);
  publish_folder(staging.path, target);
  staging.path.clear();
  if (progress) progress({ExportProgress::Stage::Writing, tensors, tensors});
  result.bytes = static_cast<uint64_t>(total);
  result.files = shards.size();
  return result;
}

}  // namespace

ExportFormat export_format_from_name(const std::string& name) {
  if (name == "hf") return ExportFormat::HfFolder;
  if (name == "gguf") return ExportFormat::Gguf;
  if (name == "gguf-lora") return ExportFormat::GgufLora;
  if (name == "ollama") return ExportFormat::Ollama;
  throw Error("the export format is hf, gguf, gguf-lora or ollama, not '" + name + "'");
}

uint64_t estimated_gguf_bytes(int64_t parameters, const std::string& dtype) {
  std::string t = dtype;
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // Bits per weight: a block's bytes over its weights (Q8_0: 34 / 32, Q6_K: 210 / 256, Q4_0: 18 / 32 with
  // the LM head in Q6_K); the _M mixes' Q6_K layers raise Q4_K (4.5) and Q5_K (5.5).
  static const std::pair<const char*, double> kBits[] = {{"fp32", 32.0},   {"fp16", 16.0},   {"bf16", 16.0},
                                                         {"q8_0", 8.5},    {"q6_k", 6.5625}, {"q5_k_m", 5.7},
                                                         {"q4_k_m", 4.85}, {"q4_0", 4.55}};
  for (const auto& [name, bits] : kBits)
    if (t == name)
      return static_cast<uint64_t>(static_cast<double>(std::max<int64_t>(parameters, 0)) * bits / 8.0);
  throw Error("no GGUF type '" + dtype + "'", "use fp32, bf16, fp16, q8_0, q6_k, q5_k_m, q4_k_m or q4_0");
}

bool gguf_export_available() {
  return FORJA_EXPORT_HAS_GGUF != 0;
}

ExportResult export_model(const ExportOptions& o, const std::function<void(const ExportProgress&)>& progress,
                          const std::function<bool()>& cancelled) {
  check_destination(o);
  if (o.format == ExportFormat::GgufLora) {
    if (o.dtype && *o.dtype != "fp32")
      throw Error("a GGUF LoRA adapter is written in fp32, not " + *o.dtype, "Leave out --dtype.");
    if (o.base_nf4)
      throw Error("a GGUF LoRA adapter applies to the base GGUF file as it is, not to an NF4 base",
                  "Export the merged model instead (--merge --format gguf --base-quant nf4).");
    if (progress) progress({ExportProgress::Stage::Writing, 0, 1});
    if (auto parent = o.out.parent_path(); !parent.empty()) fs::create_directories(parent);
    ExportResult r;
    r.bytes = exporter::write_gguf_lora(o.model_dir, *o.adapter_dir, o.out,
                                        !o.name.empty() ? o.name : o.adapter_dir->filename().string());
    r.files = 1;
    if (progress) progress({ExportProgress::Stage::Writing, 1, 1});
    return r;
  }
  const bool ollama = o.format == ExportFormat::Ollama;
  const bool gguf = o.format == ExportFormat::Gguf || ollama;
  if (gguf && !gguf_export_available())
    throw Error("this build has no tokenizer area, so it cannot write GGUF",
                "Build with the tokenizer (PCRE2 and sentencepiece's development files).");
#if FORJA_EXPORT_HAS_GGUF
  // What llama.cpp would compute differently is said before anything is loaded.
  if (gguf) exporter::gguf_layout(parse_model_config(o.model_dir / "config.json"));
#endif
  LoadOptions lo;
  std::optional<at::ScalarType> out_dtype;
  quant::GgufFileType gguf_type = quant::GgufFileType::F16;
  if (gguf && o.dtype) {
    const auto t = quant::gguf_file_type_from_name(*o.dtype);
    if (!t)
      throw Error("a GGUF file is not written in '" + *o.dtype + "'",
                  "Use fp32, fp16, bf16, q8_0, q6_k, q5_k_m, q4_k_m or q4_0.");
    gguf_type = *t;
  } else if (o.dtype) {
    if (const auto t = quant::gguf_file_type_from_name(*o.dtype); t && quant::is_quantized_file_type(*t))
      throw Error("a Hugging Face folder holds fp32, bf16 or fp16 weights, not " + *o.dtype,
                  "Quantized types are llama.cpp's: add --format gguf.");
    out_dtype = parse_dtype_name(*o.dtype);
  }
  if (!gguf) lo.dtype = out_dtype;  // GGUF: merged in the checkpoint's dtype, written in `dtype`
  if (o.base_nf4) {
    lo.dtype = lo.dtype.value_or(at::kBFloat16);
    lo.nf4 = quant::Nf4Options{};
    lo.nf4->double_quant = o.nf4_double_quant;
  }
#if FORJA_EXPORT_HAS_GGUF
  // The Modelfile's template is known (or refused) before anything is loaded.
  std::optional<OllamaTemplate> ollama_tpl;
  if (ollama) {
    const Tokenizer tok = Tokenizer::load(o.model_dir.string());
    const TokenizerInfo& info = tok.info();
    ollama_tpl = ollama_template(ChatTemplate::for_tokenizer(tok), info.bos_token.value_or(""),
                                 info.eos_token.value_or(""));
  }
#endif
  if (progress) progress({ExportProgress::Stage::Loading, 0, 0});
  auto model = load_causal_lm(o.model_dir, lo);
  if (cancelled && cancelled()) throw_cancelled(o.out);
  size_t merged = 0;
  if (o.adapter_dir) {
    if (progress) progress({ExportProgress::Stage::Merging, 0, 0});
    auto adapters = load_peft_adapter(*model, *o.adapter_dir);
    adapters->merge_into_base(model->dtype());
    merged = adapters->entries().size();
  }
  dequantize_nf4_base(*model);  // projections the adapter does not touch
  if (cancelled && cancelled()) throw_cancelled(o.out);

  at::NoGradGuard no_grad;
  ExportResult result;
  if (gguf) {
#if FORJA_EXPORT_HAS_GGUF
    if (auto parent = o.out.parent_path(); !parent.empty() && !ollama) fs::create_directories(parent);
    const std::string name =
        !o.name.empty() ? o.name
                        : o.model_dir.filename().string() +
                              (o.adapter_dir ? " + " + o.adapter_dir->filename().string() : std::string());
    auto on_tensor = [&](size_t index, size_t count) {
      if (cancelled && cancelled()) throw_cancelled(o.out);
      if (progress) progress({ExportProgress::Stage::Writing, index, count});
    };
    if (ollama) {
      // The folder is staged beside `out` and renamed into place whole.
      const fs::path target = fs::absolute(o.out).lexically_normal();
      StagingGuard staging{stage_folder(target)};
      result.bytes = exporter::write_gguf(*model, o.model_dir, staging.path / "model.gguf", gguf_type, name,
                                          on_tensor, &result.notes);
      const std::string modelfile = ollama_modelfile("model.gguf", *ollama_tpl, o.system_prompt);
      write_file_atomic(staging.path / "Modelfile", modelfile);
      if (cancelled && cancelled()) throw_cancelled(o.out);
      publish_folder(staging.path, target);
      staging.path.clear();
      result.bytes += modelfile.size();
      result.files = 2;
      result.notes.push_back("the chat template is " + ollama_tpl->family +
                             "'s; create the model with: ollama create NAME -f " +
                             (o.out / "Modelfile").string());
    } else {
      result.bytes =
          exporter::write_gguf(*model, o.model_dir, o.out, gguf_type, name, on_tensor, &result.notes);
      result.files = 1;
    }
#endif
  } else {
    result = write_hf_folder(*model, o, progress, cancelled);
  }
  result.merged_projections = merged;
  return result;
}

}  // namespace forja
