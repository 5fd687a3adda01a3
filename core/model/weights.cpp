#include "weights.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <map>

#include "forja/error.h"

namespace forja {

at::ScalarType to_scalar_type(io::DType dtype, const std::string& where) {
  switch (dtype) {
    case io::DType::BOOL: return at::kBool;
    case io::DType::U8: return at::kByte;
    case io::DType::I8: return at::kChar;
    case io::DType::I16: return at::kShort;
    case io::DType::F16: return at::kHalf;
    case io::DType::BF16: return at::kBFloat16;
    case io::DType::I32: return at::kInt;
    case io::DType::F32: return at::kFloat;
    case io::DType::F64: return at::kDouble;
    case io::DType::I64: return at::kLong;
    default: break;
  }
  throw Error(where + ": dtype " + std::string(io::dtype_name(dtype)) + " is not supported by this LibTorch build");
}

io::DType to_dtype(at::ScalarType type) {
  switch (type) {
    case at::kBool: return io::DType::BOOL;
    case at::kByte: return io::DType::U8;
    case at::kChar: return io::DType::I8;
    case at::kShort: return io::DType::I16;
    case at::kHalf: return io::DType::F16;
    case at::kBFloat16: return io::DType::BF16;
    case at::kInt: return io::DType::I32;
    case at::kFloat: return io::DType::F32;
    case at::kDouble: return io::DType::F64;
    case at::kLong: return io::DType::I64;
    default: break;
  }
  throw Error(std::string("cannot store tensors of type ") + c10::toString(type) + " in safetensors");
}

at::Tensor tensor_from_checkpoint(const io::SafetensorsFile& file, const io::TensorInfo& info) {
  const at::ScalarType st = to_scalar_type(info.dtype, file.path().string() + ": tensor '" + info.name + "'");
  auto bytes = file.bytes(info);
  auto options = at::TensorOptions().dtype(st).device(at::kCPU);
  const size_t esz = io::dtype_size(info.dtype);
  if (bytes.empty()) return at::empty(info.shape, options);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % esz != 0) {
    at::Tensor t = at::empty(info.shape, options);
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return t;
  }
  std::shared_ptr<io::MappedFile> keep = file.mapping();
  return at::from_blob(const_cast<uint8_t*>(bytes.data()), info.shape, [keep](void*) mutable { keep.reset(); },
                       options);
}

at::ScalarType dominant_dtype(const io::Checkpoint& ckpt) {
  std::map<io::DType, uint64_t> bytes;
  for (const auto& name : ckpt.names()) {
    auto ref = ckpt.find(name);
    if (ref.info->dtype == io::DType::F32 || ref.info->dtype == io::DType::F16 || ref.info->dtype == io::DType::BF16 ||
        ref.info->dtype == io::DType::F64)
      bytes[ref.info->dtype] += ref.info->nbytes();
  }
  io::DType best = io::DType::F32;
  uint64_t most = 0;
  for (auto [d, n] : bytes)
    if (n > most) best = d, most = n;
  return to_scalar_type(best, ckpt.dir().string());
}

CheckpointWeights::CheckpointWeights(const io::Checkpoint& ckpt, at::ScalarType dtype, at::Device device,
                                     std::string strip_prefix)
    : WeightProvider(dtype, device), ckpt_(ckpt), strip_prefix_(std::move(strip_prefix)) {}

std::optional<std::string> CheckpointWeights::resolve(const std::string& name) const {
  if (ckpt_.contains(name)) return name;
  if (!strip_prefix_.empty() && name.rfind(strip_prefix_, 0) == 0) {
    std::string bare = name.substr(strip_prefix_.size());
    if (ckpt_.contains(bare)) return bare;
  }
  return std::nullopt;
}

bool CheckpointWeights::has(const std::string& name) const { return resolve(name).has_value(); }

io::TensorRef CheckpointWeights::checked(const std::string& name, const std::vector<int64_t>& shape) {
  auto key = resolve(name);
  if (!key)
    throw_file_error(ckpt_.dir().string(), "the checkpoint has no tensor '" + name + "'",
                     "The folder does not match its config.json, or the download is incomplete.");
  io::TensorRef ref = ckpt_.at(*key);
  if (ref.info->shape != shape) {
    auto fmt = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
      return out + "]";
    };
    throw_file_error(ref.file->path().string(), "tensor '" + *key + "' has shape " + fmt(ref.info->shape) +
                                                    " but config.json implies " + fmt(shape));
  }
  used_.insert(*key);
  return ref;
}

