// QLoRA's 4-bit base on the CPU: LibTorch quantization against core/quant's reference (bit for bit, ties
// included), the NF4 projection's forward and backward under autograd, a fixture model loaded with NF4 (its
// codes, its logits against the full-precision model), the quantized-base cache, and the combinations that
// are refused.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "causal_lm.h"
#include "forja/checkpoint.h"
#include "forja/error.h"
#include "layers.h"
#include "nf4_weight.h"
#include "reference.h"
#include "weights.h"

using namespace forja;
namespace fs = std::filesystem;

namespace {

std::vector<float> host_floats(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Every part of an Nf4Weight equal to the core/quant tensor, byte for byte.
QString compare(const Nf4Weight& w, const quant::Nf4Tensor& ref) {
  quant::Nf4Tensor got = nf4_tensor_from(w);
  if (got.shape != ref.shape) return "shape";
  if (got.codes != ref.codes) return "codes";
  if (ref.double_quant) {
    if (got.absmax_q != ref.absmax_q) return "absmax_q";
    if (std::memcmp(got.absmax_scale.data(), ref.absmax_scale.data(), ref.absmax_scale.size() * 4) != 0)
      return "absmax_scale";
    if (std::memcmp(&got.absmax_offset, &ref.absmax_offset, 4) != 0) return "absmax_offset";
  } else if (got.absmax.size() != ref.absmax.size() ||
             std::memcmp(got.absmax.data(), ref.absmax.data(), ref.absmax.size() * 4) != 0) {
    return "absmax";
  }
  return {};
}

// Weights of one projection that RandomWeights would give, as a WeightProvider that holds NF4.
std::shared_ptr<LinearImpl> nf4_projection(int64_t in, int64_t out, bool double_quant, uint64_t seed = 3) {
  RandomWeights w(seed, at::kFloat, at::kCPU);
  quant::Nf4Options o;
  o.double_quant = double_quant;
  w.set_nf4(o);
  return std::make_shared<LinearImpl>(w, "model.layers.0.mlp.up_proj", in, out, false);
}

fs::path temp_dir(const char* name) {
  fs::path d =
      fs::temp_directory_path() / (std::string("forja-nf4-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

class TestModelNf4 : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void quantizeMatchesReference_data() {
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    QTest::addColumn<bool>("doubleQuant");
    QTest::newRow("whole blocks") << qint64(48) << qint64(128) << false;
    QTest::newRow("whole blocks, double quant") << qint64(48) << qint64(128) << true;
    QTest::newRow("partial last block, odd n") << qint64(7) << qint64(37) << false;
    QTest::newRow("partial last block, double quant") << qint64(7) << qint64(37) << true;
    QTest::newRow("many dq groups") << qint64(600) << qint64(64) << true;
  }
  void quantizeMatchesReference() {
    QFETCH(qint64, rows);
    QFETCH(qint64, cols);
    QFETCH(bool, doubleQuant);
    at::Tensor w = at::randn({rows, cols}) * 0.02;
    w.view({-1}).narrow(0, 0, 64).zero_();  // an all-zero block: code 7 everywhere, absmax 0
    quant::Nf4Options o;
    o.double_quant = doubleQuant;
    Nf4Weight got = quantize_nf4_weight(w, o, "w");
    std::vector<float> host = host_floats(w);
    quant::Nf4Tensor ref = quant::quantize_nf4(host, {rows, cols}, o);
    QCOMPARE(compare(got, ref), QString());
  }

  void quantizeTiesGoToLowerCode() {
    // Values exactly on the fp32 midpoints between adjacent codes (absmax 1, so w / absmax is the midpoint
    // itself): core/quant gives the lower code; so must the LibTorch path. Their neighbours one ulp up go up.
    std::vector<float> w(64, 0.0f);
    w[0] = 1.0f;
    for (size_t i = 0; i < 15; ++i) {
      const float mid =
          static_cast<float>((static_cast<double>(quant::kNf4Codes[i]) + quant::kNf4Codes[i + 1]) / 2.0);
      w[1 + 2 * i] = mid;
      w[2 + 2 * i] = std::nextafter(mid, 2.0f);
    }
    at::Tensor t = at::from_blob(w.data(), {64}, at::kFloat).clone();
    Nf4Weight got = quantize_nf4_weight(t, {}, "ties");
    quant::Nf4Tensor ref = quant::quantize_nf4(w, {64});
    QCOMPARE(compare(got, ref), QString());
    for (uint8_t i = 0; i < 15; ++i) {
      const size_t e = 1 + 2 * i;  // element e, its code in the high nibble when e is even
      const uint8_t byte = ref.codes[e / 2];
      const uint8_t code = e % 2 == 0 ? byte >> 4 : byte & 15;
      QCOMPARE(int(code), int(i));
    }
  }

  void dequantizeMatchesReference() {
    at::Tensor w = at::randn({24, 192}) * 0.05;
    for (bool dq : {false, true}) {
      quant::Nf4Options o;
      o.double_quant = dq;
      Nf4Weight q = quantize_nf4_weight(w, o, "w");
      quant::Nf4Tensor ref = nf4_tensor_from(q);
      std::vector<float> f = quant::dequantize_nf4(ref);
      QVERIFY(
          same_bits(dequantize_nf4_weight(q, at::kFloat), at::from_blob(f.data(), {24, 192}, at::kFloat)));
      std::vector<uint16_t> b = quant::dequantize_nf4_bf16(ref);
      at::Tensor bf = dequantize_nf4_weight(q, at::kBFloat16);
      QVERIFY(std::memcmp(bf.data_ptr(), b.data(), b.size() * 2) == 0);
    }
  }

  void forwardAndBackward() {
    // y = x·W'ᵀ exactly as at::linear with the dequantized weight (fp32 on the CPU: the same kernel on the
    // same values), and grad_x = grad_y·W'; the base weight has no gradient to give.
    auto proj = nf4_projection(96, 40, true);
    QVERIFY(proj->nf4.defined());
    QVERIFY(!proj->weight.defined());
    QVERIFY(proj->named_parameters().find("weight") == nullptr);
    QVERIFY(proj->named_buffers().find("weight_nf4_codes") != nullptr);
    at::Tensor wq = dequantize_nf4_weight(proj->nf4, at::kFloat);
    at::Tensor x = at::randn({3, 5, 96}).requires_grad_(true);
    at::Tensor y = proj->forward(x);
    QVERIFY(same_bits(y.detach(), at::linear(x.detach(), wq)));
    at::Tensor gy = at::randn_like(y);
    y.backward(gy);
    QVERIFY(x.grad().defined());
    QVERIFY(same_bits(x.grad(), at::matmul(gy, wq)));
    for (const auto& b : proj->buffers()) QVERIFY(!b.requires_grad());
  }

  void loraGradientsFlow() {
    // LoRA on top of the NF4 base: the adapter's gradients are those of the same adapter on the dequantized
    // weight held in full precision.
    auto proj = nf4_projection(64, 32, false);
    at::Tensor wq = dequantize_nf4_weight(proj->nf4, at::kFloat);
    auto make_adapter = [] {
      auto a = std::make_shared<LoraAdapter>();
      a->lora_A = (at::randn({4, 64}) * 0.1).requires_grad_(true);
      a->lora_B = (at::randn({32, 4}) * 0.1).requires_grad_(true);
      a->scale = 2.0;
      return a;
    };
    at::manual_seed(5);
    proj->lora = make_adapter();
    at::manual_seed(5);
    auto ref = make_adapter();
    at::Tensor x = at::randn({6, 64});
    at::Tensor y = proj->forward(x);
    at::Tensor y_ref = ref->add_to(at::linear(x, wq), x);
    QVERIFY(same_bits(y.detach(), y_ref.detach()));
    y.pow(2).sum().backward();
    y_ref.pow(2).sum().backward();
    QVERIFY(proj->lora->lora_A.grad().defined() && proj->lora->lora_B.grad().defined());
    QVERIFY(same_bits(proj->lora->lora_A.grad(), ref->lora_A.grad()));
    QVERIFY(same_bits(proj->lora->lora_B.grad(), ref->lora_B.grad()));
    QVERIFY(proj->lora->lora_A.grad().abs().sum().item<double>() > 0);
  }

  void fixtureModelCodesAndLogits() {
    const fs::path dir = forja_test::fixture_dir("llama");
    LoadOptions lo;
    lo.dtype = at::kFloat;
    lo.nf4 = quant::Nf4Options{};
    auto model = load_causal_lm(dir, lo);
    // Every selected projection holds core/quant's codes of the checkpoint tensor, bit for bit.
    io::Checkpoint ckpt = io::Checkpoint::open(dir);
    int quantized = 0;
    for (const auto& item : model->named_modules("", false)) {
      auto* lin = item.value()->as<LinearImpl>();
      if (lin == nullptr) continue;
      const std::string name = item.key() + ".weight";
      QCOMPARE(lin->nf4.defined(), quant::should_quantize_nf4(name));
      if (!lin->nf4.defined()) continue;
      io::TensorRef ref = ckpt.at(name);
      quant::Nf4Tensor want = quant::quantize_nf4(ref.file->bytes(*ref.info), ref.info->dtype,
                                                  ref.info->shape, quant::Nf4Options{});
      QCOMPARE(compare(lin->nf4, want), QString());
      ++quantized;
    }
    QCOMPARE(quantized, 2 * 7);  // 2 layers of q, k, v, o, gate, up, down (config.json)

    // Logits against the fp32 model. NF4 moves each weight by up to half the widest code gap (0.152) of its
    // block's absmax: on this fixture's random weights the logits moved by 16.9 % (relative L2, measured when
    // this test was written); 25 % leaves room and still catches a wrong scale or a swapped nibble (either
    // makes the weights, and the logits, unrelated to the original).
    auto full = load_causal_lm(dir, {at::kFloat, at::kCPU});
    at::Tensor ids = forja_test::expected("llama", "input_ids");
    at::NoGradGuard no_grad;
    at::Tensor a = model->forward(ids), b = full->forward(ids);
    const double rel = forja_test::relative_error(a, b);
    qInfo("NF4 vs fp32 logits: relative L2 error %.4f", rel);
    QVERIFY2(rel < 0.25, qPrintable(QString::number(rel)));
    // And exactly the logits of the fp32 model whose projections hold core/quant's dequantized weights: the
    // NF4 model computes with W' and nothing else.
    for (const auto& item : full->named_modules("", false)) {
      auto* lin = item.value()->as<LinearImpl>();
      if (lin == nullptr || !quant::should_quantize_nf4(item.key() + ".weight")) continue;
      std::vector<float> w = host_floats(lin->weight);
      std::vector<float> back = quant::dequantize_nf4(quant::quantize_nf4(w, lin->weight.sizes().vec()));
      lin->weight.copy_(at::from_blob(back.data(), lin->weight.sizes(), at::kFloat));
    }
    QVERIFY(same_bits(a, full->forward(ids)));
    QVERIFY(rel > 0);  // the base really is quantized
  }

  void cacheRoundTrip() {
    const fs::path dir = forja_test::fixture_dir("llama");
    const fs::path tmp = temp_dir("cache");
    LoadOptions lo;
    lo.dtype = at::kFloat;
    lo.nf4 = quant::Nf4Options{};
    lo.nf4->double_quant = true;
    lo.nf4_cache = tmp / "nf4-cache.safetensors";
    std::vector<std::string> notes;
    lo.notes = [&](const std::string& n) { notes.push_back(n); };
    auto first = load_causal_lm(dir, lo);
    QVERIFY(fs::exists(lo.nf4_cache));
    QVERIFY(notes.empty());
    // The second load reads the cache: same buffers, byte for byte, and the same logits.
    quant::Nf4Cache c = quant::load_nf4_cache(lo.nf4_cache);
    QCOMPARE(c.tensors.size(), size_t(14));
    auto second = load_causal_lm(dir, lo);
    QVERIFY(notes.empty());
    auto b1 = first->named_buffers(), b2 = second->named_buffers();
    QCOMPARE(b1.size(), b2.size());
    for (const auto& item : b1) QVERIFY2(same_bits(item.value(), *b2.find(item.key())), item.key().c_str());
    at::Tensor ids = forja_test::expected("llama", "input_ids");
    at::NoGradGuard no_grad;
    QVERIFY(same_bits(first->forward(ids), second->forward(ids)));

    // Other options: stale, rebuilt with a note.
    lo.nf4->double_quant = false;
    auto third = load_causal_lm(dir, lo);
    QCOMPARE(notes.size(), size_t(1));
    QVERIFY2(notes[0].find("other checkpoint files or options") != std::string::npos, notes[0].c_str());
    QVERIFY(!quant::load_nf4_cache(lo.nf4_cache).options.double_quant);

    // A damaged file: the reader's error is noted, the cache rebuilt, the model the same.
    { std::ofstream(lo.nf4_cache, std::ios::binary | std::ios::trunc) << "not a safetensors file"; }
    auto fourth = load_causal_lm(dir, lo);
    QCOMPARE(notes.size(), size_t(2));
    QVERIFY2(notes[1].find(lo.nf4_cache.string()) != std::string::npos, notes[1].c_str());
    QVERIFY(same_bits(third->forward(ids), fourth->forward(ids)));
    fs::remove_all(tmp);
  }

  void mergeIntoDequantizedBase() {
    // Export after QLoRA: the adapter merged into the dequantized base, every projection a plain weight
    // again, and the merged model computes what the NF4 model with its adapter computed.
    LoadOptions lo;
    lo.dtype = at::kFloat;
    lo.nf4 = quant::Nf4Options{};
    auto model = load_causal_lm(forja_test::fixture_dir("llama"), lo);
    LoraOptions opts;
    opts.rank = 4;
    opts.target_modules = {"q_proj", "down_proj"};
    auto adapters = LoraAdapters::attach(*model, opts);
    {
      at::NoGradGuard no_grad;
      for (const auto& e : adapters->entries()) e.adapter->lora_B.normal_(0.0, 0.1);
    }
    at::Tensor ids = forja_test::expected("llama", "input_ids");
    at::NoGradGuard no_grad;
    at::Tensor want = model->forward(ids);
    adapters->merge_into_base(at::kFloat);
    dequantize_nf4_base(*model);
    auto full = load_causal_lm(forja_test::fixture_dir("llama"), {at::kFloat, at::kCPU});
    QCOMPARE(model->named_parameters().size(), full->named_parameters().size());
    for (const auto& p : full->named_parameters())
      QVERIFY2(model->named_parameters().find(p.key()), p.key().c_str());
    const double err = forja_test::max_abs_error(model->forward(ids), want);
    QVERIFY2(err < 1e-4, qPrintable(QString::number(err)));  // fp32 summation order only
  }

  void gpt2IsRefused() {
    LoadOptions lo;
    lo.nf4 = quant::Nf4Options{};
    try {
      load_causal_lm(forja_test::fixture_dir("gpt2"), lo);
      QFAIL("GPT-2 with an NF4 base loaded");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("not supported for GPT-2") != std::string::npos, e.what());
    }
  }

  void nonFiniteWeightIsAnError() {
    at::Tensor w = at::randn({4, 64});
    w[2][3] = std::nan("");
    QVERIFY_THROWS_EXCEPTION(Error, quantize_nf4_weight(w, {}, "layer"));
  }
};

QTEST_GUILESS_MAIN(TestModelNf4)
#include "test_model_nf4.moc"
