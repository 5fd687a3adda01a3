// The inference engine's forward pass against the references: greedy generation equals transformers' generate
// (recorded in the fixtures), the KV-cache path equals a full recompute, a reused prefix equals a fresh
// prefill, and the LoRA path equals both PEFT's logits and the model with merged weights.
#include <QtTest>

#include <ATen/core/grad_mode.h>

#include <nlohmann/json.hpp>
#include "decode_runner.h"

#include "forja/error.h"
#include "forja/file_util.h"
#include "infer_test_support.h"
#include "peft_adapter.h"

using namespace forja;
using forja_test::expected;
using forja_test::fixture_generator;
using forja_test::ids_of;

namespace {

// The fp32 bar for parity with transformers; cached and uncached passes differ only in summation
// order (a few ulp of logits of size ~1), far inside it.
constexpr double kFp32Tolerance = 1e-4;

}  // namespace

class TestInferDecode : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void greedy_data() {
    QTest::addColumn<QString>("model");
    for (const auto& m : forja_test::fixture_models()) QTest::newRow(m.c_str()) << QString::fromStdString(m);
  }
  void greedy() {
    // transformers' generate(do_sample=False, min_new_tokens=max_new_tokens): EOS is never chosen (phi3's
    // fixture would pick it at its ninth token otherwise), as with min_new_tokens here.
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    Generator gen = fixture_generator(name);
    const auto want = forja_test::expected_continuation(name);
    GenerationConfig cfg;
    cfg.max_new_tokens = cfg.min_new_tokens = static_cast<int64_t>(want.size());
    auto r = gen.generate(ids_of(expected(name, "gen_prompt")), cfg);
    QCOMPARE(r.tokens, want);
    QCOMPARE(r.stop, StopReason::MaxTokens);
    QCOMPARE(r.logprobs.size(), want.size());
    for (double lp : r.logprobs) QVERIFY(lp <= 0 && std::isfinite(lp));
  }

  // The built-in demo model (resources/demo/model): its expected.json holds transformers' greedy
  // continuations of a chat prompt and a plain one (fp32 on the CPU from the saved bf16 weights), recorded by
  // make_demo.py.
  void demoModelGreedy() {
    const std::string dir = FORJA_SOURCE_DIR "/resources/demo/model";
    const auto j = nlohmann::json::parse(forja::read_text_file(dir + "/expected.json"));
    EngineOptions eo;
    eo.device = "cpu";
    eo.dtype = "fp32";
    Generator gen(dir, eo);
    QCOMPARE(j.at("generations").size(), size_t(2));
    for (const auto& g : j.at("generations")) {
      const auto want = g.at("greedy_ids").get<std::vector<int32_t>>();
      GenerationConfig cfg;
      cfg.max_new_tokens = static_cast<int64_t>(want.size());
      cfg.stop_at_eos = false;
      auto r = gen.generate(g.at("prompt_ids").get<std::vector<int32_t>>(), cfg);
      QCOMPARE(r.tokens, want);
    }
  }

  void cacheMatchesFullRecompute_data() { greedy_data(); }
  void cacheMatchesFullRecompute() {
    // 16 tokens: prefill 5, then decode the other 11 one at a time; each step's logits against a full
    // forward. Mistral's fixture window is 8 tokens, so its later steps exercise the sliding-window mask.
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    at::NoGradGuard no_grad;
    auto lm = load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::kCPU});
    at::Tensor ids = expected(name, "input_ids").narrow(0, 0, 1);
    at::Tensor full_before = lm->forward(ids)[0];
    Generator::Impl engine(lm, {}, "");
    // Fusing q/k/v and gate/up re-points the model's parameters without changing a value.
    QVERIFY(at::equal(lm->forward(ids)[0], full_before));

    infer::Decoder& dec = engine.decoder();
    const int64_t t = ids.size(1), first = 5;
    at::Tensor row = ids[0];
    at::Tensor pre = dec.prefill(row.narrow(0, 0, first), 0, /*all_logits=*/true);
    double err = forja_test::max_abs_error(pre, full_before.narrow(0, 0, first));
    for (int64_t pos = first; pos < t; ++pos) {
      auto step = engine.runner().step(static_cast<int32_t>(row[pos].item<int64_t>()), pos);
      err = std::max(err, forja_test::max_abs_error(step.logits, full_before[pos]));
      // The runner's argmax and log-prob are those of the logits it returns.
      QCOMPARE(step.best, static_cast<int32_t>(full_before[pos].argmax().item<int64_t>()));
      QVERIFY(std::abs(step.best_logprob - at::log_softmax(full_before[pos], -1).max().item<double>()) <
              1e-4);
    }
    qInfo("%s: max |cached - full recompute| = %.3g", name.c_str(), err);
    QVERIFY2(err <= kFp32Tolerance, qPrintable(QString::number(err)));

    // All 16 in one prefill, and decoding over more slots than filled (what a CUDA graph bucket does: the
    // extra slots are masked), give the same.
    at::Tensor all = dec.prefill(row, 0, true);
    QVERIFY(forja_test::max_abs_error(all, full_before) <= kFp32Tolerance);
    dec.prefill(row.narrow(0, 0, t - 1), 0);
    at::Tensor pos = at::full({1}, t - 1, at::kLong);
    at::Tensor wide = dec.decode(row.narrow(0, t - 1, 1), pos, dec.capacity())[0];
    QVERIFY(forja_test::max_abs_error(wide, full_before[t - 1]) <= kFp32Tolerance);
  }

  void longropePrefillPastTheOriginalLength() {
    // phi3's longrope switches to its long factors once a forward reaches past position 64: a 70-token
    // prefill does so for every token, as the model's own forward does; a 60-token one keeps the short ones.
    at::NoGradGuard no_grad;
    auto lm = load_causal_lm(forja_test::fixture_dir("phi3"), {at::kFloat, at::kCPU});
    auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
    const at::Tensor ids = at::randint(3, 300, {1, 70}, gen, at::kLong);
    const at::Tensor full = lm->forward(ids)[0];
    Generator::Impl engine(lm, {}, "");
    infer::Decoder& dec = engine.decoder();
    QVERIFY(forja_test::max_abs_error(dec.prefill(ids[0], 0, true), full) <= kFp32Tolerance);
    const at::Tensor short_run = lm->forward(ids.narrow(1, 0, 60))[0];
    QVERIFY(forja_test::max_abs_error(dec.prefill(ids[0].narrow(0, 0, 60), 0, true), short_run) <=
            kFp32Tolerance);
  }

  void cacheKeepsKvHeadsOnly() {
    // smollm's fixture has 4 query heads sharing 1 KV head (config.json): the cache stores that one head.
    Generator gen = fixture_generator("smollm", 32);
    at::Tensor layer = gen.impl().decoder().cache().layer(0);
    QCOMPARE(layer.sizes().vec(), (std::vector<int64_t>{2, 1, 32, 16}));  // K/V, kv heads, capacity, head_dim
    QCOMPARE(layer.scalar_type(), at::kFloat);
  }

  void prefixReuse() {
    // A conversation that continues: the second prompt starts with the first prompt and its answer. Only the
    // new tokens are prefilled, and the answer equals a fresh generator's.
    Generator gen = fixture_generator("llama");
    const auto prompt = ids_of(expected("llama", "gen_prompt"));
    GenerationConfig cfg;
    cfg.max_new_tokens = 5;
    cfg.stop_at_eos = false;
    auto first = gen.generate(prompt, cfg);
    std::vector<int32_t> next = prompt;
    next.insert(next.end(), first.tokens.begin(), first.tokens.end());
    for (int32_t id : {17, 42, 99})
      next.push_back(id);  // a "new turn": arbitrary ids inside the 320-token vocab
    auto continued = gen.generate(next, cfg);
    // The first call fed the prompt and all answer tokens but the last (never fed): that much is reused.
    QCOMPARE(continued.stats.reused_tokens, static_cast<int64_t>(prompt.size() + first.tokens.size() - 1));
    Generator fresh = fixture_generator("llama");
    auto reference = fresh.generate(next, cfg);
    QCOMPARE(reference.stats.reused_tokens, int64_t{0});
    QCOMPARE(continued.tokens, reference.tokens);
    for (size_t i = 0; i < reference.logprobs.size(); ++i)
      QVERIFY(std::abs(continued.logprobs[i] - reference.logprobs[i]) < 1e-5);
    // The same prompt again: everything but its last token is reused.
    auto again = gen.generate(next, cfg);
    QCOMPARE(again.stats.reused_tokens, static_cast<int64_t>(next.size() - 1));
    QCOMPARE(again.tokens, reference.tokens);
    // A prompt that diverges early reuses only the common prefix.
    std::vector<int32_t> other = prompt;
    other[2] = other[2] == 5 ? 6 : 5;
    QCOMPARE(gen.generate(other, cfg).stats.reused_tokens, int64_t{2});
  }

  void contextLimit() {
    Generator gen = fixture_generator("llama", 8);
    GenerationConfig cfg;
    cfg.stop_at_eos = false;
    QVERIFY_THROWS_EXCEPTION(Error, gen.generate(std::vector<int32_t>(9, 5), cfg));  // 9 tokens, 8 slots
    QVERIFY_THROWS_EXCEPTION(Error, gen.generate({1, 2, 320}, cfg));  // id outside the vocab of 320
    QVERIFY_THROWS_EXCEPTION(Error, gen.generate({}, cfg));
  }

  void adapterMatchesPeft_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("llama") << "llama";  // the training fixtures: PEFT 0.21 fine-tunes of these two models
    QTest::newRow("gpt2") << "gpt2";
  }
  void adapterMatchesPeft() {
    // trace.safetensors' eval_logits: the PEFT model's logits (adapter on) for eval_ids, computed by
    // make_train_fixtures.py right after saving final/.
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    at::NoGradGuard no_grad;
    auto trace = io::SafetensorsFile::open(std::filesystem::path(FORJA_FIXTURES_DIR) / "train" / name /
                                           "trace.safetensors");
    at::Tensor eval_ids = tensor_from_checkpoint(trace, trace.at("eval_ids")).clone();
    at::Tensor eval_logits = tensor_from_checkpoint(trace, trace.at("eval_logits")).clone();
    auto lm = load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::kCPU});
    Generator gen(std::make_unique<Generator::Impl>(lm, EngineOptions{}, ""));
    infer::Decoder& dec = gen.impl().decoder();
    at::Tensor base = dec.prefill(eval_ids[0], 0, true);
    gen.load_adapter(forja_test::train_adapter_dir(name));
    QVERIFY(gen.has_adapter() && gen.adapter_enabled());
    double err = 0;
    for (int64_t row = 0; row < eval_ids.size(0); ++row)
      err = std::max(err, forja_test::max_abs_error(dec.prefill(eval_ids[row], 0, true), eval_logits[row]));
    qInfo("%s: max |adapter on - PEFT| = %.3g", name.c_str(), err);
    QVERIFY2(err <= kFp32Tolerance, qPrintable(QString::number(err)));

    // Off again: exactly the base model's computation; and on really changes it (training moved the logits).
    gen.set_adapter_enabled(false);
    QVERIFY(at::equal(dec.prefill(eval_ids[0], 0, true), base));
    gen.set_adapter_enabled(true);
    QVERIFY(forja_test::max_abs_error(dec.prefill(eval_ids[0], 0, true), base) > 1e-3);

    // The merged model: W + scale·B·A on every adapted projection of a second copy (Conv1D stores Wᵀ).
    auto adapter = infer::read_peft_adapter(*lm, forja_test::train_adapter_dir(name));
    auto merged = load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::kCPU});
    auto params = merged->named_parameters(true);
    for (const auto& [module, m] : adapter.modules) {
      at::Tensor delta = at::mm(m.b, m.a) * adapter.scale;
      at::Tensor& w = params[module + ".weight"];
      w.add_(name == "gpt2" ? delta.t() : delta);
    }
    const double merged_err = forja_test::max_abs_error(dec.prefill(eval_ids[1], 0, true),
                                                        merged->forward(eval_ids.narrow(0, 1, 1))[0]);
    qInfo("%s: max |adapter on - merged weights| = %.3g", name.c_str(), merged_err);
    QVERIFY(merged_err <= kFp32Tolerance);
  }

  void adapterErrors() {
    Generator gen = fixture_generator("llama");
    QVERIFY_THROWS_EXCEPTION(Error, gen.set_adapter_enabled(true));  // nothing loaded
    // gpt2's adapter targets c_attn / c_proj / c_fc, which a Llama model does not have: the error names one.
    try {
      gen.load_adapter(forja_test::train_adapter_dir("gpt2"));
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY2(e.message().find("c_") != std::string::npos, e.message().c_str());
    }
    QVERIFY(!gen.has_adapter());
    QVERIFY_THROWS_EXCEPTION(
        Error, gen.load_adapter(forja_test::fixture_dir("llama").string()));  // no adapter files
  }
};

QTEST_GUILESS_MAIN(TestInferDecode)
#include "test_infer_decode.moc"