at::Tensor CheckpointWeights::get(const std::string& name, const std::vector<int64_t>& shape) {
  io::TensorRef ref = checked(name, shape);
  at::Tensor t = tensor_from_checkpoint(*ref.file, *ref.info);
  if (!at::isFloatingType(t.scalar_type()))
    throw_file_error(ref.file->path().string(), "tensor '" + ref.info->name + "' is not floating point");
  return t.to(device_, dtype_);
}

Nf4Weight CheckpointWeights::get_nf4(const std::string& name, const std::vector<int64_t>& shape) {
  io::TensorRef ref = checked(name, shape);
  const std::string& key = ref.info->name;
  const std::string where = ref.file->path().string() + ": tensor '" + key + "'";
  if (nf4_cache_ != nullptr) {
    auto it = nf4_cache_->tensors.find(key);
    if (it != nf4_cache_->tensors.end()) {
      if (it->second.shape != shape || it->second.dtype != ref.info->dtype)
        throw Error(where + ": the NF4 cache holds it with another shape or dtype",
                    "Delete the cache file; it is rebuilt on the next load.");
      Nf4Weight w = nf4_weight_from(it->second, device_);
      if (nf4_record_ != nullptr) nf4_record_->tensors[key] = it->second;
      return w;
    }
  }
  at::Tensor t = tensor_from_checkpoint(*ref.file, *ref.info);
  if (!at::isFloatingType(t.scalar_type()))
    throw_file_error(ref.file->path().string(), "tensor '" + key + "' is not floating point");
  // The stored values in fp32 (exact for bf16 and fp16), so the codes are quant::quantize_nf4's of the file.
  Nf4Weight w = quantize_nf4_weight(t.to(device_, at::kFloat), nf4_.value_or(quant::Nf4Options{}), where);
  w.source_dtype = ref.info->dtype;
  if (nf4_record_ != nullptr) nf4_record_->tensors[key] = nf4_tensor_from(w);
  return w;
}

Nf4Weight WeightProvider::get_nf4(const std::string& name, const std::vector<int64_t>& shape) {
  return quantize_nf4_weight(get(name, shape), nf4_.value_or(quant::Nf4Options{}), name);
}

std::vector<std::string> CheckpointWeights::unused() const {
  std::vector<std::string> out;
  for (const auto& n : ckpt_.names()) {
    const bool buffer = n.find("rotary_emb.inv_freq") != std::string::npos || n.find("attn.masked_bias") != std::string::npos ||
                        (n.size() > 9 && n.compare(n.size() - 9, 9, "attn.bias") == 0 && n.find("c_attn") == std::string::npos);
    if (!used_.count(n) && !buffer) out.push_back(n);
  }
  return out;
}

RandomWeights::RandomWeights(uint64_t seed, at::ScalarType dtype, at::Device device)
    : WeightProvider(dtype, device), gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

at::Tensor RandomWeights::get(const std::string& name, const std::vector<int64_t>& shape) {
  // O(1) activations: norms 1, biases small, matrices N(0, 1/fan_in), embeddings N(0, 1).
  auto opts = at::TensorOptions().dtype(at::kFloat);
  at::Tensor t;
  const bool norm = name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
  if (norm && name.find(".bias") == std::string::npos) {
    t = at::ones(shape, opts);
  } else if (shape.size() == 1) {
    t = at::normal(0.0, 0.02, shape, gen_, opts);
  } else {
    const bool embedding = name.find("embed") != std::string::npos || name.find("wte") != std::string::npos ||
                           name.find("wpe") != std::string::npos;
    const bool conv1d = name.find(".c_") != std::string::npos;  // GPT-2 Conv1D weights are [in, out]
    const double std = embedding ? 1.0 : 1.0 / std::sqrt(static_cast<double>(conv1d ? shape[0] : shape[1]));
    t = at::normal(0.0, std, shape, gen_, opts);
  }
  return t.to(device_, dtype_);
}

}  // namespace forja
