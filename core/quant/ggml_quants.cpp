// ggml's block quantizers, written from the layouts and the reference algorithms of llama.cpp's
// ggml-quants.c: the same float operations in the same order, so that the bytes are llama-quantize's. This
// file is compiled without floating-point contraction (an fma would round differently).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>

#include "forja/error.h"
#include "forja/ggml_quant.h"
#include "forja/nf4.h"

namespace forja::quant {
namespace {

using io::GgufType;

constexpr int kQK = 32;    // values per block of the 32-value types
constexpr int kQKK = 256;  // values per super-block of the K types
constexpr float kGroupMaxEps = 1e-15f;

uint16_t h(float f) {
  return float_to_f16(f);
}
float f(uint16_t v) {
  return f16_to_float(v);
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// Round to nearest (ties to even) by adding 1.5·2^23: the integer lands in the low mantissa bits. Exact for
// |x| < 2^22, which the callers guarantee.
int nearest_int(float x) {
  const float v = x + 12582912.f;
  return static_cast<int>(std::bit_cast<uint32_t>(v) & 0x007fffff) - 0x00400000;
}

// roundf (halves away from zero) as an integer, without a call into libm: the truncation and v - t are
// exact, so the comparisons decide as roundf does. No data-dependent branches: they would mispredict. Out of
// int32's range (a block of subnormals, whose 1/d overflows to inf) or NaN, it is what ggml's float-to-int
// conversion gives there on x86-64: INT32_MIN.
int32_t round_away(float v) {
  if (!(std::fabs(v) < 2147483648.0f)) return INT32_MIN;
  const int32_t t = static_cast<int32_t>(v);
  const float r = v - static_cast<float>(t);
  return t + static_cast<int32_t>(r >= 0.5f) - static_cast<int32_t>(r <= -0.5f);
}

// The value of largest magnitude (the first such, with its sign) and that magnitude.
void absmax(const float* x, int n, float& amax, float& max) {
  amax = 0.0f;
  max = 0.0f;
  for (int j = 0; j < n; j++) {
    const float ax = std::fabs(x[j]);
    if (amax < ax) {
      amax = ax;
      max = x[j];
    }
  }
}

void q4_0_block(const float* x, uint8_t* y) {
  float amax, max;
  absmax(x, kQK, amax, max);
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(y, h(d));
  for (int j = 0; j < kQK / 2; ++j) {
    const float x0 = x[j] * id, x1 = x[kQK / 2 + j] * id;
    const uint8_t q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f))));
    const uint8_t q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f))));
    y[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void q5_0_block(const float* x, uint8_t* y) {
  float amax, max;
  absmax(x, kQK, amax, max);
  const float d = max / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(y, h(d));
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const float x0 = x[j] * id, x1 = x[kQK / 2 + j] * id;
    const uint8_t q0 = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x0 + 16.5f))));
    const uint8_t q1 = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x1 + 16.5f))));
    y[6 + j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q0 & 0x10u) >> 4) << j;
    qh |= static_cast<uint32_t>((q1 & 0x10u) >> 4) << (j + kQK / 2);
  }
  for (int b = 0; b < 4; ++b) y[2 + b] = static_cast<uint8_t>(qh >> (8 * b));
}

void q5_1_block(const float* x, uint8_t* y) {
  float min = x[0], max = x[0];
  for (int j = 1; j < kQK; j++) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / ((1 << 5) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(y, h(d));
  put16(y + 2, h(min));
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[kQK / 2 + j] - min) * id;
    const uint8_t q0 = static_cast<uint8_t>(x0 + 0.5f), q1 = static_cast<uint8_t>(x1 + 0.5f);
    y[8 + j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q0 & 0x10u) >> 4) << j;
    qh |= static_cast<uint32_t>((q1 & 0x10u) >> 4) << (j + kQK / 2);
  }
  for (int b = 0; b < 4; ++b) y[4 + b] = static_cast<uint8_t>(qh >> (8 * b));
}

void q8_0_block(const float* x, uint8_t* y) {
  // The largest magnitude, in four independent chains (a maximum is the same in any order).
  float m[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int j = 0; j < kQK; j += 4)
    for (int k = 0; k < 4; ++k) m[k] = std::max(m[k], std::fabs(x[j + k]));
  const float amax = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
  const float d = amax / ((1 << 7) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(y, h(d));
  for (int j = 0; j < kQK; ++j) y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(round_away(x[j] * id)));
}

