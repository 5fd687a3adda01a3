// CPU references of the NF4 kernels: the same maths as nf4.cu, element by element, on host pointers. They
// stand alone (nothing from core/) so that the GPU machine can build them; tests/core/quant checks them
// against core/quant bit for bit.
#include <cmath>
#include <limits>

#include "forja_kernels/nf4.h"

namespace {

constexpr float kCodes[16] = {FORJA_NF4_CODE_VALUES};

float block_absmax(const ForjaNf4Weights& w, int64_t b) {
  if (w.absmax) return w.absmax[b];
  return std::fma(static_cast<float>(w.absmax_q[b]), w.absmax_scale[b / w.dq_block_size], w.absmax_offset);
}

float weight(const ForjaNf4Weights& w, int64_t i) {
  const uint8_t byte = w.codes[i / 2];
  const int code = i % 2 == 0 ? byte >> 4 : byte & 0x0f;
  return kCodes[code] * block_absmax(w, i / w.block_size);
}

const char* check_weights(const ForjaNf4Weights& w, int64_t n) {
  if (w.block_size < 1) return "nf4: block_size must be at least 1";
  if (n == 0) return nullptr;
  if (!w.codes) return "nf4: codes is NULL";
  if (!w.absmax) {
    if (!w.absmax_q || !w.absmax_scale)
      return "nf4: absmax is NULL and the double-quantized absmax is incomplete";
    if (w.dq_block_size < 1) return "nf4: dq_block_size must be at least 1";
  }
  return nullptr;
}

}  // namespace

extern "C" {

const float* forja_nf4_codes(void) {
  return kCodes;
}

const char* forja_nf4_dequantize_check(const ForjaNf4Dequantize* p) {
  if (!p) return "nf4 dequantize: NULL parameters";
  if (p->n < 0) return "nf4 dequantize: n is negative";
  if (const char* e = check_weights(p->w, p->n)) return e;
  if (p->n > 0 && !p->out) return "nf4 dequantize: out is NULL";
  return nullptr;
}

const char* forja_nf4_gemv_check(const ForjaNf4Gemv* p) {
  if (!p) return "nf4 gemv: NULL parameters";
  if (p->rows < 0 || p->cols < 0) return "nf4 gemv: rows or cols is negative";
  if (p->cols > 0 && p->rows > std::numeric_limits<int64_t>::max() / p->cols)
    return "nf4 gemv: rows * cols overflows";
  if (const char* e = check_weights(p->w, p->rows * p->cols)) return e;
  if (p->rows > 0 && !p->y) return "nf4 gemv: y is NULL";
  if (p->rows > 0 && p->cols > 0 && !p->x) return "nf4 gemv: x is NULL";
  return nullptr;
}

int forja_nf4_dequantize_bf16_ref(const ForjaNf4Dequantize* p) {
  if (forja_nf4_dequantize_check(p)) return FORJA_NF4_INVALID_ARGUMENT;
  auto* out = static_cast<uint16_t*>(p->out);
  for (int64_t i = 0; i < p->n; ++i) out[i] = forja_float_to_bf16(weight(p->w, i));
  return FORJA_NF4_OK;
}

int forja_nf4_gemv_bf16_ref(const ForjaNf4Gemv* p) {
  if (forja_nf4_gemv_check(p)) return FORJA_NF4_INVALID_ARGUMENT;
  const auto* x = static_cast<const uint16_t*>(p->x);
  auto* y = static_cast<uint16_t*>(p->y);
  for (int64_t r = 0; r < p->rows; ++r) {
    double acc = 0.0;
    for (int64_t c = 0; c < p->cols; ++c)
      acc += static_cast<double>(weight(p->w, r * p->cols + c)) * forja_bf16_to_float(x[c]);
    y[r] = forja_float_to_bf16(static_cast<float>(acc));
  }
  return FORJA_NF4_OK;
}

}  // extern "C"
