// The decode kernels' CPU references (kernels/decode/reference.cpp) against the decoder's stock LibTorch step
// (the formulation core/infer/decoder_llama.cpp runs without the kernels), computed here on the CPU: the
// GEMV with each prologue, bias and residual; RoPE with the cache write; attention with GQA and a sliding
// window. The GPU suite compares the kernels with these references, so together they tie the kernels to the
// stock step.
#include <QtTest>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "forja/nf4.h"
#include "forja_kernels/decode.h"

namespace {

at::Tensor bf16_randn(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0) {
  auto gen = at::detail::createCPUGenerator(seed);
  return (at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * scale)
      .to(at::kBFloat16)
      .contiguous();
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Largest |a - b| in units of b's bf16 spacing (1 = one rounding step apart).
double bf16_steps(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  at::Tensor ulp = at::exp2(at::floor(at::log2(bd.abs().clamp_min(1e-30))) - 7);
  return ((ad - bd).abs() / ulp).max().item<double>();
}

}  // namespace

class TestDecodeReference : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void gemvMatchesTheStockStep_data() {
    QTest::addColumn<int>("prologue");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("residual");
    QTest::newRow("plain") << int(FORJA_DECODE_PLAIN) << 37 << 64 << false << false;
    QTest::newRow("plain, odd k, bias and residual") << int(FORJA_DECODE_PLAIN) << 29 << 67 << true << true;
    QTest::newRow("rmsnorm") << int(FORJA_DECODE_RMSNORM) << 41 << 96 << false << false;
    QTest::newRow("rmsnorm with bias (Qwen2 q/k/v)")
        << int(FORJA_DECODE_RMSNORM) << 33 << 80 << true << false;
    QTest::newRow("swiglu with residual") << int(FORJA_DECODE_SWIGLU) << 48 << 72 << false << true;
    QTest::newRow("gemma rmsnorm") << int(FORJA_DECODE_RMSNORM_UNIT_OFFSET) << 41 << 96 << false << false;
    QTest::newRow("geglu with residual") << int(FORJA_DECODE_GEGLU) << 48 << 72 << false << true;
  }

  void gemvMatchesTheStockStep() {
    QFETCH(int, prologue);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(bool, bias);
    QFETCH(bool, residual);
    const bool gated = prologue == FORJA_DECODE_SWIGLU || prologue == FORJA_DECODE_GEGLU;
    const int64_t in = gated ? 2 * k : k;
    at::Tensor w = bf16_randn({n, k}, 1, 0.1), x = bf16_randn({1, in}, 2), nw = bf16_randn({k}, 3);
    at::Tensor b = bf16_randn({n}, 4), r = bf16_randn({1, n}, 5);
    const float eps = 1e-5f;

    // The stock step, as the decoder writes it (LlamaRMSNorm's order; silu then mul; addmm's epilogue).
    at::Tensor act = x;
    if (prologue == FORJA_DECODE_RMSNORM) {
      at::Tensor xf = x.to(at::kFloat);
      xf = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);
      act = nw * xf.to(at::kBFloat16);
    } else if (prologue == FORJA_DECODE_RMSNORM_UNIT_OFFSET) {  // GemmaRMSNorm: (1 + w) in fp32
      at::Tensor xf = x.to(at::kFloat);
      act = (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * (1 + nw.to(at::kFloat))).to(at::kBFloat16);
    } else if (prologue == FORJA_DECODE_SWIGLU) {
      act = at::silu(x.narrow(1, 0, k)) * x.narrow(1, k, k);
    } else if (prologue == FORJA_DECODE_GEGLU) {
      act = at::gelu(x.narrow(1, 0, k), "tanh") * x.narrow(1, k, k);
    }
    at::Tensor acc = at::mm(act.to(at::kDouble), w.to(at::kDouble).t());
    if (bias) acc = acc + b.to(at::kDouble);
    if (residual) acc = acc + r.to(at::kDouble);
    at::Tensor want = acc.to(at::kFloat).to(at::kBFloat16);

