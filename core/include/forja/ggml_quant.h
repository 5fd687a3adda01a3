// llama.cpp's quantized tensor types (ggml's block layouts) and llama-quantize's mixes: which type each
// tensor of a GGUF file gets for a file type such as Q4_K_M. No LibTorch: the export feeds it fp32 rows.
//
// Blocks (little-endian, fp16 scales), as ggml-common.h lays them out:
//   Q4_0  32 values, 18 bytes: d, 16 bytes of 4-bit codes (value j low nibble, j+16 high); x = d·(q-8)
//   Q5_0  32 values, 22 bytes: d, 4 bytes of fifth bits, 16 bytes of low nibbles; x = d·(q-16)
//   Q5_1  32 values, 24 bytes: d, m, fifth bits, low nibbles; x = d·q + m
//   Q8_0  32 values, 34 bytes: d, 32 int8; x = d·q
//   Q4_K 256 values, 144 bytes: d, dmin, 12 bytes of 6-bit scales/mins for 8 groups of 32, 128 bytes of codes
//   Q5_K 256 values, 176 bytes: as Q4_K plus 32 bytes of fifth bits
//   Q6_K 256 values, 210 bytes: 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, d
// The quantizers compute what ggml's reference quantizers (quantize_row_*_ref, which llama-quantize uses
// without an importance matrix) compute, bit for bit: the same float operations in the same order.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "forja/gguf.h"

namespace forja::quant {

bool ggml_is_quantized(io::GgufType t);
const char* ggml_type_name(io::GgufType t);  // llama.cpp's: "q4_K", "f16", ...

// Quantizes `rows` rows of `cols` values (row-major `x`) to `t` (a quantized type, F16 or F32). Blocks are
// independent, so the rows are shared out over `threads` threads (0: all cores) and the bytes are the same
// for any count. Throws forja::Error naming `what` when cols is not a multiple of the block or a value is
// not finite.
std::string quantize_rows(io::GgufType t, std::span<const float> x, int64_t rows, int64_t cols,
                          const std::string& what, unsigned threads = 0);
// The values `bytes` (whole blocks of `t`) stand for, as ggml's dequantize_row_* computes them.
std::vector<float> dequantize(io::GgufType t, std::span<const uint8_t> bytes);

// llama.cpp's llama_ftype for the file types Forja writes (general.file_type).
enum class GgufFileType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 7,
  Q4_K_M = 15,
  Q5_K_M = 17,
  Q6_K = 18,
  BF16 = 32
};
// "fp32", "fp16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0" in any case; nullopt for any other.
std::optional<GgufFileType> gguf_file_type_from_name(const std::string& name);
std::string gguf_file_type_name(GgufFileType t);  // "q4_k_m", ...
bool is_quantized_file_type(GgufFileType t);

struct MixTensor {
  std::string name;            // llama.cpp's tensor name ("blk.3.attn_v.weight")
  std::vector<int64_t> shape;  // PyTorch order: [rows, cols]
};
// The type of each tensor in a file of type `ft` made by llama-quantize from a file whose tensors are all
// F32 (llama_tensor_get_type for a dense model without an importance matrix): tensors it does not quantize
// (1-D ones, norms, position embeddings) stay F32; output.weight (or the token embedding when it is tied)
// gets Q6_K, or Q8_0 when its rows do not fit Q6_K's blocks; in the _M mixes attn_v/attn_qkv and ffn_down
// of some layers get Q6_K; a row length that does not fit the chosen type's blocks falls back to a 32-value
// type (Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0) or to F16. `layers` is the block count.
std::vector<io::GgufType> assign_quant_types(GgufFileType ft, const std::vector<MixTensor>& tensors,
                                             int64_t layers);

}  // namespace forja::quant
