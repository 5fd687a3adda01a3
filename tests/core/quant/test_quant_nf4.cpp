// NF4 quantization on the CPU: the code table against its definition, hand-computed blocks (exact bytes),
// nibble order, partial and all-zero blocks, the error bound on random and real fixture weights, double
// quantization, the 16-bit float conversions, bad input, and which tensors a model quantizes.
#include <QtTest>

#include <bit>
#include <cmath>
#include <filesystem>

#include "forja/error.h"
#include "forja/nf4.h"
#include "forja/safetensors.h"
#include "nf4_test_util.h"
#include "qtest_util.h"

using namespace forja::quant;
using forja::io::DType;
using forja_test::expect_error;
namespace fs = std::filesystem;

namespace {

// The inverse of the standard normal CDF, by bisection on erfc (accurate to ~1e-15, plenty for a test).
double normal_ppf(double p) {
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    b[2 * i] = static_cast<uint8_t>(v[i] & 0xff);
    b[2 * i + 1] = static_cast<uint8_t>(v[i] >> 8);
  }
  return b;
}

}  // namespace

class TestQuantNf4 : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void codeTableIsTheNormalFloatDefinition() {
    // QLoRA section 3 / bitsandbytes create_normal_map(offset=0.9677083): 8 positive values at the N(0, 1)
    // quantiles of linspace(offset, 0.5, 9) without its last point, 7 negative ones at linspace(offset, 0.5,
    // 8) likewise, and 0, all divided by the largest.
    const double offset = 0.9677083;
    std::vector<double> v = {0.0};
    for (int i = 0; i < 8; ++i) v.push_back(normal_ppf(offset + (0.5 - offset) * i / 8.0));
    for (int i = 0; i < 7; ++i) v.push_back(-normal_ppf(offset + (0.5 - offset) * i / 7.0));
    std::sort(v.begin(), v.end());
    const double top = v.back();
    for (int i = 0; i < 16; ++i) {
      // 1e-6: the table was made in fp32 (torch.linspace and the division), this derivation in double.
      QVERIFY2(
          std::fabs(v[i] / top - kNf4Codes[i]) < 1e-6,
          qPrintable(QString("code %1: table %2, definition %3").arg(i).arg(kNf4Codes[i]).arg(v[i] / top)));
    }
    // Exact anchors and the ordering the packed codes rely on.
    QCOMPARE(kNf4Codes[0], -1.0f);
    QCOMPARE(kNf4Codes[kNf4ZeroCode], 0.0f);
    QCOMPARE(kNf4Codes[15], 1.0f);
    for (int i = 0; i + 1 < 16; ++i) QVERIFY(kNf4Codes[i] < kNf4Codes[i + 1]);
    // Every value exactly as printed in bitsandbytes' table (csrc/kernels.cu, fp32 literals), in order.
    const float printed[16] = {-1.0f,
                               -0.6961928009986877f,
                               -0.5250730514526367f,
                               -0.39491748809814453f,
                               -0.28444138169288635f,
                               -0.18477343022823334f,
                               -0.09105003625154495f,
                               0.0f,
                               0.07958029955625534f,
                               0.16093020141124725f,
                               0.24611230194568634f,
                               0.33791524171829224f,
                               0.44070982933044434f,
                               0.5626170039176941f,
                               0.7229568362236023f,
                               1.0f};
    for (int i = 0; i < 16; ++i)
      QCOMPARE(std::bit_cast<uint32_t>(kNf4Codes[i]), std::bit_cast<uint32_t>(printed[i]));
    // The largest gap is the first one, between -1 and -0.6961928.
    QCOMPARE(nf4_max_half_gap(), (kNf4Codes[1] - kNf4Codes[0]) / 2.0f);
  }

  void encodePicksTheNearestCode() {
    for (uint8_t c = 0; c < 16; ++c) QCOMPARE(nf4_encode(kNf4Codes[c]), c);
    for (int c = 0; c + 1 < 16; ++c) {
      const float mid = static_cast<float>((double(kNf4Codes[c]) + kNf4Codes[c + 1]) / 2.0);
      QCOMPARE(int(nf4_encode(std::nextafter(mid, -2.0f))), c);
      QCOMPARE(int(nf4_encode(mid)), c);  // a tie goes to the lower code (documented in nf4.h)
      QCOMPARE(int(nf4_encode(std::nextafter(mid, 2.0f))), c + 1);
    }
    QCOMPARE(int(nf4_encode(-1.5f)), 0);
    QCOMPARE(int(nf4_encode(1.5f)), 15);
    QCOMPARE(int(nf4_encode(-0.0f)), 7);
  }

  void handComputedBlocks() {
    // Block size 8, 11 elements: a full block with absmax 2 and a partial block of 3 with absmax 1.
    // w / absmax and the nearest code (midpoints between the neighbours in parentheses):
    //   1 -> 15;  -1 -> 0;  0.5 -> 12 (0.4407 | 0.5017 | 0.5626);  -0.25 -> 4 (-0.2844 | -0.2346 | -0.1848);
    //   0 -> 7;  0.15 -> 9 (0.0796 | 0.1203 | 0.1609);  -0.05 -> 6 (-0.0911 | -0.0455 | 0);
    //   0.75 -> 14 (0.7230 | 0.8615 | 1);  then 0.25 -> 10 (0.2461 | 0.2920 | 0.3379), -1 -> 0, 0.5 -> 12.
    const std::vector<float> w = {2.0f, -2.0f, 1.0f, -0.5f, 0.0f, 0.3f, -0.1f, 1.5f, 0.25f, -1.0f, 0.5f};
    Nf4Options o;
    o.block_size = 8;
    const Nf4Tensor t = quantize_nf4(w, {11}, o);
    // Pairs (high nibble, low nibble): (15,0) (12,4) (7,9) (6,14) (10,0) (12, unused 0).
    QCOMPARE(t.codes, (std::vector<uint8_t>{0xF0, 0xC4, 0x79, 0x6E, 0xA0, 0xC0}));
    QCOMPARE(t.absmax, (std::vector<float>{2.0f, 1.0f}));
    QCOMPARE(t.blocks(), int64_t(2));
    const std::vector<float> back = dequantize_nf4(t);
    const int expected_codes[11] = {15, 0, 12, 4, 7, 9, 6, 14, 10, 0, 12};
    for (int i = 0; i < 11; ++i) QCOMPARE(back[i], kNf4Codes[expected_codes[i]] * (i < 8 ? 2.0f : 1.0f));
  }

  void nibbleOrderFirstElementHigh() {
    Nf4Options o;
    o.block_size = 2;
    // Element 0 (-1 -> code 0) in the high nibble, element 1 (+1 -> code 15) in the low one.
    QCOMPARE(quantize_nf4(std::vector<float>{-1.0f, 1.0f}, {2}, o).codes, (std::vector<uint8_t>{0x0F}));
    QCOMPARE(quantize_nf4(std::vector<float>{1.0f, -1.0f}, {2}, o).codes, (std::vector<uint8_t>{0xF0}));
    // One element: the high nibble, the low one left 0.
    const Nf4Tensor one = quantize_nf4(std::vector<float>{3.0f}, {1}, o);
    QCOMPARE(one.codes, (std::vector<uint8_t>{0xF0}));
    QCOMPARE(dequantize_nf4(one), (std::vector<float>{3.0f}));
    // Decoding reads the same order: swap the nibbles by hand and the values swap.
    Nf4Tensor t = quantize_nf4(std::vector<float>{-1.0f, 0.5f}, {2}, o);
    QCOMPARE(t.codes[0], uint8_t(0x0C));  // 0.5 -> code 12 (see handComputedBlocks)
    t.codes[0] = 0xC0;
    QCOMPARE(dequantize_nf4(t), (std::vector<float>{kNf4Codes[12], -1.0f}));
  }

  void oddSizesAndPartialLastBlock() {
    for (size_t n : {1u, 3u, 63u, 65u, 127u, 1001u}) {
      for (int64_t bs : {2, 30, 64, 128}) {
        const std::vector<float> w = nf4_test::normal_weights(n, uint32_t(n * 131 + bs));
        Nf4Options o;
        o.block_size = bs;
        const Nf4Tensor t = quantize_nf4(w, {int64_t(n)}, o);
        QCOMPARE(t.codes.size(), (n + 1) / 2);
        QCOMPARE(t.absmax.size(), size_t((int64_t(n) + bs - 1) / bs));
        // The last block's absmax is the max over its own (fewer) elements.
        const size_t last = t.absmax.size() - 1;
        float peak = 0.0f;
        for (size_t i = last * size_t(bs); i < n; ++i) peak = std::max(peak, std::fabs(w[i]));
        QCOMPARE(t.absmax[last], peak);
        if (n % 2 == 1) QCOMPARE(t.codes.back() & 0x0f, 0);  // the unused low nibble
        const auto r =
            nf4_test::check_quantized(w, t, "n=" + std::to_string(n) + " bs=" + std::to_string(bs));
        QVERIFY2(r.error.empty(), r.error.c_str());
      }
    }
  }

  void allZeroBlocks() {
    std::vector<float> w(64 * 3 + 5, 0.0f);
    for (size_t i = 64; i < 128; ++i) w[i] = 0.01f * float(i - 100);  // only the second block is non-zero
    for (bool dq : {false, true}) {
      Nf4Options o;
      o.double_quant = dq;
      const Nf4Tensor t = quantize_nf4(w, {int64_t(w.size())}, o);
      for (size_t i = 0; i < 32; ++i) QCOMPARE(t.codes[i], uint8_t(0x77));  // code 7 is 0.0
      for (size_t i = 64; i < t.codes.size(); ++i)
        QCOMPARE(t.codes[i], uint8_t(i + 1 == t.codes.size() ? 0x70 : 0x77));
      const std::vector<float> back = dequantize_nf4(t);
      for (size_t i = 0; i < w.size(); ++i)
        if (i < 64 || i >= 128) QVERIFY(std::bit_cast<uint32_t>(back[i]) == 0u);  // exactly +0
      if (!dq) QCOMPARE(t.absmax[0], 0.0f);
      const auto r = nf4_test::check_quantized(w, t, dq ? "zeros, double quant" : "zeros");
      QVERIFY2(r.error.empty(), r.error.c_str());
    }
    // A tensor of zeros only.
    const Nf4Tensor z = quantize_nf4(std::vector<float>(7, 0.0f), {7});
    QCOMPARE(dequantize_nf4(z), std::vector<float>(7, 0.0f));
  }

  void roundTripWithinTheBound() {
    // Several shapes, 64-element blocks: every element within the bound and on its nearest code. The worst
    // relative error must come close to the bound (else the check is not exercising it): with ~N(0, 1)
    // inputs the gap next to -1 is hit, so the worst is above half the largest half-gap.
    const std::vector<float> w = nf4_test::normal_weights(96 * 130, 7);
    const Nf4Tensor t = quantize_nf4(w, {96, 130});
    QCOMPARE(t.shape, (std::vector<int64_t>{96, 130}));
    QCOMPARE(t.dtype, DType::F32);
    const auto r = nf4_test::check_quantized(w, t, "96x130");
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY2(r.worst > 0.5f * nf4_max_half_gap(), qPrintable(QString::number(r.worst)));
    // bf16 output is the fp32 output rounded to nearest even.
    const std::vector<float> f = dequantize_nf4(t);
    const std::vector<uint16_t> h = dequantize_nf4_bf16(t);
    for (size_t i = 0; i < f.size(); ++i) QCOMPARE(h[i], float_to_bf16(f[i]));
  }

  void doubleQuantHandComputed() {
    // absmax {1, 2.5, 3, 5.5}, groups of 2: mean 3, so c = {-2, -0.5, 0, 2.5}.
    // Group 0: peak 2, scale 2/127: q = -2 / (2/127) = -127, -0.5 / (2/127) = -31.75 -> -32.
    // Group 1: peak 2.5, scale 2.5/127: q = 0, 127.
    const std::vector<float> a = {1.0f, 2.5f, 3.0f, 5.5f};
    const DoubleQuantized dq = double_quantize_absmax(a, 2);
    QCOMPARE(dq.offset, 3.0f);
    QCOMPARE(dq.q, (std::vector<int8_t>{-127, -32, 0, 127}));
    QCOMPARE(dq.scale, (std::vector<float>{2.0f / 127.0f, 2.5f / 127.0f}));
    QCOMPARE(double_dequantize_absmax(-32, dq.scale[0], dq.offset), std::fma(-32.0f, 2.0f / 127.0f, 3.0f));
    QCOMPARE(double_dequantize_absmax(0, dq.scale[1], dq.offset), 3.0f);
  }

  void doubleQuantRoundTrip() {
    // 1000 absmax values (3 full groups of 256 and a partial one): each decodes within half its group's step.
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(0.0f, 0.3f);
    std::vector<float> a(1000);
    for (auto& v : a) v = dist(rng);
    a[5] = 0.0f;
    const DoubleQuantized dq = double_quantize_absmax(a, 256);
    QCOMPARE(dq.q.size(), a.size());
    QCOMPARE(dq.scale.size(), size_t(4));
    double mean = 0.0;
    for (float v : a) mean += v;
    QCOMPARE(dq.offset, float(mean / a.size()));
    for (size_t g = 0; g < 4; ++g) {
      int peak = 0;
      for (size_t b = g * 256; b < std::min(a.size(), g * 256 + 256); ++b) {
        QVERIFY(dq.q[b] >= -127);
        peak = std::max(peak, std::abs(int(dq.q[b])));
        const float back = double_dequantize_absmax(dq.q[b], dq.scale[g], dq.offset);
        // Half a step, plus fp32 rounding of c = a - offset and of the division (a few ulps of 0.3).
        QVERIFY2(std::fabs(back - a[b]) <= dq.scale[g] / 2 + 1e-7f,
                 qPrintable(QString("absmax %1: %2 vs %3").arg(b).arg(back).arg(a[b])));
      }
      QCOMPARE(peak, 127);  // the group's extreme uses the full range
    }

    // Whole tensors with double quantization: the bound with the absmax error added.
    for (size_t n : {4097u, 64u * 256u * 2u + 33u}) {
      const std::vector<float> w = nf4_test::normal_weights(n, uint32_t(n));
      Nf4Options o;
      o.double_quant = true;
      const Nf4Tensor t = quantize_nf4(w, {int64_t(n)}, o);
      QVERIFY(t.absmax.empty());
      QCOMPARE(int64_t(t.absmax_q.size()), t.blocks());
      QCOMPARE(int64_t(t.absmax_scale.size()), (t.blocks() + 255) / 256);
      const auto r = nf4_test::check_quantized(w, t, "double quant n=" + std::to_string(n));
      QVERIFY2(r.error.empty(), r.error.c_str());
      // The decoded absmax is within half a step of the true one.
      for (int64_t b = 0; b < t.blocks(); ++b) {
        float peak = 0.0f;
        for (size_t i = size_t(b) * 64; i < std::min(n, size_t(b) * 64 + 64); ++i)
          peak = std::max(peak, std::fabs(w[i]));
        QVERIFY(std::fabs(t.block_absmax(b) - peak) <= t.absmax_scale[size_t(b / 256)] / 2 + 1e-7f);
      }
    }
  }

  void bf16Conversions() {
    // Known patterns (IEEE / bfloat16 bit layouts).
    QCOMPARE(float_to_bf16(1.0f), uint16_t(0x3F80));
    QCOMPARE(float_to_bf16(-2.0f), uint16_t(0xC000));
    QCOMPARE(float_to_bf16(3.14159265f), uint16_t(0x4049));  // 0x40490FDB: low half < 0x8000, rounds down
    QCOMPARE(float_to_bf16(std::bit_cast<float>(0x3F808000u)), uint16_t(0x3F80));  // tie -> even (down)
    QCOMPARE(float_to_bf16(std::bit_cast<float>(0x3F818000u)), uint16_t(0x3F82));  // tie -> even (up)
    QCOMPARE(float_to_bf16(std::bit_cast<float>(0x3F808001u)), uint16_t(0x3F81));  // above the tie
    QCOMPARE(float_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), uint16_t(0x7F80));  // FLT_MAX rounds to inf
    QCOMPARE(float_to_bf16(INFINITY), uint16_t(0x7F80));
    QCOMPARE(float_to_bf16(-0.0f), uint16_t(0x8000));
    const uint16_t nan = float_to_bf16(std::bit_cast<float>(0x7F800001u));  // payload only in the low half
    QVERIFY((nan & 0x7F80) == 0x7F80 && (nan & 0x7F) != 0);
    QCOMPARE(bf16_to_float(0x3F80), 1.0f);
    QCOMPARE(bf16_to_float(0xC000), -2.0f);
    QCOMPARE(bf16_to_float(0x0001), std::bit_cast<float>(0x00010000u));  // a subnormal stays exact
    // Every non-NaN bf16 survives the round trip.
    for (uint32_t v = 0; v < 0x10000; ++v) {
      if ((v & 0x7F80) == 0x7F80 && (v & 0x7F)) continue;
      QCOMPARE(float_to_bf16(bf16_to_float(uint16_t(v))), uint16_t(v));
    }
  }

  void f16Conversions() {
    QCOMPARE(float_to_f16(1.0f), uint16_t(0x3C00));
    QCOMPARE(float_to_f16(-2.0f), uint16_t(0xC000));
    QCOMPARE(float_to_f16(0.1f), uint16_t(0x2E66));  // 0.0999755859375
    QCOMPARE(float_to_f16(1.0f / 3.0f), uint16_t(0x3555));
    QCOMPARE(float_to_f16(65504.0f), uint16_t(0x7BFF));  // the largest binary16
    QCOMPARE(float_to_f16(65519.0f), uint16_t(0x7BFF));  // below the tie at 65520
    QCOMPARE(float_to_f16(65520.0f), uint16_t(0x7C00));  // the tie rounds to even: infinity
    QCOMPARE(float_to_f16(-1e10f), uint16_t(0xFC00));
    QCOMPARE(float_to_f16(std::ldexp(1.0f, -14)), uint16_t(0x0400));         // the smallest normal
    QCOMPARE(float_to_f16(std::ldexp(1.0f, -24)), uint16_t(0x0001));         // the smallest subnormal
    QCOMPARE(float_to_f16(std::ldexp(1.0f, -25)), uint16_t(0x0000));         // tie between 0 and 1 ulp -> 0
    QCOMPARE(float_to_f16(std::ldexp(3.0f, -25)), uint16_t(0x0002));         // tie between 1 and 2 ulps -> 2
    QCOMPARE(float_to_f16(1.0f + std::ldexp(1.0f, -11)), uint16_t(0x3C00));  // tie -> even (down)
    QCOMPARE(float_to_f16(1.0f + std::ldexp(3.0f, -11)), uint16_t(0x3C02));  // tie -> even (up)
    QCOMPARE(float_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)),
             uint16_t(0x0400));  // rounds up to normal
    QVERIFY((float_to_f16(NAN) & 0x7C00) == 0x7C00 && (float_to_f16(NAN) & 0x3FF) != 0);
    QCOMPARE(f16_to_float(0x0001), std::ldexp(1.0f, -24));
    QCOMPARE(f16_to_float(0x7C00), INFINITY);
    QCOMPARE(f16_to_float(0xFC00), -INFINITY);
    QVERIFY(std::signbit(f16_to_float(0x8000)) && f16_to_float(0x8000) == 0.0f);
    QCOMPARE(f16_to_float(0x3555), 0.333251953125f);
    // Every non-NaN binary16 survives the round trip.
    for (uint32_t v = 0; v < 0x10000; ++v) {
      if ((v & 0x7C00) == 0x7C00 && (v & 0x3FF)) continue;
      QCOMPARE(float_to_f16(f16_to_float(uint16_t(v))), uint16_t(v));
    }
  }

  void quantizesSixteenBitInput() {
    const std::vector<float> w = nf4_test::normal_weights(333, 5);
    std::vector<uint16_t> bf(w.size()), hf(w.size());
    std::vector<float> wb(w.size()), wh(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      bf[i] = float_to_bf16(w[i]);
      hf[i] = float_to_f16(w[i]);
      wb[i] = bf16_to_float(bf[i]);
      wh[i] = f16_to_float(hf[i]);
    }
    const Nf4Tensor tb = quantize_nf4(bytes_of(bf), DType::BF16, {9, 37});
    const Nf4Tensor th = quantize_nf4(bytes_of(hf), DType::F16, {9, 37});
    QCOMPARE(tb.dtype, DType::BF16);
    QCOMPARE(th.dtype, DType::F16);
    // The same as quantizing the exactly widened values.
    QCOMPARE(tb.codes, quantize_nf4(wb, {9, 37}).codes);
    QCOMPARE(tb.absmax, quantize_nf4(wb, {9, 37}).absmax);
    QCOMPARE(th.codes, quantize_nf4(wh, {9, 37}).codes);
    QCOMPARE(th.absmax, quantize_nf4(wh, {9, 37}).absmax);
    const auto r = nf4_test::check_quantized(wh, th, "f16");
    QVERIFY2(r.error.empty(), r.error.c_str());
    // to_float reads little-endian 16-bit patterns.
    QCOMPARE(to_float(std::vector<uint8_t>{0x80, 0x3F}, DType::BF16), std::vector<float>{1.0f});
    QCOMPARE(to_float(std::vector<uint8_t>{0x00, 0x3C}, DType::F16), std::vector<float>{1.0f});
  }

  void badInput() {
    const std::vector<float> w(8, 1.0f);
    Nf4Options odd;
    odd.block_size = 7;
    expect_error([&] { quantize_nf4(w, {8}, odd); }, {"block size 7"});
    Nf4Options zero;
    zero.block_size = 0;
    expect_error([&] { quantize_nf4(w, {8}, zero); }, {"block size 0"});
    Nf4Options dq;
    dq.double_quant = true;
    dq.dq_block_size = 0;
    expect_error([&] { quantize_nf4(w, {8}, dq); }, {"double-quantization block size 0"});
    expect_error([&] { quantize_nf4(w, {3, 3}); }, {"9 elements", "8 were given"});
    expect_error([&] { quantize_nf4(w, {-8}); }, {"negative"});
    std::vector<float> bad = w;
    bad[5] = NAN;
    expect_error([&] { quantize_nf4(bad, {8}); }, {"element 5", "not finite"});
    bad[5] = INFINITY;
    expect_error([&] { quantize_nf4(bad, {8}); }, {"element 5"});
    expect_error([&] { quantize_nf4(std::vector<uint8_t>(8), DType::I32, {2}); }, {"I32"});
    expect_error([&] { quantize_nf4(std::vector<uint8_t>(3), DType::BF16, {1}); }, {"odd number of bytes"});
    // Dequantizing an inconsistent tensor, or into a wrong-sized buffer.
    Nf4Tensor t = quantize_nf4(w, {8});
    std::vector<float> small(7);
    expect_error([&] { dequantize_nf4(t, small); }, {"holds 7 elements, not 8"});
    t.codes.pop_back();
    expect_error([&] { dequantize_nf4(t); }, {"3 code bytes for 8 elements"});
  }

  void policy() {
    for (const char* yes :
         {"model.layers.0.self_attn.q_proj.weight", "model.layers.12.self_attn.k_proj.weight",
          "model.layers.3.self_attn.v_proj.weight", "model.layers.3.self_attn.o_proj.weight",
          "model.layers.31.mlp.gate_proj.weight", "model.layers.31.mlp.up_proj.weight",
          "model.layers.31.mlp.down_proj.weight", "transformer.h.0.attn.c_attn.weight",
          "transformer.h.11.attn.c_proj.weight", "transformer.h.1.mlp.c_fc.weight",
          "transformer.h.1.mlp.c_proj.weight", "h.0.attn.c_attn.weight",
          "language_model.model.layers.2.mlp.down_proj.weight"})
      QVERIFY2(should_quantize_nf4(yes), yes);
    for (const char* no :
         {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
          "model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
          "model.layers.0.self_attn.q_proj.bias", "transformer.wte.weight", "transformer.wpe.weight",
          "transformer.h.0.ln_1.weight", "transformer.h.0.attn.c_attn.bias", "transformer.ln_f.weight",
          "model.layers.x.self_attn.q_proj.weight", "q_proj.weight", "model.layers.0.q_proj",
          "model.layers.0.self_attn.q_proj.weight.extra", "", "model.layers.0.self_attn.rotary_emb.inv_freq"})
      QVERIFY2(!should_quantize_nf4(no), no);
  }

  void fixtureWeights_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("quantized");
    // 2 decoder layers each; Llama-style models have 7 projections a layer, GPT-2 has 4 (c_attn, attn.c_proj,
    // c_fc, mlp.c_proj). llama is sharded fp32, llama3 bf16, mistral fp16 (make_fixtures.py).
    QTest::newRow("llama") << "llama" << 14;
    QTest::newRow("llama3") << "llama3" << 14;
    QTest::newRow("mistral") << "mistral" << 14;
    QTest::newRow("qwen2") << "qwen2" << 14;
    QTest::newRow("gpt2") << "gpt2" << 8;
  }

  void fixtureWeights() {
    QFETCH(QString, model);
    QFETCH(int, quantized);
    const fs::path dir = fs::path(FORJA_FIXTURES_DIR) / "models" / model.toStdString();
    int count = 0, kept = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind("model", 0) != 0 || entry.path().extension() != ".safetensors") continue;
      const auto st = forja::io::SafetensorsFile::open(entry.path());
      for (const auto& info : st.tensors()) {
        if (!should_quantize_nf4(info.name)) {
          ++kept;
          continue;
        }
        ++count;
        const std::vector<float> w = to_float(st.bytes(info), info.dtype);
        for (bool dq : {false, true}) {
          Nf4Options o;
          o.double_quant = dq;
          const Nf4Tensor t = quantize_nf4(st.bytes(info), info.dtype, info.shape, o);
          QCOMPARE(t.shape, info.shape);
          QCOMPARE(t.dtype, info.dtype);
          const auto r = nf4_test::check_quantized(w, t, info.name + (dq ? " (double quant)" : ""));
          QVERIFY2(r.error.empty(), r.error.c_str());
          QVERIFY(r.worst > 0.0f);
        }
      }
    }
    QCOMPARE(count, quantized);
    QVERIFY(kept >= 5);  // embeddings, norms (and lm_head / biases) stay
  }
};

QTEST_GUILESS_MAIN(TestQuantNf4)
#include "test_quant_nf4.moc"
