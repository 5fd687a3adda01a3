/* bf16 <-> fp32 on the host, shared by every kernel family's C API and CPU reference: the top half of the
 * fp32 pattern, rounded to nearest even (NaN stays a quiet NaN). bf16 buffers hold the raw 16-bit pattern. */
#ifndef FORJA_KERNELS_BF16_H
#define FORJA_KERNELS_BF16_H

#include <stdint.h>
#include <string.h>

static inline float forja_bf16_to_float(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t forja_float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return (uint16_t)((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

#endif /* FORJA_KERNELS_BF16_H */
