// Generation on a 4-bit (NF4) base, as chat runs after QLoRA: the KV-cache decode equals a full forward of
// the same NF4 model, the engine generates with and without the adapter (and compares them), and the
// adapter's logits are those of the training model with the adapter attached.
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/core/grad_mode.h>

#include "causal_lm.h"
#include "decode_runner.h"
#include "forja/error.h"
#include "infer_test_support.h"
#include "layers.h"
#include "lora_peft.h"

using namespace forja;
using forja_test::expected;
using forja_test::ids_of;

namespace {

// Cached and uncached passes over the same dequantized weights differ only in summation order (a few ulp of
// logits of size ~1): the fp32 bar of test_infer_decode.
constexpr double kFp32Tolerance = 1e-4;

std::shared_ptr<CausalLM> nf4_model(bool double_quant = true) {
  LoadOptions lo;
  lo.dtype = at::kFloat;
  lo.nf4 = quant::Nf4Options{};
  lo.nf4->double_quant = double_quant;
  return load_causal_lm(forja_test::fixture_dir("llama"), lo);
}

}  // namespace

class TestInferNf4 : public QObject {
  Q_OBJECT
  QTemporaryDir cache_;

 private Q_SLOTS:
  void initTestCase() {
    // Generators on a 4-bit base keep its NF4 cache here, not in the user's ~/.cache.
    QVERIFY(cache_.isValid());
    qputenv("FORJA_CACHE_DIR", cache_.path().toUtf8());
  }
  void cacheMatchesFullRecompute_data() {
    QTest::addColumn<bool>("doubleQuant");
    QTest::newRow("absmax fp32") << false;
    QTest::newRow("double quant") << true;
  }
  void cacheMatchesFullRecompute() {
    QFETCH(bool, doubleQuant);
    at::NoGradGuard no_grad;
    auto lm = nf4_model(doubleQuant);
    at::Tensor ids = expected("llama", "input_ids").narrow(0, 0, 1);
    at::Tensor full_before = lm->forward(ids)[0];
    Generator::Impl engine(lm, {}, "");
    // Fusing q/k/v and gate/up (whole blocks: hidden 64 is one block per row) re-points the model's NF4
    // buffers without changing a value.
    QVERIFY(at::equal(lm->forward(ids)[0], full_before));
    infer::Decoder& dec = engine.decoder();
    const int64_t t = ids.size(1), first = 5;
    at::Tensor row = ids[0];
    double err = forja_test::max_abs_error(dec.prefill(row.narrow(0, 0, first), 0, true),
                                           full_before.narrow(0, 0, first));
    for (int64_t pos = first; pos < t; ++pos) {
      auto step = engine.runner().step(static_cast<int32_t>(row[pos].item<int64_t>()), pos);
      err = std::max(err, forja_test::max_abs_error(step.logits, full_before[pos]));
    }
    qInfo("nf4: max |cached - full recompute| = %.3g", err);
    QVERIFY2(err <= kFp32Tolerance, qPrintable(QString::number(err)));
    // The decoder counts the 4-bit weights' bytes, not a bf16 base's.
    int64_t nf4_bytes = 0;
    for (const auto& b : lm->named_buffers())
      if (b.key().find("_nf4_") != std::string::npos) nf4_bytes += b.value().nbytes();
    QVERIFY(nf4_bytes > 0);
    int64_t param_bytes = 0;
    for (const auto& p : lm->parameters()) param_bytes += p.nbytes();
    QCOMPARE(engine.facts().weight_bytes, param_bytes + nf4_bytes);
  }

  void generatesWithAndWithoutAdapter() {
    EngineOptions eo;
    eo.device = "cpu";
    eo.base_quant = "nf4";
    Generator gen(forja_test::fixture_dir("llama").string(), eo);
    GenerationConfig cfg;
    cfg.max_new_tokens = 8;
    cfg.stop_at_eos = false;
    const auto prompt = ids_of(expected("llama", "gen_prompt"));
    auto base = gen.generate(prompt, cfg);
    QCOMPARE(base.tokens.size(), size_t(8));
    for (int32_t id : base.tokens) QVERIFY(id >= 0 && id < 320);  // the fixture's vocab (config.json)
    gen.load_adapter(forja_test::train_adapter_dir("llama"));
    auto cmp = gen.compare(prompt, cfg);
    QCOMPARE(cmp.base.tokens, base.tokens);  // compare's base answer is the adapter-off answer
    QCOMPARE(cmp.adapted.tokens.size(), size_t(8));
    QCOMPARE(cmp.base_under_adapter.size(), size_t(8));
  }

  void adapterLogitsMatchTrainingModel() {
    // The decoder's fused, folded adapter on the NF4 base against the training model's forward with the same
    // adapter attached (LinearImpl: NF4 linear + LoraAdapter::add_to), all fp32 on the CPU.
    at::NoGradGuard no_grad;
    auto train_lm = nf4_model();
    auto adapters = load_peft_adapter(*train_lm, forja_test::train_adapter_dir("llama"));
    at::Tensor ids = expected("llama", "input_ids").narrow(0, 0, 1);
    at::Tensor want = train_lm->forward(ids)[0];
    auto lm = nf4_model();
    Generator::Impl engine(lm, {}, "");
    engine.load_adapter(forja_test::train_adapter_dir("llama"));
    at::Tensor got = engine.decoder().prefill(ids[0], 0, true);
    const double err = forja_test::max_abs_error(got, want);
    qInfo("nf4 + adapter: max |decoder - training model| = %.3g", err);
    QVERIFY2(err <= kFp32Tolerance, qPrintable(QString::number(err)));
    engine.set_adapter_enabled(false);
    QVERIFY(forja_test::max_abs_error(engine.decoder().prefill(ids[0], 0, true), want) > 1e-3);
  }

  void unknownBaseQuantIsAnError() {
    EngineOptions eo;
    eo.device = "cpu";
    eo.base_quant = "int3";
    QVERIFY_THROWS_EXCEPTION(Error, Generator(forja_test::fixture_dir("llama").string(), eo));
    eo.base_quant = "nf4";
    QVERIFY_THROWS_EXCEPTION(Error, Generator(forja_test::fixture_dir("gpt2").string(), eo));
  }
};

QTEST_GUILESS_MAIN(TestInferNf4)
#include "test_infer_nf4.moc"
