// 16-bit floats on the host: bf16 and IEEE binary16 to and from fp32, by bit manipulation, rounding to
// nearest even. The weights come in these as raw uint16 patterns (safetensors BF16 / F16).
#include <bit>
#include <cmath>
#include <cstring>

#include "forja/error.h"
#include "forja/nf4.h"

namespace forja::quant {

float bf16_to_float(uint16_t v) {
  return std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
}

uint16_t float_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  // A NaN whose payload sits only in the low 16 bits would round to infinity: keep it a quiet NaN instead.
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to the even bf16
  return static_cast<uint16_t>(bits >> 16);
}

float f16_to_float(uint16_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x8000u) << 16;
  const uint32_t exp = (v >> 10) & 0x1fu;
  const uint32_t mant = v & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in fp32
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf or NaN
  return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t float_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((mag >> 13) & 0x1ffu);  // NaN
  // 65520 (0x477ff000) is halfway between 65504, the largest binary16, and 65536; the tie goes to the even
  // pattern, which is infinity.
  if (mag >= 0x477ff000u) return sign | 0x7c00u;
  if (mag >= 0x38800000u) {  // >= 2^-14: a normal binary16
    const uint32_t rounded = mag + 0xfffu + ((mag >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - ((127u - 15u) << 23)) >> 13);
  }
  // Subnormal binary16 (or zero): a multiple of 2^-24; scaling by 2^24 is exact and nearbyint rounds to even
  // (1024 comes out as the smallest normal, which is the right pattern).
  const float scaled = std::ldexp(std::bit_cast<float>(mag), 24);
  return sign | static_cast<uint16_t>(std::nearbyint(scaled));
}

std::vector<float> to_float(std::span<const uint8_t> bytes, io::DType dtype) {
  std::vector<float> out;
  if (dtype == io::DType::F32) {
    if (bytes.size() % 4 != 0)
      throw Error("to_float: F32 data of " + std::to_string(bytes.size()) + " bytes");
    out.resize(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  if (dtype != io::DType::BF16 && dtype != io::DType::F16)
    throw Error("NF4 quantization takes F32, BF16 or F16 weights, not " + std::string(io::dtype_name(dtype)));
  if (bytes.size() % 2 != 0)
    throw Error("to_float: 16-bit data of an odd number of bytes (" + std::to_string(bytes.size()) + ")");
  out.resize(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto v = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));  // little-endian
    out[i] = dtype == io::DType::BF16 ? bf16_to_float(v) : f16_to_float(v);
  }
  return out;
}

}  // namespace forja::quant
