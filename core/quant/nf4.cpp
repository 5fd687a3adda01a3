// NF4 blockwise quantization and dequantization, and the double quantization of the absmax values. The
// format is described at the top of forja/nf4.h; kernels/nf4/reference.cpp decodes the same bytes.
#include "forja/nf4.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "forja/error.h"

namespace forja::quant {

namespace {

// Decision thresholds: the fp32 midpoints between adjacent codes (computed in double, rounded once).
constexpr std::array<float, 15> make_midpoints() {
  std::array<float, 15> m{};
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = static_cast<float>((static_cast<double>(kNf4Codes[i]) + kNf4Codes[i + 1]) / 2.0);
  return m;
}
constexpr std::array<float, 15> kMidpoints = make_midpoints();

constexpr int64_t kMaxBlockSize = int64_t(1) << 20;

void check_options(const Nf4Options& o) {
  if (o.block_size < 2 || o.block_size > kMaxBlockSize || o.block_size % 2 != 0)
    throw Error("NF4 block size " + std::to_string(o.block_size) + " is not an even number from 2 to " +
                std::to_string(kMaxBlockSize));
  if (o.double_quant && (o.dq_block_size < 1 || o.dq_block_size > kMaxBlockSize))
    throw Error("NF4 double-quantization block size " + std::to_string(o.dq_block_size) +
                " is not from 1 to " + std::to_string(kMaxBlockSize));
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("NF4 tensor shape has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) throw Error("NF4 tensor shape overflows");
    n *= d;
  }
  return n;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

float nf4_max_half_gap() {
  float gap = 0.0f;
  for (size_t i = 0; i + 1 < kNf4Codes.size(); ++i) gap = std::max(gap, kNf4Codes[i + 1] - kNf4Codes[i]);
  return gap / 2.0f;
}

uint8_t nf4_encode(float x) {
  // The code is the number of midpoints strictly below x: a binary search over the 15 sorted midpoints,
  // without branches (weights are random, so a branch would be mispredicted half the time).
  unsigned idx = 0;
  idx += static_cast<unsigned>(x > kMidpoints[idx + 7]) * 8;
  idx += static_cast<unsigned>(x > kMidpoints[idx + 3]) * 4;
  idx += static_cast<unsigned>(x > kMidpoints[idx + 1]) * 2;
  idx += static_cast<unsigned>(x > kMidpoints[idx]);
  return static_cast<uint8_t>(idx);
}

int64_t Nf4Tensor::numel() const {
  return shape_numel(shape);
}
int64_t Nf4Tensor::blocks() const {
  return ceil_div(numel(), block_size);
}

float double_dequantize_absmax(int8_t q, float scale, float offset) {
  return std::fma(static_cast<float>(q), scale, offset);
}

float Nf4Tensor::block_absmax(int64_t b) const {
  if (!double_quant) return absmax[static_cast<size_t>(b)];
  return double_dequantize_absmax(absmax_q[static_cast<size_t>(b)],
                                  absmax_scale[static_cast<size_t>(b / dq_block_size)], absmax_offset);
}

std::vector<float> Nf4Tensor::block_absmaxes() const {
  std::vector<float> out(static_cast<size_t>(blocks()));
  for (size_t b = 0; b < out.size(); ++b) out[b] = block_absmax(static_cast<int64_t>(b));
  return out;
}

std::string nf4_tensor_problem(const Nf4Tensor& t) {
  for (int64_t d : t.shape)
    if (d < 0) return "the shape has a negative dimension";
  int64_t n = 0;
  try {
    n = t.numel();
  } catch (const Error&) {
    return "the shape overflows";
  }
  if (t.dtype != io::DType::F32 && t.dtype != io::DType::BF16 && t.dtype != io::DType::F16)
    return "original dtype " + std::string(io::dtype_name(t.dtype)) + " is not F32, BF16 or F16";
  if (t.block_size < 2 || t.block_size > kMaxBlockSize || t.block_size % 2 != 0)
    return "block size " + std::to_string(t.block_size) + " is not an even number from 2 to " +
           std::to_string(kMaxBlockSize);
  const int64_t blocks = ceil_div(n, t.block_size);
  const auto sz = [](const auto& v) { return static_cast<int64_t>(v.size()); };
  if (sz(t.codes) != ceil_div(n, 2))
    return std::to_string(t.codes.size()) + " code bytes for " + std::to_string(n) + " elements (expected " +
           std::to_string(ceil_div(n, 2)) + ")";
  if (!t.double_quant) {
    if (sz(t.absmax) != blocks)
      return std::to_string(t.absmax.size()) + " absmax values for " + std::to_string(blocks) + " blocks";
    return {};
  }
  if (t.dq_block_size < 1 || t.dq_block_size > kMaxBlockSize)
    return "double-quantization block size " + std::to_string(t.dq_block_size) + " is not from 1 to " +
           std::to_string(kMaxBlockSize);
  if (sz(t.absmax_q) != blocks)
    return std::to_string(t.absmax_q.size()) + " quantized absmax values for " + std::to_string(blocks) +
           " blocks";
  if (sz(t.absmax_scale) != ceil_div(blocks, t.dq_block_size))
    return std::to_string(t.absmax_scale.size()) + " absmax scales for " + std::to_string(blocks) +
           " blocks in groups of " + std::to_string(t.dq_block_size) + " (expected " +
           std::to_string(ceil_div(blocks, t.dq_block_size)) + ")";
  return {};
}

DoubleQuantized double_quantize_absmax(std::span<const float> absmax, int64_t dq_block_size) {
  if (dq_block_size < 1) throw Error("NF4 double-quantization block size must be at least 1");
  DoubleQuantized out;
  const size_t n = absmax.size();
  double sum = 0.0;
  for (float a : absmax) sum += a;
  out.offset = n == 0 ? 0.0f : static_cast<float>(sum / static_cast<double>(n));
  out.q.resize(n);
  const auto group = static_cast<size_t>(dq_block_size);
  out.scale.resize((n + group - 1) / group);
  for (size_t g = 0; g < out.scale.size(); ++g) {
    const size_t begin = g * group, end = std::min(n, begin + group);
    float peak = 0.0f;
    for (size_t b = begin; b < end; ++b) peak = std::max(peak, std::fabs(absmax[b] - out.offset));
    const float scale = peak / 127.0f;
    out.scale[g] = scale;
    for (size_t b = begin; b < end; ++b) {
      if (scale == 0.0f) {
        out.q[b] = 0;
        continue;
      }
      const float r = std::round((absmax[b] - out.offset) / scale);
      out.q[b] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
    }
  }
  return out;
}

Nf4Tensor quantize_nf4(std::span<const float> w, std::vector<int64_t> shape, const Nf4Options& options,
                       io::DType dtype) {
  check_options(options);
  if (dtype != io::DType::F32 && dtype != io::DType::BF16 && dtype != io::DType::F16)
    throw Error("NF4 quantization takes F32, BF16 or F16 weights, not " + std::string(io::dtype_name(dtype)));
  const int64_t n = shape_numel(shape);
  if (n != static_cast<int64_t>(w.size()))
    throw Error("NF4 quantization: the shape holds " + std::to_string(n) + " elements but " +
                std::to_string(w.size()) + " were given");

  Nf4Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.block_size = options.block_size;
  t.double_quant = options.double_quant;
  t.dq_block_size = options.dq_block_size;
  t.codes.assign(static_cast<size_t>(ceil_div(n, 2)), 0);
  std::vector<float> absmax(static_cast<size_t>(ceil_div(n, options.block_size)));

  const auto bs = static_cast<size_t>(options.block_size);
  for (size_t b = 0; b < absmax.size(); ++b) {
    const size_t begin = b * bs, end = std::min(w.size(), begin + bs);
    float peak = 0.0f;
    for (size_t i = begin; i < end; ++i) {
      if (!std::isfinite(w[i]))
        throw Error("NF4 quantization: element " + std::to_string(i) + " is not finite (" +
                        std::to_string(w[i]) + ")",
                    "The weights are damaged; check the checkpoint.");
      peak = std::max(peak, std::fabs(w[i]));
    }
    absmax[b] = peak;
    for (size_t i = begin; i < end; ++i) {
      // Division rather than a reciprocal multiply, so that w == ±absmax lands exactly on ±1.
      const uint8_t code = peak > 0.0f ? nf4_encode(w[i] / peak) : kNf4ZeroCode;
      t.codes[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? code << 4 : code);
    }
  }

  if (options.double_quant) {
    DoubleQuantized dq = double_quantize_absmax(absmax, options.dq_block_size);
    t.absmax_q = std::move(dq.q);
    t.absmax_scale = std::move(dq.scale);
    t.absmax_offset = dq.offset;
  } else {
    t.absmax = std::move(absmax);
  }
  return t;
}

Nf4Tensor quantize_nf4(std::span<const uint8_t> bytes, io::DType dtype, std::vector<int64_t> shape,
                       const Nf4Options& options) {
  const std::vector<float> w = to_float(bytes, dtype);
  return quantize_nf4(w, std::move(shape), options, dtype);
}

namespace {

template <class T, class Convert>
void dequantize_into(const Nf4Tensor& t, std::span<T> out, Convert convert) {
  if (const std::string problem = nf4_tensor_problem(t); !problem.empty())
    throw Error("NF4 dequantization: " + problem);
  if (static_cast<int64_t>(out.size()) != t.numel())
    throw Error("NF4 dequantization: the output holds " + std::to_string(out.size()) + " elements, not " +
                std::to_string(t.numel()));
  const auto bs = static_cast<size_t>(t.block_size);
  for (size_t i = 0; i < out.size(); i += bs) {
    const float a = t.block_absmax(static_cast<int64_t>(i / bs));
    const size_t end = std::min(out.size(), i + bs);
    for (size_t j = i; j < end; ++j) {
      const uint8_t byte = t.codes[j / 2];
      const uint8_t code = j % 2 == 0 ? byte >> 4 : byte & 0x0f;
      out[j] = convert(kNf4Codes[code] * a);
    }
  }
}

}  // namespace

void dequantize_nf4(const Nf4Tensor& t, std::span<float> out) {
  dequantize_into(t, out, [](float v) { return v; });
}

void dequantize_nf4_bf16(const Nf4Tensor& t, std::span<uint16_t> out) {
  dequantize_into(t, out, [](float v) { return float_to_bf16(v); });
}

std::vector<float> dequantize_nf4(const Nf4Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  dequantize_nf4(t, out);
  return out;
}

std::vector<uint16_t> dequantize_nf4_bf16(const Nf4Tensor& t) {
  std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
  dequantize_nf4_bf16(t, out);
  return out;
}

}  // namespace forja::quant
