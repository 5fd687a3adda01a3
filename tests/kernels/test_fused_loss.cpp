// The fused LM-head loss on the CPU: the cross-entropy kernel's CPU reference
// (forja_fused_cross_entropy_ref, kernels/fused/reference.cpp) against LibTorch's cross_entropy on the same
// logits, and the chunked loss (core/train/loss.cpp) with a head that asks for its gradient. Sizes are odd;
// labels include Hugging Face's ignore index -100 and whole chunks of it. Bars: relative error
// ‖got − want‖ / ‖want‖ <= 1e-5 in fp32; bf16 gradients <= 1e-2 (they are stored with an 8-bit mantissa).
#include <QtTest>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forja_kernels/fused.h"
#include "loss.h"
#include "reference.h"

namespace {

constexpr int64_t kIgnore = -100;

// Labels for `rows` rows over `vocab` classes; every third row ignored, or all of them.
at::Tensor make_labels(int64_t rows, int64_t vocab, bool all_ignored, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor y = at::randint(vocab, {rows}, gen, at::kLong);
  if (all_ignored) return at::full({rows}, kIgnore, at::kLong);
  for (int64_t r = 0; r < rows; r += 3) y[r] = kIgnore;
  return y;
}

struct RefResult {
  at::Tensor loss, lse, grad;  // fp32 [rows], fp32 [rows], fp32 [rows, vocab] (read back from the dtype)
};

// Runs the reference on `logits` (fp32 values; stored as `dtype`) and returns what it wrote.
RefResult run_reference(const at::Tensor& logits, const at::Tensor& labels, ForjaFusedDType dtype,
                        float grad_scale) {
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  at::Tensor stored = dtype == FORJA_FUSED_F32 ? logits.clone() : logits.to(at::kBFloat16).contiguous();
  at::Tensor loss = at::full({rows}, NAN, at::kFloat), lse = at::full({rows}, NAN, at::kFloat);
  ForjaCrossEntropy p{dtype,
                      rows,
                      vocab,
                      kIgnore,
                      grad_scale,
                      1,
                      stored.data_ptr(),
                      labels.data_ptr<int64_t>(),
                      loss.data_ptr<float>(),
                      lse.data_ptr<float>()};
  const char* err = forja_fused_cross_entropy_ref(&p);
  if (err) qFatal("reference: %s", err);
  return {loss, lse, stored.to(at::kFloat)};
}

}  // namespace

