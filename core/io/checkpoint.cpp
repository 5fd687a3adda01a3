#include "forja/checkpoint.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "forja/error.h"
#include "forja/file_util.h"

namespace forja::io {
namespace fs = std::filesystem;
using nlohmann::json;

Checkpoint Checkpoint::open(const fs::path& model_dir) {
  Checkpoint c;
  c.dir_ = model_dir;
  if (!fs::is_directory(model_dir)) throw_file_error(model_dir.string(), "is not a folder");
  const fs::path index_path = model_dir / "model.safetensors.index.json";
  const fs::path single_path = model_dir / "model.safetensors";
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name (sharded only)

  if (fs::exists(index_path)) {
    json index;
    try {
      index = json::parse(read_text_file(index_path));
    } catch (const json::exception& e) {
      throw_file_error(index_path.string(), std::string("is not valid JSON: ") + e.what());
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw_file_error(index_path.string(), "has no \"weight_map\" object");
    std::map<std::string, size_t> shard_slot;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        throw_file_error(index_path.string(), "weight_map entry for '" + it.key() + "' is not a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == ".." || shard.empty())
        throw_file_error(index_path.string(), "weight_map names an unsafe file name '" + shard + "'");
      weight_map[it.key()] = shard;
      if (!shard_slot.count(shard)) {
        const fs::path shard_path = model_dir / shard;
        if (!fs::exists(shard_path))
          throw_file_error(index_path.string(), "lists shard '" + shard + "', which is missing from the folder",
                           "The download is incomplete: fetch the missing shard again.");
        shard_slot[shard] = c.files_.size();
        c.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(shard_path)));
      }
    }
    for (const auto& [name, shard] : weight_map) {
      const SafetensorsFile* f = c.files_[shard_slot[shard]].get();
      const TensorInfo* t = f->find(name);
      if (!t)
        throw_file_error(index_path.string(), "says tensor '" + name + "' is in '" + shard + "', but it is not there");
      c.names_.push_back(name);
      c.refs_.push_back({f, t});
    }
  } else if (fs::exists(single_path)) {
    c.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single_path)));
    for (const auto& t : c.files_[0]->tensors()) {
      c.names_.push_back(t.name);
      c.refs_.push_back({c.files_[0].get(), &t});
    }
  } else {
    std::string hint = "Forja reads Hugging Face folders saved with safetensors.";
    if (fs::exists(model_dir / "pytorch_model.bin") || fs::exists(model_dir / "pytorch_model.bin.index.json"))
      hint += " This folder has only pytorch_model.bin (pickle) weights: re-save it with safetensors.";
    throw_file_error(model_dir.string(), "has no model.safetensors or model.safetensors.index.json", hint);
  }
  // names_ are sorted already (std::map order, or the file's sorted tensor list).
  return c;
}

bool Checkpoint::contains(const std::string& name) const {
  return std::binary_search(names_.begin(), names_.end(), name);
}

TensorRef Checkpoint::find(const std::string& name) const {
  auto it = std::lower_bound(names_.begin(), names_.end(), name);
  if (it == names_.end() || *it != name) return {};
  return refs_[static_cast<size_t>(it - names_.begin())];
}

TensorRef Checkpoint::at(const std::string& name) const {
  TensorRef r = find(name);
  if (!r.file) throw_file_error(dir_.string(), "the checkpoint has no tensor '" + name + "'");
  return r;
}

std::vector<std::string> Checkpoint::file_names() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path().filename().string());
  return out;
}

}  // namespace forja::io
