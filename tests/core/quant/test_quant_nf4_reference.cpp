// The CUDA kernels' CPU reference (kernels/nf4/reference.cpp) against core/quant: the same code table, the
// same bf16 bits when dequantizing (plain and double-quantized absmax), the GEMV reference against a GEMV
// over core/quant's dequantized weights, and the argument checks the launchers share.
#include <QtTest>

#include <bit>
#include <cstring>

#include "forja/nf4.h"
#include "forja_kernels/nf4.h"
#include "nf4_test_util.h"

using namespace forja::quant;

namespace {

ForjaNf4Weights weights_of(const Nf4Tensor& t) {
  ForjaNf4Weights w{};
  w.codes = t.codes.data();
  w.block_size = t.block_size;
  if (t.double_quant) {
    w.absmax_q = t.absmax_q.data();
    w.absmax_scale = t.absmax_scale.data();
    w.absmax_offset = t.absmax_offset;
    w.dq_block_size = t.dq_block_size;
  } else {
    w.absmax = t.absmax.data();
  }
  return w;
}

}  // namespace

class TestQuantNf4Reference : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void sameCodeTable() {
    const float* codes = forja_nf4_codes();
    for (int i = 0; i < 16; ++i)
      QCOMPARE(std::bit_cast<uint32_t>(codes[i]), std::bit_cast<uint32_t>(kNf4Codes[i]));
  }

  void dequantizeMatchesCoreBitForBit() {
    for (bool dq : {false, true}) {
      for (int64_t bs : {2, 30, 64, 128}) {
        for (int64_t dq_bs : {3, 256}) {
          for (size_t n : {1u, 77u, 4096u + 65u, 64u * 300u + 1u}) {
            Nf4Options o;
            o.block_size = bs;
            o.double_quant = dq;
            o.dq_block_size = dq_bs;
            const Nf4Tensor t = quantize_nf4(nf4_test::normal_weights(n, uint32_t(n + bs)), {int64_t(n)}, o);
            std::vector<uint16_t> out(n + 4, 0xFFFF);  // poisoned, with 4 guard elements after the end
            ForjaNf4Dequantize p{weights_of(t), int64_t(n), out.data()};
            QCOMPARE(forja_nf4_dequantize_bf16_ref(&p), int(FORJA_NF4_OK));
            const std::vector<uint16_t> core = dequantize_nf4_bf16(t);
            QVERIFY2(std::memcmp(out.data(), core.data(), n * 2) == 0,
                     qPrintable(QString("n=%1 bs=%2 dq=%3 dq_bs=%4").arg(n).arg(bs).arg(dq).arg(dq_bs)));
            for (size_t i = n; i < out.size(); ++i) QCOMPARE(out[i], uint16_t(0xFFFF));
          }
        }
      }
    }
  }

  void handComputedBytes() {
    // Bytes 0xF0 0xC4: codes 15, 0, 12, 4 in a block with absmax 2 -> 2, -2, 2 * 0.44070983, 2 * -0.28444138.
    const uint8_t codes[2] = {0xF0, 0xC4};
    const float absmax[1] = {2.0f};
    ForjaNf4Weights w{};
    w.codes = codes;
    w.block_size = 4;
    w.absmax = absmax;
    uint16_t out[4];
    ForjaNf4Dequantize p{w, 4, out};
    QCOMPARE(forja_nf4_dequantize_bf16_ref(&p), 0);
    QCOMPARE(out[0], uint16_t(0x4000));  // bf16 2.0
    QCOMPARE(out[1], uint16_t(0xC000));  // bf16 -2.0
    QCOMPARE(out[2], float_to_bf16(kNf4Codes[12] * 2.0f));
    QCOMPARE(out[3], float_to_bf16(kNf4Codes[4] * 2.0f));
    // GEMV of that as a [2, 2] matrix with x = (1, 0.5): rows (2, -2) . x = 1 and (0.88141966, -0.56888276) .
    // x = 0.59697828, rounded to bf16.
    const uint16_t x[2] = {0x3F80, 0x3F00};  // 1.0, 0.5
    uint16_t y[2];
    ForjaNf4Gemv g{w, 2, 2, x, y};
    QCOMPARE(forja_nf4_gemv_bf16_ref(&g), 0);
    QCOMPARE(y[0], uint16_t(0x3F80));
    QCOMPARE(y[1], float_to_bf16(
                       static_cast<float>(double(kNf4Codes[12] * 2.0f) + 0.5 * double(kNf4Codes[4] * 2.0f))));
  }

  void gemvMatchesCoreDequantized() {
    for (bool dq : {false, true}) {
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {33, 130}, {64, 256}}) {
        Nf4Options o;
        o.double_quant = dq;
        const Nf4Tensor t = quantize_nf4(nf4_test::normal_weights(size_t(rows * cols), uint32_t(rows * cols)),
                                         {rows, cols}, o);
        const std::vector<float> w = dequantize_nf4(t);
        const std::vector<float> xf = nf4_test::normal_weights(size_t(cols), 99, 1.0f);
        std::vector<uint16_t> x(static_cast<size_t>(cols));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float_to_bf16(xf[i]);
        std::vector<uint16_t> y(size_t(rows), 0xFFFF);
        ForjaNf4Gemv g{weights_of(t), rows, cols, x.data(), y.data()};
        QCOMPARE(forja_nf4_gemv_bf16_ref(&g), 0);
        for (int64_t r = 0; r < rows; ++r) {
          double acc = 0.0;
          for (int64_t c = 0; c < cols; ++c)
            acc += double(w[size_t(r * cols + c)]) * bf16_to_float(x[size_t(c)]);
          QCOMPARE(y[size_t(r)], float_to_bf16(static_cast<float>(acc)));
        }
      }
    }
  }

  void argumentChecks() {
    const uint8_t codes[1] = {0x77};
    const float absmax[1] = {1.0f};
    uint16_t out[2];
    ForjaNf4Weights w{};
    w.codes = codes;
    w.block_size = 2;
    w.absmax = absmax;
    ForjaNf4Dequantize ok{w, 2, out};
    QVERIFY(forja_nf4_dequantize_check(&ok) == nullptr);
    QVERIFY(forja_nf4_dequantize_check(nullptr) != nullptr);
    ForjaNf4Dequantize p = ok;
    p.out = nullptr;
    QCOMPARE(forja_nf4_dequantize_bf16_ref(&p), int(FORJA_NF4_INVALID_ARGUMENT));
    QVERIFY(QByteArray(forja_nf4_dequantize_check(&p)).contains("out"));
    p = ok;
    p.n = -1;
    QVERIFY(QByteArray(forja_nf4_dequantize_check(&p)).contains("negative"));
    p = ok;
    p.w.block_size = 0;
    QVERIFY(QByteArray(forja_nf4_dequantize_check(&p)).contains("block_size"));
    p = ok;
    p.w.absmax = nullptr;  // and no double-quantized absmax either
    QVERIFY(QByteArray(forja_nf4_dequantize_check(&p)).contains("absmax"));
    p = ok;
    p.n = 0;
    p.out = nullptr;  // nothing to do: fine
    QCOMPARE(forja_nf4_dequantize_bf16_ref(&p), 0);

    const uint16_t x[1] = {0x3F80};
    ForjaNf4Gemv g{w, 2, 1, x, out};
    QVERIFY(forja_nf4_gemv_check(&g) == nullptr);
    g.x = nullptr;
    QVERIFY(QByteArray(forja_nf4_gemv_check(&g)).contains("x is NULL"));
    g.x = x;
    g.rows = int64_t(1) << 40;
    g.cols = int64_t(1) << 40;
    QVERIFY(QByteArray(forja_nf4_gemv_check(&g)).contains("overflows"));
  }
};

QTEST_GUILESS_MAIN(TestQuantNf4Reference)
#include "test_quant_nf4_reference.moc"
