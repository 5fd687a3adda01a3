// forja::bench::write_random_model: the folder loads, holds exactly the weights the in-memory benchmarks
// draw, and shards as asked; an occupied folder is refused untouched.
#include <QtTest>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "causal_lm.h"
#include "forja/bench.h"
#include "forja/error.h"
#include "qtest_util.h"
#include "reference.h"
#include "weights.h"

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string fixture_config() {
  return read_text(forja_test::fixture_dir("llama") / "config.json");
}

// Every parameter of `a` equals `b`'s of the same name, bit for bit.
int equal_parameters(const forja::CausalLM& a, const forja::CausalLM& b) {
  auto pb = b.named_parameters(true);
  int compared = 0;
  for (const auto& item : a.named_parameters(true)) {
    const at::Tensor* other = pb.find(item.key());
    if (other == nullptr || !at::equal(item.value(), *other)) return -1;
    ++compared;
  }
  return compared == static_cast<int>(pb.size()) ? compared : -1;
}

}  // namespace

class TestBenchModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void shardedFolderLoadsAsTheRandomWeights() {
    forja_test::TempFiles tmp;
    const fs::path dir = tmp.dir() / "model";
    // 64 KiB shards: the fixture's matrices are a few KiB to a few tens of KiB, so several shards.
    const int64_t bytes = forja::bench::write_random_model(fixture_config(), dir, 7, 64 << 10);

    const auto index = nlohmann::json::parse(read_text(dir / "model.safetensors.index.json"));
    QCOMPARE(index["metadata"]["total_size"].get<int64_t>(), bytes);
    std::set<std::string> shards;
    for (const auto& [name, file] : index["weight_map"].items()) shards.insert(file.get<std::string>());
    QVERIFY2(shards.size() > 2, "expected several shards");
    int64_t on_disk = 0;
    for (const auto& s : shards) {
      QVERIFY(fs::exists(dir / s));
      on_disk += static_cast<int64_t>(fs::file_size(dir / s));
    }
    QVERIFY(on_disk > bytes);  // the data plus each shard's header
    QCOMPARE(nlohmann::json::parse(read_text(dir / "config.json"))["torch_dtype"].get<std::string>(),
             std::string("bfloat16"));

    auto loaded = forja::load_causal_lm(dir, {std::nullopt});
    forja::RandomWeights same(7, at::kBFloat16, at::kCPU), other(8, at::kBFloat16, at::kCPU);
    const forja::ModelConfig c = forja::parse_model_config(dir / "config.json");
    auto drawn = forja::make_causal_lm(c, same);
    QVERIFY(loaded->named_parameters(true).size() > 10);
    QVERIFY(equal_parameters(*loaded, *drawn) > 0);
    QVERIFY(loaded->named_parameters(true)[0].value().scalar_type() == at::kBFloat16);
    QCOMPARE(equal_parameters(*loaded, *forja::make_causal_lm(c, other)), -1);  // the seed matters
  }

  void oneShardIsAPlainSafetensorsFile() {
    forja_test::TempFiles tmp;
    const fs::path dir = tmp.dir() / "model";
    forja::bench::write_random_model(fixture_config(), dir);
    QVERIFY(fs::exists(dir / "model.safetensors"));
    QVERIFY(!fs::exists(dir / "model.safetensors.index.json"));
    auto loaded = forja::load_causal_lm(dir, {std::nullopt});
    forja::RandomWeights same(0, at::kBFloat16, at::kCPU);
    QVERIFY(equal_parameters(*loaded, *forja::make_causal_lm(loaded->config(), same)) > 0);
  }

  void occupiedFolderIsRefusedUntouched() {
    forja_test::TempFiles tmp;
    const fs::path dir = tmp.dir() / "mine";
    fs::create_directories(dir);
    std::ofstream(dir / "notes.txt") << "keep me";
    try {
      forja::bench::write_random_model(fixture_config(), dir);
      QFAIL("an occupied folder was written into");
    } catch (const forja::Error& e) {
      QVERIFY(std::string(e.what()).find(dir.string()) != std::string::npos);
    }
    QCOMPARE(read_text(dir / "notes.txt"), std::string("keep me"));
    QCOMPARE(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), std::ptrdiff_t(1));
  }
};

QTEST_GUILESS_MAIN(TestBenchModel)
#include "test_bench_model.moc"
