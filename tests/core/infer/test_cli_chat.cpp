// `forja-cli chat` with piped input, on the demo model: every line starting with / is a command that never
// reaches the model (the saved conversation holds only what was sent), /save writes the training data's chat
// shape, /system and /reset change what the next /save holds, and an unknown command says so. And
// `forja-cli generate --min-new`, which keeps EOS back as transformers' min_new_tokens does.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using nlohmann::json;

namespace {

json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

struct Run {
  int exit_code = -1;
  QString out, err;
};

Run chat(const QStringList& extra, const QByteArray& input) {
  QProcess p;
  const QString model = QStringLiteral(FORJA_SOURCE_DIR "/resources/demo/model");
  // Greedy and short: the answers' words do not matter here, only what was sent and saved.
  p.start(QStringLiteral(FORJA_CLI_PATH),
          QStringList{"chat", model, "--device", "cpu", "--temperature", "0", "--max-new", "4"} + extra);
  if (!p.waitForStarted(60000)) return {};
  p.write(input);
  p.closeWriteChannel();
  if (!p.waitForFinished(300000)) p.kill();
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestCliChat : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void pipedSlashLinesAreCommands() {
    QTemporaryDir tmp;
    const QString first = tmp.filePath("first.json"), second = tmp.filePath("second.json");
    const Run r = chat({}, QByteArray("/help\n"
                                      "/system Answer in one word.\n"
                                      "Hello there\n"
                                      "/bogus do not send this\n"
                                      "/adapter on\n"
                                      "//slash is sent\n"
                                      "/save ") +
                               first.toUtf8() +
                               "\n/reset\n"
                               "/system\n"
                               "/save " +
                               second.toUtf8() + "\n");
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("/save FILE") && r.out.contains("/adapter on|off"), qPrintable(r.out));
    QVERIFY2(r.err.contains("unknown command /bogus"), qPrintable(r.err));
    QVERIFY2(r.err.contains("no adapter is loaded"), qPrintable(r.err));
    // The saved conversation: the system prompt, then exactly the two messages that were sent and their
    // answers. None of the command lines is among them.
    const json a = read_json(first);
    QVERIFY2(a.contains("messages") && a["messages"].size() == 5, a.dump().c_str());
    QCOMPARE(a["messages"][0]["role"].get<std::string>(), std::string("system"));
    QCOMPARE(a["messages"][0]["content"].get<std::string>(), std::string("Answer in one word."));
    QCOMPARE(a["messages"][1]["role"].get<std::string>(), std::string("user"));
    QCOMPARE(a["messages"][1]["content"].get<std::string>(), std::string("Hello there"));
    QCOMPARE(a["messages"][2]["role"].get<std::string>(), std::string("assistant"));
    QCOMPARE(a["messages"][3]["content"].get<std::string>(), std::string("/slash is sent"));
    QCOMPARE(a["messages"][4]["role"].get<std::string>(), std::string("assistant"));
    // After /reset and removing the system prompt there is nothing left to save.
    QCOMPARE(read_json(second), json::parse(R"({"messages": []})"));
  }

  void generateMinNewHoldsBackEos() {
    // The phi3 fixture's prompt and transformers' continuation with min_new_tokens = 12
    // (tests/fixtures/models/phi3/expected.safetensors: gen_prompt, gen_output): greedy decoding would pick
    // EOS (id 2) third, so without --min-new the answer ends there.
    const QString model = QStringLiteral(FORJA_SOURCE_DIR "/tests/fixtures/models/phi3");
    auto generate = [&](const QStringList& extra) {
      QProcess p;
      p.start(QStringLiteral(FORJA_CLI_PATH),
              QStringList{"generate", model, "--prompt-ids", "238,30,160,139,301,124", "--device", "cpu",
                          "--dtype", "fp32", "--max-new", "12", "--json"} +
                  extra);
      if (!p.waitForFinished(300000)) p.kill();
      return json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
    };
    const json held = generate({"--min-new", "12"});
    QVERIFY2(held.is_object(), "no JSON from forja-cli generate");
    QCOMPARE(held["result"]["tokens"].get<std::vector<int>>(),
             (std::vector<int>{158, 256, 102, 295, 294, 306, 318, 32, 84, 178, 252, 192}));
    const json free = generate({});
    QCOMPARE(free["result"]["tokens"].get<std::vector<int>>(), (std::vector<int>{158, 256, 2}));
    QCOMPARE(free["result"]["stop"].get<std::string>(), std::string("eos"));
  }

  void chatHelpDocumentsPipedCommands() {
    QProcess p;
    p.start(QStringLiteral(FORJA_CLI_PATH), {"chat", "--help"});
    QVERIFY(p.waitForFinished(60000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(out.contains("piped") && out.contains("/system TEXT") && out.contains("/reset"),
             qPrintable(out));
  }
};

QTEST_GUILESS_MAIN(TestCliChat)
#include "test_cli_chat.moc"