class TestFusedLoss : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void referenceMatchesLibTorch_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("vocab");
    QTest::addColumn<bool>("allIgnored");
    QTest::addColumn<bool>("bf16");
    QTest::newRow("7x1001 fp32") << 7 << 1001 << false << false;
    QTest::newRow("13x3 fp32") << 13 << 3 << false << false;
    QTest::newRow("2x2 fp32") << 2 << 2 << false << false;
    QTest::newRow("5x257 all ignored") << 5 << 257 << true << false;
    QTest::newRow("9x4096 bf16") << 9 << 4096 << false << true;
    QTest::newRow("6x999 bf16") << 6 << 999 << false << true;
  }

  void referenceMatchesLibTorch() {
    QFETCH(int, rows);
    QFETCH(int, vocab);
    QFETCH(bool, allIgnored);
    QFETCH(bool, bf16);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
    // Spread like real logits (a few units), so the softmax is neither flat nor one-hot.
    at::Tensor logits = at::randn({rows, vocab}, gen, at::kFloat) * 3;
    if (bf16) logits = logits.to(at::kBFloat16).to(at::kFloat);  // the values the bf16 reference reads
    at::Tensor labels = make_labels(rows, vocab, allIgnored, 5);
    const float scale = 0.25f;  // a mean over four rows, say
    RefResult got = run_reference(logits, labels, bf16 ? FORJA_FUSED_BF16 : FORJA_FUSED_F32, scale);

    at::Tensor x = logits.clone().requires_grad_(true);
    at::Tensor want_loss = at::cross_entropy_loss(x, labels, {}, at::Reduction::None, kIgnore);
    at::Tensor want_grad = torch::autograd::grad({want_loss.sum() * scale}, {x})[0];
    at::Tensor want_lse = at::logsumexp(logits, -1);

    // The loss is computed in double from the same stored values in both dtypes, so the fp32 bar holds.
    if (allIgnored) {
      QCOMPARE(got.loss.abs().max().item<float>(), 0.0f);
      QCOMPARE(got.grad.abs().max().item<float>(), 0.0f);
    } else {
      QVERIFY2(forja_test::relative_error(got.loss, want_loss) <= 1e-5, "loss");
      QVERIFY2(forja_test::relative_error(got.grad, want_grad) <= (bf16 ? 1e-2 : 1e-5), "gradient");
    }
    QVERIFY2(forja_test::relative_error(got.lse, want_lse) <= 1e-5, "logsumexp");
    // Ignored rows: zero loss and an all-zero gradient row, exactly.
    at::Tensor ignored = labels.eq(kIgnore);
    QCOMPARE(got.loss.masked_select(ignored).abs().sum().item<float>(), 0.0f);
    QCOMPARE(got.grad.masked_select(ignored.unsqueeze(1).expand_as(got.grad)).abs().sum().item<float>(),
             0.0f);
  }

  void referenceWithoutGradientLeavesLogits() {
    at::Tensor logits = at::randn({4, 17}, at::make_generator<at::CPUGeneratorImpl>(3), at::kFloat);
    at::Tensor copy = logits.clone();
    at::Tensor labels = at::tensor(std::vector<int64_t>{1, kIgnore, 16, 0});
    at::Tensor loss = at::empty({4}, at::kFloat);
    ForjaCrossEntropy p{
        FORJA_FUSED_F32,        4,      17, kIgnore, 1.0f, 0, logits.data_ptr(), labels.data_ptr<int64_t>(),
        loss.data_ptr<float>(), nullptr};
    QVERIFY(forja_fused_cross_entropy_ref(&p) == nullptr);
    QVERIFY(at::equal(logits, copy));
    at::Tensor want = at::cross_entropy_loss(copy, labels, {}, at::Reduction::None, kIgnore);
    QVERIFY(forja_test::relative_error(loss, want) <= 1e-5);
  }

  void referenceFlagsBadLabels() {
    // A label outside [0, vocab) that is not the ignore index is a NaN loss, not a silent 0 or a wild read.
    at::Tensor logits = at::zeros({2, 5}, at::kFloat);
    at::Tensor labels = at::tensor(std::vector<int64_t>{5, -1});
    at::Tensor loss = at::zeros({2}, at::kFloat);
    ForjaCrossEntropy p{
        FORJA_FUSED_F32,        2,      5, kIgnore, 1.0f, 1, logits.data_ptr(), labels.data_ptr<int64_t>(),
        loss.data_ptr<float>(), nullptr};
    QVERIFY(forja_fused_cross_entropy_ref(&p) == nullptr);
    QVERIFY(std::isnan(loss[0].item<float>()) && std::isnan(loss[1].item<float>()));
    QVERIFY(at::isnan(logits).all().item<bool>());
  }

  void argumentChecks() {
    ForjaCrossEntropy p{};
    p.dtype = FORJA_FUSED_F32;
    p.rows = 0;
    p.vocab = 0;
    QVERIFY(forja_fused_cross_entropy_check(&p) != nullptr);  // vocab >= 1
    p.vocab = 3;
    QVERIFY(forja_fused_cross_entropy_check(&p) == nullptr);  // no rows: nothing to point at
    p.rows = 2;
    QVERIFY(forja_fused_cross_entropy_check(&p) != nullptr);  // rows need logits, labels and loss
    QVERIFY(forja_fused_cross_entropy_check(nullptr) != nullptr);
  }

  void chunkedLossGivesHeadGradient() {
    // A head that requires grad (LoRA freezes it; the API still serves it) gets d(sum loss)/d(head), summed
    // over chunks; hidden's gradient is unchanged by asking for it.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
    at::Tensor h = at::randn({11, 6}, gen, at::kFloat).requires_grad_(true);
    at::Tensor w = at::randn({29, 6}, gen, at::kFloat).requires_grad_(true);
    at::Tensor y = make_labels(11, 29, false, 4);
    at::Tensor ref = at::cross_entropy_loss(at::matmul(h, w.t()), y, {}, at::Reduction::Sum, kIgnore);
    auto ref_grads = torch::autograd::grad({ref * 0.5}, {h, w});
    for (int64_t chunk : {1, 4, 11}) {
      at::Tensor loss = forja::train::linear_cross_entropy_sum(h, w, y, chunk);
      auto grads = torch::autograd::grad({loss * 0.5}, {h, w});
      QVERIFY(std::abs(loss.item<double>() - ref.item<double>()) <= 1e-5 * std::abs(ref.item<double>()));
      QVERIFY(forja_test::relative_error(grads[0], ref_grads[0]) <= 1e-5);
      QVERIFY(forja_test::relative_error(grads[1], ref_grads[1]) <= 1e-5);
    }
  }

  void softCappedLogits() {
    // Gemma 2's final soft-cap, cap·tanh(z / cap), inside the chunked loss: the loss and both gradients
    // equal autograd's through the capped logits. A cap of 2 on logits of size ~3 bends them hard.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(10);
    at::Tensor h = at::randn({9, 6}, gen, at::kFloat).requires_grad_(true);
    at::Tensor w = at::randn({23, 6}, gen, at::kFloat).requires_grad_(true);
    at::Tensor y = make_labels(9, 23, false, 3);
    const double cap = 2.0;
    at::Tensor capped = at::tanh(at::matmul(h, w.t()) / cap) * cap;
    at::Tensor ref = at::cross_entropy_loss(capped, y, {}, at::Reduction::Sum, kIgnore);
    auto ref_grads = torch::autograd::grad({ref}, {h, w});
    at::Tensor uncapped = forja::train::linear_cross_entropy_sum(h, w, y, 4);
    QVERIFY(std::abs(uncapped.item<double>() - ref.item<double>()) > 1e-2 * std::abs(ref.item<double>()));
    for (int64_t chunk : {1, 4, 9}) {
      at::Tensor loss = forja::train::linear_cross_entropy_sum(h, w, y, chunk, cap);
      auto grads = torch::autograd::grad({loss}, {h, w});
      QVERIFY(std::abs(loss.item<double>() - ref.item<double>()) <= 1e-5 * std::abs(ref.item<double>()));
      QVERIFY(forja_test::relative_error(grads[0], ref_grads[0]) <= 1e-5);
      QVERIFY(forja_test::relative_error(grads[1], ref_grads[1]) <= 1e-5);
    }
  }
};

QTEST_GUILESS_MAIN(TestFusedLoss)
#include "test_fused_loss.moc"
