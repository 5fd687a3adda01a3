// NF4 quantization of a frozen base model (QLoRA, Dettmers et al. 2023, arXiv:2305.14314), on the CPU.
//
// The format, which kernels/nf4 (the CUDA dequantize and GEMV) reads unchanged:
//  - A tensor is quantized as its flat row-major sequence of n elements, in blocks of `block_size`
//    consecutive elements (64 by default; the last block may be partial), each with absmax = max |w| (fp32).
//  - An element becomes the index (0..15) of the NormalFloat code nearest to w / absmax (kNf4Codes, the
//    paper's table, the one bitsandbytes uses). A value exactly on the fp32 midpoint of two codes gets the
//    lower one. A block whose absmax is 0 holds code 7 (0.0) everywhere.
//  - Two codes per byte: element 2k is the HIGH nibble of byte k and element 2k+1 the low nibble (as in
//    bitsandbytes). With n odd, the low nibble of the last byte is 0 and means nothing.
//  - Dequantized: w' = kNf4Codes[code] * absmax, one fp32 multiply; in bf16, that fp32 rounded to nearest
//    even.
//
// Double quantization (optional): the absmax values themselves are stored in 8 bits.
//   offset  = mean of all the tensor's absmax values (fp32; summed in double),
//   c_b     = absmax_b - offset (fp32),
//   scale_g = max |c_b| / 127 (fp32) over each group of `dq_block_size` (256) consecutive blocks,
//   q_b     = c_b / scale_g rounded to nearest (ties away from 0), clamped to [-127, 127], stored as int8
//             (0 when scale_g is 0). A symmetric linear int8: -128 never occurs.
//   decoded absmax_b = fmaf(q_b, scale_g, offset), one fused multiply-add, so that the CPU and the GPU agree
//   bit for bit. |absmax - decoded| is at most scale_g / 2 plus fp32 rounding.
// The paper stores the absmax in FP8; a linear int8 spends the same 8 bits per block and decodes exactly the
// same way everywhere.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forja/safetensors.h"
#include "forja_kernels/nf4.h"

namespace forja::quant {

// The 16 NormalFloat4 values, ascending (FORJA_NF4_CODE_VALUES of kernels/nf4: one table for the CPU, the GPU
// kernels and their reference).
inline constexpr std::array<float, 16> kNf4Codes = {FORJA_NF4_CODE_VALUES};
inline constexpr uint8_t kNf4ZeroCode = 7;

// Half of the largest gap between adjacent codes (between -1.0 and -0.696): the worst |x - code(x)| for
// x in [-1, 1], so |w - w'| <= absmax * nf4_max_half_gap() (+ the double-quant absmax error).
float nf4_max_half_gap();

// The code nearest to x (x = w / absmax, normally in [-1, 1]; values outside clamp to code 0 or 15).
uint8_t nf4_encode(float x);

// ---- 16-bit floats, as raw bit patterns ----------------------------------------------------------------
float bf16_to_float(uint16_t v);
uint16_t float_to_bf16(float f);  // round to nearest even; NaN stays a (quiet) NaN
float f16_to_float(uint16_t v);   // IEEE binary16, subnormals included
uint16_t float_to_f16(float f);   // round to nearest even; overflow to infinity; NaN stays NaN

// Converts `bytes` (F32, BF16 or F16, little-endian as in safetensors) to fp32; throws forja::Error for
// any other dtype.
std::vector<float> to_float(std::span<const uint8_t> bytes, io::DType dtype);

// ---- Quantization ---------------------------------------------------------------------------------------
struct Nf4Options {
  int64_t block_size = 64;      // elements per absmax; even, 2 .. 1 << 20
  bool double_quant = false;    // store the absmax values in 8 bits (see the top of this file)
  int64_t dq_block_size = 256;  // absmax values per double-quant scale; 1 .. 1 << 20
};

struct Nf4Tensor {
  std::vector<int64_t> shape;        // the original shape
  io::DType dtype = io::DType::F32;  // the original dtype: F32, BF16 or F16
  int64_t block_size = 64;
  std::vector<uint8_t> codes;  // ceil(n / 2) bytes, element 2k in the high nibble of byte k
  // Without double quantization: one fp32 absmax per block.
  std::vector<float> absmax;  // ceil(n / block_size) values, empty when double_quant
  // With double quantization:
  bool double_quant = false;
  int64_t dq_block_size = 256;
  std::vector<int8_t> absmax_q;     // ceil(n / block_size) values
  std::vector<float> absmax_scale;  // ceil(blocks / dq_block_size) values
  float absmax_offset = 0.0f;