// The K types search each sub-block's scale with the same float operations on every sub-block, so the
// search runs on several sub-blocks at once: one vector lane per sub-block, each lane doing the scalar
// algorithm's operations in its order (the bytes stay llama-quantize's). GCC/Clang vectors as wide as the
// target's registers (wider ones are split, and their selects scalarised). Lane masks are all-ones / zeros.
#if defined(__AVX__)
using FV = float __attribute__((vector_size(32)));
#else
using FV = float __attribute__((vector_size(16)));
#endif
using IV = decltype(FV{} < FV{});
constexpr int kLanes = sizeof(FV) / sizeof(float);

template <class V, class S>
V splat(S s) {
  return V{} + s;
}
template <class V, class I>
V select(I mask, V a, V b) {
  return (V)((mask & (I)a) | (~mask & (I)b));
}
// max(lo, min(hi, nearest_int(x))) per lane, as a float. The clamp compares floats (exact: the integers
// are below 2^23), which every x86-64 has in SIMD; integer min / max would need SSE4.1.
template <class F>
F codes_lanes(F x, int lo, int hi) {
  using I = decltype(x < x);
  const F v = x + splat<F>(12582912.f);
  F l = __builtin_convertvector(((I)v & splat<I>(0x007fffff)) - splat<I>(0x00400000), F);
  const F flo = splat<F>(static_cast<float>(lo)), fhi = splat<F>(static_cast<float>(hi));
  l = select(l < flo, flo, l);
  return select(l > fhi, fhi, l);
}

