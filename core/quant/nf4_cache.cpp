// The NF4 cache file: quantized tensors in one safetensors file, the quantization settings and each tensor's
// original shape and dtype in __metadata__ (layout at the bottom of forja/nf4.h). Loading trusts nothing:
// every setting, tensor name, dtype and byte count is checked before a tensor is handed out.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "forja/error.h"
#include "forja/nf4.h"

namespace forja::quant {

namespace {

using nlohmann::json;

constexpr const char* kHint =
    "The NF4 cache is damaged or was written by another Forja version: delete it, and Forja quantizes the "
    "base model again.";

// Metadata keys of the format itself; the caller's own keys must avoid them.
constexpr std::array<std::string_view, 6> kReservedKeys = {"format",       "format_version", "block_size",
                                                           "double_quant", "dq_block_size",  "tensors"};

constexpr const char* kCodesSuffix = ".nf4_codes";
constexpr const char* kAbsmaxSuffix = ".absmax";
constexpr const char* kAbsmaxQSuffix = ".absmax_q";
constexpr const char* kAbsmaxScaleSuffix = ".absmax_scale";
constexpr const char* kAbsmaxOffsetSuffix = ".absmax_offset";

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

template <class T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_reserved(const std::string& key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end();
}

}  // namespace

void save_nf4_cache(const std::filesystem::path& path, const Nf4Cache& cache) {
  const std::string file = path.string();
  const Nf4Options& o = cache.options;
  for (const auto& [key, value] : cache.extra)
    if (is_reserved(key))
      throw_file_error(file,
                       "cannot write the NF4 cache: metadata key '" + key + "' is reserved for the format");

  std::vector<io::TensorToWrite> out;
  json described = json::object();
  std::vector<std::vector<float>> offsets;  // keeps the one-element offset tensors alive until written
  offsets.reserve(cache.tensors.size());
  for (const auto& [name, t] : cache.tensors) {
    const auto fail = [&](const std::string& problem) {
      throw_file_error(file, "cannot write the NF4 cache: tensor '" + name + "': " + problem);
    };
    if (name.empty()) fail("the name is empty");
    if (const std::string problem = nf4_tensor_problem(t); !problem.empty()) fail(problem);
    if (t.block_size != o.block_size || t.double_quant != o.double_quant ||
        (o.double_quant && t.dq_block_size != o.dq_block_size))
      fail("quantized with other settings than the cache's (block size " + std::to_string(t.block_size) +
           ", double quantization " + (t.double_quant ? "on" : "off") + ")");
    described[name] = {{"shape", t.shape}, {"dtype", std::string(io::dtype_name(t.dtype))}};
    out.push_back(
        {name + kCodesSuffix, io::DType::U8, {static_cast<int64_t>(t.codes.size())}, as_bytes(t.codes)});
    if (!t.double_quant) {
      out.push_back({name + kAbsmaxSuffix,
                     io::DType::F32,
                     {static_cast<int64_t>(t.absmax.size())},
                     as_bytes(t.absmax)});
      continue;
    }
    out.push_back({name + kAbsmaxQSuffix,
                   io::DType::I8,
                   {static_cast<int64_t>(t.absmax_q.size())},
                   as_bytes(t.absmax_q)});
    out.push_back({name + kAbsmaxScaleSuffix,
                   io::DType::F32,
                   {static_cast<int64_t>(t.absmax_scale.size())},
                   as_bytes(t.absmax_scale)});
    offsets.push_back({t.absmax_offset});
    out.push_back({name + kAbsmaxOffsetSuffix, io::DType::F32, {1}, as_bytes(offsets.back())});
  }

  std::map<std::string, std::string> metadata = cache.extra;
  metadata["format"] = std::string(kNf4CacheFormat);
  metadata["format_version"] = std::to_string(kNf4CacheVersion);
  metadata["block_size"] = std::to_string(o.block_size);
  metadata["double_quant"] = o.double_quant ? "true" : "false";
  metadata["dq_block_size"] = std::to_string(o.dq_block_size);
  metadata["tensors"] = described.dump();
  io::write_safetensors(path, out, metadata);
}

namespace {

class CacheReader {
 public:
  explicit CacheReader(const std::filesystem::path& path)
      : file_(io::SafetensorsFile::open(path)), name_(path.string()) {}

  [[noreturn]] void fail(const std::string& problem) const { throw_file_error(name_, problem, kHint); }

  const std::string& meta(const std::string& key) const {
    auto it = file_.metadata().find(key);
    if (it == file_.metadata().end()) fail("the NF4 cache metadata lacks '" + key + "'");
    return it->second;
  }

  int64_t meta_int(const std::string& key, int64_t lo, int64_t hi) const {
    const std::string& text = meta(key);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
      fail("NF4 cache metadata '" + key + "' is '" + text + "', not a whole number from " +
           std::to_string(lo) + " to " + std::to_string(hi));
    return v;
  }

  // The tensor `name` with the given dtype and element count (1-D), as bytes.
  std::span<const uint8_t> tensor(const std::string& name, io::DType dtype, int64_t count,
                                  const std::string& why) {
    const io::TensorInfo* t = file_.find(name);
    if (!t) fail("the NF4 cache has no tensor '" + name + "'");
    claimed_.insert(name);
    if (t->dtype != dtype)
      fail("tensor '" + name + "' has dtype " + std::string(io::dtype_name(t->dtype)) + ", expected " +
           std::string(io::dtype_name(dtype)));
    if (t->shape.size() != 1 || t->shape[0] != count)
      fail("tensor '" + name + "' has shape " + shape_text(t->shape) + " but " + why + " needs [" +
           std::to_string(count) + "]");
    return file_.bytes(*t);
  }

