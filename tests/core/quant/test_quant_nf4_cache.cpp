// The NF4 cache file: saving and reloading bit-identically (with and without double quantization), and every
// kind of bad metadata, missing or extra tensor, wrong size or truncation giving an error that names the file
// and the problem.
#include <QtTest>

#include <bit>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include "forja/error.h"
#include "forja/nf4.h"
#include "forja/safetensors.h"
#include "nf4_test_util.h"
#include "qtest_util.h"

using namespace forja::quant;
using forja::io::DType;
using forja_test::expect_error;
namespace fs = std::filesystem;

namespace {

Nf4Cache sample_cache(bool double_quant) {
  Nf4Cache c;
  c.options.double_quant = double_quant;
  // Odd sizes and partial last blocks, the three original dtypes, and one tensor of more than 256 blocks (two
  // double-quant groups).
  c.tensors["model.layers.0.self_attn.q_proj.weight"] =
      quantize_nf4(nf4_test::normal_weights(81 * 64, 1), {81, 64}, c.options, DType::BF16);
  c.tensors["model.layers.0.mlp.down_proj.weight"] =
      quantize_nf4(nf4_test::normal_weights(7 * 37, 2), {7, 37}, c.options, DType::F16);
  c.tensors["model.layers.1.mlp.up_proj.weight"] =
      quantize_nf4(nf4_test::normal_weights(300 * 64 + 3, 3), {300 * 64 + 3}, c.options, DType::F32);
  c.extra["source"] = "tests/fixtures/models/llama";
  return c;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A safetensors file whose tensors and metadata are those of `path`, edited by `edit` (tensors as copies).
struct RawFile {
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<uint8_t>> data;
  std::map<std::string, std::string> metadata;

  static RawFile read(const fs::path& path) {
    RawFile r;
    const auto f = forja::io::SafetensorsFile::open(path);
    for (const auto& t : f.tensors()) {
      r.names.push_back(t.name);
      r.dtypes.push_back(t.dtype);
      r.shapes.push_back(t.shape);
      const auto b = f.bytes(t);
      r.data.emplace_back(b.begin(), b.end());
    }
    r.metadata = f.metadata();
    return r;
  }
  size_t index(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return i;
    QTest::qFail(("no tensor " + name).c_str(), __FILE__, __LINE__);
    return 0;
  }
  void erase(const std::string& name) {
    const size_t i = index(name);
    names.erase(names.begin() + long(i));
    dtypes.erase(dtypes.begin() + long(i));
    shapes.erase(shapes.begin() + long(i));
    data.erase(data.begin() + long(i));
  }
  void write(const fs::path& path) const {
    std::vector<forja::io::TensorToWrite> t;
    for (size_t i = 0; i < names.size(); ++i) t.push_back({names[i], dtypes[i], shapes[i], data[i]});
    forja::io::write_safetensors(path, t, metadata);
  }
};

// One tensor of 10 elements (5 code bytes, 2 blocks of 8) in a cache, as the base of the broken files.
constexpr const char* kName = "model.layers.0.self_attn.v_proj.weight";

fs::path small_cache(forja_test::TempFiles& tmp, bool double_quant) {
  Nf4Cache c;
  c.options.block_size = 8;
  c.options.double_quant = double_quant;
  c.options.dq_block_size = 256;
  c.tensors[kName] = quantize_nf4(nf4_test::normal_weights(10, 4), {2, 5}, c.options, DType::BF16);
  const fs::path p = tmp.dir() / (double_quant ? "dq.safetensors" : "plain.safetensors");
  save_nf4_cache(p, c);
  return p;
}

// The 'tensors' metadata for one tensor (plain string literals: moc does not read raw ones).
std::string describe(const std::string& name, const std::string& shape, const std::string& dtype) {
  return "{\"" + name + "\":{\"shape\":" + shape + ",\"dtype\":" + dtype + "}}";
}

}  // namespace

class TestQuantNf4Cache : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void saveAndReloadBitIdentical() {
    forja_test::TempFiles tmp;
    for (bool dq : {false, true}) {
      const Nf4Cache c = sample_cache(dq);
      const fs::path p = tmp.dir() / (dq ? "dq.safetensors" : "plain.safetensors");
      save_nf4_cache(p, c);
      const Nf4Cache back = load_nf4_cache(p);
      QCOMPARE(back.options.block_size, c.options.block_size);
      QCOMPARE(back.options.double_quant, dq);
      QCOMPARE(back.options.dq_block_size, c.options.dq_block_size);
      QCOMPARE(back.extra, c.extra);
      QCOMPARE(back.tensors.size(), c.tensors.size());
      for (const auto& [name, t] : c.tensors) {
        QVERIFY2(back.tensors.count(name), name.c_str());
        const Nf4Tensor& b = back.tensors.at(name);
        QCOMPARE(b.shape, t.shape);
        QCOMPARE(b.dtype, t.dtype);
        QCOMPARE(b.block_size, t.block_size);
        QCOMPARE(b.double_quant, t.double_quant);
        QVERIFY(same_bits(b.codes, t.codes));
        QVERIFY(same_bits(b.absmax, t.absmax));
        QVERIFY(same_bits(b.absmax_q, t.absmax_q));
        QVERIFY(same_bits(b.absmax_scale, t.absmax_scale));
        QCOMPARE(std::bit_cast<uint32_t>(b.absmax_offset), std::bit_cast<uint32_t>(t.absmax_offset));
        QVERIFY(same_bits(dequantize_nf4_bf16(b), dequantize_nf4_bf16(t)));
      }
      // 300 * 64 + 3 elements are 301 blocks: two double-quant groups, the second partial.
      if (dq) QCOMPARE(c.tensors.at("model.layers.1.mlp.up_proj.weight").absmax_scale.size(), size_t(2));
      // Saving what was loaded gives the same file, byte for byte.
      const fs::path again = tmp.dir() / "again.safetensors";
      save_nf4_cache(again, back);
      QVERIFY(read_all(again) == read_all(p));
      // The metadata a reader of the bare safetensors sees.
      const auto f = forja::io::SafetensorsFile::open(p);
      QCOMPARE(f.metadata().at("format"), std::string("forja.nf4"));
      QCOMPARE(f.metadata().at("format_version"), std::string("1"));
      QCOMPARE(f.metadata().at("block_size"), std::string("64"));
      QCOMPARE(f.metadata().at("double_quant"), std::string(dq ? "true" : "false"));
      QCOMPARE(f.metadata().at("dq_block_size"), std::string("256"));
      QVERIFY(f.metadata().at("tensors").find("\"dtype\":\"F16\"") != std::string::npos);
      QCOMPARE(f.at("model.layers.0.mlp.down_proj.weight.nf4_codes").shape, (std::vector<int64_t>{130}));
      QCOMPARE(f.tensors().size(), c.tensors.size() * (dq ? 4 : 2));
    }
  }

