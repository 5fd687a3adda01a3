// Reference parity on the CPU in fp32: each fixture model, loaded from the files transformers saved, must
// give transformers' logits (max abs error <= 1e-4: fp32 summation order only) and its greedy continuation.
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cstring>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "forja/score.h"
#include "reference.h"
#include "score.h"

using namespace forja;

class TestModelParity : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void logits_data() {
    QTest::addColumn<QString>("model");
    for (const auto& m : forja_test::fixture_models()) QTest::newRow(m.c_str()) << QString::fromStdString(m);
  }
  void logits() {
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    auto lm = load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::kCPU});
    at::NoGradGuard no_grad;
    at::Tensor ids = forja_test::expected(name, "input_ids");
    at::Tensor ref = forja_test::expected(name, "logits");
    at::Tensor out = lm->forward(ids);
    QCOMPARE(out.sizes().vec(), ref.sizes().vec());
    const double err = forja_test::max_abs_error(out, ref);
    qInfo("%s: max |logit - transformers| = %.3g", name.c_str(), err);
    QVERIFY2(err <= 1e-4, qPrintable(QString("max abs error %1").arg(err)));
  }

  void greedy_data() { logits_data(); }
  void greedy() {
    // transformers' generate(do_sample=False, min_new_tokens=max_new_tokens) continuation, recomputed here by
    // full forward passes: the EOS ids are never chosen.
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    auto lm = load_causal_lm(forja_test::fixture_dir(name), {at::kFloat, at::kCPU});
    at::NoGradGuard no_grad;
    at::Tensor seq = forja_test::expected(name, "gen_prompt");
    at::Tensor want = forja_test::expected(name, "gen_output");
    while (seq.size(1) < want.size(1)) {
      at::Tensor last = lm->forward(seq).select(1, seq.size(1) - 1);
      for (int64_t eos : lm->config().eos_token_ids) last.index_fill_(1, at::tensor({eos}), -INFINITY);
      at::Tensor next = last.argmax(-1, true);
      seq = at::cat({seq, next}, 1);
    }
    auto text = [](const at::Tensor& ids) {
      QStringList out;
      for (int64_t i = 0; i < ids.size(1); ++i) out << QString::number(ids[0][i].item<int64_t>());
      return out.join(' ');
    };
    QVERIFY2(at::equal(seq, want),
             qPrintable(QString("%1: %2 vs transformers' %3").arg(name.c_str(), text(seq), text(want))));
  }

  void longropeSwitchesPastTheOriginalLength() {
    // phi3's fixture: longrope with an original length of 64. A forward whose furthest position is beyond
    // it uses the long factors for every position (as transformers decides per forward), so the first 60
    // positions' logits move; given as position ids, the same positions make the same choice.
    auto lm = load_causal_lm(forja_test::fixture_dir("phi3"), {at::kFloat, at::kCPU});
    at::NoGradGuard no_grad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
    const at::Tensor ids = at::randint(3, 300, {1, 70}, gen, at::kLong);
    const at::Tensor long_run = lm->forward(ids);
    const at::Tensor short_run = lm->forward(ids.narrow(1, 0, 60));
    QVERIFY(forja_test::max_abs_error(long_run.narrow(1, 0, 60), short_run) > 1e-3);
    for (int64_t t : {60, 70}) {
      ForwardOptions o;
      o.position_ids = at::arange(t, at::kLong).unsqueeze(0);
      const at::Tensor part = ids.narrow(1, 0, t);
      QVERIFY(at::equal(lm->logits(lm->hidden_states(part, o)), lm->forward(part)));
    }
    // transformers' own logits for an input 16 tokens past the original length: the long factors' values.
    const at::Tensor long_ids = forja_test::expected("phi3", "long_input_ids");
    QCOMPARE(long_ids.size(1), int64_t{80});
    QVERIFY(forja_test::max_abs_error(lm->forward(long_ids), forja_test::expected("phi3", "long_logits")) <
            1e-4);
  }

  void dtypes() {
    // llama3 is stored in bf16: by default it loads in bf16, on request in fp32 (the fixture's storage
    // dtypes).
    QCOMPARE(load_causal_lm(forja_test::fixture_dir("llama3"))->dtype(), at::kBFloat16);
    QCOMPARE(load_causal_lm(forja_test::fixture_dir("mistral"))->dtype(), at::kHalf);
    auto bf = load_causal_lm(forja_test::fixture_dir("qwen2"), {at::kBFloat16, at::kCPU});
    at::NoGradGuard no_grad;
    at::Tensor out = bf->forward(forja_test::expected("qwen2", "input_ids"));
    QCOMPARE(out.scalar_type(), at::kBFloat16);
    // bf16 keeps ~3 significant digits: so the bar for bf16 parity is a relative error of 2e-2.
    QVERIFY(forja_test::relative_error(out, forja_test::expected("qwen2", "logits")) < 2e-2);
  }

  void score() {
    auto lm = load_causal_lm(forja_test::fixture_dir("llama"), {at::kFloat, at::kCPU});
    at::Tensor ids = forja_test::expected("llama", "input_ids")[0];
    std::vector<int64_t> seq(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    auto s = score_sequences(*lm, {seq});
    // Expected from transformers' logits: log_softmax(logits[t-1])[ids[t]].
    at::Tensor logp = at::log_softmax(forja_test::expected("llama", "logits")[0], -1);
    double total = 0;
    for (size_t t = 1; t < seq.size(); ++t) {
      const double want = logp[static_cast<int64_t>(t) - 1][seq[t]].item<double>();
      QVERIFY(std::abs(s[0].token_logprobs[t - 1] - want) < 1e-4);
      total += want;
    }
    QVERIFY(std::abs(s[0].perplexity - std::exp(-total / double(seq.size() - 1))) < 1e-3 * s[0].perplexity);
    QVERIFY_THROWS_EXCEPTION(forja::Error, score_sequences(*lm, {{1, 2, 999}}));  // id outside vocab 320
    QVERIFY_THROWS_EXCEPTION(forja::Error,
                             score_sequences(*lm, {std::vector<int64_t>(129, 1)}));  // context 128
  }

  // The public door (forja/score.h): the ids file as forja-cli score reads it, and the model loaded by path;
  // the same log-probs as above, and the logits dumped as transformers computed them.
  void scoreThroughThePublicApi() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    at::Tensor ids = forja_test::expected("llama", "input_ids")[0];
    std::vector<int64_t> seq(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    std::string text = "[";
    for (size_t i = 0; i < seq.size(); ++i) text += (i ? "," : "") + std::to_string(seq[i]);
    write_file_atomic(dir + "/flat.json", text + "]");
    const auto read = read_id_sequences(dir + "/flat.json");
    QCOMPARE(read.size(), size_t{1});
    QCOMPARE(read[0], seq);
    ScoreOptions o;
    o.model_dir = forja_test::fixture_dir("llama");
    o.dump_logits = dir + "/logits.safetensors";
    const auto s = score_model(o, read);
    auto lm = load_causal_lm(o.model_dir, {at::kFloat, at::kCPU});
    const auto direct = score_sequences(*lm, {seq});
    QCOMPARE(s[0].token_logprobs, direct[0].token_logprobs);
    const auto dumped = io::SafetensorsFile::open(*o.dump_logits);
    const auto& info = dumped.at("logits");
    QCOMPARE(info.shape, (std::vector<int64_t>{1, static_cast<int64_t>(seq.size()), 320}));
    at::Tensor logits = at::empty(info.shape, at::kFloat);
    std::memcpy(logits.data_ptr(), dumped.bytes(info).data(), dumped.bytes(info).size());
    QVERIFY(forja_test::max_abs_error(logits[0], forja_test::expected("llama", "logits")[0]) < 1e-4);
    // Files that are not lists of whole-number lists name the file and the entry.
    for (const auto& [content, part] :
         std::vector<std::pair<std::string, std::string>>{{"[[1, 2], [3, 4.5]]", "entry 1"},
                                                          {"{\"ids\": [1]}", "list"},
                                                          {"[[1], 7]", "entry 1"},
                                                          {"[[1, 9.1e127]]", "whole number"},
                                                          {"[1, 2", "not valid JSON"}}) {
      write_file_atomic(dir + "/bad.json", content);
      try {
        read_id_sequences(dir + "/bad.json");
        QFAIL(("accepted " + content).c_str());
      } catch (const Error& e) {
        QVERIFY2(
            e.message().find("bad.json") != std::string::npos && e.message().find(part) != std::string::npos,
            e.message().c_str());
      }
    }
  }

  void weightsThatDoNotMatch() {
    // A config.json that says 3 layers for a 2-layer checkpoint: the error names the folder and the tensor.
    QTemporaryDir dir;
    const std::filesystem::path d = dir.path().toStdString();
    for (const auto& e : std::filesystem::directory_iterator(forja_test::fixture_dir("smollm")))
      std::filesystem::copy(e.path(), d / e.path().filename());
    std::string cfg = forja::read_text_file(d / "config.json");
    cfg.replace(cfg.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 3");
    forja::write_file_atomic(d / "config.json", cfg);
    try {
      load_causal_lm(d);
      QFAIL("expected an error");
    } catch (const forja::Error& e) {
      QVERIFY2(e.message().find("model.layers.2") != std::string::npos, e.message().c_str());
      QVERIFY(e.message().find(d.string()) != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestModelParity)
#include "test_model_parity.moc"
