// Where a model's parameters come from: a checkpoint (by Hugging Face name, zero-copy from the mapping where the
// dtype and device allow), or seeded random values of the right shapes (benchmarks at real shapes without weights).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "forja/checkpoint.h"

namespace forja {

at::ScalarType to_scalar_type(io::DType dtype, const std::string& where);
io::DType to_dtype(at::ScalarType type);

// A checkpoint tensor as an at::Tensor on the CPU in its stored dtype. Shares the file mapping when the data is
// suitably aligned (the tensor keeps the mapping alive), else copies.
at::Tensor tensor_from_checkpoint(const io::SafetensorsFile& file, const io::TensorInfo& info);

class WeightProvider {
 public:
  virtual ~WeightProvider() = default;
  // The parameter `name` (HF naming) with the given shape, in the model's dtype and device.
  virtual at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) = 0;
  virtual bool has(const std::string& name) const = 0;
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 protected:
  WeightProvider(at::ScalarType dtype, at::Device device) : dtype_(dtype), device_(device) {}
  at::ScalarType dtype_;
  at::Device device_;
};

class CheckpointWeights final : public WeightProvider {
 public:
  // `strip_prefix`: also accept names without this prefix (GPT-2 checkpoints saved from GPT2Model).
  CheckpointWeights(const io::Checkpoint& ckpt, at::ScalarType dtype, at::Device device, std::string strip_prefix = {});
  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) override;
  bool has(const std::string& name) const override;
  // Checkpoint tensors no parameter asked for (known buffers such as rotary inv_freq are not listed).
  std::vector<std::string> unused() const;

 private:
  std::optional<std::string> resolve(const std::string& name) const;
  const io::Checkpoint& ckpt_;
  std::string strip_prefix_;
  std::set<std::string> used_;
};

class RandomWeights final : public WeightProvider {
 public:
  RandomWeights(uint64_t seed, at::ScalarType dtype, at::Device device);
  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) override;
  bool has(const std::string&) const override { return true; }

 private:
  at::Generator gen_;
};

// The floating dtype holding most parameter bytes of a checkpoint (what "load in the checkpoint's dtype" means).
at::ScalarType dominant_dtype(const io::Checkpoint& ckpt);

}  // namespace forja