// Codes 0..nmax with a scale and a (non-positive) offset that minimise the weighted error, by trying a
// range of scales around nmax/(max-min) and the least-squares fit of each (ggml's make_qkx2_quants), for one
// sub-block per lane: x[i] and weights[i] hold value i of every lane's sub-block. *neg_min is minus the
// offset.
template <class F>
void affine_codes(int n, int nmax, const F* x, const F* weights, F* L, F* scale_out, F* neg_min, float rmin,
                  float rdelta, int nstep) {
  using I = decltype(x[0] < x[0]);
  const F zero = {};
  F min = x[0], max = x[0];
  F sum_w = weights[0];
  F sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = select(x[i] < min, x[i], min);
    max = select(x[i] > max, x[i], max);
    const F w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  min = select(min > zero, zero, min);
  // A flat sub-block gets codes 0 and scale 0 (its lanes compute garbage below, never kept).
  const I flat = max == min;
  F iscale = splat<F>(static_cast<float>(nmax)) / (max - min);
  F scale = splat<F>(1.f) / iscale;
  F best_error = zero;
  for (int i = 0; i < n; ++i) {
    L[i] = codes_lanes(iscale * (x[i] - min), 0, nmax);
    F diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  F Laux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = splat<F>(rmin + rdelta * is + nmax) / (max - min);
    F sum_l = zero, sum_l2 = zero, sum_xl = zero;
    for (int i = 0; i < n; ++i) {
      Laux[i] = codes_lanes(iscale * (x[i] - min), 0, nmax);
      const F l = Laux[i];
      const F w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const F D = sum_w * sum_l2 - sum_l * sum_l;
    F this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    F this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    const I positive = this_min > zero;
    this_min = select(positive, zero, this_min);
    this_scale = select(positive, sum_xl / sum_l2, this_scale);
    F cur_error = zero;
    for (int i = 0; i < n; ++i) {
      F diff = this_scale * Laux[i] + this_min - x[i];
      diff = diff * diff;
      cur_error += weights[i] * diff;
    }
    const I better = (D > zero) & (cur_error < best_error) & ~flat;
    for (int i = 0; i < n; ++i) L[i] = select(better, Laux[i], L[i]);
    best_error = select(better, cur_error, best_error);
    scale = select(better, this_scale, scale);
    min = select(better, this_min, min);
  }
  for (int i = 0; i < n; ++i) L[i] = select(flat, zero, L[i]);
  *scale_out = select(flat, zero, scale);
  *neg_min = -min;
}

// Symmetric codes -nmax..nmax-1 (stored +nmax) with the scale of least x²-weighted error over 19 trial
// scales (ggml's make_qx_quants with rmse_type 1), for one sub-block per lane as above.
template <class F>
F symmetric_codes(int n, int nmax, const F* x, F* L) {
  using I = decltype(x[0] < x[0]);
  const F zero = {};
  F max = zero, amax = zero;
  for (int i = 0; i < n; ++i) {
    const F ax = (F)((I)x[i] & splat<I>(0x7fffffff));
    const I larger = ax > amax;
    amax = select(larger, ax, amax);
    max = select(larger, x[i], max);
  }
  const I tiny = amax < splat<F>(kGroupMaxEps);
  F iscale = splat<F>(static_cast<float>(-nmax)) / max;
  F sumlx = zero, suml2 = zero;
  const F offset = splat<F>(static_cast<float>(nmax));
  for (int i = 0; i < n; ++i) {
    const F fl = codes_lanes(iscale * x[i], -nmax, nmax - 1);
    L[i] = fl + offset;
    const F w = x[i] * x[i];
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  F scale = select(suml2 != zero, sumlx / suml2, zero);
  F best = scale * sumlx;
  F Laux[32];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = splat<F>(-(nmax + 0.1f * is)) / max;
    sumlx = suml2 = zero;
    for (int i = 0; i < n; ++i) {
      Laux[i] = codes_lanes(iscale * x[i], -nmax, nmax - 1);
      const F w = x[i] * x[i];
      const F fl = Laux[i];
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    const I better = (suml2 > zero) & (sumlx * sumlx > best * suml2);
    for (int i = 0; i < n; ++i) L[i] = select(better, Laux[i] + offset, L[i]);
    scale = select(better, sumlx / suml2, scale);
    best = select(better, scale * sumlx, best);
  }
  for (int i = 0; i < n; ++i) L[i] = select(tiny, zero, L[i]);
  return select(tiny, zero, scale);
}

// The 6-bit scale and min of group j from the 12 packed bytes (K types).
void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// Q4_K and Q5_K share everything but the code range (nmax 15 / 31), the search and the packing.
// y: d (2), dmin (2), scales (12), then the codes; L gets the 256 codes.
void k_affine_superblock(const float* x, uint8_t* y, int nmax, float rmin, int nstep, uint8_t* L) {
  constexpr int kSub = kQKK / 32;
  static_assert(kSub % kLanes == 0);
  float mins[kSub];
  float scales[kSub];
  for (int g = 0; g < kSub; g += kLanes) {
    // Lane j is sub-block g + j: xt[i][j] = x[32 (g + j) + i].
    FV xt[32], weights[32], codes[32];
    for (int j = 0; j < kLanes; ++j)
      for (int i = 0; i < 32; ++i) xt[i][j] = x[32 * (g + j) + i];
    FV sum_x2 = {};
    for (int i = 0; i < 32; ++i) sum_x2 += xt[i] * xt[i];
    const FV mean_x2 = sum_x2 / splat<FV>(32.f);
    FV av_x;
    for (int j = 0; j < kLanes; ++j) av_x[j] = std::sqrt(mean_x2[j]);
    for (int i = 0; i < 32; ++i) weights[i] = av_x + (FV)((IV)xt[i] & splat<IV>(0x7fffffff));
    FV scale_lanes, min_lanes;
    affine_codes(32, nmax, xt, weights, codes, &scale_lanes, &min_lanes, rmin, 0.1f, nstep);
    for (int j = 0; j < kLanes; ++j) {
      scales[g + j] = scale_lanes[j];
      mins[g + j] = min_lanes[j];
      for (int i = 0; i < 32; ++i) L[32 * (g + j) + i] = static_cast<uint8_t>(codes[i][j]);
    }
  }
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSub; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* sc = y + 4;
  for (int j = 0; j < kQKK / 32; ++j) {
    // ggml stores nearest_int's result in a byte before clamping it to 63.
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      sc[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  put16(y, h(max_scale / 63.f));
  put16(y + 2, h(max_min / 63.f));
  for (int j = 0; j < kQKK / 32; ++j) {
    uint8_t s, m;
    scale_min_k4(j, sc, &s, &m);
    const float d = f(get16(y)) * s;
    if (d == 0.0f) continue;
    const float dm = f(get16(y + 2)) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

void q4_k_block(const float* x, uint8_t* y) {
  uint8_t L[kQKK];
  std::memset(y, 0, 144);
  k_affine_superblock(x, y, 15, -1.f, 20, L);
  uint8_t* q = y + 16;
  for (int j = 0; j < kQKK; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void q5_k_block(const float* x, uint8_t* y) {
  uint8_t L[kQKK];
  std::memset(y, 0, 176);
  k_affine_superblock(x, y, 31, -0.5f, 15, L);
  uint8_t* qh = y + 16;
  uint8_t* ql = y + 48;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kQKK; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}

// y: ql (128), qh (64), scales (16 int8), d (2).
void q6_k_block(const float* x, uint8_t* y) {
  constexpr int kSub = kQKK / 16;
  static_assert(kSub % kLanes == 0);
  int8_t L[kQKK];
  float scales[kSub];
  for (int g = 0; g < kSub; g += kLanes) {
    // Lane j is sub-block g + j: xt[i][j] = x[16 (g + j) + i].
    FV xt[16], codes[16];
    for (int j = 0; j < kLanes; ++j)
      for (int i = 0; i < 16; ++i) xt[i][j] = x[16 * (g + j) + i];
    const FV scale_lanes = symmetric_codes(16, 32, xt, codes);
    for (int j = 0; j < kLanes; ++j) {
      scales[g + j] = scale_lanes[j];
      for (int i = 0; i < 16; ++i) L[16 * (g + j) + i] = static_cast<int8_t>(codes[i][j]);
    }
  }
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kSub; ++ib) {
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  std::memset(y, 0, 210);
  if (max_abs_scale < kGroupMaxEps) {
    put16(y + 208, h(0.f));
    return;
  }
  int8_t* sc = reinterpret_cast<int8_t*>(y + 192);
  const float iscale = -128.f / max_scale;
  put16(y + 208, h(1 / iscale));
  for (int ib = 0; ib < kQKK / 16; ++ib)
    sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < kQKK / 16; ++j) {
    const float d = f(get16(y + 208)) * sc[j];
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearest_int(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = y;
  uint8_t* qh = y + 128;
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                    q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

using BlockFn = void (*)(const float*, uint8_t*);

BlockFn block_fn(GgufType t) {
  switch (t) {
    case GgufType::Q4_0:
      return q4_0_block;
    case GgufType::Q5_0:
      return q5_0_block;
    case GgufType::Q5_1:
      return q5_1_block;
    case GgufType::Q8_0:
      return q8_0_block;
    case GgufType::Q4_K:
      return q4_k_block;
    case GgufType::Q5_K:
      return q5_k_block;
    case GgufType::Q6_K:
      return q6_k_block;
    default:
      return nullptr;
  }
}

void convert_block(GgufType t, const float* x, int64_t n, uint8_t* y) {
  if (t == GgufType::F32) {
    std::memcpy(y, x, static_cast<size_t>(n) * 4);
  } else if (t == GgufType::F16) {
    for (int64_t i = 0; i < n; ++i) put16(y + 2 * i, h(x[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) put16(y + 2 * i, float_to_bf16(x[i]));
  }
}

}  // namespace

bool ggml_is_quantized(GgufType t) {
  return block_fn(t) != nullptr;
}

const char* ggml_type_name(GgufType t) {
  switch (t) {
    case GgufType::F32:
      return "f32";
    case GgufType::F16:
      return "f16";
    case GgufType::BF16:
      return "bf16";
    case GgufType::Q4_0:
      return "q4_0";
    case GgufType::Q5_0:
      return "q5_0";
    case GgufType::Q5_1:
      return "q5_1";
    case GgufType::Q8_0:
      return "q8_0";
    case GgufType::Q4_K:
      return "q4_K";
    case GgufType::Q5_K:
      return "q5_K";
    case GgufType::Q6_K:
      return "q6_K";
  }
  return "?";
}

std::string quantize_rows(GgufType t, std::span<const float> x, int64_t rows, int64_t cols,
                          const std::string& what, unsigned threads) {
  const int64_t block = io::gguf_block_values(t);
  if (rows < 0 || cols <= 0 || static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) != x.size())
    throw Error(what + ": " + std::to_string(x.size()) + " values are not " + std::to_string(rows) +
                " rows of " + std::to_string(cols));
  if (cols % block != 0)
    throw Error(what + ": rows of " + std::to_string(cols) + " values do not fill whole " +
                ggml_type_name(t) + " blocks of " + std::to_string(block));
  const size_t row_bytes = static_cast<size_t>(cols / block) * io::gguf_block_bytes(t);
  std::string out(row_bytes * static_cast<size_t>(rows), '\0');
  if (rows == 0) return out;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // Enough rows per thread that starting it pays (about 64k values).
  const int64_t min_rows = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(threads, rows / min_rows));
  const BlockFn fn = block_fn(t);
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  std::vector<int64_t> bad(static_cast<size_t>(n), -1);  // the first non-finite value's index, per thread
  auto work = [&](int64_t part) {
    const int64_t r0 = rows * part / n, r1 = rows * (part + 1) / n;
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = x.data() + r * cols;
      for (int64_t c = 0; c < cols; ++c)
        if (!std::isfinite(src[c])) {
          bad[static_cast<size_t>(part)] = r * cols + c;
          return;
        }
      uint8_t* row = dst + static_cast<size_t>(r) * row_bytes;
      if (fn == nullptr) {
        convert_block(t, src, cols, row);
        continue;
      }
      const size_t bb = io::gguf_block_bytes(t);
      for (int64_t b = 0; b < cols / block; ++b) fn(src + b * block, row + static_cast<size_t>(b) * bb);
    }
  };
  std::vector<std::thread> pool;
  for (int64_t p = 1; p < n; ++p) pool.emplace_back(work, p);
  work(0);
  for (auto& th : pool) th.join();
  for (int64_t i : bad)
    if (i >= 0)
      throw Error(what + ": value " + std::to_string(i) + " (row " + std::to_string(i / cols) + ") is " +
                  std::to_string(x[static_cast<size_t>(i)]) + "; a quantized file holds finite numbers only");
  return out;
}

std::vector<float> dequantize(GgufType t, std::span<const uint8_t> bytes) {
  const size_t bb = io::gguf_block_bytes(t);
  const int64_t block = io::gguf_block_values(t);
  if (bytes.size() % bb != 0)
    throw Error(std::string("dequantize: ") + std::to_string(bytes.size()) + " bytes are not whole " +
                ggml_type_name(t) + " blocks");
  const size_t blocks = bytes.size() / bb;
  std::vector<float> out(blocks * static_cast<size_t>(block));
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* x = bytes.data() + b * bb;
    float* y = out.data() + b * static_cast<size_t>(block);
    switch (t) {
      case GgufType::F32:
        std::memcpy(y, x, 4);
        break;
      case GgufType::F16:
        *y = f(get16(x));
        break;
      case GgufType::BF16:
        *y = bf16_to_float(get16(x));
        break;
      case GgufType::Q4_0: {
        const float d = f(get16(x));
        for (int j = 0; j < 16; ++j) {
          y[j] = static_cast<float>((x[2 + j] & 0x0F) - 8) * d;
          y[j + 16] = static_cast<float>((x[2 + j] >> 4) - 8) * d;
        }
        break;
      }
      case GgufType::Q5_0:
      case GgufType::Q5_1: {
        const bool one = t == GgufType::Q5_1;
        const float d = f(get16(x)), m = one ? f(get16(x + 2)) : 0.0f;
        const uint8_t* qhp = x + (one ? 4 : 2);
        const uint8_t* qs = qhp + 4;
        const uint32_t qh = static_cast<uint32_t>(qhp[0]) | (static_cast<uint32_t>(qhp[1]) << 8) |
                            (static_cast<uint32_t>(qhp[2]) << 16) | (static_cast<uint32_t>(qhp[3]) << 24);
        for (int j = 0; j < 16; ++j) {
          const int x0 = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
          const int x1 = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
          y[j] = one ? static_cast<float>(x0) * d + m : static_cast<float>(x0 - 16) * d;
          y[j + 16] = one ? static_cast<float>(x1) * d + m : static_cast<float>(x1 - 16) * d;
        }
        break;
      }
      case GgufType::Q8_0: {
        const float d = f(get16(x));
        for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(x[2 + j])) * d;
        break;
      }
      case GgufType::Q4_K:
      case GgufType::Q5_K: {
        const bool five = t == GgufType::Q5_K;
        const float d = f(get16(x)), dmin = f(get16(x + 2));
        const uint8_t* sc = x + 4;
        const uint8_t* qh = x + 16;
        const uint8_t* q = x + (five ? 48 : 16);
        int is = 0;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < kQKK; j += 64) {
          uint8_t s, m;
          scale_min_k4(is + 0, sc, &s, &m);
          const float d1 = d * s, m1 = dmin * m;
          scale_min_k4(is + 1, sc, &s, &m);
          const float d2 = d * s, m2 = dmin * m;
          for (int l = 0; l < 32; ++l)
            *y++ = d1 * static_cast<float>((q[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
          for (int l = 0; l < 32; ++l)
            *y++ = d2 * static_cast<float>((q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
          q += 32;
          is += 2;
          u1 = static_cast<uint8_t>(u1 << 2);
          u2 = static_cast<uint8_t>(u2 << 2);
        }
        break;
      }
      case GgufType::Q6_K: {
        const float d = f(get16(x + 208));
        const uint8_t* ql = x;
        const uint8_t* qh = x + 128;
        const auto* sc = reinterpret_cast<const int8_t*>(x + 192);
        for (int n = 0; n < kQKK; n += 128) {
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * sc[is + 0] * static_cast<float>(q1);
            y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
            y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
            y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
          }
          y += 128;
          ql += 64;
          qh += 32;
          sc += 8;
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace forja::quant
