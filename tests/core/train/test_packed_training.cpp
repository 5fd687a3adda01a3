// Packed padding-free training on the CPU in fp32 (the dense block-diagonal causal mask, positions restarting
// per example): on every fixture model, the examples packed into rows give the same per-example losses, the
// same step loss and the same LoRA gradients as the examples trained one by one; and the check is shown to
// catch a leak (the same rows without their segments differ by far more than the bar).
#include <QtTest>

#include "forja/error.h"
#include "packed_check.h"
#include "reference.h"

using namespace forja;

namespace {

// fp32 on the CPU: packed and one-by-one sum the same terms in another order (a few ulps of the softmax and
// the GEMMs), far under the bar.
constexpr double kRelTol = 1e-5;

// Lengths that leave row-end padding, put 2-3 examples in a row, and run past Mistral's window of 8.
const std::vector<int> kLengths = {9, 14, 5, 20, 11, 3, 17};
constexpr int64_t kRows = 3, kSeqLen = 32;

}  // namespace

class TestPackedTraining : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void packedMatchesOneByOne_data() {
    QTest::addColumn<QString>("model");
    for (const auto& m : forja_test::fixture_models()) QTest::newRow(m.c_str()) << QString::fromStdString(m);
  }
  void packedMatchesOneByOne() {
    QFETCH(QString, model);
    auto lm = load_causal_lm(forja_test::fixture_dir(model.toStdString()), {at::kFloat, at::kCPU});
    auto adapters = forja_test::random_lora(*lm, 11);
    const auto examples = forja_test::random_examples(kLengths, lm->config().vocab_size, 5);
    const auto r = forja_test::compare_packed(*lm, *adapters, examples, kRows, kSeqLen);
    const QString report = QStringLiteral("losses %1, step loss %2, gradients %3, leak %4, |g| %5")
                               .arg(r.worst_loss)
                               .arg(r.step_loss_error)
                               .arg(r.worst_grad)
                               .arg(r.leak_loss)
                               .arg(r.grad_norm);
    QCOMPARE(r.examples, static_cast<int64_t>(kLengths.size()));
    QVERIFY2(r.grad_norm > 0, qPrintable(report));
    QVERIFY2(r.worst_loss <= kRelTol, qPrintable(report));
    QVERIFY2(r.step_loss_error <= kRelTol, qPrintable(report));
    QVERIFY2(r.worst_grad <= kRelTol, qPrintable(report));
    // Letting the packed examples see each other (and keep counting positions across them) moves their
    // losses by orders of magnitude more than the bar: the comparison above would catch a leak.
    QVERIFY2(r.leak_loss > 1000 * kRelTol, qPrintable(report));
  }

  void packedRowsOfAStreamMatchToo() {
    // The rows BatchStream packs with packing on (what `packing: true` trains on), with the top-up of
    // empty rows: same per-example losses as one by one.
    auto lm = load_causal_lm(forja_test::fixture_dir("llama"), {at::kFloat, at::kCPU});
    const auto examples = forja_test::random_examples(kLengths, lm->config().vocab_size, 9);
    BatchOptions o;
    o.rows = 4;
    o.seq_len = kSeqLen;
    o.packing = true;
    o.shuffle = false;
    const auto batches = batches_in_order(examples, o);
    QCOMPARE(batches.size(), size_t{1});
    const Batch& b = batches[0];
    QVERIFY(b.packed);
    QCOMPARE(real_token_count(b), int64_t{79});  // the sum of kLengths
    QVERIFY(real_token_count(b) < b.rows * b.seq_len);
    const auto got = forja_test::per_example_losses(*lm, b, train::to_tensors(b, at::kCPU));
    QCOMPARE(got.size(), examples.size());
    for (size_t i = 0; i < examples.size(); ++i) {
      const Batch one = build_batch({{&examples[i]}}, static_cast<int64_t>(examples[i].ids.size()), 0);
      const double want = forja_test::per_example_losses(*lm, one, train::to_tensors(one, at::kCPU))[0];
      QVERIFY2(std::abs(got[i] - want) <= kRelTol * want, qPrintable(QString::number(i)));
    }
  }
};

QTEST_GUILESS_MAIN(TestPackedTraining)
#include "test_packed_training.moc"
