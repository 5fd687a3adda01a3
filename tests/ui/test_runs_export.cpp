// The Runs pane's export runs in the window's process as a job (forja/export.h), with progress and a Cancel
// button: a run from the journal (the llama fixture and its PEFT adapter) is exported as a Hugging Face
// folder, an export is cancelled, and one whose destination is taken fails with the exporter's words.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include <sqlite3.h>

#include "error_box.h"
#include "export_dialog.h"
#include "forja/gguf.h"
#include "forja/journal.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/runs_pane.h"
#include "ui_test_support.h"

namespace {

const std::string kModel = FORJA_FIXTURES_DIR "/models/llama";
const std::string kAdapter = FORJA_FIXTURES_DIR "/train/llama/final";

}  // namespace

class TestRunsExport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_runs_export"); }

  void init() {
    QSettings().clear();
    tmp_ = new QTemporaryDir;
    const QString journal_path = tmp_->filePath(QStringLiteral("journal.db"));
    {
      forja::Journal journal(journal_path.toStdString());
      forja::NewRun r;
      r.name = "fixture-run";
      r.model_dir = kModel;
      r.dataset_path = "data.jsonl";
      r.config_json = "{}";
      r.total_steps = 8;
      const int64_t id = journal.create_run(r);
      journal.finish_run(id, forja::RunStatus::Completed, 1.5, std::nullopt, kAdapter);
    }
    window_ = new forja::ui::MainWindow({journal_path});
    window_->show();
    pane_ = window_->runs_pane();
    pane_->refresh();
    forja::test::settle_journal(window_);
    auto* list = pane_->findChild<QTreeWidget*>(QStringLiteral("runList"));
    QTRY_COMPARE_WITH_TIMEOUT(list->topLevelItemCount(), 1, 5000);
    list->setCurrentItem(list->topLevelItem(0));
  }

  void cleanup() {
    QVERIFY(forja::ui::Job::cancel_all_and_wait(10000));
    delete window_;
    delete tmp_;
  }

  void windowGoesOnWhileTheJournalWaits() {
    // Another process holds the journal's write lock (as a worker committing a step does): deleting the run
    // waits for it on the journal's thread, while the GUI thread keeps turning its event loop, and the
    // deletion lands once the lock is let go. No clock decides the outcome: the deletion cannot commit while
    // the lock is held, and the event loop must turn meanwhile.
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open(window_->context().journal->path().toUtf8().constData(), &other), SQLITE_OK);
    QCOMPARE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    QSignalSpy deleted(pane_, &forja::ui::RunsPane::runs_deleted);
    forja::test::answer_next_message_box(QMessageBox::Yes);
    pane_->delete_selected();
    int turns = 0;
    QTimer tick;
    connect(&tick, &QTimer::timeout, this, [&] { ++turns; });
    tick.start(10);
    QTRY_VERIFY_WITH_TIMEOUT(turns >= 3, 2000);
    QCOMPARE(deleted.count(), 0);
    auto* list = pane_->findChild<QTreeWidget*>(QStringLiteral("runList"));
    QCOMPARE(list->topLevelItemCount(), 1);
    QCOMPARE(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other);
    QTRY_COMPARE_WITH_TIMEOUT(deleted.count(), 1, 10000);
    QCOMPARE(deleted.at(0).at(0).toInt(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(list->topLevelItemCount(), 0, 10000);
    QVERIFY(forja::test::read_journal(window_).runs().empty());
  }

  void nameAndNotesAreEditedInThePane() {
    // The selected run's name and notes: edited in the pane, written to the journal off the GUI thread, shown
    // in the list and the details; an empty name is not offered for saving.
    auto* name = pane_->findChild<QLineEdit*>(QStringLiteral("runNameEdit"));
    auto* notes = pane_->findChild<QPlainTextEdit*>(QStringLiteral("runNotesEdit"));
    auto* save = pane_->findChild<QPushButton*>(QStringLiteral("saveRunLabelButton"));
    auto* list = pane_->findChild<QTreeWidget*>(QStringLiteral("runList"));
    QCOMPARE(name->text(), QStringLiteral("fixture-run"));
    QVERIFY(name->isEnabled() && notes->isEnabled());
    QVERIFY(!save->isEnabled());
    name->setText(QStringLiteral("  "));
    QVERIFY(!save->isEnabled());
    name->setText(QStringLiteral("Receitas em português "));
    notes->setPlainText(QStringLiteral("rank 8\ntwo epochs"));
    QVERIFY(save->isEnabled());
    QTest::mouseClick(save, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(list->topLevelItem(0)->text(0), QStringLiteral("Receitas em português"), 5000);
    QCOMPARE(list->topLevelItem(0)->toolTip(0), QStringLiteral("rank 8\ntwo epochs"));
    QVERIFY(!save->isEnabled());
    QVERIFY(pane_->findChild<QPlainTextEdit*>(QStringLiteral("runDetails"))
                ->toPlainText()
                .contains(QStringLiteral("Notes: rank 8")));
    const forja::RunRecord r = forja::test::read_journal(window_).runs().front();
    QCOMPARE(r.name, std::string("Receitas em português"));
    QCOMPARE(r.notes, std::string("rank 8\ntwo epochs"));
    // With no run selected there is nothing to edit.
    list->clearSelection();
    QVERIFY(!name->isEnabled() && name->text().isEmpty() && !save->isEnabled());
  }

  void exportDialogChoosesFormatTypeAndPlace() {
    // The dialog proposes a file in the run's folder, shows each GGUF type with its file's size once the
    // model was read, and starts the export it was given: here the adapter alone as a GGUF LoRA adapter.
    QTest::mouseClick(pane_->findChild<QPushButton*>(QStringLiteral("exportRunButton")), Qt::LeftButton);
    auto* dialog = pane_->findChild<forja::ui::ExportDialog*>();
    QVERIFY(dialog && dialog->isVisible());
    auto* type = dialog->findChild<QComboBox*>(QStringLiteral("exportType"));
    QTRY_VERIFY_WITH_TIMEOUT(
        type->itemText(type->findData(QStringLiteral("q4_k_m"))).contains(QStringLiteral("about")), 10000);
    QCOMPARE(dialog->format(), QStringLiteral("gguf"));
    QCOMPARE(dialog->dtype(), QStringLiteral("q4_k_m"));
    QCOMPARE(dialog->destination(), QFileInfo(QString::fromStdString(kAdapter)).absolutePath() +
                                        QStringLiteral("/fixture-run.gguf"));
    dialog->set_format(QStringLiteral("gguf-lora"));
    QVERIFY(dialog->dtype().isEmpty());  // an adapter has no quantization choice
    QVERIFY(dialog->destination().endsWith(QStringLiteral("fixture-run-adapter.gguf")));
    const QString out = tmp_->filePath(QStringLiteral("adapter.gguf"));
    dialog->set_destination(out);
    QSignalSpy finished(pane_, &forja::ui::RunsPane::export_finished);
    dialog->accept();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY2(finished.at(0).at(0).toBool(),
             qPrintable(pane_->findChild<forja::ui::ErrorBox*>()->findChild<QLabel*>()->text()));
    const auto file = forja::io::read_gguf(out.toStdString());
    QCOMPARE(std::get<std::string>(file.metadata.at("general.type")), std::string("adapter"));
  }

  void exportsInTheBackgroundWithProgress() {
    auto* button = pane_->findChild<QPushButton*>(QStringLiteral("exportRunButton"));
    auto* cancel = pane_->findChild<QPushButton*>(QStringLiteral("cancelExportButton"));
    auto* status = pane_->findChild<QLabel*>(QStringLiteral("exportStatus"));
    QVERIFY(button->isEnabled());
    QVERIFY(!cancel->isVisibleTo(pane_));
    QSignalSpy finished(pane_, &forja::ui::RunsPane::export_finished);
    const QString folder = tmp_->filePath(QStringLiteral("merged"));
    pane_->export_selected(QStringLiteral("hf"), folder);
    QVERIFY(pane_->exporting());
    QVERIFY(!button->isEnabled());
    QVERIFY(cancel->isVisibleTo(pane_));
    QVERIFY(status->text().contains(QStringLiteral("fixture-run")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QVERIFY(QFile::exists(folder + QStringLiteral("/model.safetensors")));
    QVERIFY(QFile::exists(folder + QStringLiteral("/config.json")));
    QVERIFY(status->text().contains(QDir::toNativeSeparators(folder)));
    QVERIFY(!pane_->exporting());
    QVERIFY(button->isEnabled());
    QVERIFY(!cancel->isVisibleTo(pane_));
  }

  // Cancel is pressed at once, while the job is still loading the model. The export then ends with nothing
  // at the destination; should the machine have let the whole export finish before the click landed, the
  // folder must then be whole.
  void cancelLeavesNothingBehind() {
    auto* cancel = pane_->findChild<QPushButton*>(QStringLiteral("cancelExportButton"));
    QSignalSpy finished(pane_, &forja::ui::RunsPane::export_finished);
    const QString folder = tmp_->filePath(QStringLiteral("cancelled"));
    pane_->export_selected(QStringLiteral("hf"), folder);
    QTest::mouseClick(cancel, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    if (finished.at(0).at(0).toBool()) {
      qInfo("the export finished before the click reached it");
      QVERIFY(QFile::exists(folder + QStringLiteral("/model.safetensors")));
    } else {
      QVERIFY(!QFile::exists(folder));
      QVERIFY(pane_->findChild<QLabel*>(QStringLiteral("exportStatus"))
                  ->text()
                  .contains(QStringLiteral("cancelled")));
      // Nothing beside it either: no staging folder survives.
      QCOMPARE(QDir(tmp_->path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList());
    }
    QVERIFY(!pane_->exporting());
  }

  void takenDestinationShowsTheExportersWords() {
    QSignalSpy finished(pane_, &forja::ui::RunsPane::export_finished);
    const QString folder = tmp_->filePath(QStringLiteral("taken"));
    QDir().mkpath(folder);
    QFile keep(folder + QStringLiteral("/notes.txt"));
    QVERIFY(keep.open(QIODevice::WriteOnly));
    keep.write("mine");
    keep.close();
    pane_->export_selected(QStringLiteral("hf"), folder);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("runsError"));
    QVERIFY(box->isVisibleTo(pane_));
    QVERIFY2(box->message().contains(QStringLiteral("not empty")), qPrintable(box->message()));
    QVERIFY(QFile::exists(folder + QStringLiteral("/notes.txt")));
  }

 private:
  QTemporaryDir* tmp_ = nullptr;
  forja::ui::MainWindow* window_ = nullptr;
  forja::ui::RunsPane* pane_ = nullptr;
};

QTEST_MAIN(TestRunsExport)
#include "test_runs_export.moc"
