// GGUF (version 3), the single-file model format of llama.cpp and the tools built on it (LM Studio, Ollama):
// writing one, and reading one back (its metadata and tensor table), without LibTorch.
//
// Layout (ggml's docs/gguf.md), all little-endian:
//   "GGUF" | u32 version (3) | u64 tensor count | u64 metadata count
//   metadata:  string key | u32 value type | value         (a string is u64 length + UTF-8 bytes, no NUL;
//                                                          an array is u32 element type + u64 count +
//                                                          elements)
//   tensors:   string name | u32 n_dims | u64 dims[n_dims] (innermost first: a [rows, cols] row-major matrix
//                                                          is {cols, rows}) | u32 ggml type | u64 offset
//   padding to the alignment (general.alignment, 32 by default), then the data; each tensor's offset is
//   relative to the data's start and a multiple of the alignment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace forja::io {

// The ggml tensor types Forja writes (ggml's enum values): the float ones and the block-quantized ones of
// llama-quantize's mixes (forja/ggml_quant.h has their layouts).
enum class GgufType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30
};
// Whether `t` (a raw ggml type number) is one of those.
bool gguf_type_known(uint32_t t);
// Values per block (1 for the float types) and bytes per block.
int64_t gguf_block_values(GgufType t);
size_t gguf_block_bytes(GgufType t);
// Bytes of a tensor of `shape` (PyTorch order) in `t`; 0 when its rows do not fill whole blocks.
uint64_t gguf_tensor_bytes(GgufType t, const std::vector<int64_t>& shape);

// A metadata value: the scalar and array kinds the llama.cpp loader reads.
using GgufValue = std::variant<uint32_t, int32_t, float, bool, std::string, uint64_t,
                               std::vector<std::string>, std::vector<float>, std::vector<int32_t>>;

struct GgufTensor {
  std::string name;
  std::vector<int64_t> shape;  // PyTorch order (outermost first); written reversed
  GgufType type = GgufType::F32;
  // The elements in `type`, row-major in `shape`: called once, when the writer reaches the tensor, so that a
  // model larger than the memory is written one tensor at a time.
  std::function<std::string()> data;
  uint64_t nbytes() const;
};

class GgufWriter {
 public:
  static constexpr uint64_t kAlignment = 32;

  // Metadata keep their insertion order; a key given twice keeps the last value.
  void set(const std::string& key, GgufValue value);
  void add_tensor(GgufTensor tensor);
  size_t tensor_count() const { return tensors_.size(); }
  // Writes the file crash-safely (a temporary beside `path`, then renamed over it), one tensor in memory at a
  // time. Throws forja::Error naming the path when it cannot, or a tensor whose data does not match its shape
  // and type.
  void write(const std::filesystem::path& path) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensor> tensors_;
};

// What a GGUF file holds, read back (the tensor data stays in the file: offsets only).
struct GgufFile {
  uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;  // PyTorch order
    uint32_t type = 0;
    uint64_t offset = 0;  // absolute, in the file
    uint64_t nbytes = 0;  // of a known type (gguf_type_known); 0 for another
  };
  std::vector<Tensor> tensors;
};

// Reads the header, metadata and tensor table. Throws forja::Error naming the file and what is wrong (not
// GGUF, an unsupported version or value type, a table that runs past the end, a tensor outside the file).
GgufFile read_gguf(const std::filesystem::path& path);

}  // namespace forja::io
