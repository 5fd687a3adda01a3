// Tests of the Train pane with a real worker process: forja-cli train runs a few LoRA steps on the CPU on a
// fixture model, the plots receive every step, the adapter appears; a SIGKILLed worker shows as interrupted
// and Resume continues from its last checkpoint; a worker that cannot run says why.
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
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
#include <QTreeWidget>

#include "app_paths.h"
#include "error_box.h"
#include "forja/config_reference.h"
#if FORJA_TEST_HAS_DIST
#include "forja/dist.h"
#endif
#include "forja/journal.h"
#include "forja/model_info.h"
#include "forja/train.h"
#include "format.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/data_pane.h"
#include "panes/runs_pane.h"
#include "panes/train_pane.h"
#include "plot.h"
#include "train_worker.h"
#include "ui_test_support.h"

using forja::ui::MainWindow;
using forja::ui::PaneId;
using forja::ui::TrainPane;

namespace {

// tests/fixtures/models/smollm: a 2-layer Llama with a 320-token vocabulary (make_fixtures.py).
const QString kModel = QStringLiteral(FORJA_FIXTURES_DIR "/models/smollm");

// A pre-tokenized dataset: 16 rows of 24 ids below the fixture's vocabulary size, as forja-cli train reads
// it.
QString write_dataset(const QString& dir) {
  const QString path = dir + QStringLiteral("/data.jsonl");
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  for (int r = 0; r < 16; ++r) {
    QByteArray ids;
    for (int t = 0; t < 24; ++t) ids += (t ? "," : "") + QByteArray::number((r * 7 + t * 13) % 300 + 10);
    f.write("{\"input_ids\": [" + ids + "]}\n");
  }
  return path;
}

}  // namespace

class TestTrainPane : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    forja::test::init_ui_test_environment("test_train_pane");
    qputenv("FORJA_CLI", FORJA_CLI);
  }
  void init();
  void cleanup();
  void trainsAndPlotsEveryStep();
  void killedWorkerIsInterruptedThenResumes();
  void missingWorkerSaysWhy();
  void dataSettingsGoIntoTheConfig();
  void windowRestartFollowsTheRunningWorker();
  void memoryEstimateFollowsTheSettings();
  void twoWorkersTrainOneRun();
  void formShowsARunsWholeConfig();
  void presetsChangeOnlyTheirSettings();
  void newRunFoldersFollowTheEngineRule();
  void rerunOfAFinishedRunKeepsItsHistory();
  void loraTargetsFollowTheModel();

 private:
  void configure(int steps, int checkpoint_every);
  QTemporaryDir* tmp_ = nullptr;
  MainWindow* window_ = nullptr;
  TrainPane* pane_ = nullptr;
};

void TestTrainPane::init() {
  QSettings().clear();
  tmp_ = new QTemporaryDir;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  forja::test::settle_journal(window_);  // the journal is open and the latest run restored
  pane_ = window_->train_pane();
  window_->show_pane(PaneId::Train);
}

void TestTrainPane::cleanup() {
  pane_->stop();
  QVERIFY(forja::ui::Job::cancel_all_and_wait(5000));
  delete window_;
  delete tmp_;
}

void TestTrainPane::configure(int steps, int checkpoint_every) {
  pane_->set_model_dir(kModel);
  pane_->set_dataset(write_dataset(tmp_->path()));
  pane_->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))
      ->setText(tmp_->filePath(QStringLiteral("run")));
  pane_->findChild<QSpinBox*>(QStringLiteral("trainSteps"))->setValue(steps);
  pane_->findChild<QSpinBox*>(QStringLiteral("trainCheckpointEvery"))->setValue(checkpoint_every);
  pane_->findChild<QSpinBox*>(QStringLiteral("trainEvalEvery"))->setValue(0);
  pane_->findChild<QSpinBox*>(QStringLiteral("trainBatch"))->setValue(2);
  pane_->findChild<QSpinBox*>(QStringLiteral("trainMaxLength"))->setValue(32);
  pane_->findChild<QComboBox*>(QStringLiteral("trainDevice"))->setCurrentText(QStringLiteral("cpu"));
}

