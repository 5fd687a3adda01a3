// Numeric routines of the model code against their definitions.
#include <QtTest>

#include <cmath>

#include "layers.h"

using namespace forja;

class TestModelLayers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ropeDefault() {
    RopeConfig r;
    r.theta = 10000;
    at::Tensor f = rope_inv_freq(r, 8);
    for (int i = 0; i < 4; ++i)
      QVERIFY(std::abs(f[i].item<double>() - std::pow(10000.0, -2.0 * i / 8)) < 1e-7);
  }
  void ropeLlama3Bands() {
    // Llama 3 scaling (transformers' _compute_llama3_parameters): wavelengths under original/high_freq_factor
    // stay, over original/low_freq_factor are divided by factor, and in between are interpolated.
    RopeConfig r;
    r.type = "llama3";
    r.theta = 500000;
    r.factor = 8;
    r.low_freq_factor = 1;
    r.high_freq_factor = 4;
    r.original_max_position_embeddings = 64;
    RopeConfig plain;
    plain.theta = 500000;
    at::Tensor base = rope_inv_freq(plain, 16);
    at::Tensor f = rope_inv_freq(r, 16);
    for (int i = 0; i < 8; ++i) {
      const double inv = base[i].item<double>(), wavelen = 2 * M_PI / inv, got = f[i].item<double>();
      if (wavelen < 16)
        QVERIFY(std::abs(got - inv) < 1e-9);
      else if (wavelen > 64)
        QVERIFY(std::abs(got - inv / 8) < 1e-9 * inv);
      else {
        const double s = (64 / wavelen - 1) / (4 - 1);
        QVERIFY(std::abs(got - ((1 - s) * inv / 8 + s * inv)) < 1e-6 * inv);
      }
    }
  }
  void repeatKv() {
    at::Tensor x = at::arange(2 * 3 * 4, at::kFloat).view({1, 2, 3, 4});
    at::Tensor y = repeat_kv(x, 3);
    QCOMPARE(y.size(1), int64_t(6));
    for (int h = 0; h < 6; ++h) QVERIFY(at::equal(y[0][h], x[0][h / 3]));
  }
  void slidingWindowMask() {
    // With v = one-hot positions, the attention output's support shows which keys each query saw.
    const int64_t t = 6, w = 2;
    at::Tensor q = at::zeros({1, 1, t, 4});
    at::Tensor k = at::zeros({1, 1, t, 4});
    at::Tensor v = at::eye(t).view({1, 1, t, t});
    at::Tensor out = causal_attention(q, k, v, w)[0][0];
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j) {
        const bool seen = out[i][j].item<float>() > 0;
        QCOMPARE(seen, j <= i && i - j < w);
      }
  }
};

QTEST_GUILESS_MAIN(TestModelLayers)
#include "test_model_layers.moc"
