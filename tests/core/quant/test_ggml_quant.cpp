// llama.cpp's block quantizers (forja/ggml_quant.h): blocks with known bytes, the error of each type on
// random weights, the same bytes on any number of threads, what is refused, and llama-quantize's type per
// tensor in each mix. Byte-for-byte agreement with llama.cpp itself is test_gguf_export's
// (quantizedFilesAreLlamaQuantizes).
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forja/error.h"
#include "forja/ggml_quant.h"
#include "forja/nf4.h"

using forja::io::GgufType;
using forja::quant::GgufFileType;
namespace q = forja::quant;

namespace {

std::vector<float> dequantized(GgufType t, const std::string& bytes) {
  return q::dequantize(t, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

std::vector<float> gaussian(size_t n, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / double(a.size()));
}

int64_t io_block(GgufType t) {
  return forja::io::gguf_block_values(t);
}

q::MixTensor m(const std::string& name, std::vector<int64_t> shape) {
  return {name, std::move(shape)};
}

// A Llama-shaped tensor table: `layers` blocks of hidden-wide rows, MLP rows of `mlp`.
std::vector<q::MixTensor> llama_table(int layers, int64_t hidden, int64_t mlp, bool tied) {
  std::vector<q::MixTensor> t = {m("token_embd.weight", {1000, hidden})};
  for (int l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    t.push_back(m(p + "attn_norm.weight", {hidden}));
    t.push_back(m(p + "attn_q.weight", {hidden, hidden}));
    t.push_back(m(p + "attn_k.weight", {hidden / 4, hidden}));
    t.push_back(m(p + "attn_v.weight", {hidden / 4, hidden}));
    t.push_back(m(p + "attn_output.weight", {hidden, hidden}));
    t.push_back(m(p + "ffn_norm.weight", {hidden}));
    t.push_back(m(p + "ffn_gate.weight", {mlp, hidden}));
    t.push_back(m(p + "ffn_up.weight", {mlp, hidden}));
    t.push_back(m(p + "ffn_down.weight", {hidden, mlp}));
  }
  t.push_back(m("output_norm.weight", {hidden}));
  if (!tied) t.push_back(m("output.weight", {1000, hidden}));
  return t;
}

GgufType type_of(const std::vector<q::MixTensor>& table, const std::vector<GgufType>& types,
                 const std::string& name) {
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].name == name) return types[i];
  throw std::runtime_error("no tensor " + name);
}

}  // namespace