void TestTrainPane::trainsAndPlotsEveryStep() {
  configure(6, 3);
  // Before the first step: no bare axes, a line saying when the curves come.
  auto* loss = pane_->findChild<QCustomPlot*>(QStringLiteral("trainLossPlot"));
  QVERIFY(loss->findChild<QCPItemText*>(QStringLiteral("emptyPlotText"))->visible());
  QVERIFY(!loss->xAxis->tickLabels());
  QCOMPARE(loss->legend->itemCount(), 0);
  pane_->findChild<QLineEdit*>(QStringLiteral("trainRunName"))->setText(QStringLiteral("Seis passos"));
  pane_->findChild<QLineEdit*>(QStringLiteral("trainNotes"))
      ->setText(QStringLiteral("a first try, on the CPU"));
  const QJsonObject cfg = QJsonDocument::fromJson(pane_->config_json().toUtf8()).object();
  QCOMPARE(cfg.value(QStringLiteral("max_steps")).toInt(), 6);
  QSignalSpy finished(pane_, &TrainPane::run_finished);
  QTest::mouseClick(pane_->findChild<QPushButton*>(QStringLiteral("trainStart")), Qt::LeftButton);
  forja::test::settle_journal(window_);
  QVERIFY(pane_->running());
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
  const QJsonObject r = finished.at(0).at(0).toJsonObject();
  QCOMPARE(r.value(QStringLiteral("outcome")).toString(), QStringLiteral("finished"));
  QCOMPARE(r.value(QStringLiteral("steps")).toInt(), 6);
  QCOMPARE(pane_->plotted_steps(), 6);
  {
    // The run is journalled under the name and notes the form gave it.
    forja::Journal journal(tmp_->filePath(QStringLiteral("journal.db")).toStdString());
    QCOMPARE(journal.runs().front().name, std::string("Seis passos"));
    QCOMPARE(journal.runs().front().notes, std::string("a first try, on the CPU"));
  }
  // The speed plot shows the worker's real-token rate, and beside it the rate of positions with padding; the
  // progress lines count real, trained and padded positions apart.
  {
    QFile lines(tmp_->filePath(QStringLiteral("run/progress.jsonl")));
    QVERIFY(lines.open(QIODevice::ReadOnly));
    auto* speed = pane_->findChild<QCustomPlot*>(QStringLiteral("trainSpeedPlot"));
    QVERIFY(speed && speed->graphCount() == 3);
    QCOMPARE(speed->graph(0)->dataCount(), 6);
    QCOMPARE(speed->graph(2)->dataCount(), 6);
    // On the CPU there is no GPU memory: no such curve, nor its axis or legend entry; no eval ran, so the
    // loss plot has the train curve alone and needs no legend.
    QCOMPARE(speed->graph(1)->dataCount(), 0);
    QVERIFY(!speed->yAxis2->visible());
    QCOMPARE(speed->legend->itemCount(), 2);
    QCOMPARE(loss->legend->itemCount(), 1);
    QVERIFY(!loss->legend->visible());
    QVERIFY(!loss->findChild<QCPItemText*>(QStringLiteral("emptyPlotText"))->visible());
    QVERIFY(loss->xAxis->tickLabels());
    int steps = 0;
    while (!lines.atEnd()) {
      const QJsonObject j = QJsonDocument::fromJson(lines.readLine()).object();
      if (j.value(QStringLiteral("event")).toString() != QStringLiteral("step")) continue;
      const qint64 tokens = j.value(QStringLiteral("tokens")).toInteger();
      const qint64 trained = j.value(QStringLiteral("trained_tokens")).toInteger();
      const qint64 positions = j.value(QStringLiteral("positions")).toInteger();
      QVERIFY2(
          trained > 0 && trained < tokens && tokens <= positions,
          qPrintable(
              QStringLiteral("%1 trained, %2 tokens, %3 positions").arg(trained).arg(tokens).arg(positions)));
      const double key = j.value(QStringLiteral("step")).toDouble();
      QCOMPARE(speed->graph(0)->data()->findBegin(key, false)->value,
               j.value(QStringLiteral("tokens_per_s")).toDouble());
      QCOMPARE(speed->graph(2)->data()->findBegin(key, false)->value,
               j.value(QStringLiteral("positions_per_s")).toDouble());
      ++steps;
    }
    QCOMPARE(steps, 6);
  }
  const QString adapter = r.value(QStringLiteral("adapter")).toString();
  QVERIFY2(QFile::exists(adapter + QStringLiteral("/adapter_model.safetensors")), qPrintable(adapter));
  QVERIFY(QFile::exists(adapter + QStringLiteral("/adapter_config.json")));
  QVERIFY(!pane_->running());
  // The worker wrote the run into the window's journal: the Runs pane lists it, completed, with its adapter.
  window_->show_pane(PaneId::Runs);
  auto* runs = window_->runs_pane()->findChild<QTreeWidget*>(QStringLiteral("runList"));
  QTRY_COMPARE_WITH_TIMEOUT(runs->topLevelItemCount(), 1, 5000);
  QTRY_COMPARE_WITH_TIMEOUT(runs->topLevelItem(0)->text(1), QStringLiteral("completed"), 5000);
  QCOMPARE(runs->topLevelItem(0)->text(7), adapter);
  runs->setCurrentItem(runs->topLevelItem(0));
  const QString details =
      window_->runs_pane()->findChild<QPlainTextEdit*>(QStringLiteral("runDetails"))->toPlainText();
  QVERIFY2(details.contains(QStringLiteral("Steps: 6 of 6")), qPrintable(details));
  // "Chat with Adapter" hands the run's model and adapter to the Chat pane, which comes to the front.
  QSignalSpy chat(window_->runs_pane(), &forja::ui::RunsPane::chat_requested);
  auto* chat_button = window_->runs_pane()->findChild<QPushButton*>(QStringLiteral("chatWithRunButton"));
  QVERIFY(chat_button->isEnabled());
  QTest::mouseClick(chat_button, Qt::LeftButton);
  QCOMPARE(chat.count(), 1);
  QCOMPARE(chat.at(0).at(0).toString(), kModel);
  QCOMPARE(chat.at(0).at(1).toString(), adapter);
  QCOMPARE(window_->current_pane(), PaneId::Chat);

  // Export (what the button's menu does after its file dialog): the merged model as a Hugging Face folder,
  // written by forja-cli in the background while the window goes on.
  window_->show_pane(PaneId::Runs);
  auto* runs_pane = window_->runs_pane();
  auto* export_button = runs_pane->findChild<QPushButton*>(QStringLiteral("exportRunButton"));
  QVERIFY(export_button->isEnabled());
  QSignalSpy exported(runs_pane, &forja::ui::RunsPane::export_finished);
  const QString folder = tmp_->filePath(QStringLiteral("merged"));
  runs_pane->export_selected(QStringLiteral("hf"), folder);
  QVERIFY(runs_pane->exporting());
  QVERIFY(!export_button->isEnabled());
  QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 120000);
  QCOMPARE(exported.at(0).at(0).toBool(), true);
  QVERIFY(QFile::exists(folder + QStringLiteral("/model.safetensors")));
  QVERIFY(QFile::exists(folder + QStringLiteral("/config.json")));
  QVERIFY(export_button->isEnabled());
  QVERIFY(runs_pane->findChild<QLabel*>(QStringLiteral("exportStatus"))->text().contains(folder));
  // A GGUF file needs the model's tokenizer, which this fixture folder lacks: the exporter's own message
  // shows.
  runs_pane->export_selected(QStringLiteral("gguf"), tmp_->filePath(QStringLiteral("model.gguf")));
  QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 2, 120000);
  QCOMPARE(exported.at(1).at(0).toBool(), false);
  auto* box = runs_pane->findChild<forja::ui::ErrorBox*>(QStringLiteral("runsError"));
  QVERIFY(box->isVisible());
  QVERIFY2(box->message().contains(QStringLiteral("no tokenizer.json or tokenizer.model")),
           qPrintable(box->message()));
  runs_pane->refresh();  // the pane's polling keeps the export's error in view
  forja::test::settle_journal(window_);
  QVERIFY(box->isVisible());
  QVERIFY(!QFile::exists(tmp_->filePath(QStringLiteral("model.gguf"))));
}

