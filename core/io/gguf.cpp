#include "forja/gguf.h"

#include <cstring>
#include <string_view>
#include <type_traits>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"

namespace forja::io {
namespace {

// GGUF's metadata value types (gguf_type in ggml).
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12
};
constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kVersion = 3;

class Out {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, sizeof v);
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.append(s);
  }
  void pad(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back('\0');
  }
  std::string bytes;
};

void put_value(Out& o, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint32_t>) {
          o.put(kU32), o.put(x);
        } else if constexpr (std::is_same_v<T, int32_t>) {
          o.put(kI32), o.put(x);
        } else if constexpr (std::is_same_v<T, float>) {
          o.put(kF32), o.put(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          o.put(kBool), o.put<uint8_t>(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::string>) {
          o.put(kString), o.str(x);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          o.put(kU64), o.put(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          o.put(kArray), o.put(kString), o.put<uint64_t>(x.size());
          for (const auto& s : x) o.str(s);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          o.put(kArray), o.put(kF32), o.put<uint64_t>(x.size());
          for (float f : x) o.put(f);
        } else {
          static_assert(std::is_same_v<T, std::vector<int32_t>>);
          o.put(kArray), o.put(kI32), o.put<uint64_t>(x.size());
          for (int32_t i : x) o.put(i);
        }
      },
      v);
}

// Reads from a whole file in memory; every read checks the bounds.
class In {
 public:
  In(std::string_view data, const std::filesystem::path& path) : d_(data), path_(path) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, d_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    need(n);
    std::string s(d_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_.string() + ": not a GGUF file Forja can read (" + what + ")",
                "Export the model again, or check that the file was copied whole.");
  }

 private:
  void need(uint64_t n) const {
    if (n > d_.size() - pos_) fail("it ends at byte " + std::to_string(d_.size()) + " inside its header");
  }
  std::string_view d_;
  const std::filesystem::path& path_;
  size_t pos_ = 0;
};

template <typename T>
std::vector<T> get_array(In& in, uint64_t n) {
  std::vector<T> v;
  v.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 20)));
  for (uint64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::string>)
      v.push_back(in.str());
    else
      v.push_back(in.get<T>());
  }
  return v;
}

GgufValue get_value(In& in, const std::string& key) {
  const uint32_t type = in.get<uint32_t>();
  switch (type) {
    case kU32:
      return in.get<uint32_t>();
    case kI32:
      return in.get<int32_t>();
    case kF32:
      return in.get<float>();
    case kBool:
      return in.get<uint8_t>() != 0;
    case kString:
      return in.str();
    case kU64:
      return in.get<uint64_t>();
    case kArray: {
      const uint32_t elem = in.get<uint32_t>();
      const uint64_t n = in.get<uint64_t>();
      if (elem == kString) return get_array<std::string>(in, n);
      if (elem == kF32) return get_array<float>(in, n);
      if (elem == kI32) return get_array<int32_t>(in, n);
      in.fail("metadata " + key + " is an array of type " + std::to_string(elem));
    }
    default:
      in.fail("metadata " + key + " has value type " + std::to_string(type));
  }
}

}  // namespace

bool gguf_type_known(uint32_t t) {
  switch (static_cast<GgufType>(t)) {
    case GgufType::F32:
    case GgufType::F16:
    case GgufType::BF16:
    case GgufType::Q4_0:
    case GgufType::Q5_0:
    case GgufType::Q5_1:
    case GgufType::Q8_0:
    case GgufType::Q4_K:
    case GgufType::Q5_K:
    case GgufType::Q6_K:
      return true;
  }
  return false;
}

int64_t gguf_block_values(GgufType t) {
  switch (t) {
    case GgufType::F32:
    case GgufType::F16:
    case GgufType::BF16:
      return 1;
    case GgufType::Q4_0:
    case GgufType::Q5_0:
    case GgufType::Q5_1:
    case GgufType::Q8_0:
      return 32;
    case GgufType::Q4_K:
    case GgufType::Q5_K:
    case GgufType::Q6_K:
      return 256;
  }
  throw Error("GGUF: unknown tensor type " + std::to_string(static_cast<uint32_t>(t)));
}

size_t gguf_block_bytes(GgufType t) {
  switch (t) {
    case GgufType::F32:
      return 4;
    case GgufType::F16:
    case GgufType::BF16:
      return 2;
    case GgufType::Q4_0:
      return 18;
    case GgufType::Q5_0:
      return 22;
    case GgufType::Q5_1:
      return 24;
    case GgufType::Q8_0:
      return 34;
    case GgufType::Q4_K:
      return 144;
    case GgufType::Q5_K:
      return 176;
    case GgufType::Q6_K:
      return 210;
  }
  throw Error("GGUF: unknown tensor type " + std::to_string(static_cast<uint32_t>(t)));
}