  int64_t numel() const;
  int64_t blocks() const;
  // The absmax the dequantizer uses for block b (decoded when double-quantized).
  float block_absmax(int64_t b) const;
  std::vector<float> block_absmaxes() const;
};

// Empty when the parts of `t` agree with its shape and sizes, else what is wrong (used by the dequantizers,
// the cache writer and the cache reader).
std::string nf4_tensor_problem(const Nf4Tensor& t);

// Quantizes fp32 weights of the given shape (the product of `shape` must equal w.size()). `dtype` records the
// dtype the weights came in. Throws forja::Error on bad options or a non-finite weight.
Nf4Tensor quantize_nf4(std::span<const float> w, std::vector<int64_t> shape, const Nf4Options& options = {},
                       io::DType dtype = io::DType::F32);
// The same from raw safetensors bytes in F32, BF16 or F16.
Nf4Tensor quantize_nf4(std::span<const uint8_t> bytes, io::DType dtype, std::vector<int64_t> shape,
                       const Nf4Options& options = {});

// Double quantization of absmax values on its own (quantize_nf4 uses it; public for the tests).
struct DoubleQuantized {
  std::vector<int8_t> q;
  std::vector<float> scale;
  float offset = 0.0f;
};
DoubleQuantized double_quantize_absmax(std::span<const float> absmax, int64_t dq_block_size);
float double_dequantize_absmax(int8_t q, float scale, float offset);

std::vector<float> dequantize_nf4(const Nf4Tensor& t);
std::vector<uint16_t> dequantize_nf4_bf16(const Nf4Tensor& t);
// Into caller-provided buffers of t.numel() elements; throws forja::Error when the size differs.
void dequantize_nf4(const Nf4Tensor& t, std::span<float> out);
void dequantize_nf4_bf16(const Nf4Tensor& t, std::span<uint16_t> out);

// ---- Which tensors of a model are quantized -------------------------------------------------------------
// True for the weight of a linear projection inside a decoder layer, by its Hugging Face name:
// "<...>.layers.<i>.<...>.{q,k,v,o,gate,up,down}_proj.weight" (Llama, Mistral, Qwen2) and
// "<...>h.<i>.{attn,mlp}.{c_attn,c_proj,c_fc}.weight" (GPT-2, whose Conv1D weights are stored [in, out]).
// Embeddings, norms, biases and lm_head stay as they are.
bool should_quantize_nf4(std::string_view hf_name);

// ---- The cache file ---------------------------------------------------------------------------------------
// One safetensors file. For each quantized tensor NAME:
//   NAME.nf4_codes      U8  [ceil(n / 2)]
//   NAME.absmax         F32 [blocks]                  (without double quantization)
//   NAME.absmax_q       I8  [blocks]                  (with double quantization)
//   NAME.absmax_scale   F32 [ceil(blocks / dq_block_size)]
//   NAME.absmax_offset  F32 [1]
// and in __metadata__:
//   "format": "forja.nf4", "format_version": "1", "block_size": "64", "double_quant": "true" | "false",
//   "dq_block_size": "256", "tensors": {"NAME": {"shape": [..], "dtype": "BF16"}, ...} (JSON),
// plus any caller-provided keys (which must not collide with these).
inline constexpr std::string_view kNf4CacheFormat = "forja.nf4";
inline constexpr int kNf4CacheVersion = 1;

struct Nf4Cache {
  Nf4Options options;                        // shared by every tensor of the file
  std::map<std::string, Nf4Tensor> tensors;  // by the original HF name
  std::map<std::string, std::string> extra;  // the caller's own metadata
};

// Writes atomically; throws forja::Error naming the file when the tensors disagree with `cache.options` or
// are internally inconsistent.
void save_nf4_cache(const std::filesystem::path& path, const Nf4Cache& cache);
// Reads and validates everything (format, version, options, every tensor's presence, dtype and size against
// its shape); throws forja::Error naming the file and the problem.
Nf4Cache load_nf4_cache(const std::filesystem::path& path);

}  // namespace forja::quant