// Two data-parallel workers on the CPU (forja-cli train --nproc 2, Gloo): one run, its steps plotted, the
// adapter written once by rank 0, the journal's row completed. "auto" with several workers asks for a device
// first.
void TestTrainPane::twoWorkersTrainOneRun() {
  configure(4, 0);
  auto* workers = pane_->findChild<QSpinBox*>(QStringLiteral("trainWorkers"));
  workers->setValue(2);
  pane_->findChild<QComboBox*>(QStringLiteral("trainDevice"))->setCurrentText(QStringLiteral("auto"));
  auto* start = pane_->findChild<QPushButton*>(QStringLiteral("trainStart"));
  QTest::mouseClick(start, Qt::LeftButton);
  forja::test::settle_journal(window_);
  QVERIFY(!pane_->running());
  auto* box = pane_->findChild<forja::ui::ErrorBox*>();
  QVERIFY(box && box->isVisible() && box->message().contains(QStringLiteral("cuda")));

#if FORJA_TEST_HAS_DIST
  if (!forja::dist::has_gloo())
#endif
    QSKIP("this build has no Gloo process group (the PyTorch wheel's LibTorch ships none): no ranks on CPUs");
  pane_->findChild<QComboBox*>(QStringLiteral("trainDevice"))->setCurrentText(QStringLiteral("cpu"));
  QSignalSpy finished(pane_, &TrainPane::run_finished);
  QSignalSpy failed(pane_, &TrainPane::run_failed);
  QTest::mouseClick(start, Qt::LeftButton);
  forja::test::settle_journal(window_);
  QVERIFY(pane_->running());
  QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() > 0, 120000);
  QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
  const QJsonObject r = finished.at(0).at(0).toJsonObject();
  QCOMPARE(r.value(QStringLiteral("outcome")).toString(), QStringLiteral("finished"));
  QCOMPARE(r.value(QStringLiteral("steps")).toInt(), 4);
  QCOMPARE(pane_->plotted_steps(), 4);
  QVERIFY(QFile::exists(r.value(QStringLiteral("adapter")).toString() +
                        QStringLiteral("/adapter_model.safetensors")));
  // The launcher started two ranks (its messages are in the worker's log).
  QFile log(tmp_->filePath(QStringLiteral("run/worker.log")));
  QVERIFY(log.open(QIODevice::ReadOnly));
  const QByteArray text = log.readAll();
  QVERIFY2(text.contains("rank 0 is pid") && text.contains("rank 1 is pid"), text.constData());
  window_->show_pane(PaneId::Runs);
  auto* runs = window_->runs_pane()->findChild<QTreeWidget*>(QStringLiteral("runList"));
  QTRY_COMPARE_WITH_TIMEOUT(runs->topLevelItemCount(), 1, 5000);
  QTRY_COMPARE_WITH_TIMEOUT(runs->topLevelItem(0)->text(1), QStringLiteral("completed"), 5000);
}

