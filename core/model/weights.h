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
#include "forja/nf4.h"
#include "nf4_weight.h"

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
  // The projection weight `name` quantized to NF4 on the model's device (QLoRA). The default quantizes what
  // get() returns; a checkpoint quantizes its stored values (read as fp32) or takes them from its cache.
  virtual Nf4Weight get_nf4(const std::string& name, const std::vector<int64_t>& shape);
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }
  // Set: the projections quant::should_quantize_nf4 selects are held in NF4 (LinearImpl asks).
  const std::optional<quant::Nf4Options>& nf4() const { return nf4_; }
  void set_nf4(std::optional<quant::Nf4Options> options) { nf4_ = options; }

 protected:
  WeightProvider(at::ScalarType dtype, at::Device device) : dtype_(dtype), device_(device) {}
  at::ScalarType dtype_;
  at::Device device_;
  std::optional<quant::Nf4Options> nf4_;
};

class CheckpointWeights final : public WeightProvider {
 public:
  // `strip_prefix`: also accept names without this prefix (GPT-2 checkpoints saved from GPT2Model).
  CheckpointWeights(const io::Checkpoint& ckpt, at::ScalarType dtype, at::Device device, std::string strip_prefix = {});
  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) override;
  bool has(const std::string& name) const override;
  Nf4Weight get_nf4(const std::string& name, const std::vector<int64_t>& shape) override;
  // NF4 tensors to take instead of quantizing (a cache file's, already validated against its options); every
  // tensor quantized or taken is also recorded in quantized() when `record` is set, for writing a cache.
  void use_nf4_cache(const quant::Nf4Cache* cache) { nf4_cache_ = cache; }
  void record_nf4(quant::Nf4Cache* record) { nf4_record_ = record; }
  // Checkpoint tensors no parameter asked for (known buffers such as rotary inv_freq are not listed).
  std::vector<std::string> unused() const;

 private:
  std::optional<std::string> resolve(const std::string& name) const;
  io::TensorRef checked(const std::string& name, const std::vector<int64_t>& shape);
  const io::Checkpoint& ckpt_;
  const quant::Nf4Cache* nf4_cache_ = nullptr;
  quant::Nf4Cache* nf4_record_ = nullptr;
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
