// Dataset readers: every record shape, JSONL and JSON arrays, forced formats, each kind of bad line reported
// as file:line with its problem, skip-and-count, and the bundled demo dataset.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <fstream>

#include "forja/dataset.h"
#include "forja/error.h"
#include "qtest_util.h"

using namespace forja;
namespace fs = std::filesystem;

namespace {

using Files = forja_test::TempFiles;

// Reading `content` as `name` must throw forja::Error starting with "<path>:<line>: " and containing `parts`.
void expect_bad(const std::string& content, size_t line, std::initializer_list<std::string> parts,
                RecordFormat format = RecordFormat::Auto, const std::string& name = "d.jsonl") {
  Files files;
  fs::path p = files.write(name, content);
  try {
    ReadOptions o;
    o.format = format;
    read_dataset_file(p, o);
    QFAIL(("expected an error for: " + content).c_str());
  } catch (const Error& e) {
    std::string prefix = p.string() + ":" + std::to_string(line) + ": ";
    QVERIFY2(e.message().rfind(prefix, 0) == 0, (e.message() + " does not start with " + prefix).c_str());
    for (const auto& part : parts)
      QVERIFY2(e.message().find(part) != std::string::npos, (e.message() + " lacks: " + part).c_str());
    QVERIFY(!e.hint().empty());
  }
}

void expect_messages(const Record& r, std::vector<std::pair<std::string, std::string>> expected) {
  QCOMPARE(r.messages.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    QCOMPARE(r.messages[i].role, expected[i].first);
    QCOMPARE(r.messages[i].content, expected[i].second);
  }
}

}  // namespace