class TestGgmlQuant : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void q8_0BlockOfIntegersIsExact() {
    // amax 127: d = 1, the codes are the values.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = float(j * 4 - 64);
    x[5] = 127;
    const std::string b = q::quantize_rows(GgufType::Q8_0, x, 1, 32, "t");
    QCOMPARE(b.size(), size_t{34});
    QCOMPARE(uint8_t(b[0]), uint8_t{0x00});  // fp16 1.0 = 0x3c00, little-endian
    QCOMPARE(uint8_t(b[1]), uint8_t{0x3c});
    for (int j = 0; j < 32; ++j) QCOMPARE(int(int8_t(b[2 + j])), int(x[j]));
    QCOMPARE(dequantized(GgufType::Q8_0, b), x);
  }

  void q4_0BlockOfIntegersIsExact() {
    // The value of largest magnitude is -8: d = -8/-8 = 1, code = value + 8, value j low nibble, j+16 high.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = float((j * 5) % 16 - 8);
    x[0] = -8;
    const std::string b = q::quantize_rows(GgufType::Q4_0, x, 1, 32, "t");
    QCOMPARE(b.size(), size_t{18});
    QCOMPARE(uint8_t(b[1]), uint8_t{0x3c});
    for (int j = 0; j < 16; ++j) QCOMPARE(int(uint8_t(b[2 + j])), int(x[j] + 8) | (int(x[j + 16] + 8) << 4));
    QCOMPARE(dequantized(GgufType::Q4_0, b), x);
  }

  void subnormalQ8_0BlockIsWhatGgmlWrites() {
    // amax / 127 is subnormal and its inverse overflows to inf: ggml's x * inf converts to int8 as 0 on
    // x86-64 (the conversion of an out-of-range float gives INT32_MIN), and d rounds to fp16 zero.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) * 1e-40f;
    const std::string b = q::quantize_rows(GgufType::Q8_0, x, 1, 32, "t");
    QCOMPARE(b, std::string(34, '\0'));
  }

  void zerosStayZeros() {
    const std::vector<float> x(512, 0.0f);
    for (GgufType t : {GgufType::Q4_0, GgufType::Q5_0, GgufType::Q5_1, GgufType::Q8_0, GgufType::Q4_K,
                       GgufType::Q5_K, GgufType::Q6_K})
      QCOMPARE(dequantized(t, q::quantize_rows(t, x, 2, 256, "t")), x);
  }

  void errorOfEachTypeOnGaussianWeights_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("bound");  // of the RMS error over sigma
    QTest::addColumn<double>("bytes_per_value");
    QTest::newRow("q4_0") << int(GgufType::Q4_0) << 0.14 << 18.0 / 32;
    QTest::newRow("q5_0") << int(GgufType::Q5_0) << 0.07 << 22.0 / 32;
    QTest::newRow("q5_1") << int(GgufType::Q5_1) << 0.07 << 24.0 / 32;
    QTest::newRow("q8_0") << int(GgufType::Q8_0) << 0.009 << 34.0 / 32;
    QTest::newRow("q4_K") << int(GgufType::Q4_K) << 0.12 << 144.0 / 256;
    QTest::newRow("q5_K") << int(GgufType::Q5_K) << 0.06 << 176.0 / 256;
    QTest::newRow("q6_K") << int(GgufType::Q6_K) << 0.03 << 210.0 / 256;
  }

  void errorOfEachTypeOnGaussianWeights() {
    QFETCH(int, type);
    QFETCH(double, bound);
    QFETCH(double, bytes_per_value);
    const auto t = static_cast<GgufType>(type);
    const float sigma = 0.02f;
    const std::vector<float> x = gaussian(64 * 1024, sigma, 7);
    const std::string b = q::quantize_rows(t, x, 64, 1024, "t");
    QCOMPARE(double(b.size()), bytes_per_value * double(x.size()));
    const std::vector<float> y = dequantized(t, b);
    const double e = rmse(x, y) / sigma;
    QVERIFY2(e < bound, qPrintable(QString("relative RMS error %1").arg(e)));
    // Not trivially small either: it is a 4-8 bit code, not a copy.
    QVERIFY(e > bound / 8);
    // The 32-value types: no value moves by more than half a step (a full one where Q4_0/Q5_0 clamp the
    // largest positive code), give or take the fp16 rounding of the scales.
    if (io_block(t) != 32) return;
    for (size_t g = 0; g < x.size(); g += 32) {
      float lo = x[g], hi = x[g], amax = 0;
      for (size_t i = g; i < g + 32; ++i)
        lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), amax = std::max(amax, std::fabs(x[i]));
      const double step = t == GgufType::Q8_0   ? amax / 254.0
                          : t == GgufType::Q4_0 ? amax / 8.0
                          : t == GgufType::Q5_0 ? amax / 16.0
                                                : (hi - lo) / 62.0;
      for (size_t i = g; i < g + 32; ++i) QVERIFY(std::fabs(x[i] - y[i]) <= step * 1.01 + amax / 1000.0);
    }
  }

  void sameBytesOnAnyThreadCount() {
    const std::vector<float> x = gaussian(300 * 512, 1.0f, 3);
    for (GgufType t : {GgufType::Q4_K, GgufType::Q8_0, GgufType::Q6_K}) {
      const std::string one = q::quantize_rows(t, x, 300, 512, "t", 1);
      for (unsigned n : {2u, 3u, 7u, 0u}) QVERIFY(q::quantize_rows(t, x, 300, 512, "t", n) == one);
    }
  }

  void refusesWhatDoesNotFit() {
    const std::vector<float> x(600, 0.5f);
    try {
      q::quantize_rows(GgufType::Q8_0, x, 6, 100, "blk.0.attn_q.weight");
      QFAIL("rows of 100 values are not whole Q8_0 blocks");
    } catch (const forja::Error& e) {
      QVERIFY2(std::string(e.what()).find("blk.0.attn_q.weight") != std::string::npos &&
                   std::string(e.what()).find("blocks of 32") != std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(forja::Error, q::quantize_rows(GgufType::Q4_K, x, 2, 300, "t"));
    QVERIFY_THROWS_EXCEPTION(forja::Error, q::quantize_rows(GgufType::Q4_0, x, 2, 32, "t"));  // 64 != 600
    std::vector<float> bad(256, 0.1f);
    bad[77] = std::nanf("");
    try {
      q::quantize_rows(GgufType::Q6_K, bad, 1, 256, "output.weight");
      QFAIL("a NaN was quantized");
    } catch (const forja::Error& e) {
      QVERIFY2(std::string(e.what()).find("output.weight") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(forja::Error, q::dequantize(GgufType::Q4_K, std::vector<uint8_t>(100)));
  }

  void fileTypeNames() {
    QCOMPARE(q::gguf_file_type_from_name("Q4_K_M"), std::optional(GgufFileType::Q4_K_M));
    QCOMPARE(q::gguf_file_type_from_name("q8_0"), std::optional(GgufFileType::Q8_0));
    QCOMPARE(q::gguf_file_type_from_name("q6_K"), std::optional(GgufFileType::Q6_K));
    QCOMPARE(q::gguf_file_type_from_name("fp16"), std::optional(GgufFileType::F16));
    QVERIFY(!q::gguf_file_type_from_name("q3_k_m"));
    QVERIFY(!q::gguf_file_type_from_name("q4_k"));
    QCOMPARE(uint32_t(GgufFileType::Q4_K_M), 15u);  // llama_ftype
    QCOMPARE(q::gguf_file_type_name(GgufFileType::Q5_K_M), std::string("q5_k_m"));
  }

  void q4KmMixPromotesAttnVAndFfnDownOfSomeLayers() {
    // 8 layers: the first eighth, the last eighth and every third between (layers 0, 3, 6, 7) get Q6_K.
    const auto table = llama_table(8, 4096, 14336, false);
    const auto types = q::assign_quant_types(GgufFileType::Q4_K_M, table, 8);
    for (int l = 0; l < 8; ++l) {
      const bool more = l == 0 || l == 3 || l == 6 || l == 7;
      const std::string p = "blk." + std::to_string(l) + ".";
      QCOMPARE(type_of(table, types, p + "attn_v.weight"), more ? GgufType::Q6_K : GgufType::Q4_K);
      QCOMPARE(type_of(table, types, p + "ffn_down.weight"), more ? GgufType::Q6_K : GgufType::Q4_K);
      QCOMPARE(type_of(table, types, p + "attn_q.weight"), GgufType::Q4_K);
      QCOMPARE(type_of(table, types, p + "ffn_up.weight"), GgufType::Q4_K);
      QCOMPARE(type_of(table, types, p + "attn_norm.weight"), GgufType::F32);
    }
    QCOMPARE(type_of(table, types, "output.weight"), GgufType::Q6_K);
    QCOMPARE(type_of(table, types, "token_embd.weight"), GgufType::Q4_K);
    QCOMPARE(type_of(table, types, "output_norm.weight"), GgufType::F32);
    // Q5_K_M promotes the same layers.
    const auto t5 = q::assign_quant_types(GgufFileType::Q5_K_M, table, 8);
    QCOMPARE(type_of(table, t5, "blk.3.ffn_down.weight"), GgufType::Q6_K);
    QCOMPARE(type_of(table, t5, "blk.4.ffn_down.weight"), GgufType::Q5_K);
  }

  void flatMixesAndTheOutputTensor() {
    const auto table = llama_table(4, 4096, 11008, false);
    const auto q4 = q::assign_quant_types(GgufFileType::Q4_0, table, 4);
    QCOMPARE(type_of(table, q4, "blk.0.attn_v.weight"), GgufType::Q4_0);
    QCOMPARE(type_of(table, q4, "blk.3.ffn_down.weight"), GgufType::Q4_0);
    QCOMPARE(type_of(table, q4, "output.weight"), GgufType::Q6_K);
    const auto q8 = q::assign_quant_types(GgufFileType::Q8_0, table, 4);
    QCOMPARE(type_of(table, q8, "output.weight"), GgufType::Q8_0);
    QCOMPARE(type_of(table, q8, "token_embd.weight"), GgufType::Q8_0);
    // Tied: the token embedding is the LM head and gets its type.
    const auto tied = llama_table(4, 4096, 11008, true);
    const auto qt = q::assign_quant_types(GgufFileType::Q4_K_M, tied, 4);
    QCOMPARE(type_of(tied, qt, "token_embd.weight"), GgufType::Q6_K);
  }

  void rowsThatDoNotFitFallBack() {
    // Hidden 160: not 256-value blocks. Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; the LM head Q8_0.
    const auto table = llama_table(2, 160, 320, false);
    const auto k4 = q::assign_quant_types(GgufFileType::Q4_K_M, table, 2);
    QCOMPARE(type_of(table, k4, "blk.0.attn_q.weight"), GgufType::Q5_0);
    QCOMPARE(type_of(table, k4, "blk.0.attn_v.weight"), GgufType::Q5_0);
    QCOMPARE(type_of(table, k4, "blk.1.attn_v.weight"), GgufType::Q8_0);  // promoted to Q6_K first
    QCOMPARE(type_of(table, k4, "output.weight"), GgufType::Q8_0);
    const auto k5 = q::assign_quant_types(GgufFileType::Q5_K_M, table, 2);
    QCOMPARE(type_of(table, k5, "blk.1.ffn_up.weight"), GgufType::Q5_1);
    // Rows of 48 values fit no block: F16.
    const std::vector<q::MixTensor> odd = {m("blk.0.attn_q.weight", {48, 48}),
                                           m("blk.0.attn_norm.weight", {48})};
    const auto t = q::assign_quant_types(GgufFileType::Q8_0, odd, 1);
    QCOMPARE(t[0], GgufType::F16);
    QCOMPARE(t[1], GgufType::F32);
    // GPT-2's position embeddings are not quantized.
    const std::vector<q::MixTensor> gpt2 = {m("position_embd.weight", {1024, 768}),
                                            m("blk.0.attn_qkv.weight", {2304, 768})};
    const auto g = q::assign_quant_types(GgufFileType::Q4_K_M, gpt2, 1);
    QCOMPARE(g[0], GgufType::F32);
    QCOMPARE(g[1], GgufType::Q6_K);  // attn_qkv counts as attn_v: layer 0 of 1 gets more bits
  }
};

QTEST_GUILESS_MAIN(TestGgmlQuant)
#include "test_ggml_quant.moc"
