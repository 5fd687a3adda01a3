// safetensors: reading (memory-mapped, validated) and writing (atomic).
//
// Format (https://github.com/huggingface/safetensors): 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the
// data buffer; offsets are relative to the buffer, which the tensors must cover exactly (no holes, no overlaps).
// No LibTorch here: tensors are views of bytes; core/model turns them into tensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace forja::io {

enum class DType { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets into the data buffer
  uint64_t end = 0;
  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

// A read-only (copy-on-write) memory mapping of a whole file.
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  MappedFile() = default;
  std::filesystem::path path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Lets go of the resident pages of a mapped file that lie wholly inside [p, p + n), for a reader that streams
// the file through once: the process's memory no longer counts them, the page cache keeps them, and touching
// them again maps them again. Pages written through a private mapping, and any memory not backed by a file,
// are left as they are, so nothing is lost; where /proc/self/pagemap cannot be read, nothing happens.
void release_pages(const void* p, size_t n);

class SafetensorsFile {
 public:
  // Header size cap, as in the reference implementation: a larger header is taken as a corrupt file.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps and validates the file; throws forja::Error naming the file and the problem.
  static SafetensorsFile open(const std::filesystem::path& path);
  // Validates an in-memory image (used by open() and by tests); `path` only names the source in messages.
  static SafetensorsFile parse(std::shared_ptr<MappedFile> mapping, const std::string& path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  const TensorInfo* find(std::string_view name) const;
  const TensorInfo& at(std::string_view name) const;  // throws naming the file and the tensor
  std::span<const uint8_t> bytes(const TensorInfo& t) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::shared_ptr<MappedFile>& mapping() const { return mapping_; }

 private:
  std::filesystem::path path_;
  std::shared_ptr<MappedFile> mapping_;
  const uint8_t* data_ = nullptr;  // start of the data buffer
  uint64_t data_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> data;
};

// The bytes of a safetensors file: tensors laid out in the given order, header padded with spaces to 8 bytes.
std::string serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
// serialize_safetensors + write_file_atomic.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace forja::io