void TestTrainPane::windowRestartFollowsTheRunningWorker() {
  // Closing the window leaves the run going; the next window finds it in the journal, replays its curve and
  // follows it to the end.
  configure(120, 40);
  pane_->start();
  forja::test::settle_journal(window_);
  QTRY_VERIFY_WITH_TIMEOUT(pane_->plotted_steps() >= 3, 120000);
  const qint64 pid = pane_->worker()->pid();
  window_->close();
  delete window_;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  forja::test::settle_journal(window_);  // the journal is open and the latest run restored
  pane_ = window_->train_pane();
  QVERIFY(pane_->running());
  QCOMPARE(pane_->worker()->pid(), pid);
  QCOMPARE(pane_->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))->text(),
           tmp_->filePath(QStringLiteral("run")));
  QCOMPARE(pane_->findChild<QSpinBox*>(QStringLiteral("trainSteps"))->value(), 120);
  QSignalSpy finished(pane_, &TrainPane::run_finished);
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
  QCOMPARE(pane_->plotted_steps(), 120);  // the steps before the restart were replayed from the progress file
  forja::Journal journal(tmp_->filePath(QStringLiteral("journal.db")).toStdString());
  QCOMPARE(journal.runs().front().status, forja::RunStatus::Completed);
}

void TestTrainPane::memoryEstimateFollowsTheSettings() {
  auto* estimate = pane_->findChild<QLabel*>(QStringLiteral("trainMemoryEstimate"));
  QVERIFY(estimate->text().contains(QStringLiteral("open a model")));
  window_->open_model(kModel);
  QTRY_VERIFY_WITH_TIMEOUT(estimate->text().startsWith(QStringLiteral("Estimated GPU memory: about")), 30000);
  const QString small = estimate->text();
  pane_->findChild<QSpinBox*>(QStringLiteral("trainBatch"))->setValue(64);
  QVERIFY(estimate->text() != small);  // more rows, more activations
  // Selective checkpointing keeps less, and goes into the config.
  const QString plain = estimate->text();
  auto* selective = pane_->findChild<QCheckBox*>(QStringLiteral("trainSelective"));
  selective->setChecked(true);
  QVERIFY(estimate->text() != plain);
  QVERIFY(QJsonDocument::fromJson(pane_->config_json().toUtf8())
              .object()
              .value(QStringLiteral("selective_checkpointing"))
              .toBool());
  selective->setChecked(false);
  QCOMPARE(estimate->text(), plain);
  pane_->findChild<QCheckBox*>(QStringLiteral("trainCheckpointing"))->setChecked(true);
  QVERIFY(estimate->text() != small);
  // The 4-bit base (QLoRA) shrinks the weights, and goes into the config as base_quant.
  const QString checkpointed = estimate->text();
  auto* base_4bit = pane_->findChild<QCheckBox*>(QStringLiteral("trainBase4bit"));
  base_4bit->setChecked(true);
  QVERIFY(estimate->text() != checkpointed);
  QCOMPARE(QJsonDocument::fromJson(pane_->config_json().toUtf8())
               .object()
               .value(QStringLiteral("base_quant"))
               .toString(),
           QStringLiteral("nf4"));
  base_4bit->setChecked(false);
  QCOMPARE(estimate->text(), checkpointed);
  QCOMPARE(QJsonDocument::fromJson(pane_->config_json().toUtf8())
               .object()
               .value(QStringLiteral("base_quant"))
               .toString(),
           QStringLiteral("none"));
}

