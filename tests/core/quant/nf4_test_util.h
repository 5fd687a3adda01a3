// Helpers shared by the NF4 suites: seeded random weights and the checks every quantized tensor must pass.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "forja/nf4.h"

namespace nf4_test {

// Weights drawn from N(0, sigma), like a trained layer's (the premise of NF4), with a few outliers.
inline std::vector<float> normal_weights(size_t n, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> w(n);
  for (auto& v : w) v = dist(rng);
  for (size_t i = 0; i < n; i += 997) w[i] *= 8.0f;
  return w;
}

// Checks every element of `t` against the weights it came from:
//  - the stored code is the nearest code to w / absmax (the absmax before double quantization);
//  - |w - w'| <= absmax * kNf4MaxHalfGap + |absmax - decoded absmax|, plus fp32 rounding of the products
//    (a few ulps of absmax).
// Returns what failed (empty when all passed) and the largest |w - w'| / absmax seen, so that a caller can
// also check the error is not trivially 0.
struct Checked {
  std::string error;
  float worst = 0.0f;
};

inline Checked check_quantized(const std::vector<float>& w, const forja::quant::Nf4Tensor& t,
                               const std::string& what) {
  using namespace forja::quant;
  const std::vector<float> back = dequantize_nf4(t);
  if (back.size() != w.size()) return {what + ": dequantized size differs", 0.0f};
  const float half_gap = nf4_max_half_gap();
  const auto bs = static_cast<size_t>(t.block_size);
  float worst = 0.0f;
  for (size_t b = 0; b * bs < w.size(); ++b) {
    const size_t begin = b * bs, end = std::min(w.size(), begin + bs);
    float absmax = 0.0f;
    for (size_t i = begin; i < end; ++i) absmax = std::max(absmax, std::fabs(w[i]));
    const float decoded = t.block_absmax(static_cast<int64_t>(b));
    const float bound = absmax * half_gap + std::fabs(absmax - decoded) + 4e-7f * std::max(absmax, decoded);
    for (size_t i = begin; i < end; ++i) {
      const float err = std::fabs(w[i] - back[i]);
      if (!(err <= bound)) {
        return {what + ": element " + std::to_string(i) + " w=" + std::to_string(w[i]) +
                    " back=" + std::to_string(back[i]) + " error " + std::to_string(err) + " > bound " +
                    std::to_string(bound),
                worst};
      }
      if (absmax > 0.0f) worst = std::max(worst, err / absmax);
      // Nearest code: no other code is strictly closer to w / absmax (a tie may go either way).
      const uint8_t byte = t.codes[i / 2];
      const int code = i % 2 == 0 ? byte >> 4 : byte & 0x0f;
      const float x = absmax > 0.0f ? w[i] / absmax : 0.0f;
      const float mine = std::fabs(x - kNf4Codes[code]);
      for (int c = 0; c < 16; ++c) {
        if (std::fabs(x - kNf4Codes[c]) < mine - 1e-7f) {
          return {what + ": element " + std::to_string(i) + " x=" + std::to_string(x) + " got code " +
                      std::to_string(code) + " but code " + std::to_string(c) + " is nearer",
                  worst};
        }
      }
    }
  }
  return {"", worst};
}

}  // namespace nf4_test