  void emptyCache() {
    forja_test::TempFiles tmp;
    Nf4Cache c;
    save_nf4_cache(tmp.dir() / "empty.safetensors", c);
    const Nf4Cache back = load_nf4_cache(tmp.dir() / "empty.safetensors");
    QVERIFY(back.tensors.empty());
    QCOMPARE(back.options.block_size, int64_t(64));
  }

  void saveRejectsInconsistentInput() {
    forja_test::TempFiles tmp;
    const fs::path p = tmp.dir() / "x.safetensors";
    Nf4Cache c = sample_cache(false);
    c.options.block_size = 128;
    expect_error([&] { save_nf4_cache(p, c); }, {p.string(), "other settings"});
    c = sample_cache(false);
    c.extra["format"] = "mine";
    expect_error([&] { save_nf4_cache(p, c); }, {p.string(), "'format' is reserved"});
    c = sample_cache(true);
    c.tensors.begin()->second.absmax_scale.pop_back();
    expect_error([&] { save_nf4_cache(p, c); }, {p.string(), "absmax scales"});
    QVERIFY(!fs::exists(p));
  }

  void badFiles() {
    forja_test::TempFiles tmp;
    const fs::path plain = small_cache(tmp, false);
    const fs::path dq = small_cache(tmp, true);
    const fs::path bad = tmp.dir() / "bad.safetensors";
    const std::string n = kName;
    // Each case edits a copy of a good file and names what the message must contain (besides the path).
    struct Case {
      const char* what;
      bool double_quant;
      std::function<void(RawFile&)> edit;
      std::vector<std::string> parts;
    };
    const std::vector<Case> cases = {
        {"no format", false, [](RawFile& r) { r.metadata.erase("format"); }, {"not a Forja NF4 cache"}},
        {"other format", false, [](RawFile& r) { r.metadata["format"] = "pt"; }, {"format 'pt'"}},
        {"version 2",
         false,
         [](RawFile& r) { r.metadata["format_version"] = "2"; },
         {"version '2' is not supported", "reads version 1"}},
        {"no version",
         false,
         [](RawFile& r) { r.metadata.erase("format_version"); },
         {"lacks 'format_version'"}},
        {"no block size", false, [](RawFile& r) { r.metadata.erase("block_size"); }, {"lacks 'block_size'"}},
        {"block size text",
         false,
         [](RawFile& r) { r.metadata["block_size"] = "64x"; },
         {"'block_size' is '64x'"}},
        {"block size odd",
         false,
         [](RawFile& r) { r.metadata["block_size"] = "7"; },
         {"block size 7 is odd"}},
        {"block size other",
         false,
         [](RawFile& r) { r.metadata["block_size"] = "4"; },
         {"'" + std::string(kName) + ".absmax' has shape [2]", "needs [3]"}},
        {"double quant word",
         false,
         [](RawFile& r) { r.metadata["double_quant"] = "yes"; },
         {"'double_quant' is 'yes'"}},
        {"dq block zero",
         false,
         [](RawFile& r) { r.metadata["dq_block_size"] = "0"; },
         {"'dq_block_size' is '0'"}},
        {"tensors not json", false, [](RawFile& r) { r.metadata["tensors"] = "{nope"; }, {"not valid JSON"}},
        {"tensors not object",
         false,
         [](RawFile& r) { r.metadata["tensors"] = "[]"; },
         {"not a JSON object"}},
        {"bad dtype",
         false,
         [n](RawFile& r) { r.metadata["tensors"] = describe(n, "[2,5]", "\"I32\""); },
         {"original dtype 'I32'"}},
        {"negative shape",
         false,
         [n](RawFile& r) { r.metadata["tensors"] = describe(n, "[-2,5]", "\"F32\""); },
         {"shape entry"}},
        {"no shape",
         false,
         [n](RawFile& r) { r.metadata["tensors"] = "{\"" + n + "\":{\"dtype\":\"F32\"}}"; },
         {"no shape array"}},
        {"shape vs bytes",
         false,
         [n](RawFile& r) { r.metadata["tensors"] = describe(n, "[2,6]", "\"BF16\""); },
         {"'" + n + ".nf4_codes' has shape [5] but shape [2, 6] needs [6]"}},
        {"missing absmax",
         false,
         [n](RawFile& r) { r.erase(n + ".absmax"); },
         {"has no tensor '" + n + ".absmax'"}},
        {"missing codes",
         false,
         [n](RawFile& r) { r.erase(n + ".nf4_codes"); },
         {"has no tensor '" + n + ".nf4_codes'"}},
        {"extra tensor",
         false,
         [](RawFile& r) {
           r.names.push_back("junk");
           r.dtypes.push_back(DType::U8);
           r.shapes.push_back({1});
           r.data.push_back({0});
         },
         {"unexpected tensor 'junk'"}},
        {"undescribed tensor",
         false,
         [](RawFile& r) { r.metadata["tensors"] = "{}"; },
         {"unexpected tensor"}},
        {"codes dtype",
         false,
         [n](RawFile& r) { r.dtypes[r.index(n + ".nf4_codes")] = DType::I8; },
         {"has dtype I8, expected U8"}},
        {"absmax size",
         false,
         [n](RawFile& r) {
           const size_t i = r.index(n + ".absmax");
           r.shapes[i] = {1};
           r.data[i].resize(4);
         },
         {"'" + n + ".absmax' has shape [1]", "needs [2]"}},
        {"absmax nan",
         false,
         [n](RawFile& r) {
           const float v = NAN;
           std::memcpy(r.data[r.index(n + ".absmax")].data(), &v, 4);
         },
         {"negative or non-finite"}},
        {"dq on, no dq tensors",
         false,
         [](RawFile& r) { r.metadata["double_quant"] = "true"; },
         {"has no tensor '" + n + ".absmax_q'"}},
        {"dq off, dq tensors",
         true,
         [](RawFile& r) { r.metadata["double_quant"] = "false"; },
         {"has no tensor '" + n + ".absmax'"}},
        {"dq -128", true, [n](RawFile& r) { r.data[r.index(n + ".absmax_q")][1] = 0x80; }, {"holds -128"}},
        {"dq scale negative",
         true,
         [n](RawFile& r) {
           const float v = -1.0f;
           std::memcpy(r.data[r.index(n + ".absmax_scale")].data(), &v, 4);
         },
         {"'" + n + ".absmax_scale' holds a negative"}},
        {"dq no offset",
         true,
         [n](RawFile& r) { r.erase(n + ".absmax_offset"); },
         {"has no tensor '" + n + ".absmax_offset'"}},
        {"dq offset shape",
         true,
         [n](RawFile& r) {
           const size_t i = r.index(n + ".absmax_offset");
           r.shapes[i] = {2};
           r.data[i].resize(8);
         },
         {"'" + n + ".absmax_offset' has shape [2]"}},
        {"dq scale count",
         true,
         [](RawFile& r) { r.metadata["dq_block_size"] = "1"; },
         {"'" + n + ".absmax_scale' has shape [1]", "needs [2]"}},
    };
    for (const Case& c : cases) {
      RawFile r = RawFile::read(c.double_quant ? dq : plain);
      c.edit(r);
      r.write(bad);
      std::vector<std::string> parts = c.parts;
      parts.push_back(bad.string());
      try {
        load_nf4_cache(bad);
        QFAIL(qPrintable(QString("no error for: ") + c.what));
      } catch (const forja::Error& e) {
        for (const auto& p : parts)
          QVERIFY2(e.message().find(p) != std::string::npos,
                   qPrintable(QString("%1: '%2' lacks '%3'").arg(c.what, e.message().c_str(), p.c_str())));
        QVERIFY2(!e.hint().empty(), c.what);
      }
    }
  }

  void truncatedAndForeignFiles() {
    forja_test::TempFiles tmp;
    const fs::path good = small_cache(tmp, true);
    const std::string bytes = read_all(good);
    // Cut off the last 3 bytes of the data: the safetensors reader says the file is truncated.
    const fs::path cut = tmp.write("cut.safetensors", bytes.substr(0, bytes.size() - 3));
    expect_error([&] { load_nf4_cache(cut); }, {cut.string(), "truncated"});
    // Cut inside the header.
    const fs::path head = tmp.write("head.safetensors", bytes.substr(0, 20));
    expect_error([&] { load_nf4_cache(head); }, {head.string(), "header"});
    const fs::path missing = tmp.dir() / "missing.safetensors";
    expect_error([&] { load_nf4_cache(missing); }, {missing.string(), "cannot open"});
    // A plain model checkpoint is not a cache.
    const fs::path model = fs::path(FORJA_FIXTURES_DIR) / "models/gpt2/model.safetensors";
    expect_error([&] { load_nf4_cache(model); }, {model.string(), "not a Forja NF4 cache"});
  }
};

QTEST_GUILESS_MAIN(TestQuantNf4Cache)
#include "test_quant_nf4_cache.moc"
