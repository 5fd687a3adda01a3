// Hostile inputs around the tokenizer: pieces and spans that cut a UTF-8 character (what `forja-cli tokenize`
// prints), malformed chat_template entries in tokenizer_config.json, and tokenizer files that are not regular
// files.
#include <sys/stat.h>

#include <QtTest>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "fixture_util.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/tokenizer.h"
#include "gguf_vocab.h"
#include "qtest_util.h"
#include "utf8.h"

namespace fs = std::filesystem;
using forja_test::expect_error;
using json = nlohmann::ordered_json;

namespace {

const char* kText = "Olá, você está bem? 日本";

// A copy of a fixture tokenizer folder whose tokenizer_config.json can be replaced.
fs::path copy_fixture(const fs::path& into, const std::string& name) {
  const fs::path src = fs::path(forja::test::tokenizer_fixtures()) / name;
  const fs::path dst = into / name;
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) fs::copy_file(e.path(), dst / e.path().filename());
  return dst;
}

void write_file(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

}  // namespace

class TestTokenizerInputs : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void printable_bytes_marks_partial_characters() {
    QCOMPARE(forja::printable_bytes("a\xE6\x97"), std::string("a<0xE6><0x97>"));
    QCOMPARE(forja::printable_bytes("日本"), std::string("日本"));
    QCOMPARE(forja::printable_bytes(std::string("\xFF\0", 2)), std::string("<0xFF>") + '\0');
  }

  // What `forja-cli tokenize` prints for each token (piece and span, plain and --json) must be valid JSON
  // text for every fixture; byte-level BPE cuts 日 and 本 into partial-byte spans.
  void tokenize_output_is_valid_utf8() {
    const std::string root = forja::test::tokenizer_fixtures();
    bool saw_partial = false;
    for (const char* name : {"gpt2_bpe", "llama3_bpe", "qwen2_bpe", "smollm_bpe", "sp_bpe", "sp_bpe_hf",
                             "sp_unigram", "sp_unigram_hf"}) {
      const forja::Tokenizer tok = forja::Tokenizer::load(root + "/" + name);
      const forja::Encoding enc = tok.encode_with_spans(kText, true);
      QVERIFY(!enc.ids.empty());
      json pieces = json::array();
      for (size_t i = 0; i < enc.ids.size(); ++i) {
        const std::string raw_piece = tok.id_to_piece(enc.ids[i]);
        const std::string raw_span =
            std::string(kText).substr(enc.spans[i].begin, enc.spans[i].end - enc.spans[i].begin);
        saw_partial |= !forja::utf8::is_valid(raw_piece) || !forja::utf8::is_valid(raw_span);
        const std::string piece = forja::printable_bytes(raw_piece);
        const std::string span = forja::printable_bytes(raw_span);
        QVERIFY2(forja::utf8::is_valid(piece) && forja::utf8::is_valid(span), name);
        pieces.push_back(piece);
        (void)json(span).dump();  // throws type_error 316 on invalid UTF-8
      }
      const json out = {{"ids", enc.ids}, {"pieces", pieces}};
      QVERIFY(json::parse(out.dump()) == out);
    }
    // Without the escaping, nlohmann would have thrown on these.
    QVERIFY(saw_partial);
  }

  void chat_template_list_with_non_string_entry() {
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    write_file(
        d / "tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": 42}, {"name": "tool_use", "template": "x"}]})");
    expect_error([&] { forja::Tokenizer::load(d.string()); },
                 {"tokenizer_config.json", "chat_template[0]", "string"});
    write_file(d / "tokenizer_config.json", R"({"chat_template": [7]})");
    expect_error([&] { forja::Tokenizer::load(d.string()); }, {"tokenizer_config.json", "chat_template[0]"});
    write_file(d / "tokenizer_config.json", R"({"chat_template": [{"name": 1, "template": "x"}]})");
    expect_error([&] { forja::Tokenizer::load(d.string()); }, {"tokenizer_config.json", "chat_template[0]"});
  }

  void chat_template_of_wrong_type() {
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    write_file(d / "tokenizer_config.json", R"({"chat_template": 42})");
    expect_error([&] { forja::Tokenizer::load(d.string()); },
                 {"tokenizer_config.json", "chat_template", "number"});
    write_file(d / "tokenizer_config.json", R"({"chat_template": {"template": "x"}})");
    expect_error([&] { forja::Tokenizer::load(d.string()); },
                 {"tokenizer_config.json", "chat_template", "object"});
    // The well-formed list form still loads its default entry.
    write_file(
        d / "tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d"}]})");
    QCOMPARE(forja::Tokenizer::load(d.string()).info().chat_template.value_or(""), std::string("d"));
  }

  // An id that is not a whole number in range (9e127 as a float, a fraction, 2^40) is an error naming the
  // file, never a float-to-integer conversion out of range.
  void tokenizer_json_ids_that_are_not_token_ids() {
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    const json good = json::parse(forja::read_text_file(d / "tokenizer.json"));
    QVERIFY(!good.at("added_tokens").empty());
    for (const json& bad_id : {json(9.1e127), json(1.5), json(int64_t{1} << 40), json(-3), json("7")}) {
      json vocab_bad = good;
      vocab_bad["model"]["vocab"].begin().value() = bad_id;
      write_file(d / "tokenizer.json", vocab_bad.dump());
      expect_error([&] { forja::Tokenizer::load(d.string()); },
                   {"tokenizer.json", "model.vocab", "invalid id"});
      json added_bad = good;
      added_bad["added_tokens"][0]["id"] = bad_id;
      write_file(d / "tokenizer.json", added_bad.dump());
      expect_error([&] { forja::Tokenizer::load(d.string()); },
                   {"tokenizer.json", "added token", "not a whole number"});
    }
    write_file(d / "tokenizer.json", good.dump());
    QVERIFY(forja::Tokenizer::load(d.string()).vocab_size() > 0);
  }

  // The vocabulary as GGUF's keys hold it: SentencePiece pieces keep their ids, scores and types; a broken
  // tokenizer.model or a float id is an error naming the file.
  void gguf_vocab_from_sentencepiece_and_bad_inputs() {
    const fs::path sp_dir = fs::path(FORJA_FIXTURES_DIR) / "gguf" / "sp_bpe_320";
    const auto v = forja::tokenizer::read_gguf_vocab(sp_dir, 330);
    QCOMPARE(v.model, std::string("llama"));
    QCOMPARE(v.tokens.size(), size_t{330});
    const auto sp = forja::tokenizer::parse_sentencepiece_model(
        forja::read_text_file(sp_dir / "tokenizer.model"), sp_dir / "tokenizer.model");
    QCOMPARE(sp.model_type, 2);
    QVERIFY(sp.pieces.size() <= 330);
    for (size_t i = 0; i < sp.pieces.size(); ++i) {
      QCOMPARE(v.tokens[i], sp.pieces[i]);
      QCOMPARE(v.scores[i], sp.scores[i]);
    }
    QCOMPARE(v.tokens.back(), std::string("[PAD329]"));  // an id no piece has
    QCOMPARE(v.types.back(), int32_t{forja::tokenizer::kGgufUnused});
    // Every cut of the protobuf is either a shorter valid message or an error naming the file.
    const std::string data = forja::read_text_file(sp_dir / "tokenizer.model");
    for (size_t cut : {size_t{1}, size_t{2}, size_t{7}, data.size() / 3, data.size() - 1}) {
      try {
        forja::tokenizer::parse_sentencepiece_model(std::string_view(data).substr(0, cut), "cut.model");
      } catch (const forja::Error& e) {
        QVERIFY2(e.message().find("cut.model") != std::string::npos, e.message().c_str());
      }
    }
    expect_error([] { forja::tokenizer::parse_sentencepiece_model("\x0a\xff", "x.model"); },
                 {"x.model", "broken protobuf"});
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    json t = json::parse(forja::read_text_file(d / "tokenizer.json"));
    t["model"]["vocab"].begin().value() = 9.1e127;
    write_file(d / "tokenizer.json", t.dump());
    expect_error([&] { forja::tokenizer::read_gguf_vocab(d, 4096); },
                 {"tokenizer.json", "not a whole number"});
    write_file(d / "tokenizer.json", "[1, 2]");
    expect_error([&] { forja::tokenizer::read_gguf_vocab(d, 4096); },
                 {"tokenizer.json", "not a tokenizer.json"});
  }

  void tokenizer_json_is_dev_zero() {
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    fs::remove(d / "tokenizer.json");
    fs::create_symlink("/dev/zero", d / "tokenizer.json");
    expect_error([&] { forja::Tokenizer::load(d.string()); }, {"tokenizer.json", "not a regular file"});
  }

  // Without the check the open (or the read) blocks forever on the FIFO and the suite times out.
  void tokenizer_files_that_are_fifos() {
    QTemporaryDir tmp;
    const fs::path d = copy_fixture(tmp.path().toStdString(), "gpt2_bpe");
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
      const fs::path p = d / file;
      const std::string saved = forja::read_text_file(p);
      fs::remove(p);
      QCOMPARE(::mkfifo(p.c_str(), 0600), 0);
      expect_error([&] { forja::Tokenizer::load(d.string()); }, {file, "not a regular file"});
      fs::remove(p);
      write_file(p, saved);
    }
    write_file(d / "tokenizer_config.json", "{}");
    QCOMPARE(::mkfifo((d / "chat_template.jinja").c_str(), 0600), 0);
    expect_error([&] { forja::Tokenizer::load(d.string()); }, {"chat_template.jinja", "not a regular file"});
  }

  void read_text_file_limits() {
    QTemporaryDir tmp;
    const fs::path p = fs::path(tmp.path().toStdString()) / "a.json";
    write_file(p, std::string(100, 'x'));
    QCOMPARE(forja::read_text_file(p).size(), size_t(100));
    QCOMPARE(forja::read_text_file(p, 100).size(), size_t(100));
    expect_error([&] { forja::read_text_file(p, 99); }, {"a.json", "too large", "99"});
    expect_error([&] { forja::read_text_file("/dev/zero"); }, {"/dev/zero", "not a regular file"});
    expect_error([&] { forja::read_text_file(tmp.path().toStdString()); }, {"not a regular file"});
    expect_error([&] { forja::read_text_file(p.string() + ".missing"); }, {"a.json.missing", "cannot open"});
    write_file(p, "");
    QCOMPARE(forja::read_text_file(p), std::string());
  }
};

QTEST_GUILESS_MAIN(TestTokenizerInputs)
#include "test_tokenizer_inputs.moc"
