// The CPU reference of the decode kernels (forja_kernels/decode.h): the same formulas on host pointers, sums
// in double, the intermediate roundings the header lists. Plain C++: CI tests the maths with it, and the GPU
// tests compare the kernels against it. Also the argument checks the CUDA launchers share.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "forja_kernels/decode.h"
#include "forja_kernels/nf4.h"

namespace {

float bf(const void* base, int64_t i) {
  return forja_bf16_to_float(static_cast<const uint16_t*>(base)[i]);
}

uint16_t to_bf(float v) {
  return forja_float_to_bf16(v);
}

// v rounded to bf16 and read back.
float round_bf(float v) {
  return forja_bf16_to_float(forja_float_to_bf16(v));
}

// GELU's tanh form as LibTorch computes it in fp32 (gelu(approximate="tanh")).
float gelu_tanh(float g) {
  constexpr float kBeta = 0.7978845608028654f, kKappa = 0.044715f;  // sqrt(2 / pi)
  return 0.5f * g * (1.0f + std::tanh(kBeta * (g + kKappa * g * g * g)));
}
// The activation the GEMV multiplies (the prologue's result, rounded as the header says); written to act_out
// too when given.
std::vector<float> activation(ForjaDecodePrologue prologue, const void* x, const void* norm_weight, float eps,
                              int64_t k, void* act_out) {
  std::vector<float> act(static_cast<size_t>(k));
  if (prologue == FORJA_DECODE_RMSNORM || prologue == FORJA_DECODE_RMSNORM_UNIT_OFFSET) {
    double ss = 0;
    for (int64_t i = 0; i < k; ++i) ss += static_cast<double>(bf(x, i)) * bf(x, i);
    const float r = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(k) + eps));
    for (int64_t i = 0; i < k; ++i)
      act[i] = prologue == FORJA_DECODE_RMSNORM ? round_bf(round_bf(bf(x, i) * r) * bf(norm_weight, i))
                                                : round_bf(bf(x, i) * r * (1.0f + bf(norm_weight, i)));
  } else if (prologue == FORJA_DECODE_SWIGLU || prologue == FORJA_DECODE_GEGLU) {
    for (int64_t i = 0; i < k; ++i) {
      const float g = bf(x, i), u = bf(x, k + i);
      act[i] =
          round_bf(round_bf(prologue == FORJA_DECODE_SWIGLU ? g / (1.0f + std::exp(-g)) : gelu_tanh(g)) * u);
    }
  } else {
    for (int64_t i = 0; i < k; ++i) act[i] = bf(x, i);
  }
  if (act_out != nullptr)
    for (int64_t i = 0; i < k; ++i) static_cast<uint16_t*>(act_out)[i] = to_bf(act[i]);
  return act;
}

// y[r] = bf16(acc + bias[r] + residual[r]).
void store_row(void* y, int64_t r, double acc, const void* bias, const void* residual) {
  if (bias != nullptr) acc += bf(bias, r);
  if (residual != nullptr) acc += bf(residual, r);
  static_cast<uint16_t*>(y)[r] = to_bf(static_cast<float>(acc));
}

// The prologue's own requirements, shared by both GEMVs' checks.
const char* prologue_check(ForjaDecodePrologue prologue, const void* norm_weight, float eps) {
  if (prologue != FORJA_DECODE_PLAIN && prologue != FORJA_DECODE_RMSNORM && prologue != FORJA_DECODE_SWIGLU &&
      prologue != FORJA_DECODE_RMSNORM_UNIT_OFFSET && prologue != FORJA_DECODE_GEGLU)
    return "unknown prologue";
  const bool norm = prologue == FORJA_DECODE_RMSNORM || prologue == FORJA_DECODE_RMSNORM_UNIT_OFFSET;
  if (norm && norm_weight == nullptr) return "RMSNORM needs norm_weight";
  if (norm && !(eps >= 0.0f)) return "eps must be >= 0";
  return nullptr;
}

}  // namespace

