// A model folder's weights: one model.safetensors, or shards listed in model.safetensors.index.json.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "forja/safetensors.h"

namespace forja::io {

struct TensorRef {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = nullptr;
};

class Checkpoint {
 public:
  // Opens (maps and validates) every weight file of a model folder; throws forja::Error naming the file.
  static Checkpoint open(const std::filesystem::path& model_dir);

  const std::filesystem::path& dir() const { return dir_; }
  const std::vector<std::string>& names() const { return names_; }  // sorted
  bool contains(const std::string& name) const;
  TensorRef find(const std::string& name) const;  // file == nullptr when absent
  TensorRef at(const std::string& name) const;    // throws naming the folder and the tensor
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  std::vector<std::string> file_names() const;  // relative to dir

 private:
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> names_;
  std::vector<TensorRef> refs_;  // parallel to names_
};

}  // namespace forja::io
