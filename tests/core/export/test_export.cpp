// The export API (forja/export.h) called directly, as the Runs pane calls it: the merged weights are the
// base plus the adapter's scaled B·A, progress reaches the end, a cancelled export leaves nothing at its
// destination or beside it, and options that cannot work are refused before the model is loaded.
#include <QtTest>

#include <ATen/ATen.h>

#include <cstring>
#include <filesystem>

#include "causal_lm.h"
#include "forja/export.h"
#include "forja/file_util.h"
#include "forja/gguf.h"
#include "forja/model_info.h"
#include "forja/safetensors.h"
#include "qtest_util.h"
#include "reference.h"

namespace fs = std::filesystem;

namespace {

const fs::path kAdapter = fs::path(FORJA_FIXTURES_DIR) / "train" / "llama" / "final";
const fs::path kDemo = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo" / "model";

at::Tensor f32_tensor(const forja::io::SafetensorsFile& f, const std::string& name) {
  const auto& info = f.at(name);
  QTEST_ASSERT(info.dtype == forja::io::DType::F32);
  const auto bytes = f.bytes(info);
  at::Tensor t = at::empty(info.shape, at::kFloat);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// What is left in `dir` besides `keep`.
std::vector<std::string> leftovers(const fs::path& dir, const std::string& keep = "") {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

class TestExport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void mergedFolderHoldsBasePlusScaledBA() {
    forja_test::TempFiles tmp;
    forja::ExportOptions o;
    o.model_dir = forja_test::fixture_dir("llama");
    o.adapter_dir = kAdapter;
    o.out = tmp.dir() / "merged";
    o.dtype = "fp32";
    size_t last_done = 0, last_total = 0;
    bool loaded = false, merged = false;
    const auto r = forja::export_model(o, [&](const forja::ExportProgress& p) {
      if (p.stage == forja::ExportProgress::Stage::Loading) loaded = true;
      if (p.stage == forja::ExportProgress::Stage::Merging) merged = true;
      if (p.stage == forja::ExportProgress::Stage::Writing) last_done = p.done, last_total = p.total;
    });
    QVERIFY(loaded && merged);
    QVERIFY(last_total > 0);
    QCOMPARE(last_done, last_total);
    QCOMPARE(r.files, size_t{1});
    QCOMPARE(r.merged_projections, size_t{7 * 2});  // 7 target modules in each of the fixture's 2 layers
    QVERIFY(fs::exists(o.out / "config.json"));
    QCOMPARE(leftovers(tmp.dir()), std::vector<std::string>{"merged"});

    const auto exported = forja::io::SafetensorsFile::open(o.out / "model.safetensors");
    const auto adapter = forja::io::SafetensorsFile::open(kAdapter / "adapter_model.safetensors");
    auto base = forja::load_causal_lm(o.model_dir, forja::LoadOptions(at::kFloat));
    std::map<std::string, at::Tensor> params;
    for (const auto& item : base->named_parameters(true)) params[item.key()] = item.value();
    const std::string layer = "model.layers.1.self_attn.q_proj";
    const at::Tensor a = f32_tensor(adapter, "base_model.model." + layer + ".lora_A.weight");
    const at::Tensor b = f32_tensor(adapter, "base_model.model." + layer + ".lora_B.weight");
    const at::Tensor want = params.at(layer + ".weight") + (8.0 / 4.0) * at::matmul(b, a);  // alpha 8, r 4
    const at::Tensor got = f32_tensor(exported, layer + ".weight");
    QVERIFY2(forja_test::max_abs_error(got, want) < 1e-6, "the merged q_proj is not W + (alpha/r)·B·A");
    // A weight the adapter does not touch travels unchanged.
    QVERIFY(at::equal(f32_tensor(exported, "model.norm.weight"), params.at("model.norm.weight")));
  }

  void cancelledFolderExportLeavesNothing() {
    forja_test::TempFiles tmp;
    forja::ExportOptions o;
    o.model_dir = forja_test::fixture_dir("llama");
    o.adapter_dir = kAdapter;
    o.out = tmp.dir() / "merged";
    bool writing = false;
    forja_test::expect_error(
        [&] {
          forja::export_model(
              o,
              [&](const forja::ExportProgress& p) {
                writing |= p.stage == forja::ExportProgress::Stage::Writing;
              },
              [&] { return writing; });
        },
        {"merged", "cancelled"});
    QVERIFY(writing);
    QVERIFY(!fs::exists(o.out));
    QVERIFY(leftovers(tmp.dir()).empty());  // no staging folder either
  }

  void cancelledGgufExportLeavesNothing() {
    if (!FORJA_EXPORT_TEST_GGUF) QSKIP("this build has no tokenizer area, so no GGUF export");
    forja_test::TempFiles tmp;
    forja::ExportOptions o;
    o.model_dir = kDemo;
    o.out = tmp.dir() / "demo.gguf";
    o.format = forja::ExportFormat::Gguf;
    size_t seen = 0;
    forja_test::expect_error(
        [&] {
          forja::export_model(
              o,
              [&](const forja::ExportProgress& p) {
                if (p.stage == forja::ExportProgress::Stage::Writing) seen = p.done;
              },
              [&] { return seen >= 3; });
        },
        {"demo.gguf", "cancelled"});
    QCOMPARE(seen, size_t{3});
    QVERIFY(leftovers(tmp.dir()).empty());  // neither the file nor its temporary
  }

  void ggufExportReportsEveryTensor() {
    if (!FORJA_EXPORT_TEST_GGUF) QSKIP("this build has no tokenizer area, so no GGUF export");
    forja_test::TempFiles tmp;
    forja::ExportOptions o;
    o.model_dir = kDemo;
    o.out = tmp.dir() / "sub" / "demo.gguf";
    o.format = forja::ExportFormat::Gguf;
    std::vector<size_t> done;
    size_t total = 0;
    const auto r = forja::export_model(o, [&](const forja::ExportProgress& p) {
      if (p.stage == forja::ExportProgress::Stage::Writing) done.push_back(p.done), total = p.total;
    });
    const auto file = forja::io::read_gguf(o.out);
    QCOMPARE(total, file.tensors.size());
    QCOMPARE(done.size(), total);
    for (size_t i = 0; i < done.size(); ++i) QCOMPARE(done[i], i);
    QCOMPARE(r.bytes, static_cast<uint64_t>(fs::file_size(o.out)));
    QCOMPARE(r.files, size_t{1});
    QCOMPARE(std::get<std::string>(file.metadata.at("general.name")), std::string("model"));
  }

  // The Export dialog's sizes: the file's tensor bytes for the demo model, within 3% for the types whose
  // blocks fit its rows (the K-mix figure is for a 7B model's share of Q6_K layers; checked for order only).
  void estimatedSizesMatchTheFiles() {
    if (!FORJA_EXPORT_TEST_GGUF) QSKIP("this build has no tokenizer area, so no GGUF export");
    const int64_t params = forja::inspect_model(kDemo).parameters;
    QVERIFY(params > 0);
    forja_test::TempFiles tmp;
    for (const char* dtype : {"fp32", "fp16", "q8_0"}) {
      forja::ExportOptions o;
      o.model_dir = kDemo;
      o.out = tmp.dir() / (std::string(dtype) + ".gguf");
      o.format = forja::ExportFormat::Gguf;
      o.dtype = dtype;
      forja::export_model(o);
      uint64_t tensor_bytes = 0;
      for (const auto& t : forja::io::read_gguf(o.out).tensors) tensor_bytes += t.nbytes;
      const double estimate = static_cast<double>(forja::estimated_gguf_bytes(params, dtype));
      QVERIFY2(std::abs(estimate / static_cast<double>(tensor_bytes) - 1) < 0.03,
               qPrintable(QString("%1: estimate %2, file %3").arg(dtype).arg(estimate).arg(tensor_bytes)));
    }
    QCOMPARE(forja::estimated_gguf_bytes(7'000'000'000, "FP16"), uint64_t{14'000'000'000});
    uint64_t last = 0;
    for (const char* dtype : {"q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "bf16", "fp32"}) {
      const uint64_t b = forja::estimated_gguf_bytes(7'000'000'000, dtype);
      QVERIFY2(b > last, dtype);
      last = b;
    }
    QVERIFY_THROWS_EXCEPTION(forja::Error, forja::estimated_gguf_bytes(1, "q3_k"));
  }

  // Each of these would fail later, after loading; they are refused first, naming what is wrong (the model
  // folder does not exist, so loading would say that instead).
  void refusesImpossibleOptionsBeforeLoading() {
    forja_test::TempFiles tmp;
    forja::ExportOptions o;
    o.model_dir = tmp.dir() / "no-such-model";
    o.out = tmp.dir() / "out";
    forja_test::expect_error([&] { forja::export_model(o); }, {"merges an adapter"});
    o.adapter_dir = kAdapter;
    const fs::path full = tmp.dir() / "full";
    fs::create_directories(full);
    tmp.write("full/keep.txt", "mine");
    o.out = full;
    forja_test::expect_error([&] { forja::export_model(o); }, {"full", "not empty"});
    QVERIFY(fs::exists(full / "keep.txt"));
    o.format = forja::ExportFormat::Gguf;
    o.out = tmp.dir() / "model.bin";
    forja_test::expect_error([&] { forja::export_model(o); }, {"model.bin", "*.gguf"});
    o.out = tmp.write("taken.gguf", "a file the user has");
    forja_test::expect_error([&] { forja::export_model(o); }, {"taken.gguf", "exists"});
    QCOMPARE(forja::read_text_file(o.out), std::string("a file the user has"));
    forja_test::expect_error([] { forja::export_format_from_name("onnx"); }, {"onnx"});
    QCOMPARE(forja::export_format_from_name("gguf"), forja::ExportFormat::Gguf);
  }
};

QTEST_GUILESS_MAIN(TestExport)
#include "test_export.moc"