    at::Tensor y = at::full({1, n}, 7.0, at::kBFloat16), act_out = at::full({1, k}, 7.0, at::kBFloat16);
    ForjaDecodeGemv p{};
    p.n = n;
    p.k = k;
    p.w = w.data_ptr();
    p.x = x.data_ptr();
    p.prologue = static_cast<ForjaDecodePrologue>(prologue);
    p.norm_weight = nw.data_ptr();
    p.eps = eps;
    p.bias = bias ? b.data_ptr() : nullptr;
    p.residual = residual ? r.data_ptr() : nullptr;
    p.y = y.data_ptr();
    p.act_out = act_out.data_ptr();
    QCOMPARE(forja_decode_gemv_bf16_ref(&p), int(FORJA_DECODE_OK));
    // The activation is the stock one up to the last bit of a differently-summed mean (one bf16 step), or of
    // a silu written as g / (1 + e^-g) instead of LibTorch's vectorised g·sigmoid(g), whose one-step
    // difference the product with `up` can stretch to a few steps; the output is the sum of the same products
    // rounded once.
    const double act_steps = gated ? 4.0 : 1.0;
    QVERIFY2(bf16_steps(act_out, act) <= act_steps, qPrintable(QString::number(bf16_steps(act_out, act))));
    const double tol = 2 * std::ldexp(1.0, -8) * (1 + want.to(at::kDouble).abs().max().item<double>());
    QVERIFY2(max_diff(y, want) <= tol, qPrintable(QString("max diff %1").arg(max_diff(y, want))));
  }

  void gemvRejectsBadArguments() {
    ForjaDecodeGemv p{};
    QVERIFY(forja_decode_gemv_check(&p) != nullptr);  // n = k = 0
    uint16_t buf[4] = {};
    p.n = 1, p.k = 40000, p.w = buf, p.x = buf, p.y = buf;
    QVERIFY(QByteArray(forja_decode_gemv_check(&p)).contains("32768"));
    p.k = 2;
    p.prologue = FORJA_DECODE_RMSNORM;
    QVERIFY(QByteArray(forja_decode_gemv_check(&p)).contains("norm_weight"));
    QCOMPARE(forja_decode_gemv_bf16_ref(&p), int(FORJA_DECODE_INVALID_ARGUMENT));
  }

  void nf4GemvMatchesTheDequantizedWeight_data() {
    QTest::addColumn<int>("prologue");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("block");
    QTest::addColumn<bool>("residual");
    QTest::newRow("plain, block 64") << int(FORJA_DECODE_PLAIN) << 37 << 128 << 64 << true;
    QTest::newRow("rmsnorm, block 32, odd rows") << int(FORJA_DECODE_RMSNORM) << 41 << 96 << 32 << false;
    QTest::newRow("swiglu, block 128") << int(FORJA_DECODE_SWIGLU) << 16 << 256 << 128 << true;
  }

  // The NF4 GEMV's reference: core/quant quantizes a random weight (double quantization on, as QLoRA
  // trains; the decoder hands the kernel the decoded fp32 absmax). The result is the product with
  // core/quant's own dequantization, and the activation written out is the bf16 GEMV's.
  void nf4GemvMatchesTheDequantizedWeight() {
    QFETCH(int, prologue);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(int, block);
    QFETCH(bool, residual);
    const int64_t in = prologue == FORJA_DECODE_SWIGLU ? 2 * k : k;
    at::Tensor wf = at::randn({n, k}, at::detail::createCPUGenerator(31)) * 0.05;
    const std::vector<float> wv(wf.data_ptr<float>(), wf.data_ptr<float>() + wf.numel());
    const forja::quant::Nf4Tensor q = forja::quant::quantize_nf4(wv, {n, k}, {block, true, 256});
    const std::vector<float> deq = forja::quant::dequantize_nf4(q);
    std::vector<float> absmax(static_cast<size_t>(q.blocks()));
    for (int64_t b = 0; b < q.blocks(); ++b) absmax[b] = q.block_absmax(b);
    at::Tensor x = bf16_randn({1, in}, 32), nw = bf16_randn({k}, 33), r = bf16_randn({1, n}, 34);

    at::Tensor y = at::full({1, n}, 7.0, at::kBFloat16), act = at::full({1, k}, 7.0, at::kBFloat16);
    ForjaDecodeGemvNf4 p{};
    p.n = n, p.k = k, p.codes = q.codes.data(), p.absmax = absmax.data(), p.block_size = block;
    p.x = x.data_ptr(), p.prologue = static_cast<ForjaDecodePrologue>(prologue),
    p.norm_weight = nw.data_ptr();
    p.eps = 1e-5f, p.residual = residual ? r.data_ptr() : nullptr, p.y = y.data_ptr(),
    p.act_out = act.data_ptr();
    const bool aligned = reinterpret_cast<uintptr_t>(p.codes) % 16 == 0;
    std::vector<uint8_t> aligned_codes;  // the check asks for 16-byte aligned codes, as the GPU loads them
    if (!aligned) {
      QCOMPARE(QByteArray(forja_decode_gemv_nf4_check(&p)), QByteArray("codes must be 16-byte aligned"));
      aligned_codes.resize(q.codes.size() + 16);
      const size_t shift = (16 - reinterpret_cast<uintptr_t>(aligned_codes.data()) % 16) % 16;
      std::copy(q.codes.begin(), q.codes.end(), aligned_codes.begin() + static_cast<std::ptrdiff_t>(shift));
      p.codes = aligned_codes.data() + shift;
    }
    QCOMPARE(forja_decode_gemv_nf4_ref(&p), int(FORJA_DECODE_OK));

    // The activation is the bf16 GEMV's (the same prologue code): run that reference for it alone.
    at::Tensor y_ref = at::full({1, n}, 7.0, at::kBFloat16), act_ref = at::full({1, k}, 7.0, at::kBFloat16);
    at::Tensor wb = at::zeros({n, k}, at::kBFloat16);
    ForjaDecodeGemv b{};
    b.n = n, b.k = k, b.w = wb.data_ptr(), b.x = x.data_ptr(), b.prologue = p.prologue;
    b.norm_weight = nw.data_ptr(), b.eps = p.eps, b.y = y_ref.data_ptr(), b.act_out = act_ref.data_ptr();
    QCOMPARE(forja_decode_gemv_bf16_ref(&b), int(FORJA_DECODE_OK));
    QVERIFY(at::equal(act, act_ref));
    // The output: the products with core/quant's fp32 dequantization, summed in double, rounded once.
    at::Tensor w_deq = at::from_blob(const_cast<float*>(deq.data()), {n, k}, at::kFloat).to(at::kDouble);
    at::Tensor acc = at::mm(act.to(at::kDouble), w_deq.t());
    if (residual) acc = acc + r.to(at::kDouble);
    at::Tensor want = acc.to(at::kFloat).to(at::kBFloat16);
    QVERIFY2(at::equal(y, want), qPrintable(QString("bf16 steps apart: %1").arg(bf16_steps(y, want))));
    // And within NF4's error of the unquantized weight's product.
    at::Tensor exact = at::mm(act.to(at::kDouble), wf.to(at::kDouble).t());
    if (residual) exact = exact + r.to(at::kDouble);
    const double rel = max_diff(y, exact) / exact.abs().max().item<double>();
    QVERIFY2(rel < 0.1, qPrintable(QString::number(rel)));
  }

  void nf4GemvRejectsShapesTheKernelCannotRead() {
    alignas(16) uint8_t codes[64] = {};
    float absmax[4] = {1, 1, 1, 1};
    uint16_t buf[128] = {};
    ForjaDecodeGemvNf4 p{};
    p.n = 2, p.k = 64, p.codes = codes, p.absmax = absmax, p.block_size = 64, p.x = buf, p.y = buf;
    QVERIFY(forja_decode_gemv_nf4_check(&p) == nullptr);
    p.k = 48;
    QVERIFY(QByteArray(forja_decode_gemv_nf4_check(&p)).contains("multiple of 32"));
    p.k = 64, p.block_size = 96;
    QVERIFY(QByteArray(forja_decode_gemv_nf4_check(&p)).contains("power of two"));
    p.k = 32, p.block_size = 64;
    QVERIFY(QByteArray(forja_decode_gemv_nf4_check(&p)).contains("whole blocks"));
    p.k = 64, p.codes = codes + 1;
    QVERIFY(QByteArray(forja_decode_gemv_nf4_check(&p)).contains("aligned"));
    p.codes = codes, p.absmax = nullptr;
    QCOMPARE(forja_decode_gemv_nf4_ref(&p), int(FORJA_DECODE_INVALID_ARGUMENT));
  }

  void ropeRotatesAndWritesTheCacheSlot() {
    const int64_t heads = 6, kv = 2, d = 16, cap = 9, pos = 5, half = d / 2;
    at::Tensor qkv = bf16_randn({1, (heads + 2 * kv) * d}, 11);
    // The decoder's tables: cos and sin of cat(freqs, freqs), rotate_half's sign folded into the sine.
    at::Tensor inv = 1.0 / at::pow(10000.0, at::arange(0, d, 2, at::kFloat) / static_cast<double>(d));
    at::Tensor freqs = at::arange(cap, at::kFloat).unsqueeze(1) * inv;
    at::Tensor emb = at::cat({freqs, freqs}, -1);
    at::Tensor cos = emb.cos().to(at::kBFloat16), sin = emb.sin().to(at::kBFloat16);
    at::Tensor sin_signed = at::cat({-sin.narrow(1, 0, half), sin.narrow(1, half, half)}, 1).contiguous();

    // Stock: x·cos, then addcmul with the swapped halves.
    at::Tensor qk = qkv.view({heads + 2 * kv, d}).narrow(0, 0, heads + kv);
    at::Tensor swapped = at::cat({qk.narrow(1, half, half), qk.narrow(1, 0, half)}, 1);
    at::Tensor want = at::addcmul(qk * cos[pos], swapped, sin_signed[pos]);

    at::Tensor cache = at::full({2, kv, cap, d}, 3.0, at::kBFloat16), got = qkv.clone();
    int64_t position = pos;
    ForjaDecodeRopeKv p{};
    p.heads = heads, p.kv_heads = kv, p.head_dim = d, p.capacity = cap;
    p.qkv = got.data_ptr(), p.cache = cache.data_ptr(), p.cos = cos.data_ptr(), p.sin = sin_signed.data_ptr();
    p.position = &position;
    QCOMPARE(forja_decode_rope_kv_bf16_ref(&p), int(FORJA_DECODE_OK));
    at::Tensor rotated = got.view({heads + 2 * kv, d}).narrow(0, 0, heads + kv);
    QVERIFY2(bf16_steps(rotated, want) <= 1.0, qPrintable(QString::number(bf16_steps(rotated, want))));
    // K (rotated) and V (as is) in slot `pos` of each kv head; every other slot untouched.
    at::Tensor k = rotated.narrow(0, heads, kv), v = qkv.view({heads + 2 * kv, d}).narrow(0, heads + kv, kv);
    QVERIFY(at::equal(cache[0].select(1, pos), k));
    QVERIFY(at::equal(cache[1].select(1, pos), v));
    at::Tensor others = at::cat({cache.narrow(2, 0, pos), cache.narrow(2, pos + 1, cap - pos - 1)}, 2);
    QVERIFY(at::equal(others, at::full_like(others, 3.0)));
    position = cap;  // out of range: refused, nothing written
    QCOMPARE(forja_decode_rope_kv_bf16_ref(&p), int(FORJA_DECODE_INVALID_ARGUMENT));
  }

  void attentionMatchesSoftmaxOverTheVisibleSlots_data() {
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("d");
    QTest::addColumn<int>("pos");
    QTest::addColumn<int>("window");
    QTest::addColumn<double>("softcap");
    QTest::newRow("MHA, first position") << 4 << 4 << 64 << 0 << 0 << 0.0;
    QTest::newRow("GQA 8:1, d 64") << 16 << 2 << 64 << 37 << 0 << 0.0;
    QTest::newRow("GQA 4:1, d 128") << 8 << 2 << 128 << 50 << 0 << 0.0;
    QTest::newRow("sliding window") << 8 << 2 << 128 << 50 << 16 << 0.0;
    QTest::newRow("GQA 4:1, d 256 (Gemma), window") << 4 << 1 << 256 << 40 << 24 << 0.0;
    QTest::newRow("soft-capped scores (Gemma 2), window") << 8 << 4 << 256 << 40 << 24 << 0.5;
  }

  void attentionMatchesSoftmaxOverTheVisibleSlots() {
    QFETCH(int, heads);
    QFETCH(int, kv);
    QFETCH(int, d);
    QFETCH(int, pos);
    QFETCH(int, window);
    QFETCH(double, softcap);
    const int64_t cap = 64, max_keys = 64, rep = heads / kv;
    at::Tensor q = bf16_randn({heads, d}, 21), cache = bf16_randn({2, kv, cap, d}, 22);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    // Stock: scores over the visible slots, softmax, weighted sum (in double here).
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    at::Tensor k = cache[0].narrow(1, lo, pos - lo + 1).to(at::kDouble);  // [kv, keys, d]
    at::Tensor v = cache[1].narrow(1, lo, pos - lo + 1).to(at::kDouble);
    at::Tensor qg = q.to(at::kDouble).view({kv, rep, d});
    at::Tensor scores = at::bmm(qg, k.transpose(1, 2)) * scale;
    if (softcap > 0) scores = softcap * at::tanh(scores / softcap);
    at::Tensor probs = at::softmax(scores, -1);
    at::Tensor want = at::bmm(probs, v).reshape({heads, d}).to(at::kFloat).to(at::kBFloat16);

    at::Tensor out = at::full({heads, d}, 9.0, at::kBFloat16);
    int64_t position = pos;
    ForjaDecodeAttention p{};
    p.heads = heads, p.kv_heads = kv, p.head_dim = d, p.capacity = cap, p.max_keys = max_keys;
    p.chunk = forja_decode_attention_chunk(max_keys), p.window = window, p.scale = static_cast<float>(scale);
    p.softcap = static_cast<float>(softcap);
    p.q = q.data_ptr(), p.cache = cache.data_ptr(), p.position = &position, p.out = out.data_ptr();
    QCOMPARE(forja_decode_attention_bf16_ref(&p), int(FORJA_DECODE_OK));
    QVERIFY2(bf16_steps(out, want) <= 1.0, qPrintable(QString::number(bf16_steps(out, want))));
  }

  void rmsNormRowsMatchTheStockNorms_data() {
    QTest::addColumn<bool>("unit_offset");
    QTest::addColumn<bool>("residual");
    QTest::newRow("Llama's, per head (Qwen3's q/k norms)") << false << false;
    QTest::newRow("Gemma's, with the residual add after it") << true << true;
  }

  void rmsNormRowsMatchTheStockNorms() {
    QFETCH(bool, unit_offset);
    QFETCH(bool, residual);
    const int64_t rows = 6, d = 40;
    const float eps = 1e-6f;
    at::Tensor x = bf16_randn({rows, d}, 31), w = bf16_randn({d}, 32, 0.5), r = bf16_randn({rows, d}, 33);
    // The stock norms as the decoder writes them (LlamaRMSNorm's order; GemmaRMSNorm in fp32), then h + y.
    at::Tensor xf = x.to(at::kFloat), normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);
    at::Tensor want =
        unit_offset ? (normed * (1 + w.to(at::kFloat))).to(at::kBFloat16) : w * normed.to(at::kBFloat16);
    if (residual) want = r + want;
    at::Tensor out = at::full({rows, d}, 3.0, at::kBFloat16);
    ForjaDecodeRmsNorm p{};
    p.rows = rows, p.d = d, p.x = x.data_ptr(), p.weight = w.data_ptr(), p.eps = eps;
    p.unit_offset = unit_offset ? 1 : 0, p.residual = residual ? r.data_ptr() : nullptr,
    p.out = out.data_ptr();
    QCOMPARE(forja_decode_rms_norm_bf16_ref(&p), int(FORJA_DECODE_OK));
    // Up to the last bit of a differently-summed mean (one bf16 step), carried through the residual add.
    QVERIFY2(bf16_steps(out, want) <= (residual ? 2.0 : 1.0),
             qPrintable(QString::number(bf16_steps(out, want))));
    p.unit_offset = 2;
    QVERIFY(forja_decode_rms_norm_check(&p) != nullptr);
  }

  void attentionSplitSizes() {
    // Chunks are multiples of 32 keys and there are at most 64 splits, so one scratch sized for the whole
    // cache serves every bucket.
    for (int64_t keys : {1, 31, 32, 256, 2048, 2049, 4096, 32768, 131072}) {
      const int64_t chunk = forja_decode_attention_chunk(keys);
      QVERIFY(chunk % 32 == 0 && chunk >= 32);
      QVERIFY((keys + chunk - 1) / chunk <= 64);
      QVERIFY(forja_decode_attention_scratch_floats(8, 64, keys, chunk) <=
              8 * 64 * 66);  // the decoder's size
    }
  }
};

QTEST_GUILESS_MAIN(TestDecodeReference)
#include "test_decode_reference.moc"
