// The Chat pane's "Serve this model" switch, offscreen: on, it serves the pane's model on a free port and
// shows the URL; a real HTTP request there gets the engine's own greedy answer; off, the port is closed; a
// new model switches it off.
#include <httplib.h>

#include <QCheckBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <nlohmann/json.hpp>

#include "forja/generate.h"
#include "main_window.h"
#include "panes/chat_pane.h"
#include "serve_box.h"
#include "ui_test_support.h"

using forja::ui::MainWindow;
using forja::ui::ServeBox;
using nlohmann::json;

class TestChatServe : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_chat_serve");
    std::signal(SIGPIPE, SIG_IGN);  // as forja-cli serve does: a write to a closed socket fails instead
  }

  void toggleServesThePanesModel() {
    QTemporaryDir tmp;
    MainWindow window({tmp.filePath(QStringLiteral("journal.db"))});
    window.show();
    auto* box = window.chat_pane()->findChild<ServeBox*>();
    QVERIFY(box);
    auto* toggle = box->findChild<QCheckBox*>(QStringLiteral("serveModel"));
    auto* label = box->findChild<QLabel*>(QStringLiteral("serveUrl"));
    QVERIFY(toggle && label);
    box->set_port(0);

    // Without a model the switch does not stay on.
    toggle->click();
    QVERIFY(!toggle->isChecked());
    QVERIFY(!box->serving());

    window.chat_pane()->set_model_dir(QStringLiteral(FORJA_DEMO_MODEL));
    QSignalSpy changed(box, &ServeBox::serving_changed);
    toggle->click();
    // The model loads on the worker thread; generous for a busy machine (it takes about a second alone).
    QTRY_VERIFY_WITH_TIMEOUT(box->serving(), 120000);
    QCOMPARE(changed.count(), 1);
    const QString url = box->url();
    QVERIFY2(url.startsWith(QStringLiteral("http://127.0.0.1:")) && url.endsWith(QStringLiteral("/v1")),
             qPrintable(url));
    QVERIFY2(label->text().contains(url), qPrintable(label->text()));

    // A request from another tool, answered as the engine answers it.
    const int port = url.section(QLatin1Char(':'), 2).section(QLatin1Char('/'), 0, 0).toInt();
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(std::chrono::seconds(120));
    const json body = {{"model", "model"},
                       {"messages", json::array({{{"role", "user"}, {"content", "What is CUDA?"}}})},
                       {"temperature", 0},
                       {"max_tokens", 16}};
    auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
    QVERIFY(res);
    QCOMPARE(res->status, 200);
    forja::EngineOptions cpu;
    cpu.device = "cpu";
    forja::ChatSession engine(FORJA_DEMO_MODEL, cpu);
    forja::GenerationConfig greedy;
    greedy.max_new_tokens = 16;
    const std::string expected = engine.send("What is CUDA?", greedy).text;
    QVERIFY(!expected.empty());
    QCOMPARE(json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>(), expected);

    // Off: the label says so once the worker has stopped it, and the port no longer answers.
    toggle->click();
    QVERIFY(!box->serving());
    QTRY_COMPARE_WITH_TIMEOUT(label->text(), ServeBox::tr("Not serving."), 60000);
    httplib::Client after("127.0.0.1", port);
    QVERIFY(!after.Get("/v1/models"));

    // On again, then another model opened: serving stops (it was the previous model).
    toggle->click();
    QTRY_VERIFY_WITH_TIMEOUT(box->serving(), 120000);
    window.chat_pane()->set_model_dir(tmp.path());
    QVERIFY(!toggle->isChecked());
    QVERIFY(!box->serving());
  }
};

QTEST_MAIN(TestChatServe)
#include "test_chat_serve.moc"