  template <class T>
  std::vector<T> copy(std::span<const uint8_t> bytes) const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }

  void check_all_claimed() const {
    for (const auto& t : file_.tensors())
      if (!claimed_.count(t.name))
        fail("unexpected tensor '" + t.name + "' in the NF4 cache (the metadata describes no such tensor)");
  }

  const io::SafetensorsFile& file() const { return file_; }

 private:
  io::SafetensorsFile file_;
  std::string name_;
  std::set<std::string> claimed_;
};

std::vector<int64_t> parse_shape(const CacheReader& r, const std::string& name, const json& j) {
  if (!j.is_array()) r.fail("NF4 cache metadata: tensor '" + name + "' has no shape array");
  std::vector<int64_t> shape;
  int64_t n = 1;
  for (const json& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      r.fail("NF4 cache metadata: tensor '" + name + "' has a shape entry that is not a whole number >= 0");
    const int64_t v = d.get<int64_t>();
    if (v != 0 && n > (int64_t(1) << 50) / v)
      r.fail("NF4 cache metadata: tensor '" + name + "' has an impossibly large shape");
    n *= v;
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

Nf4Cache load_nf4_cache(const std::filesystem::path& path) {
  CacheReader r(path);
  Nf4Cache cache;

  auto format = r.file().metadata().find("format");
  if (format == r.file().metadata().end()) r.fail("not a Forja NF4 cache (its metadata has no 'format')");
  if (format->second != kNf4CacheFormat)
    r.fail("not a Forja NF4 cache (format '" + format->second + "', expected '" +
           std::string(kNf4CacheFormat) + "')");
  const std::string& version = r.meta("format_version");
  if (version != std::to_string(kNf4CacheVersion))
    r.fail("NF4 cache format version '" + version + "' is not supported (this build reads version " +
           std::to_string(kNf4CacheVersion) + ")");

  Nf4Options& o = cache.options;
  o.block_size = r.meta_int("block_size", 2, int64_t(1) << 20);
  if (o.block_size % 2 != 0) r.fail("NF4 cache block size " + std::to_string(o.block_size) + " is odd");
  const std::string& dq = r.meta("double_quant");
  if (dq != "true" && dq != "false")
    r.fail("NF4 cache metadata 'double_quant' is '" + dq + "', not 'true' or 'false'");
  o.double_quant = dq == "true";
  o.dq_block_size = r.meta_int("dq_block_size", 1, int64_t(1) << 20);

  json described;
  try {
    described = json::parse(r.meta("tensors"));
  } catch (const json::exception& e) {
    r.fail(std::string("NF4 cache metadata 'tensors' is not valid JSON: ") + e.what());
  }
  if (!described.is_object()) r.fail("NF4 cache metadata 'tensors' is not a JSON object");

  for (const auto& [name, d] : described.items()) {
    if (!d.is_object()) r.fail("NF4 cache metadata: tensor '" + name + "' is not described by an object");
    Nf4Tensor t;
    t.shape = parse_shape(r, name, d.contains("shape") ? d["shape"] : json());
    const std::string dtype =
        d.contains("dtype") && d["dtype"].is_string() ? d["dtype"].get<std::string>() : "";
    const auto parsed = io::parse_dtype(dtype);
    if (!parsed || (*parsed != io::DType::F32 && *parsed != io::DType::BF16 && *parsed != io::DType::F16))
      r.fail("NF4 cache metadata: tensor '" + name + "' has original dtype '" + dtype +
             "' (expected F32, BF16 or F16)");
    t.dtype = *parsed;
    t.block_size = o.block_size;
    t.double_quant = o.double_quant;
    t.dq_block_size = o.dq_block_size;
    const int64_t n = t.numel();
    const int64_t blocks = ceil_div(n, o.block_size);
    const std::string of_shape = "shape " + shape_text(t.shape);
    t.codes = r.copy<uint8_t>(r.tensor(name + kCodesSuffix, io::DType::U8, ceil_div(n, 2), of_shape));
    if (!o.double_quant) {
      t.absmax = r.copy<float>(r.tensor(name + kAbsmaxSuffix, io::DType::F32, blocks, of_shape));
      for (float a : t.absmax)
        if (!std::isfinite(a) || a < 0.0f)
          r.fail("tensor '" + name + kAbsmaxSuffix + "' holds a negative or non-finite value");
    } else {
      t.absmax_q = r.copy<int8_t>(r.tensor(name + kAbsmaxQSuffix, io::DType::I8, blocks, of_shape));
      for (int8_t q : t.absmax_q)
        if (q == -128)
          r.fail("tensor '" + name + kAbsmaxQSuffix + "' holds -128, which this format never writes");
      t.absmax_scale = r.copy<float>(
          r.tensor(name + kAbsmaxScaleSuffix, io::DType::F32, ceil_div(blocks, o.dq_block_size), of_shape));
      for (float s : t.absmax_scale)
        if (!std::isfinite(s) || s < 0.0f)
          r.fail("tensor '" + name + kAbsmaxScaleSuffix + "' holds a negative or non-finite value");
      const auto offset =
          r.copy<float>(r.tensor(name + kAbsmaxOffsetSuffix, io::DType::F32, 1, "double quantization"));
      if (!std::isfinite(offset[0])) r.fail("tensor '" + name + kAbsmaxOffsetSuffix + "' is not finite");
      t.absmax_offset = offset[0];
    }
    cache.tensors.emplace(name, std::move(t));
  }
  r.check_all_claimed();

  for (const auto& [key, value] : r.file().metadata())
    if (!is_reserved(key)) cache.extra.emplace(key, value);
  return cache;
}

}  // namespace forja::quant
