#include "lora_peft.h"

#include <ATen/core/grad_mode.h>

#include <nlohmann/json.hpp>

#include <set>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/peft_config.h"
#include "forja/safetensors.h"
#include "weights.h"

namespace forja {
namespace fs = std::filesystem;
using nlohmann::json;

LoraOptions read_peft_config(const fs::path& dir) {
  const PeftLoraConfig c = read_peft_config_file(dir);
  LoraOptions o;
  o.rank = c.rank;
  o.alpha = c.alpha;
  o.dropout = c.dropout;
  o.use_rslora = c.use_rslora;
  o.target_modules = c.target_modules;
  return o;
}

std::string serialize_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;
  std::vector<io::TensorToWrite> out;
  keep.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    keep.push_back(t.detach().to(at::kCPU).contiguous());
    const at::Tensor& c = keep.back();
    out.push_back({name, to_dtype(c.scalar_type()), c.sizes().vec(),
                   std::span<const uint8_t>(static_cast<const uint8_t*>(c.data_ptr()), c.nbytes())});
  }
  return io::serialize_safetensors(out, metadata);
}

void save_peft_adapter(const LoraAdapters& adapters, const fs::path& dir, const std::string& base_model) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_file_error(dir.string(), "cannot create the folder: " + ec.message());
  std::vector<std::pair<std::string, at::Tensor>> named;
  const auto names = adapters.parameter_names();
  const auto params = adapters.parameters();
  for (size_t i = 0; i < names.size(); ++i) named.emplace_back(names[i], params[i]);
  write_file_atomic(dir / "adapter_model.safetensors", serialize_tensors(named, {{"format", "pt"}}));

  const LoraOptions& o = adapters.options();
  std::set<std::string> targets(o.target_modules.begin(), o.target_modules.end());
  bool fan_in_fan_out = false;
  for (const auto& e : adapters.entries()) fan_in_fan_out = fan_in_fan_out || e.fan_in_fan_out;
  json j = {{"peft_type", "LORA"},
            {"task_type", "CAUSAL_LM"},
            {"base_model_name_or_path", base_model},
            {"r", o.rank},
            {"lora_alpha", o.alpha},
            {"lora_dropout", o.dropout},
            {"use_rslora", o.use_rslora},
            {"target_modules", std::vector<std::string>(targets.begin(), targets.end())},
            {"fan_in_fan_out", fan_in_fan_out},
            {"bias", "none"},
            {"use_dora", false},
            {"init_lora_weights", true},
            {"inference_mode", true},
            {"modules_to_save", nullptr},
            {"rank_pattern", json::object()},
            {"alpha_pattern", json::object()},
            {"revision", nullptr}};
  write_file_atomic(dir / "adapter_config.json", j.dump(2) + "\n");
}

void load_peft_weights(LoraAdapters& adapters, const fs::path& dir) {
  const fs::path path = dir / "adapter_model.safetensors";
  if (!fs::exists(path)) throw_file_error(dir.string(), "has no adapter_model.safetensors");
  auto file = io::SafetensorsFile::open(path);
  const auto names = adapters.parameter_names();
  const auto params = adapters.parameters();
  std::set<std::string> wanted(names.begin(), names.end());
  for (const auto& info : file.tensors()) {
    if (!wanted.count(info.name))
      throw_file_error(path.string(),
                       "tensor '" + info.name + "' belongs to no adapted projection of this model",
                       "The adapter was trained on another model or with other target modules.");
  }
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < names.size(); ++i) {
    const io::TensorInfo* info = file.find(names[i]);
    if (!info) throw_file_error(path.string(), "has no tensor '" + names[i] + "'");
    if (info->shape != params[i].sizes().vec())
      throw_file_error(path.string(),
                       "tensor '" + names[i] + "' has the wrong shape for this model and rank");
    params[i].copy_(tensor_from_checkpoint(file, *info));
  }
}

std::shared_ptr<LoraAdapters> load_peft_adapter(CausalLM& model, const fs::path& dir) {
  auto adapters = LoraAdapters::attach(model, read_peft_config(dir));
  load_peft_weights(*adapters, dir);
  return adapters;
}

}  // namespace forja