extern "C" {

const char* forja_decode_gemv_check(const ForjaDecodeGemv* p) {
  if (p == nullptr) return "no parameters";
  if (p->n < 1 || p->k < 1) return "n and k must be at least 1";
  if (p->k > 32768) return "k is above 32768 (the activations live in shared memory)";
  if (p->w == nullptr || p->x == nullptr || p->y == nullptr) return "w, x and y are required";
  return prologue_check(p->prologue, p->norm_weight, p->eps);
}

const char* forja_decode_gemv_nf4_check(const ForjaDecodeGemvNf4* p) {
  if (p == nullptr) return "no parameters";
  if (p->n < 1 || p->k < 1) return "n and k must be at least 1";
  if (p->k > 32768) return "k is above 32768 (the activations live in shared memory)";
  if (p->k % 32 != 0) return "k must be a multiple of 32";
  if (p->block_size < 32 || (p->block_size & (p->block_size - 1)) != 0)
    return "block_size must be a power of two, at least 32";
  if (p->k % p->block_size != 0) return "k must be a multiple of block_size (each row whole blocks)";
  if (p->codes == nullptr || p->absmax == nullptr || p->x == nullptr || p->y == nullptr)
    return "codes, absmax, x and y are required";
  if (reinterpret_cast<uintptr_t>(p->codes) % 16 != 0) return "codes must be 16-byte aligned";
  return prologue_check(p->prologue, p->norm_weight, p->eps);
}

const char* forja_decode_rope_kv_check(const ForjaDecodeRopeKv* p) {
  if (p == nullptr) return "no parameters";
  if (p->heads < 1 || p->kv_heads < 1 || p->head_dim < 2 || p->head_dim % 2 != 0)
    return "heads and kv_heads must be at least 1 and head_dim even";
  if (p->head_dim > 1024) return "head_dim is above 1024";
  if (p->capacity < 1) return "capacity must be at least 1";
  if (p->qkv == nullptr || p->cache == nullptr || p->cos == nullptr || p->sin == nullptr ||
      p->position == nullptr)
    return "qkv, cache, cos, sin and position are required";
  return nullptr;
}

const char* forja_decode_attention_check(const ForjaDecodeAttention* p) {
  if (p == nullptr) return "no parameters";
  if (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256) return "head_dim must be 64, 128 or 256";
  if (p->heads < 1 || p->kv_heads < 1 || p->heads % p->kv_heads != 0)
    return "heads must be a positive multiple of kv_heads";
  if (p->heads / p->kv_heads > 16) return "more than 16 query heads per kv head";
  // A block keeps every query head's partial sums in shared memory: 48 KB holds 8 of head_dim 256.
  if (p->head_dim == 256 && p->heads / p->kv_heads > 8) return "more than 8 query heads per kv head at 256";
  if (p->capacity < 1 || p->max_keys < 1 || p->max_keys > p->capacity)
    return "max_keys must be in [1, capacity]";
  if (p->chunk < 1) return "chunk must be at least 1";
  if (p->window < 0) return "window must be >= 0";
  if (!(p->softcap >= 0.0f)) return "softcap must be >= 0";
  if (p->q == nullptr || p->cache == nullptr || p->position == nullptr || p->out == nullptr)
    return "q, cache, position and out are required";
  return nullptr;
}

const char* forja_decode_rms_norm_check(const ForjaDecodeRmsNorm* p) {
  if (p == nullptr) return "no parameters";
  if (p->rows < 1 || p->d < 1) return "rows and d must be at least 1";
  if (p->d > 32768) return "d is above 32768";
  if (!(p->eps >= 0.0f)) return "eps must be >= 0";
  if (p->unit_offset != 0 && p->unit_offset != 1) return "unit_offset must be 0 or 1";
  if (p->x == nullptr || p->weight == nullptr || p->out == nullptr) return "x, weight and out are required";
  return nullptr;
}
int64_t forja_decode_attention_chunk(int64_t max_keys) {
  // About 64 splits at most, in chunks of a multiple of 32 keys (4 warps of 8 keys each at the least).
  const int64_t per = (max_keys + 63) / 64;
  return std::max<int64_t>(32, (per + 31) / 32 * 32);
}

int64_t forja_decode_attention_scratch_floats(int64_t heads, int64_t head_dim, int64_t max_keys,
                                              int64_t chunk) {
  const int64_t splits = (max_keys + chunk - 1) / chunk;
  return heads * splits * (head_dim + 2);
}

int forja_decode_gemv_bf16_ref(const ForjaDecodeGemv* p) {
  if (forja_decode_gemv_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t k = p->k;
  const std::vector<float> act = activation(p->prologue, p->x, p->norm_weight, p->eps, k, p->act_out);
  for (int64_t r = 0; r < p->n; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < k; ++c) acc += static_cast<double>(act[c]) * bf(p->w, r * k + c);
    store_row(p->y, r, acc, p->bias, p->residual);
  }
  return FORJA_DECODE_OK;
}

int forja_decode_gemv_nf4_ref(const ForjaDecodeGemvNf4* p) {
  if (forja_decode_gemv_nf4_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t k = p->k;
  const std::vector<float> act = activation(p->prologue, p->x, p->norm_weight, p->eps, k, p->act_out);
  const float* codes = forja_nf4_codes();
  for (int64_t r = 0; r < p->n; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t i = r * k + c;
      const uint8_t byte = p->codes[i / 2];
      const float w = codes[i % 2 == 0 ? byte >> 4 : byte & 0x0f] * p->absmax[i / p->block_size];
      acc += static_cast<double>(act[c]) * w;
    }
    store_row(p->y, r, acc, p->bias, p->residual);
  }
  return FORJA_DECODE_OK;
}

int forja_decode_rope_kv_bf16_ref(const ForjaDecodeRopeKv* p) {
  if (forja_decode_rope_kv_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t pos = *p->position, d = p->head_dim, half = d / 2;
  if (pos < 0 || pos >= p->capacity) return FORJA_DECODE_INVALID_ARGUMENT;
  auto* qkv = static_cast<uint16_t*>(p->qkv);
  auto* cache = static_cast<uint16_t*>(p->cache);
  const int64_t kv_plane = p->kv_heads * p->capacity * d;
  for (int64_t h = 0; h < p->heads + 2 * p->kv_heads; ++h) {
    uint16_t* row = qkv + h * d;
    if (h < p->heads + p->kv_heads) {
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = bf(row, i), x2 = bf(row, i + half);
        const float c1 = bf(p->cos, pos * d + i), c2 = bf(p->cos, pos * d + i + half);
        const float s1 = bf(p->sin, pos * d + i), s2 = bf(p->sin, pos * d + i + half);
        row[i] = to_bf(round_bf(x1 * c1) + x2 * s1);
        row[i + half] = to_bf(round_bf(x2 * c2) + x1 * s2);
      }
    }
    if (h >= p->heads && h < p->heads + p->kv_heads) {
      std::copy(row, row + d, cache + ((h - p->heads) * p->capacity + pos) * d);
    } else if (h >= p->heads + p->kv_heads) {
      std::copy(row, row + d, cache + kv_plane + ((h - p->heads - p->kv_heads) * p->capacity + pos) * d);
    }
  }
  return FORJA_DECODE_OK;
}

int forja_decode_rms_norm_bf16_ref(const ForjaDecodeRmsNorm* p) {
  if (forja_decode_rms_norm_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t d = p->d;
  for (int64_t r = 0; r < p->rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(bf(p->x, r * d + i)) * bf(p->x, r * d + i);
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + p->eps));
    for (int64_t i = 0; i < d; ++i) {
      const float v = bf(p->x, r * d + i), w = bf(p->weight, i);
      float y = p->unit_offset ? round_bf(v * inv * (1.0f + w)) : round_bf(round_bf(v * inv) * w);
      if (p->residual != nullptr) y = round_bf(bf(p->residual, r * d + i) + y);
      static_cast<uint16_t*>(p->out)[r * d + i] = to_bf(y);
    }
  }
  return FORJA_DECODE_OK;
}
int forja_decode_attention_bf16_ref(const ForjaDecodeAttention* p) {
  if (forja_decode_attention_check(p) != nullptr) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t pos = *p->position, d = p->head_dim, rep = p->heads / p->kv_heads;
  if (pos < 0 || pos >= p->max_keys) return FORJA_DECODE_INVALID_ARGUMENT;
  const int64_t lo = p->window > 0 ? std::max<int64_t>(0, pos - p->window + 1) : 0;
  const int64_t kv_plane = p->kv_heads * p->capacity * d;
  std::vector<double> s(static_cast<size_t>(pos - lo + 1));
  for (int64_t h = 0; h < p->heads; ++h) {
    const int64_t g = h / rep;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = lo; j <= pos; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < d; ++e)
        dot += static_cast<double>(bf(p->q, h * d + e)) * bf(p->cache, (g * p->capacity + j) * d + e);
      s[j - lo] = dot * p->scale;
      if (p->softcap > 0) s[j - lo] = p->softcap * std::tanh(s[j - lo] / p->softcap);
      m = std::max(m, s[j - lo]);
    }
    double l = 0;
    for (auto& v : s) l += (v = std::exp(v - m));
    for (int64_t e = 0; e < d; ++e) {
      double acc = 0;
      for (int64_t j = lo; j <= pos; ++j)
        acc += s[j - lo] * bf(p->cache, kv_plane + (g * p->capacity + j) * d + e);
      static_cast<uint16_t*>(p->out)[h * d + e] = to_bf(static_cast<float>(acc / l));
    }
  }
  return FORJA_DECODE_OK;
}

}  // extern "C"
