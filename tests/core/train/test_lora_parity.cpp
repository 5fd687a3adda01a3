// LoRA training parity with transformers + PEFT on the CPU in fp32. tests/fixtures/make_train_fixtures.py ran
// PEFT 0.21 on the tiny llama, qwen3, gemma3, phi3 and gpt2 fixture models from fixed initial adapters over
// fixed batches (20 AdamW steps, warmup + cosine / linear schedule, clipping, 2 micro-batches per step) and
// recorded what it computed; Forja, from the same initial adapter and batches, must compute the same. The bar
// is a relative error <= 1e-4 (fp32 summation order only).
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "lora_peft.h"
#include "loss.h"
#include "reference.h"
#include "train_data.h"
#include "trainer.h"

using namespace forja;
using forja_test::make_batch;
using nlohmann::json;

namespace {

// The bar for per-step loss, gradients and logits against PEFT.
constexpr double kRelTol = 1e-4;

std::filesystem::path train_dir(const std::string& model) {
  return std::filesystem::path(FORJA_FIXTURES_DIR) / "train" / model;
}

json run_settings(const std::string& model) {
  return json::parse(read_text_file(train_dir(model) / "run.json"));
}

at::Tensor trace(const std::string& model, const std::string& name) {
  auto f = io::SafetensorsFile::open(train_dir(model) / "trace.safetensors");
  return tensor_from_checkpoint(f, f.at(name)).clone();
}

bool has_trace(const std::string& model, const std::string& name) {
  return io::SafetensorsFile::open(train_dir(model) / "trace.safetensors").find(name) != nullptr;
}

OptimizerSettings optimizer_settings(const json& r) {
  OptimizerSettings o;
  o.learning_rate = r["lr"];
  o.weight_decay = r["weight_decay"];
  o.beta1 = r["betas"][0];
  o.beta2 = r["betas"][1];
  o.eps = r["eps"];
  o.max_grad_norm = r["max_grad_norm"];
  o.schedule = r["schedule"] == "cosine" ? LrSchedule::Cosine : LrSchedule::Linear;
  o.warmup_steps = r["warmup"];
  return o;
}

// The micro-batches of optimizer step `step`, as the fixture script grouped them.
std::vector<Batch> step_batches(const std::string& model, int64_t step) {
  const json r = run_settings(model);
  const int64_t accum = r["accum"];
  at::Tensor ids = trace(model, "input_ids"), labels = trace(model, "labels");
  std::vector<Batch> out;
  for (int64_t m = step * accum; m < (step + 1) * accum; ++m) out.push_back(make_batch(ids[m], labels[m]));
  return out;
}

std::shared_ptr<CausalLM> base_model(const std::string& model) {
  return load_causal_lm(forja_test::fixture_dir(model), {at::kFloat, at::kCPU});
}

}  // namespace