void TestTrainPane::dataSettingsGoIntoTheConfig() {
  pane_->set_model_dir(kModel);
  pane_->set_dataset(QStringLiteral("/data/chats.jsonl"),
                     QJsonObject{{QStringLiteral("data_format"), QStringLiteral("sharegpt")},
                                 {QStringLiteral("max_length"), 384},
                                 {QStringLiteral("eval_fraction"), 0.2},
                                 {QStringLiteral("on_bad_record"), QStringLiteral("skip")},
                                 {QStringLiteral("train_on_prompt"), true}});
  pane_->findChild<QCheckBox*>(QStringLiteral("trainPacking"))->setChecked(true);
  const QJsonObject cfg = QJsonDocument::fromJson(pane_->config_json().toUtf8()).object();
  QCOMPARE(cfg.value(QStringLiteral("train_file")).toString(), QStringLiteral("/data/chats.jsonl"));
  QCOMPARE(cfg.value(QStringLiteral("data_format")).toString(), QStringLiteral("sharegpt"));
  QCOMPARE(cfg.value(QStringLiteral("max_length")).toInt(), 384);
  QCOMPARE(pane_->findChild<QSpinBox*>(QStringLiteral("trainMaxLength"))->value(), 384);
  QCOMPARE(cfg.value(QStringLiteral("eval_fraction")).toDouble(), 0.2);
  QCOMPARE(cfg.value(QStringLiteral("on_bad_record")).toString(), QStringLiteral("skip"));
  QVERIFY(cfg.value(QStringLiteral("train_on_prompt")).toBool());
  QVERIFY(cfg.value(QStringLiteral("packing")).toBool());
}

void TestTrainPane::killedWorkerIsInterruptedThenResumes() {
  configure(200, 5);
  QSignalSpy died(pane_, &TrainPane::run_failed);
  pane_->start();
  forja::test::settle_journal(window_);
  // Past a checkpoint (every 5 steps), then SIGKILL: no chance to write anything more.
  QTRY_VERIFY_WITH_TIMEOUT(pane_->plotted_steps() >= 6, 120000);
  pane_->stop();
  QTRY_COMPARE_WITH_TIMEOUT(died.count(), 1, 10000);
  QVERIFY(pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("trainError"))->isVisible());
  auto* start = pane_->findChild<QPushButton*>(QStringLiteral("trainStart"));
  QCOMPARE(start->text(), QStringLiteral("Resume"));
  // The journal says interrupted, and so does the Runs pane.
  forja::Journal journal(tmp_->filePath(QStringLiteral("journal.db")).toStdString());
  QCOMPARE(journal.runs().size(), size_t(1));
  const int64_t run_id = journal.runs().front().id;
  QCOMPARE(journal.runs().front().status, forja::RunStatus::Interrupted);
  QVERIFY(journal.runs().front().last_step >= 6);
  auto* runs = window_->runs_pane()->findChild<QTreeWidget*>(QStringLiteral("runList"));
  window_->runs_pane()->refresh();
  forja::test::settle_journal(window_);
  QCOMPARE(runs->topLevelItemCount(), 1);
  QCOMPARE(runs->topLevelItem(0)->text(1), QStringLiteral("interrupted"));
  // A new window (the app restarted) offers the interrupted run: its settings, its curve so far, Resume.
  delete window_;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  forja::test::settle_journal(window_);  // the journal is open and the latest run restored
  window_->show_pane(PaneId::Train);
  pane_ = window_->train_pane();
  // The replay ends at once (it ran as soon as the journal named the run): no worker behind it, so it reads
  // as interrupted.
  QVERIFY(!pane_->running());
  QVERIFY(pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("trainError"))->isVisible());
  QVERIFY(pane_->plotted_steps() >= 6);
  QCOMPARE(pane_->findChild<QSpinBox*>(QStringLiteral("trainSteps"))->value(), 200);
  start = pane_->findChild<QPushButton*>(QStringLiteral("trainStart"));
  QCOMPARE(start->text(), QStringLiteral("Resume"));
  runs = window_->runs_pane()->findChild<QTreeWidget*>(QStringLiteral("runList"));
  // Resume: the same config and output folder continue from the last checkpoint.
  QSignalSpy finished(pane_, &TrainPane::run_finished);
  QSignalSpy failed(pane_, &TrainPane::run_failed);
  auto* error = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("trainError"));
  const auto what_the_pane_says = [&] {
    return QStringLiteral("%1 %2\n%3")
        .arg(error->message(), error->hint(),
             pane_->findChild<QPlainTextEdit*>(QStringLiteral("trainLog"))->toPlainText());
  };
  // A click on a disabled button does nothing at all.
  QVERIFY2(start->isEnabled(), qPrintable(what_the_pane_says()));
  QTest::mouseClick(start, Qt::LeftButton);
  forja::test::settle_journal(window_);
  // A resume that never gets going says why (what the pane shows) rather than running into the long wait.
  QTRY_VERIFY2_WITH_TIMEOUT(pane_->running() || !finished.isEmpty() || !failed.isEmpty(),
                            qPrintable(what_the_pane_says()), 30000);
  QTRY_VERIFY2_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), qPrintable(what_the_pane_says()),
                            120000);
  QVERIFY2(failed.isEmpty(), qPrintable(what_the_pane_says()));
  const QJsonObject r = finished.at(0).at(0).toJsonObject();
  QVERIFY2(r.value(QStringLiteral("resumed_from_step")).toInt() >= 5,
           qPrintable(QJsonDocument(r).toJson(QJsonDocument::Compact)));
  QCOMPARE(r.value(QStringLiteral("steps")).toInt(), 200);
  // The resume continued the same journal row: completed, every step's metrics, the file intact.
  QCOMPARE(journal.runs().size(), size_t(1));
  const auto done = *journal.run(run_id);
  QCOMPARE(done.status, forja::RunStatus::Completed);
  QCOMPARE(journal.metrics(run_id).size(), size_t(200));
  QCOMPARE(QString::fromStdString(done.adapter_path), r.value(QStringLiteral("adapter")).toString());
  QCOMPARE(journal.integrity_check(), std::string("ok"));
  window_->runs_pane()->refresh();
  forja::test::settle_journal(window_);
  QCOMPARE(runs->topLevelItem(0)->text(1), QStringLiteral("completed"));
}

