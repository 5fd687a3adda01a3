// safetensors reader/writer and the sharded checkpoint: round trips, the fixtures transformers saved, and
// every kind of broken file giving an error that names the file and the problem.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "forja/checkpoint.h"
#include "forja/error.h"
#include "forja/safetensors.h"
#include "qtest_util.h"

using namespace forja;
using namespace forja::io;
namespace fs = std::filesystem;

namespace {
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}
std::string header_file(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);  // little-endian on every supported machine
  return out + json + data;
}
using forja_test::expect_error;
}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void roundTrip() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "a.safetensors";
    std::vector<float> a = {1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
    std::vector<uint16_t> b = {0x3f80, 0xc000};  // bf16 1.0, -2.0
    write_safetensors(p,
                      {{"w.a", DType::F32, {2, 3}, {reinterpret_cast<uint8_t*>(a.data()), 24}},
                       {"w.b", DType::BF16, {2}, {reinterpret_cast<uint8_t*>(b.data()), 4}}},
                      {{"format", "pt"}});
    SafetensorsFile f = SafetensorsFile::open(p);
    QCOMPARE(f.tensors().size(), size_t(2));
    QCOMPARE(f.metadata().at("format"), std::string("pt"));
    const TensorInfo& ta = f.at("w.a");
    QCOMPARE(ta.dtype, DType::F32);
    QCOMPARE(ta.shape, (std::vector<int64_t>{2, 3}));
    QVERIFY(std::memcmp(f.bytes(ta).data(), a.data(), 24) == 0);
    QVERIFY(std::memcmp(f.bytes(f.at("w.b")).data(), b.data(), 4) == 0);
    QVERIFY(f.find("missing") == nullptr);
    // The writer pads the header to 8 bytes so that data is aligned.
    std::ifstream in(p, std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    QCOMPARE(n % 8, uint64_t(0));
  }

  void releasedPagesKeepTheirData() {
    // A mapped file's pages let go after a pass read the same bytes again; a page written through the
    // (private) mapping keeps what was written, and so does memory that no file backs.
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "big.bin";
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE)), n = 64 * page;
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 131 % 251);
    write_bytes(p, bytes);
    auto m = MappedFile::open(p);
    QVERIFY(std::memcmp(m->data(), bytes.data(), n) == 0);  // every page mapped
    auto* written = const_cast<uint8_t*>(m->data()) + 3 * page + 5;
    *written = 0xAB;
    bytes[3 * page + 5] = static_cast<char>(0xAB);
    // Whether each page is mapped into this process (bit 63 of its /proc/self/pagemap entry).
    auto mapped = [&](size_t i) {
      const int fd = ::open("/proc/self/pagemap", O_RDONLY);
      uint64_t e = 0;
      const auto at = static_cast<off_t>((reinterpret_cast<uintptr_t>(m->data()) / page + i) * 8);
      const bool read = fd >= 0 && ::pread(fd, &e, 8, at) == 8;
      if (fd >= 0) ::close(fd);
      return read && (e >> 63) != 0;
    };
    release_pages(m->data() + 1, n - 2);  // the first and last pages are only partly inside
    QVERIFY(mapped(0) && mapped(63));
    QVERIFY(mapped(3));  // the written page
    QVERIFY(!mapped(1) && !mapped(10) && !mapped(62));
    QVERIFY(std::memcmp(m->data(), bytes.data(), n) == 0);

    std::vector<uint8_t> anon(16 * page, 7);
    release_pages(anon.data(), anon.size());
    QVERIFY(std::all_of(anon.begin(), anon.end(), [](uint8_t v) { return v == 7; }));
  }

  void readsTransformersFixtures() {
    // Saved by transformers 5.17 save_pretrained (tests/fixtures/make_fixtures.py): Llama is sharded in 3
    // files.
    Checkpoint c = Checkpoint::open(fs::path(FORJA_FIXTURES_DIR) / "models/llama");
    QCOMPARE(c.files().size(), size_t(3));
    // 2 layers × 9 tensors + embed + norm + lm_head = 21 (the count transformers printed when loading it).
    QCOMPARE(c.names().size(), size_t(21));
    TensorRef r = c.at("model.layers.1.self_attn.k_proj.weight");
    QCOMPARE(r.info->shape, (std::vector<int64_t>{32, 64}));  // 2 kv heads × head_dim 16, hidden 64
    QCOMPARE(
        Checkpoint::open(fs::path(FORJA_FIXTURES_DIR) / "models/llama3").at("model.norm.weight").info->dtype,
        DType::BF16);
    QCOMPARE(
        Checkpoint::open(fs::path(FORJA_FIXTURES_DIR) / "models/mistral").at("model.norm.weight").info->dtype,
        DType::F16);
  }

  void badFiles_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("problem");
    const std::string ok_json = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    QTest::newRow("tiny") << QByteArray("abc", 3) << "too small";
    std::string huge(8, '\0');
    uint64_t n = 200'000'000;
    std::memcpy(huge.data(), &n, 8);
    QTest::newRow("header over cap") << QByteArray::fromStdString(huge + "{}") << "exceeds";
    std::string past(8, '\0');
    n = 1000;
    std::memcpy(past.data(), &n, 8);
    QTest::newRow("header past end") << QByteArray::fromStdString(past + "{}") << "runs past the end";
    QTest::newRow("truncated data") << QByteArray::fromStdString(header_file(ok_json, "1234")) << "truncated";
    QTest::newRow("not json") << QByteArray::fromStdString(header_file("{nope", "")) << "not valid JSON";
    QTest::newRow("unknown dtype") << QByteArray::fromStdString(header_file(
                                          R"({"t":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})",
                                          "12345678"))
                                   << "unknown dtype";
    QTest::newRow("size mismatch") << QByteArray::fromStdString(header_file(
                                          R"({"t":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})",
                                          "12345678"))
                                   << "needs 4";
    QTest::newRow("overlap")
        << QByteArray::fromStdString(header_file(
               R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               "12345678"))
        << "overlaps";
    QTest::newRow("gap") << QByteArray::fromStdString(header_file(
                                R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "12345678"))
                         << "gap";
    QTest::newRow("trailing") << QByteArray::fromStdString(header_file(ok_json, "123456789"))
                              << "not part of any";
    QTest::newRow("bad shape") << QByteArray::fromStdString(header_file(
                                      R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                                      "12345678"))
                               << "non-negative";
  }
  void badFiles() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "broken.safetensors";
    write_bytes(p, bytes.toStdString());
    expect_error([&] { SafetensorsFile::open(p); }, {p.string(), problem.toStdString()});
  }

  void missingShard() {
    QTemporaryDir dir;
    const fs::path d = dir.path().toStdString();
    std::vector<float> a = {1, 2};
    write_safetensors(d / "model-00001-of-00002.safetensors",
                      {{"x", DType::F32, {2}, {reinterpret_cast<uint8_t*>(a.data()), 8}}});
    write_bytes(
        d / "model.safetensors.index.json",
        R"({"weight_map":{"x":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"}})");
    expect_error([&] { Checkpoint::open(d); },
                 {"model.safetensors.index.json", "model-00002-of-00002.safetensors", "missing"});
  }

  void indexNamesTensorNotInShard() {
    QTemporaryDir dir;
    const fs::path d = dir.path().toStdString();
    std::vector<float> a = {1, 2};
    write_safetensors(d / "s1.safetensors",
                      {{"x", DType::F32, {2}, {reinterpret_cast<uint8_t*>(a.data()), 8}}});
    write_bytes(d / "model.safetensors.index.json", R"({"weight_map":{"z":"s1.safetensors"}})");
    expect_error([&] { Checkpoint::open(d); }, {"'z'", "s1.safetensors", "not there"});
  }

  // Without O_NONBLOCK the open blocks forever on the FIFO and the suite times out.
  void fifoIsNotARegularFile() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "model.safetensors";
    QCOMPARE(::mkfifo(p.c_str(), 0600), 0);
    expect_error([&] { SafetensorsFile::open(p); }, {"model.safetensors", "not a regular file"});
    expect_error([&] { SafetensorsFile::open("/dev/zero"); }, {"/dev/zero", "not a regular file"});
  }

  void noWeights() {
    QTemporaryDir dir;
    write_bytes(fs::path(dir.path().toStdString()) / "pytorch_model.bin", "x");
    try {
      Checkpoint::open(dir.path().toStdString());
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY(e.message().find("no model.safetensors") != std::string::npos);
      QVERIFY(e.hint().find("pytorch_model.bin") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
