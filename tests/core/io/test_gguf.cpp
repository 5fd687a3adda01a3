// GGUF writing and reading (core/io/gguf.cpp): the byte layout the format fixes, a round trip of every value
// kind Forja writes, and files the reader must refuse with the file's name.
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "forja/error.h"
#include "forja/gguf.h"

namespace fs = std::filesystem;
using forja::io::GgufTensor;
using forja::io::GgufType;
using forja::io::GgufValue;
using forja::io::GgufWriter;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
T at(const std::string& bytes, size_t pos) {
  T v;
  std::memcpy(&v, bytes.data() + pos, sizeof v);
  return v;
}

std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(float));
}

}  // namespace

class TestGguf : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void layoutIsTheFormats() {
    QTemporaryDir tmp;
    const fs::path file = tmp.filePath(QStringLiteral("m.gguf")).toStdString();
    GgufWriter w;
    w.set("general.architecture", std::string("llama"));
    w.add_tensor({"a", {2, 3}, GgufType::F32, [] { return floats({1, 2, 3, 4, 5, 6}); }});
    w.add_tensor({"b", {1}, GgufType::F32, [] { return floats({7}); }});
    w.write(file);
    const std::string b = read_all(file);
    QCOMPARE(b.substr(0, 4), std::string("GGUF"));
    QCOMPARE(at<uint32_t>(b, 4), 3u);   // version
    QCOMPARE(at<uint64_t>(b, 8), 2u);   // tensors
    QCOMPARE(at<uint64_t>(b, 16), 1u);  // metadata
    size_t pos = 24;
    QCOMPARE(at<uint64_t>(b, pos), uint64_t{20});  // key length, then the key
    QCOMPARE(b.substr(pos + 8, 20), std::string("general.architecture"));
    pos += 8 + 20;
    QCOMPARE(at<uint32_t>(b, pos), 8u);  // string
    QCOMPARE(at<uint64_t>(b, pos + 4), uint64_t{5});
    QCOMPARE(b.substr(pos + 12, 5), std::string("llama"));
    pos += 12 + 5;
    // Tensor "a": [2, 3] row-major is {3, 2} innermost first; F32; offset 0.
    QCOMPARE(at<uint64_t>(b, pos), uint64_t{1});
    QCOMPARE(b.substr(pos + 8, 1), std::string("a"));
    pos += 9;
    QCOMPARE(at<uint32_t>(b, pos), 2u);
    QCOMPARE(at<uint64_t>(b, pos + 4), uint64_t{3});
    QCOMPARE(at<uint64_t>(b, pos + 12), uint64_t{2});
    QCOMPARE(at<uint32_t>(b, pos + 20), 0u);
    QCOMPARE(at<uint64_t>(b, pos + 24), uint64_t{0});
    pos += 32;
    // Tensor "b" starts at the next 32-byte boundary of the data: 24 bytes of "a" rounded up.
    pos += 9 + 4 + 8 + 4;
    QCOMPARE(at<uint64_t>(b, pos), uint64_t{32});
    pos += 8;
    const size_t data = (pos + 31) / 32 * 32;
    QCOMPARE(b.size(), data + 64);
    QCOMPARE(at<float>(b, data + 20), 6.0f);
    QCOMPARE(at<float>(b, data + 32), 7.0f);
    QCOMPARE(at<float>(b, data + 24), 0.0f);  // padding is zeros
  }

  void roundTripsEveryValueKind() {
    QTemporaryDir tmp;
    const fs::path file = tmp.filePath(QStringLiteral("m.gguf")).toStdString();
    GgufWriter w;
    w.set("u32", uint32_t{7});
    w.set("i32", int32_t{-3});
    w.set("f32", 0.5f);
    w.set("bool", true);
    w.set("str", std::string("olá"));
    w.set("u64", uint64_t{1} << 40);
    w.set("strings", std::vector<std::string>{"a", "", "Ġb"});
    w.set("floats", std::vector<float>{1.5f, -2.0f});
    w.set("ints", std::vector<int32_t>{1, 3, 5});
    w.set("u32", uint32_t{8});  // set again: the last value, in the first place
    w.add_tensor({"h", {4, 2}, GgufType::F16, [] { return std::string(16, '\x01'); }});
    w.add_tensor({"bf", {3}, GgufType::BF16, [] { return std::string(6, '\x02'); }});
    w.write(file);
    const forja::io::GgufFile f = forja::io::read_gguf(file);
    QCOMPARE(f.version, 3u);
    QCOMPARE(f.metadata.size(), size_t{9});
    QCOMPARE(std::get<uint32_t>(f.metadata.at("u32")), 8u);
    QCOMPARE(std::get<int32_t>(f.metadata.at("i32")), -3);
    QCOMPARE(std::get<float>(f.metadata.at("f32")), 0.5f);
    QCOMPARE(std::get<bool>(f.metadata.at("bool")), true);
    QCOMPARE(std::get<std::string>(f.metadata.at("str")), std::string("olá"));
    QCOMPARE(std::get<uint64_t>(f.metadata.at("u64")), uint64_t{1} << 40);
    QCOMPARE(std::get<std::vector<std::string>>(f.metadata.at("strings")),
             (std::vector<std::string>{"a", "", "Ġb"}));
    QCOMPARE(std::get<std::vector<float>>(f.metadata.at("floats")), (std::vector<float>{1.5f, -2.0f}));
    QCOMPARE(std::get<std::vector<int32_t>>(f.metadata.at("ints")), (std::vector<int32_t>{1, 3, 5}));
    QCOMPARE(f.tensors.size(), size_t{2});
    QCOMPARE(f.tensors[0].name, std::string("h"));
    QCOMPARE(f.tensors[0].shape, (std::vector<int64_t>{4, 2}));
    QCOMPARE(f.tensors[0].type, 1u);
    QCOMPARE(f.tensors[1].type, 30u);
    QCOMPARE(f.tensors[1].offset - f.tensors[0].offset, uint64_t{32});
    const std::string b = read_all(file);
    QCOMPARE(b.substr(f.tensors[1].offset, 6), std::string(6, '\x02'));
  }

  void tensorWithTheWrongSizeIsAnErrorAndNoFile() {
    QTemporaryDir tmp;
    const fs::path file = tmp.filePath(QStringLiteral("m.gguf")).toStdString();
    GgufWriter w;
    w.add_tensor({"t", {2, 2}, GgufType::F32, [] { return floats({1, 2, 3}); }});
    try {
      w.write(file);
      QFAIL("no error");
    } catch (const forja::Error& e) {
      QVERIFY2(QByteArray::fromStdString(e.message()).contains("tensor t came with 12 bytes, not the 16"),
               e.message().c_str());
    }
    QVERIFY(!fs::exists(file));
    QCOMPARE(std::distance(fs::directory_iterator(tmp.path().toStdString()), fs::directory_iterator()), 0);
  }

  void badFilesAreRefusedByName() {
    QTemporaryDir tmp;
    const fs::path good = tmp.filePath(QStringLiteral("good.gguf")).toStdString();
    GgufWriter w;
    w.set("general.name", std::string("x"));
    w.add_tensor({"t", {8}, GgufType::F32, [] { return std::string(32, '\0'); }});
    w.write(good);
    const std::string bytes = read_all(good);
    auto refuses = [&](const std::string& content, const char* what) {
      const fs::path bad = tmp.filePath(QStringLiteral("bad.gguf")).toStdString();
      std::ofstream(bad, std::ios::binary) << content;
      try {
        forja::io::read_gguf(bad);
        QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(what)));
      } catch (const forja::Error& e) {
        const QByteArray m = QByteArray::fromStdString(e.message());
        QVERIFY2(m.contains("bad.gguf") && m.contains(what), e.message().c_str());
      }
    };
    refuses("GGML" + bytes.substr(4), "does not start with \"GGUF\"");
    std::string v = bytes;
    v[4] = 9;
    refuses(v, "version 9");
    refuses(bytes.substr(0, 40), "inside its header");
    refuses(bytes.substr(0, bytes.size() - 4), "lies outside the file");
  }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