void TestTrainPane::newRunFoldersFollowTheEngineRule() {
  // The window proposes the folder forja::new_run_dir names, in the runs folder forja-cli uses for a config
  // without output_dir: <runs>/<model folder>-<yyyyMMdd-HHmmss>.
  pane_->set_model_dir(QStringLiteral("/models/TinyLlama"));
  const QString out = pane_->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))->text();
  QCOMPARE(QFileInfo(out).absolutePath(), QDir(forja::ui::default_runs_dir()).absolutePath());
  QVERIFY2(QFileInfo(out).fileName().startsWith(QStringLiteral("TinyLlama-")), qPrintable(out));
  QCOMPARE(QFileInfo(out).fileName().size(), QStringLiteral("TinyLlama-yyyyMMdd-HHmmss").size());
  // A folder of that name already there gets the next free one, never the old run's.
  QVERIFY(QDir().mkpath(out));
  pane_->set_model_dir(QStringLiteral("/models/TinyLlama"));
  const QString next = pane_->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))->text();
  QVERIFY2(next != out && QFileInfo(next).fileName().startsWith(QStringLiteral("TinyLlama-")),
           qPrintable(next));
  QDir(out).removeRecursively();
}

void TestTrainPane::rerunOfAFinishedRunKeepsItsHistory() {
  // Start on the folder of a run that completed: nothing runs and the journal row stays as it was; "Train
  // again as a new run" trains a second run in a new folder. The Runs pane shows running time and writes
  // the first run's metrics as CSV, the journal's rows exactly.
  configure(3, 3);
  QSignalSpy finished(pane_, &TrainPane::run_finished);
  auto* start = pane_->findChild<QPushButton*>(QStringLiteral("trainStart"));
  QTest::mouseClick(start, Qt::LeftButton);
  forja::test::settle_journal(window_);
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
  forja::Journal journal(tmp_->filePath(QStringLiteral("journal.db")).toStdString());
  QCOMPARE(journal.runs().size(), size_t(1));
  const forja::RunRecord first = journal.runs().front();
  QCOMPARE(first.status, forja::RunStatus::Completed);
  QCOMPARE(journal.metrics(first.id).size(), size_t(3));

  QVERIFY(start->isEnabled());
  QTest::mouseClick(start, Qt::LeftButton);
  forja::test::settle_journal(window_);
  QVERIFY(!pane_->running());
  const auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("trainError"));
  QVERIFY2(box->message().contains(QStringLiteral("already completed")), qPrintable(box->message()));
  auto* again = pane_->findChild<QPushButton*>(QStringLiteral("trainAgainButton"));
  QVERIFY(again->isVisibleTo(pane_));
  const forja::RunRecord kept = *journal.run(first.id);
  QCOMPARE(kept.ended_at_ms, first.ended_at_ms);
  QCOMPARE(kept.final_loss, first.final_loss);
  QCOMPARE(kept.active_ms, first.active_ms);
  QCOMPARE(journal.metrics(first.id).size(), size_t(3));

  QTest::mouseClick(again, Qt::LeftButton);
  forja::test::settle_journal(window_);
  QVERIFY(pane_->running());
  QVERIFY(!again->isVisibleTo(pane_));
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
  QCOMPARE(finished.at(1).at(0).toJsonObject().value(QStringLiteral("outcome")).toString(),
           QStringLiteral("finished"));
  const auto runs = journal.runs();
  QCOMPARE(runs.size(), size_t(2));
  const forja::RunRecord second = runs.front();  // newest first
  QVERIFY(second.id != first.id);
  QCOMPARE(second.status, forja::RunStatus::Completed);
  const QString second_dir = QFileInfo(QString::fromStdString(second.adapter_path)).absolutePath();
  QCOMPARE(QFileInfo(second_dir).absolutePath(), QDir(forja::ui::default_runs_dir()).absolutePath());
  QVERIFY(second.adapter_path != first.adapter_path);
  const forja::RunRecord untouched = *journal.run(first.id);
  QCOMPARE(untouched.ended_at_ms, first.ended_at_ms);
  QCOMPARE(untouched.final_loss, first.final_loss);
  QCOMPARE(journal.metrics(first.id).size(), size_t(3));

  window_->show_pane(PaneId::Runs);
  auto* runs_pane = window_->runs_pane();
  runs_pane->refresh();
  forja::test::settle_journal(window_);
  auto* list = runs_pane->findChild<QTreeWidget*>(QStringLiteral("runList"));
  QCOMPARE(list->topLevelItemCount(), 2);
  QTreeWidgetItem* first_item = list->topLevelItem(1);
  QCOMPARE(first_item->text(forja::ui::RunsPane::DurationCol),
           forja::ui::format_duration_ms(first.active_ms));
  list->setCurrentItem(first_item);
  QVERIFY(runs_pane->findChild<QPushButton*>(QStringLiteral("exportMetricsButton"))->isEnabled());
  QSignalSpy exported(runs_pane, &forja::ui::RunsPane::metrics_exported);
  const QString csv = tmp_->filePath(QStringLiteral("metrics.csv"));
  runs_pane->export_metrics_csv(csv);
  QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 30000);
  QVERIFY(exported.at(0).at(0).toBool());
  QFile f(csv);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray text = f.readAll();
  QCOMPARE(text.toStdString(), forja::metrics_csv(journal.metrics(first.id)));
  QCOMPARE(text.count('\n'), 4);  // the header and the three steps
  QVERIFY(text.startsWith("step,time_ms,loss,"));
  QDir(second_dir).removeRecursively();
}