class TestLoraParity : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void trainingMatchesPeft_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("llama") << "llama";  // nn.Linear projections, cosine schedule, no clipping needed
    QTest::newRow("gpt2") << "gpt2";    // Conv1D projections, rsLoRA, linear schedule, clipping every step
    QTest::newRow("qwen3") << "qwen3";  // per-head q/k norms between the projections and RoPE, tied head
    // (1 + w) norms around attention and the MLP, GeGLU, local layers with their own RoPE, scaled embedding
    QTest::newRow("gemma3") << "gemma3";
    QTest::newRow("phi3") << "phi3";  // LoRA on the fused qkv_proj and gate_up_proj, longrope's factors
  }
  void trainingMatchesPeft() {
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    const json r = run_settings(name);
    auto lm = base_model(name);
    auto adapters = load_peft_adapter(*lm, train_dir(name) / "init");
    QCOMPARE(adapters->options().rank, r["r"].get<int64_t>());
    QCOMPARE(adapters->options().use_rslora, r["use_rslora"].get<bool>());
    const int64_t steps = r["steps"], grad_steps = r["grad_steps"];
    train::Trainer trainer(*lm, *adapters, optimizer_settings(r), steps, /*activation_checkpointing=*/false);
    at::Tensor want_loss = trace(name, "loss"), want_norm = trace(name, "grad_norm"),
               want_lr = trace(name, "lr");
    const auto names = adapters->parameter_names();
    const auto params = adapters->parameters();
    double worst_loss = 0, worst_grad = 0;
    for (int64_t step = 0; step < steps; ++step) {
      train::StepStats s = trainer.backward(step_batches(name, step));
      const double loss_err =
          std::abs(s.loss - want_loss[step].item<double>()) / want_loss[step].item<double>();
      worst_loss = std::max(worst_loss, loss_err);
      QVERIFY2(loss_err <= kRelTol, qPrintable(QString("step %1: loss %2 vs PEFT %3")
                                                   .arg(step)
                                                   .arg(s.loss, 0, 'g', 9)
                                                   .arg(want_loss[step].item<double>(), 0, 'g', 9)));
      if (step < grad_steps) {
        for (size_t i = 0; i < names.size(); ++i) {
          const std::string key = "grad." + std::to_string(step) + "." + names[i];
          QVERIFY2(has_trace(name, key), key.c_str());
          const double err = forja_test::relative_error(params[i].grad(), trace(name, key));
          worst_grad = std::max(worst_grad, err);
          QVERIFY2(
              err <= kRelTol,
              qPrintable(
                  QString("step %1 %2: gradient rel. error %3").arg(step).arg(names[i].c_str()).arg(err)));
        }
      }
      trainer.update(s);
      QVERIFY(std::abs(s.learning_rate - want_lr[step].item<double>()) <= 1e-12);
      QVERIFY2(
          std::abs(s.grad_norm - want_norm[step].item<double>()) <= kRelTol * want_norm[step].item<double>(),
          qPrintable(QString("step %1: grad norm %2 vs %3")
                         .arg(step)
                         .arg(s.grad_norm)
                         .arg(want_norm[step].item<double>())));
    }
    qInfo("%s: worst per-step loss rel. error %.2e, worst gradient rel. error %.2e", name.c_str(), worst_loss,
          worst_grad);

    // The trained adapter equals PEFT's trained adapter, tensor by tensor.
    auto peft_final = io::SafetensorsFile::open(train_dir(name) / "final" / "adapter_model.safetensors");
    for (size_t i = 0; i < names.size(); ++i) {
      const double err =
          forja_test::relative_error(params[i], tensor_from_checkpoint(peft_final, peft_final.at(names[i])));
      QVERIFY2(err <= kRelTol, qPrintable(QString("%1: %2").arg(names[i].c_str()).arg(err)));
    }

    // Saved in PEFT's format, it loads back into a fresh base and gives PEFT's logits.
    QTemporaryDir dir;
    const std::filesystem::path out = dir.path().toStdString();
    save_peft_adapter(*adapters, out, forja_test::fixture_dir(name).string());
    QVERIFY(std::filesystem::exists(out / "adapter_config.json"));
    auto fresh = base_model(name);
    auto reloaded = load_peft_adapter(*fresh, out);
    at::NoGradGuard no_grad;
    at::Tensor eval_ids = trace(name, "eval_ids"), want_logits = trace(name, "eval_logits");
    QVERIFY(at::equal(fresh->forward(eval_ids), lm->forward(eval_ids)));  // fp32 bytes round-trip exactly
    const double logit_err = forja_test::relative_error(fresh->forward(eval_ids), want_logits);
    QVERIFY2(logit_err <= kRelTol, qPrintable(QString("logits rel. error %1").arg(logit_err)));
  }

  void peftAdapterGivesPeftLogits_data() { trainingMatchesPeft_data(); }
  void peftAdapterGivesPeftLogits() {
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    auto lm = base_model(name);
    at::NoGradGuard no_grad;
    at::Tensor eval_ids = trace(name, "eval_ids");
    at::Tensor base_logits = lm->forward(eval_ids);
    auto adapters = load_peft_adapter(*lm, train_dir(name) / "final");
    // Same bar as the base-model parity suite: max abs logit error <= 1e-4.
    const double err = forja_test::max_abs_error(lm->forward(eval_ids), trace(name, "eval_logits"));
    QVERIFY2(err <= 1e-4, qPrintable(QString("max abs error %1").arg(err)));
    adapters->set_enabled(false);
    QVERIFY(at::equal(lm->forward(eval_ids), base_logits));  // disabled: exactly the base model
    adapters->set_enabled(true);

    // Merging folds the adapter into the weights: the same logits from the base path alone (fp32 rounding
    // only).
    at::Tensor with_adapter = lm->forward(eval_ids);
    adapters->merge_into_base();
    QVERIFY(forja_test::relative_error(lm->forward(eval_ids), with_adapter) < 1e-5);
  }

  // A rank that is not a whole number in range (1e300, 2.5, 0) is an error naming adapter_config.json.
  void peftConfigRankMustBeWhole() {
    QTemporaryDir tmp;
    const std::filesystem::path dir = tmp.path().toStdString();
    json cfg = json::parse(read_text_file(train_dir("llama") / "final" / "adapter_config.json"));
    QCOMPARE(read_peft_config(train_dir("llama") / "final").rank, cfg["r"].get<int64_t>());
    for (const json& r : {json(1e300), json(2.5), json(0), json(-8), json("8")}) {
      cfg["r"] = r;
      std::ofstream(dir / "adapter_config.json", std::ios::trunc) << cfg.dump();
      try {
        (void)read_peft_config(dir);
        QFAIL(qPrintable(QString::fromStdString("r = " + r.dump() + " was accepted")));
      } catch (const Error& e) {
        const std::string what = e.what();
        QVERIFY2(
            what.find("adapter_config.json") != std::string::npos && what.find("\"r\"") != std::string::npos,
            e.what());
      }
    }
  }

  void freshAdapterIsPeftInit() {
    // A fresh adapter changes nothing (B = 0) and A is U(±1/sqrt(in)) (kaiming_uniform_ with a = sqrt(5)).
    auto lm = base_model("llama");
    at::NoGradGuard no_grad;
    at::Tensor ids = forja_test::expected("llama", "input_ids");
    at::Tensor before = lm->forward(ids);
    LoraOptions o;
    o.rank = 8;
    o.alpha = 16;
    auto adapters = LoraAdapters::attach(*lm, o);
    QCOMPARE(adapters->entries().size(), size_t(2 * 7));  // 2 layers x 7 projections
    QVERIFY(at::equal(lm->forward(ids), before));
    for (const auto& e : adapters->entries()) {
      const double bound = 1.0 / std::sqrt(double(e.adapter->lora_A.size(1)));
      QVERIFY(e.adapter->lora_A.abs().max().item<double>() <= bound);
      QVERIFY(e.adapter->lora_A.abs().max().item<double>() > 0.5 * bound);
      QCOMPARE(e.adapter->scale, 2.0);  // alpha / r = 16 / 8
      QCOMPARE(e.adapter->lora_A.scalar_type(), at::kFloat);
    }
    o.target_modules = {"q_prj"};
    auto misspelt = [&] { LoraAdapters::attach(*base_model("llama"), o); };
    QVERIFY_THROWS_EXCEPTION(forja::Error, misspelt());
  }

  void packedRowsKeepExamplesApart_data() { trainingMatchesPeft_data(); }
  void packedRowsKeepExamplesApart() {
    // Two examples packed in one row (positions restart, attention stays inside each) give each example's own
    // logits.
    QFETCH(QString, model);
    const std::string name = model.toStdString();
    auto lm = base_model(name);
    at::NoGradGuard no_grad;
    at::Tensor ids = forja_test::expected(name, "input_ids");  // [2, 16]
    at::Tensor a = ids[0].narrow(0, 0, 9), b = ids[1].narrow(0, 0, 7);
    at::Tensor packed = at::cat({a, b}).unsqueeze(0);
    ForwardOptions fo;
    fo.position_ids = at::cat({at::arange(9, at::kLong), at::arange(7, at::kLong)}).unsqueeze(0);
    fo.segment_ids = at::cat({at::full({9}, 1, at::kLong), at::full({7}, 2, at::kLong)}).unsqueeze(0);
    at::Tensor out = lm->logits(lm->hidden_states(packed, fo))[0];
    at::Tensor alone_a = lm->forward(a.unsqueeze(0))[0], alone_b = lm->forward(b.unsqueeze(0))[0];
    QVERIFY(forja_test::max_abs_error(out.narrow(0, 0, 9), alone_a) < 1e-4);
    QVERIFY(forja_test::max_abs_error(out.narrow(0, 9, 7), alone_b) < 1e-4);
  }

  void recomputeGivesSameGradients() {
    // Activation checkpointing changes memory, not results: same loss and gradients on the CPU in fp32.
    auto grads = [](bool recompute) {
      auto lm = base_model("llama");
      auto adapters = load_peft_adapter(*lm, train_dir("llama") / "init");
      const json r = run_settings("llama");
      train::Trainer t(*lm, *adapters, optimizer_settings(r), r["steps"], recompute);
      train::StepStats s = t.backward(step_batches("llama", 1));
      std::vector<at::Tensor> g{at::full({}, s.loss, at::kDouble)};
      for (const auto& p : adapters->parameters()) g.push_back(p.grad().clone());
      return g;
    };
    auto plain = grads(false), recomputed = grads(true);
    for (size_t i = 0; i < plain.size(); ++i)
      QVERIFY(forja_test::relative_error(recomputed[i], plain[i]) < 1e-6);
  }

  void selectiveCheckpointingGivesSameGradients() {
    // Selective checkpointing (the LoRA adapters remake the norms', SwiGLU's and the attention's merged
    // outputs in backward) changes memory, not results: same loss and gradients on the CPU in fp32, alone and
    // together with whole-block recomputation. The fixture's initial adapter has nonzero B, so every A gets a
    // gradient through the remade inputs.
    auto grads = [](bool recompute, bool selective) {
      auto lm = base_model("llama");
      auto adapters = load_peft_adapter(*lm, train_dir("llama") / "init");
      const json r = run_settings("llama");
      train::Trainer t(*lm, *adapters, optimizer_settings(r), r["steps"], recompute);
      t.set_selective_checkpointing(selective);
      train::StepStats s = t.backward(step_batches("llama", 1));
      std::vector<at::Tensor> g{at::full({}, s.loss, at::kDouble)};
      for (const auto& p : adapters->parameters()) g.push_back(p.grad().clone());
      return g;
    };
    auto plain = grads(false, false), selective = grads(false, true), both = grads(true, true);
    for (size_t i = 0; i < plain.size(); ++i) {
      QVERIFY(plain[i].abs().sum().item<double>() > 0);
      QVERIFY(forja_test::relative_error(selective[i], plain[i]) < 1e-6);
      QVERIFY(forja_test::relative_error(both[i], plain[i]) < 1e-6);
    }
  }

  void chunkedLossMatchesFullLogits() {
    // The chunked loss equals cross_entropy over the full logits, for any chunk size (gradient included).
    auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
    at::Tensor h = at::randn({10, 8}, gen, at::kFloat).requires_grad_(true);
    at::Tensor w = at::randn({13, 8}, gen, at::kFloat);
    at::Tensor y = at::tensor({3, -100, 0, 12, 5, -100, 7, 7, 1, 2}, at::kLong);
    at::Tensor ref = at::cross_entropy_loss(at::matmul(h, w.t()), y, {}, at::Reduction::Sum, -100);
    at::Tensor ref_grad = torch::autograd::grad({ref}, {h})[0];
    for (int64_t chunk : {1, 3, 10, 64}) {
      at::Tensor loss = train::linear_cross_entropy_sum(h, w, y, chunk);
      at::Tensor grad = torch::autograd::grad({loss}, {h})[0];
      // fp32 sums of 8 values: agreement to a few ulps.
      QVERIFY(std::abs(loss.item<double>() - ref.item<double>()) < 1e-5 * std::abs(ref.item<double>()));
      QVERIFY(forja_test::relative_error(grad, ref_grad) < 1e-6);
    }
  }
};

QTEST_GUILESS_MAIN(TestLoraParity)
#include "test_lora_parity.moc"