uint64_t gguf_tensor_bytes(GgufType t, const std::vector<int64_t>& shape) {
  if (shape.empty()) return 0;
  const int64_t block = gguf_block_values(t);
  if (shape.back() % block != 0) return 0;
  uint64_t n = static_cast<uint64_t>(shape.back() / block) * gguf_block_bytes(t);
  // A table read from a file may multiply past 64 bits: saturate, so that it reads as too big, not small.
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(shape[i]), &n)) return UINT64_MAX;
  return n;
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(GgufTensor tensor) {
  tensors_.push_back(std::move(tensor));
}

uint64_t GgufTensor::nbytes() const {
  return gguf_tensor_bytes(type, shape);
}

void GgufWriter::write(const std::filesystem::path& path) const {
  Out o;
  o.put(kMagic);
  o.put(kVersion);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    o.str(key);
    put_value(o, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    if (t.shape.empty()) throw Error(path.string() + ": tensor " + t.name + " has no shape");
    if (t.shape.back() % gguf_block_values(t.type) != 0)
      throw Error(path.string() + ": tensor " + t.name + "'s rows (" + std::to_string(t.shape.back()) +
                  " values) are not whole blocks of its type");
    o.str(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) o.put<uint64_t>(static_cast<uint64_t>(*d));
    o.put<uint32_t>(static_cast<uint32_t>(t.type));
    o.put<uint64_t>(offset);
    offset += (t.nbytes() + kAlignment - 1) / kAlignment * kAlignment;
  }
  o.pad(kAlignment);
  AtomicFileWriter out(path);
  out.append(o.bytes);
  static const char zeros[kAlignment] = {};
  for (const auto& t : tensors_) {
    const std::string bytes = t.data();
    if (bytes.size() != t.nbytes())
      throw Error(path.string() + ": tensor " + t.name + " came with " + std::to_string(bytes.size()) +
                  " bytes, not the " + std::to_string(t.nbytes()) + " its shape and type take");
    out.append(bytes);
    out.append(std::string_view(zeros, (kAlignment - bytes.size() % kAlignment) % kAlignment));
  }
  out.commit();
}

GgufFile read_gguf(const std::filesystem::path& path) {
  // Mapped, not read: a model file is gigabytes, of which only the header is looked at.
  const auto file = MappedFile::open(path);
  const std::string_view data(reinterpret_cast<const char*>(file->data()), file->size());
  In in(data, path);
  if (data.size() < 4 || in.get<uint32_t>() != kMagic) in.fail("it does not start with \"GGUF\"");
  GgufFile f;
  f.version = in.get<uint32_t>();
  if (f.version != 2 && f.version != 3) in.fail("version " + std::to_string(f.version));
  const uint64_t n_tensors = in.get<uint64_t>(), n_kv = in.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = in.str();
    f.metadata[key] = get_value(in, key);
  }
  uint64_t alignment = 32;
  if (auto it = f.metadata.find("general.alignment"); it != f.metadata.end()) {
    const auto* a = std::get_if<uint32_t>(&it->second);
    if (a == nullptr || *a == 0 || (*a & (*a - 1)) != 0) in.fail("general.alignment is not a power of two");
    alignment = *a;
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufFile::Tensor t;
    t.name = in.str();
    const uint32_t dims = in.get<uint32_t>();
    if (dims == 0 || dims > 4) in.fail("tensor " + t.name + " has " + std::to_string(dims) + " dimensions");
    t.shape.resize(dims);
    for (uint32_t d = 0; d < dims; ++d) t.shape[dims - 1 - d] = static_cast<int64_t>(in.get<uint64_t>());
    t.type = in.get<uint32_t>();
    t.offset = in.get<uint64_t>();
    f.tensors.push_back(std::move(t));
  }
  const uint64_t data_start = (in.pos() + alignment - 1) / alignment * alignment;
  for (auto& t : f.tensors) {
    if (t.offset % alignment != 0) in.fail("tensor " + t.name + " is not aligned");
    t.offset += data_start;
    // The types Forja writes have a known size; any other (IQ types, ...) is not bounds-checked here.
    if (gguf_type_known(t.type)) {
      for (int64_t d : t.shape)
        if (d < 0 || d > (int64_t{1} << 40))
          in.fail("tensor " + t.name + " has a dimension of " + std::to_string(d));
      t.nbytes = gguf_tensor_bytes(static_cast<GgufType>(t.type), t.shape);
      if (t.shape.back() % gguf_block_values(static_cast<GgufType>(t.type)) != 0)
        in.fail("tensor " + t.name + "'s rows are not whole blocks of its type");
    }
    if (t.offset > data.size() || t.nbytes > data.size() - t.offset)
      in.fail("tensor " + t.name + " lies outside the file");
  }
  return f;
}

}  // namespace forja::io