void TestTrainPane::loraTargetsFollowTheModel() {
  // A GPT-2 model gets GPT-2's projections (q_proj would match nothing and the run would fail); targets that
  // are the model's own stay as the user set them; a Llama-family model gets its seven back.
  auto* targets = pane_->findChild<QLineEdit*>(QStringLiteral("trainTargets"));
  QVERIFY(targets != nullptr);
  auto config_targets = [&] {
    QStringList out;
    const QJsonObject cfg = QJsonDocument::fromJson(pane_->config_json().toUtf8()).object();
    for (const auto& v :
         cfg.value(QStringLiteral("lora")).toObject().value(QStringLiteral("target_modules")).toArray())
      out << v.toString();
    return out;
  };
  const QString fixtures = QStringLiteral(FORJA_FIXTURES_DIR "/models/");
  const forja::ModelInfo gpt2 = forja::inspect_model((fixtures + QStringLiteral("gpt2")).toStdString());
  pane_->set_model_info(gpt2);
  QCOMPARE(targets->text(), QStringLiteral("c_attn, c_proj, c_fc"));
  QCOMPARE(config_targets(),
           (QStringList{QStringLiteral("c_attn"), QStringLiteral("c_proj"), QStringLiteral("c_fc")}));
  QVERIFY(targets->toolTip().contains(QStringLiteral("c_attn, c_proj, c_fc")));
  targets->setText(QStringLiteral(" c_attn ,, c_fc"));
  pane_->set_model_info(gpt2);
  QCOMPARE(config_targets(), (QStringList{QStringLiteral("c_attn"), QStringLiteral("c_fc")}));
  pane_->set_model_info(forja::inspect_model((fixtures + QStringLiteral("qwen3")).toStdString()));
  QCOMPARE(config_targets().size(), 7);
  QCOMPARE(config_targets().front(), QStringLiteral("q_proj"));
  QCOMPARE(config_targets().back(), QStringLiteral("down_proj"));
}

void TestTrainPane::missingWorkerSaysWhy() {
  configure(4, 2);
  pane_->set_model_dir(tmp_->filePath(QStringLiteral("no-such-model")));
  pane_->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))
      ->setText(tmp_->filePath(QStringLiteral("run2")));
  QSignalSpy died(pane_, &TrainPane::run_failed);
  pane_->start();
  forja::test::settle_journal(window_);
  QTRY_COMPARE_WITH_TIMEOUT(died.count(), 1, 60000);
  const auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("trainError"));
  QVERIFY2(box->hint().contains(QStringLiteral("no-such-model")),
           qPrintable(box->message() + " | " + box->hint()));
}