class TestDataRecords : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void shapesAutoDetected() {
    Files files;
    fs::path p = files.write(
        "mixed.jsonl",
        R"({"instruction":"Add","input":"2 and 3","output":"5"})"
        "\n"
        R"({"instruction":"Say hi","output":"hi","system":"Be brief."})"
        "\n\n"  // a blank line is not a record (line 3)
        R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"U"},)"
        R"({"role":"assistant","content":"A"}]})"
        "\n"
        R"({"conversations":[{"from":"system","value":"s"},{"from":"human","value":"h"},)"
        R"({"from":"gpt","value":"g"},{"from":"user","value":"u"},{"from":"assistant","value":"a"}]})"
        "\n"
        R"({"text":"Just a document."})"
        "\n");
    ReadResult r = read_dataset_file(p);
    QCOMPARE(r.records.size(), size_t(5));
    QCOMPARE(r.skipped, size_t(0));

    QCOMPARE(r.records[0].format, RecordFormat::Alpaca);
    QCOMPARE(r.records[0].line, size_t(1));
    QCOMPARE(r.records[0].file, p.string());
    // Instruction, blank line, input (the documented alpaca rendering).
    expect_messages(r.records[0], {{"user", "Add\n\n2 and 3"}, {"assistant", "5"}});
    expect_messages(r.records[1], {{"system", "Be brief."}, {"user", "Say hi"}, {"assistant", "hi"}});

    QCOMPARE(r.records[2].format, RecordFormat::Chat);
    QCOMPARE(r.records[2].line, size_t(4));
    expect_messages(r.records[2], {{"system", "S"}, {"user", "U"}, {"assistant", "A"}});

    QCOMPARE(r.records[3].format, RecordFormat::ShareGpt);
    expect_messages(r.records[3],
                    {{"system", "s"}, {"user", "h"}, {"assistant", "g"}, {"user", "u"}, {"assistant", "a"}});

    QCOMPARE(r.records[4].format, RecordFormat::Text);
    QCOMPARE(r.records[4].text, std::string("Just a document."));
    QVERIFY(r.records[4].messages.empty());
    QCOMPARE(r.records[4].where(), p.string() + ":6");
  }

  void alpacaEdgeCases() {
    // Empty and null input both mean "no input": no trailing blank line in the user turn.
    Record a = parse_record(R"({"instruction":"I","input":"","output":"O"})", RecordFormat::Auto, "f", 1);
    expect_messages(a, {{"user", "I"}, {"assistant", "O"}});
    Record b = parse_record(R"({"instruction":"I","input":null,"output":"O","system":null})",
                            RecordFormat::Auto, "f", 1);
    expect_messages(b, {{"user", "I"}, {"assistant", "O"}});
    // Only an input (some datasets put the whole prompt there).
    Record c = parse_record(R"({"instruction":"","input":"X","output":"O"})", RecordFormat::Auto, "f", 1);
    expect_messages(c, {{"user", "X"}, {"assistant", "O"}});
  }

  void chatContentParts() {
    Record r = parse_record(
        R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},)"
        R"({"role":"assistant","content":"c"}]})",
        RecordFormat::Auto, "f", 1);
    expect_messages(r, {{"user", "ab"}, {"assistant", "c"}});
  }

  void forcedFormat() {
    // Both keys present: auto picks messages first; forcing text reads the text field.
    const char* both = R"({"text":"T","messages":[{"role":"user","content":"U"}]})";
    QCOMPARE(parse_record(both, RecordFormat::Auto, "f", 1).format, RecordFormat::Chat);
    Record t = parse_record(both, RecordFormat::Text, "f", 1);
    QCOMPARE(t.format, RecordFormat::Text);
    QCOMPARE(t.text, std::string("T"));
    expect_bad(R"({"messages":[{"role":"user","content":"U"}]})", 1, {"missing field 'instruction'"},
               RecordFormat::Alpaca);
    QCOMPARE(parse_format_name("sharegpt"), RecordFormat::ShareGpt);
    QCOMPARE(std::string(format_name(RecordFormat::Alpaca)), std::string("alpaca"));
    try {
      parse_format_name("csv");
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY(e.message().find("csv") != std::string::npos);
      QVERIFY(e.hint().find("alpaca") != std::string::npos);
    }
  }

  void jsonArrayWithLines() {
    Files files;
    // Elements begin on lines 2, 3 and 6; braces and commas inside strings must not confuse the scan.
    fs::path p =
        files.write("d.json",
                    "[\n"
                    // An ordinary literal: moc miscounts braces inside raw strings.
                    "  {\"text\":\"a, b ] } [ {\"},\n"
                    "  {\"instruction\":\"q \\\" ]\",\n"
                    "   \"output\":\"r\"\n"
                    "  },\n"
                    R"(  {"messages":[{"role":"user","content":"u"},{"role":"assistant","content":"v"}]})"
                    "\n]\n");
    ReadResult r = read_dataset_file(p);
    QCOMPARE(r.records.size(), size_t(3));
    QCOMPARE(r.records[0].line, size_t(2));
    QCOMPARE(r.records[0].text, std::string("a, b ] } [ {"));
    QCOMPARE(r.records[1].line, size_t(3));
    expect_messages(r.records[1], {{"user", "q \" ]"}, {"assistant", "r"}});
    QCOMPARE(r.records[2].line, size_t(6));
    QCOMPARE(read_dataset_file(files.write("e.json", " [ ] ")).records.size(), size_t(0));
  }

  void bomAndCrlf() {
    Files files;
    fs::path p = files.write("w.jsonl", "\xEF\xBB\xBF{\"text\":\"x\"}\r\n{\"text\":\"y\"}\r\n");
    ReadResult r = read_dataset_file(p);
    QCOMPARE(r.records.size(), size_t(2));
    QCOMPARE(r.records[1].text, std::string("y"));
    QCOMPARE(r.records[1].line, size_t(2));
  }

  void folderAndFifoAreRefused() {
    Files files;
    fs::create_directories(files.dir() / "data");
    forja_test::expect_error([&] { read_dataset_file(files.dir() / "data"); }, {"data", "is a folder"});
    // A FIFO would block the read until some writer came: refused before opening.
    const fs::path fifo = files.dir() / "pipe.jsonl";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    forja_test::expect_error([&] { read_dataset_file(fifo); }, {"pipe.jsonl", "not a regular file"});
  }

  void badLinesNameFileAndLine() {
    const std::string ok = R"({"text":"fine"})";
    expect_bad(ok + "\n" + ok + "\n{\"text\": \"unterminated}\n", 3, {"not valid JSON"});
    // Well-formed JSON with a number no double holds: refused at its line like any other bad JSON.
    expect_bad(ok + "\n" + R"({"instruction":"I","output":1e999})" + "\n", 2, {"not valid JSON", "1e999"});
    expect_bad(ok + "\n" + R"({"instruction":"I"})" + "\n", 2, {"missing field 'output'"});
    expect_bad(R"({"instruction":"I","output":5})", 1, {"'output'", "must be a string", "a number"});
    expect_bad(R"({"instruction":"I","output":"O","input":["x"]})", 1,
               {"'input'", "must be a string", "an array"});
    expect_bad(R"({"instruction":"","output":"O"})", 1, {"empty prompt"});
    expect_bad(R"({"messages":[]})", 1, {"empty conversation"});
    expect_bad(R"({"conversations":[]})", 1, {"empty conversation"});
    expect_bad(R"({"messages":{"role":"user"}})", 1, {"'messages'", "must be an array", "an object"});
    expect_bad(R"({"messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]})", 1,
               {"unknown role 'bot'", "messages[1]"});
    expect_bad(R"({"messages":[{"role":"user"}]})", 1, {"missing field 'messages[0].content'"});
    expect_bad(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", 1,
               {"image_url", "text"});
    expect_bad(R"({"messages":["hello"]})", 1, {"messages[0]", "must be an object", "a string"});
    expect_bad(R"({"conversations":[{"from":"robot","value":"x"}]})", 1, {"unknown role 'robot'"});
    expect_bad(R"({"conversations":[{"from":"human"}]})", 1, {"conversations[0].value"});
    expect_bad(R"({"text":""})", 1, {"'text' is empty"});
    expect_bad(R"({"text":null})", 1, {"missing field 'text'"});
    expect_bad(R"({"prompt":"p","completion":"c"})", 1, {"unknown record shape", "prompt", "completion"});
    // A file whose first character is '[' is a JSON array; an array on a later JSONL line is a bad record.
    expect_bad(ok + "\n[\"not\", \"an\", \"object\"]\n", 2, {"must be a JSON object", "an array"});
  }

  void badJsonArray() {
    // The broken element starts on line 3 but the bad character (the second "output" value) is on line 5.
    expect_bad("[\n  {\"text\":\"a\"},\n  {\"instruction\":\"q\",\n\n   \"output\": nope}\n]", 5,
               {"not valid JSON"}, RecordFormat::Auto, "d.json");
    expect_bad("[\n  {\"text\":\"a\"},\n  {\"text\":\"b\"}", 3, {"not closed"}, RecordFormat::Auto, "d.json");
    expect_bad("[{\"text\":\"a\"}]\n{\"text\":\"b\"}", 2, {"after the end of the JSON array"},
               RecordFormat::Auto, "d.json");
  }

  void skipAndCount() {
    Files files;
    fs::path p = files.write("s.jsonl",
                             "{\"text\":\"a\"}\n"
                             "{broken\n"
                             "{\"text\":\"b\"}\n"
                             "{\"messages\":[]}\n"
                             "{\"text\":5}\n"
                             "{\"text\":\"c\"}\n");
    ReadOptions o;
    o.on_bad_record = OnBadRecord::Skip;
    ReadResult r = read_dataset_file(p, o);
    QCOMPARE(r.records.size(), size_t(3));
    QCOMPARE(r.records[2].text, std::string("c"));
    QCOMPARE(r.skipped, size_t(3));
    QCOMPARE(r.problems.size(), size_t(3));
    QCOMPARE(r.problems[0].line, size_t(2));
    QVERIFY(r.problems[0].message.find("not valid JSON") != std::string::npos);
    QCOMPARE(r.problems[1].line, size_t(4));
    QVERIFY(r.problems[1].message.find("empty conversation") != std::string::npos);
    QCOMPARE(r.problems[2].where(), p.string() + ":5");
    // The problem text is the message without the file:line prefix (the UI shows them in separate columns).
    QVERIFY(r.problems[2].message.rfind("field 'text'", 0) == 0);

    o.max_problems_kept = 1;
    ReadResult capped = read_dataset_file(p, o);
    QCOMPARE(capped.skipped, size_t(3));
    QCOMPARE(capped.problems.size(), size_t(1));

    // Stop (the default) gives the first problem as an error.
    try {
      read_dataset_file(p);
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY2(e.message().rfind(p.string() + ":2: ", 0) == 0, e.message().c_str());
    }
  }

  void missingFile() {
    try {
      read_dataset_file("/nonexistent/forja/data.jsonl");
      QFAIL("expected an error");
    } catch (const Error& e) {
      QVERIFY(e.message().find("/nonexistent/forja/data.jsonl") != std::string::npos);
    }
  }

  void demoDatasetParses() {
    ReadResult r = read_dataset_file(FORJA_DEMO_DATASET);
    // The demo is specified as 60-120 question/answer pairs in the chat shape.
    QVERIFY2(r.records.size() >= 60 && r.records.size() <= 120, std::to_string(r.records.size()).c_str());
    size_t portuguese = 0;
    for (const Record& rec : r.records) {
      QCOMPARE(rec.format, RecordFormat::Chat);
      QVERIFY2(rec.messages.size() >= 2, rec.where().c_str());
      QCOMPARE(rec.messages.back().role, std::string("assistant"));
      QVERIFY2(!rec.messages.back().content.empty(), rec.where().c_str());
      for (const char* marker : {"ç", "ã", "é", "ó", "í", " é ", " de "})
        if (rec.messages.front().content.find(marker) != std::string::npos) {
          ++portuguese;
          break;
        }
    }
    // Both languages: at least a quarter in Portuguese and a quarter not.
    QVERIFY2(portuguese >= r.records.size() / 4 && portuguese <= r.records.size() * 3 / 4,
             std::to_string(portuguese).c_str());
  }
};

QTEST_GUILESS_MAIN(TestDataRecords)
#include "test_data_records.moc"
