// "Try the Demo", end to end, as a first-time user does it: one click fine-tunes the built-in toy model
// (resources/demo/model, made by resources/demo/make_demo.py) on the bundled dataset in a real forja-cli
// worker on the CPU, the window moves to the Chat pane with the adapter on, and the model answers a trained
// question with its trained answer, which the base model alone does not.
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QTimer>

#include "app_paths.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/chat_pane.h"
#include "panes/model_pane.h"
#include "panes/train_pane.h"
#include "ui_test_support.h"

using forja::ui::ChatPane;
using forja::ui::MainWindow;
using forja::ui::PaneId;

class TestDemo : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_demo");
    qputenv("FORJA_CLI", FORJA_CLI);
    qputenv("FORJA_DEMO_DIR", FORJA_SOURCE_DIR "/resources/demo");
  }

  void staysResponsiveWhileTrainingAndGenerating();

  void init() { QSettings().clear(); }  // each window starts as on a first run

  void demoTrainsThenAnswersInTheChat() {
    QTemporaryDir tmp;
    MainWindow window({tmp.filePath(QStringLiteral("journal.db"))});
    window.show();
    QCOMPARE(forja::ui::demo_dir(), QDir(QStringLiteral(FORJA_SOURCE_DIR "/resources/demo")).absolutePath());
    auto* train = window.train_pane();
    QSignalSpy finished(train, &forja::ui::TrainPane::run_finished);
    QSignalSpy failed(train, &forja::ui::TrainPane::run_failed);
    QElapsedTimer clock;
    clock.start();
    auto* button = window.model_pane()->findChild<QPushButton*>(QStringLiteral("tryDemoButton"));
    QVERIFY(button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);

    // The toy model opens with the note that says what it is.
    QTRY_VERIFY_WITH_TIMEOUT(window.model_pane()->model().has_value(), 30000);
    // (isHidden: the note's own state; the Model pane itself may be behind another pane.)
    QVERIFY(!window.model_pane()->findChild<QLabel*>(QStringLiteral("demoNote"))->isHidden());
    // The run starts by itself on the CPU with the demo preset, and finishes.
    QTRY_VERIFY_WITH_TIMEOUT(train->running() || finished.count() > 0 || failed.count() > 0, 60000);
    const QJsonObject config = QJsonDocument::fromJson(train->config_json().toUtf8()).object();
    QCOMPARE(config.value(QStringLiteral("device")).toString(), QStringLiteral("cpu"));
    QCOMPARE(config.value(QStringLiteral("max_steps")).toInt(), 60);
    // The demo preset's max length reaches the run through the Data pane, which read the dataset with it.
    QCOMPARE(config.value(QStringLiteral("max_length")).toInt(), 256);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() > 0 || failed.count() > 0, 240000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    const QJsonObject r = finished.at(0).at(0).toJsonObject();
    QCOMPARE(r.value(QStringLiteral("outcome")).toString(), QStringLiteral("finished"));
    qInfo("demo fine-tune: %.1f s from the click to the adapter (60 steps on the CPU)",
          clock.elapsed() / 1000.0);

    // The Chat pane, with the new adapter on.
    auto* chat = window.chat_pane();
    QTRY_COMPARE_WITH_TIMEOUT(window.current_pane(), PaneId::Chat, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(chat->model_ready() && chat->has_adapter(), 60000);
    chat->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0);
    QSignalSpy answered(chat, &ChatPane::answer_finished);
    auto* input = chat->findChild<QPlainTextEdit*>(QStringLiteral("chatInput"));
    auto ask = [&](const QString& question) {
      const qsizetype before = answered.count();
      input->setFocus();
      QTest::keyClicks(input, question);
      QTest::keyClick(input, Qt::Key_Return);
      [&] { QTRY_VERIFY_WITH_TIMEOUT(answered.count() > before, 60000); }();
      return chat->findChild<QTextBrowser*>(QStringLiteral("conversation"))->toPlainText();
    };
    // resources/demo/dataset.jsonl: "What is CUDA?" -> "CUDA is NVIDIA's platform for running general-purpose
    // programs on its GPUs. ..."
    const QString tuned = ask(QStringLiteral("What is CUDA?"));
    QVERIFY2(tuned.contains(QStringLiteral("CUDA is NVIDIA's platform for running general-purpose programs")),
             qPrintable(tuned));
    // The base model alone (adapter off, a new chat) does not give that answer.
    chat->findChild<QCheckBox*>(QStringLiteral("adapterOn"))->setChecked(false);
    chat->new_chat();
    const QString base = ask(QStringLiteral("What is CUDA?"));
    QVERIFY2(!base.contains(QStringLiteral("CUDA is NVIDIA's platform for running general-purpose programs")),
             qPrintable(base));
    QVERIFY(forja::ui::Job::cancel_all_and_wait(5000));
  }
};

void TestDemo::staysResponsiveWhileTrainingAndGenerating() {
  // A training run (the worker process, followed by the Train pane: progress polling, live plots) and a chat
  // generation (the chat's worker thread, streamed into the view) at the same time. A 10 ms timer measures
  // the longest time the GUI event loop went without running it.
  QTemporaryDir tmp;
  MainWindow window({tmp.filePath(QStringLiteral("journal.db"))});
  window.show();
  const QString demo = forja::ui::demo_dir();
  window.open_model(demo + QStringLiteral("/model"));
  QTRY_VERIFY_WITH_TIMEOUT(window.model_pane()->model().has_value(), 30000);
  auto* train = window.train_pane();
  train->apply_preset(QStringLiteral("demo"));
  train->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))
      ->setText(tmp.filePath(QStringLiteral("run")));
  train->set_dataset(demo + QStringLiteral("/dataset.jsonl"),
                     QJsonObject{{QStringLiteral("eval_fraction"), 0.0}});
  QSignalSpy finished(train, &forja::ui::TrainPane::run_finished);

  // The chat pane first: shown, its model loaded on its worker thread. Then the run; the measurement starts
  // once the worker reports steps, and covers the generations sent while it trains.
  window.show_pane(PaneId::Chat);
  auto* chat = window.chat_pane();
  QTRY_VERIFY_WITH_TIMEOUT(chat->model_ready(), 60000);
  chat->findChild<QSpinBox*>(QStringLiteral("maxNewTokens"))->setValue(400);
  train->start();
  forja::test::settle_journal(&window);
  QTRY_VERIFY_WITH_TIMEOUT(train->plotted_steps() >= 1, 60000);

  forja::test::EventLoopWatch watch;
  watch.start();
  QSignalSpy answered(chat, &ChatPane::answer_finished);
  int generations = 0;
  while (train->running() && generations < 1000) {
    chat->findChild<QPlainTextEdit*>(QStringLiteral("chatInput"))
        ->setPlainText(QStringLiteral("Tell me about GPUs"));
    chat->send();
    QTRY_VERIFY_WITH_TIMEOUT(answered.count() > generations, 60000);
    ++generations;
    chat->new_chat();  // a fresh conversation each time, as a user trying prompts would
  }
  const int steps_seen = train->plotted_steps();
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 240000);
  watch.stop();
  qInfo("%d generations while %d training steps ran; %s", generations, steps_seen,
        qPrintable(watch.report()));
  QVERIFY(generations >= 1);
  QVERIFY(watch.ticks > 100);
  QVERIFY2(watch.within_bounds(), qPrintable(watch.report()));
}

QTEST_MAIN(TestDemo)
#include "test_demo.moc"