void TestTrainPane::formShowsARunsWholeConfig() {
  // Every value the form edits away from its default, restored as for a run of the journal: the form's
  // config is the same one, field for field. The values only need to differ from the defaults and fit the
  // form's spin boxes (their ranges and decimals).
  forja::TrainConfig c;
  c.model_dir = kModel.toStdString();
  c.output_dir = tmp_->filePath(QStringLiteral("restored")).toStdString();
  c.train_file = "/data/chats.jsonl";
  c.run_name = "Portuguese chats, r8";
  c.notes = "half the learning rate of the last one";
  c.data_format = "alpaca";
  c.eval_fraction = 0.25;
  c.on_bad_record = "skip";
  c.train_on_prompt = true;
  c.lora.rank = 8;
  c.lora.alpha = 12.5;
  c.lora.dropout = 0.1;
  c.lora.target_modules = {"q_proj", "v_proj"};
  c.optimizer.learning_rate = 3e-5;
  c.optimizer.weight_decay = 0.01;
  c.optimizer.max_grad_norm = 0.5;
  c.optimizer.schedule = forja::LrSchedule::Linear;
  c.optimizer.warmup_steps = 7;
  c.max_steps = 33;
  c.epochs = 2.5;
  c.batch_size = 3;
  c.grad_accum = 2;
  c.max_length = 640;
  c.eval_every = 11;
  c.eval_file = "/data/held-out.jsonl";
  c.early_stopping_patience = 4;
  c.early_stopping_min_delta = 0.0025;
  c.checkpoint_every = 9;
  c.seed = 1234;
  c.device = "cpu";
  c.dtype = "bf16";
  c.activation_checkpointing = true;
  c.selective_checkpointing = true;
  c.base_quant = "nf4";
  c.packing = true;
  const std::string json = forja::train_config_to_json(c);
  // No worker behind it (pid 0): it reads as interrupted at once.
  QVERIFY(pane_->restore_run(QString::fromStdString(json), 0));
  QCOMPARE(pane_->findChild<QComboBox*>(QStringLiteral("trainSchedule"))->currentText(),
           QStringLiteral("linear"));
  const forja::TrainConfig shown =
      forja::train_config_from_json(pane_->config_json().toStdString(), "the Train pane");
  QCOMPARE(QString::fromStdString(forja::train_config_to_json(shown)), QString::fromStdString(json));
}

void TestTrainPane::presetsChangeOnlyTheirSettings() {
  auto* seed = pane_->findChild<QSpinBox*>(QStringLiteral("trainSeed"));
  seed->setValue(7);
  auto* device = pane_->findChild<QComboBox*>(QStringLiteral("trainDevice"));
  device->setCurrentText(QStringLiteral("cuda"));
  pane_->findChild<QComboBox*>(QStringLiteral("trainPreset"))->setCurrentIndex(1);  // Balanced, the second
  const QJsonObject cfg = QJsonDocument::fromJson(pane_->config_json().toUtf8()).object();
  // The numbers are the Balanced preset's (train_pane.cpp).
  QCOMPARE(cfg.value(QStringLiteral("max_steps")).toInt(), 500);
  QCOMPARE(cfg.value(QStringLiteral("grad_accum")).toInt(), 4);
  QCOMPARE(cfg.value(QStringLiteral("max_length")).toInt(), 2048);
  QCOMPARE(cfg.value(QStringLiteral("eval_every")).toInt(), 50);
  const QJsonObject optimizer = cfg.value(QStringLiteral("optimizer")).toObject();
  QCOMPARE(optimizer.value(QStringLiteral("warmup_steps")).toInt(), 25);
  QCOMPARE(optimizer.value(QStringLiteral("learning_rate")).toDouble(), 2e-4);
  QCOMPARE(cfg.value(QStringLiteral("lora")).toObject().value(QStringLiteral("rank")).toInt(), 16);
  // No preset sets the seed; only the demo's sets the device.
  QCOMPARE(seed->value(), 7);
  QCOMPARE(device->currentText(), QStringLiteral("cuda"));
  pane_->apply_preset(QStringLiteral("demo"));
  QCOMPARE(device->currentText(), QStringLiteral("cpu"));
  QCOMPARE(pane_->findChild<QSpinBox*>(QStringLiteral("trainSteps"))->value(), 60);
  QCOMPARE(pane_->findChild<QComboBox*>(QStringLiteral("trainPreset"))->currentData().toString(),
           QStringLiteral("demo"));
  // The Data pane follows the preset's max length, so that it reads the dataset as the run will.
  QCOMPARE(window_->data_pane()->findChild<QSpinBox*>(QStringLiteral("datasetMaxLength"))->value(), 256);
}

QTEST_MAIN(TestTrainPane)
#include "test_train_pane.moc"
