// Tests of the Model pane, driven through the main window: open the fixture model and see its facts, open a
// hand-written folder by drag and drop, see the error for broken folders, and reopen from the recent list
// and on the pane the window closed on.
#include <QDropEvent>
#include <QGroupBox>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include "error_box.h"
#include "format.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/model_pane.h"
#include "ui_test_support.h"

using forja::ui::MainWindow;
using forja::ui::ModelPane;
using forja::ui::PaneId;

namespace {

QString fact(ModelPane* pane, const char* key) {
  auto* label = pane->findChild<QLabel*>(QStringLiteral("fact.") + QLatin1String(key));
  return label ? label->text() : QStringLiteral("<no label %1>").arg(QLatin1String(key));
}

QString fixture(const char* name) {
  return QStringLiteral(FORJA_FIXTURES_DIR "/models/") + QLatin1String(name);
}

}  // namespace

class TestModelPane : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_model_pane"); }
  void init();
  void cleanup();
  void opensFixtureModel();
  void opensShardedFixture();
  void dropsHandWrittenFolder();
  void truncatedWeightsShowError();
  void folderWithoutConfigShowsError();
  void recentListReopens();
  void recentNamesTellFoldersApart();
  void windowReopensOnTheSavedPane();

 private:
  QTemporaryDir* tmp_ = nullptr;
  MainWindow* window_ = nullptr;
  ModelPane* pane_ = nullptr;
};

void TestModelPane::init() {
  QSettings().clear();
  tmp_ = new QTemporaryDir;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  pane_ = window_->model_pane();
}

void TestModelPane::cleanup() {
  QVERIFY(forja::ui::Job::cancel_all_and_wait(5000));
  delete window_;
  delete tmp_;
}

void TestModelPane::opensFixtureModel() {
  // tests/fixtures/models/smollm: made by make_fixtures.py (SmolLM-shaped Llama, tied embeddings).
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(fixture("smollm"));
  QTRY_COMPARE(opened.count(), 1);
  QVERIFY(!pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("modelError"))->isVisible());
  QVERIFY(pane_->findChild<QGroupBox*>(QStringLiteral("modelFacts"))->isVisible());
  // The numbers below are the fixture's config.json.
  QCOMPARE(fact(pane_, "architecture"), QStringLiteral("LlamaForCausalLM"));
  QVERIFY(fact(pane_, "family").startsWith(QStringLiteral("llama")));
  QCOMPARE(fact(pane_, "layers"), QStringLiteral("2"));
  QCOMPARE(fact(pane_, "heads"), QStringLiteral("4 query, 1 key/value, head size 16"));
  QCOMPARE(fact(pane_, "context"), QStringLiteral("128 tokens"));
  QCOMPARE(fact(pane_, "vocab"), QStringLiteral("320 tokens"));
  QVERIFY(fact(pane_, "tied").startsWith(QStringLiteral("yes")));
  // Memory estimates: the context is the model's 128 tokens (below the 4096 cap); training at LoRA r16, 4
  // rows of the recipe's 1024 tokens cut to the model's 128: no row is longer than the model reads.
  QVERIFY2(fact(pane_, "chat_memory").contains(QStringLiteral("128 tokens of context")),
           qPrintable(fact(pane_, "chat_memory")));
  QVERIFY2(fact(pane_, "train_memory").contains(QStringLiteral("LoRA r16 at 4 × 128 tokens")),
           qPrintable(fact(pane_, "train_memory")));
  QVERIFY2(fact(pane_, "train_memory").contains(QStringLiteral("with a 4-bit base (QLoRA)")),
           qPrintable(fact(pane_, "train_memory")));
  QCOMPARE(fact(pane_, "dtype"), QStringLiteral("F32"));
  QCOMPARE(fact(pane_, "rope"), QStringLiteral("RoPE, theta 10000"));
  // 102,720 parameters: embed 320·64 + 2 layers × (q 64·64 + k 16·64 + v 16·64 + o 64·64 + 3 MLP 160·64 + 2
  // norms of 64) + the final norm of 64, the head tied to the embedding; two bytes each in bf16.
  constexpr int64_t kParams =
      320 * 64 + 2 * (64 * 64 + 16 * 64 + 16 * 64 + 64 * 64 + 3 * 160 * 64 + 2 * 64) + 64;
  QVERIFY2(fact(pane_, "parameters").contains(QLocale().toString(qlonglong(kParams))),
           qPrintable(fact(pane_, "parameters")));
  QCOMPARE(fact(pane_, "memory"), forja::ui::format_bytes(kParams * 2));
  QVERIFY(fact(pane_, "checkpoint").contains(QStringLiteral("model.safetensors")));
  // The fixture has no tokenizer yet, and the pane says what that means.
  QVERIFY(fact(pane_, "tokenizer").contains(QStringLiteral("tokenizer.json")));
  QVERIFY(window_->windowTitle().startsWith(QStringLiteral("smollm")));
}

void TestModelPane::opensShardedFixture() {
  // tests/fixtures/models/llama is saved in three shards with model.safetensors.index.json.
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(fixture("llama"));
  QTRY_COMPARE(opened.count(), 1);
  QVERIFY(fact(pane_, "checkpoint").contains(QStringLiteral("model-00003-of-00003.safetensors")));
  QCOMPARE(fact(pane_, "heads"), QStringLiteral("4 query, 2 key/value, head size 16"));
  QVERIFY(fact(pane_, "tied").startsWith(QStringLiteral("no")));
}

void TestModelPane::dropsHandWrittenFolder() {
  using T = forja::test::TinyLlama;
  const QString dir = tmp_->filePath(QStringLiteral("tiny"));
  forja::test::write_tiny_llama(dir);
  // Dropping the config.json file (what a file manager drag often carries) opens its folder.
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(dir + QStringLiteral("/config.json"))});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(pane_, &enter);
  QVERIFY(enter.isAccepted());
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(pane_, &drop);
  QTRY_COMPARE(opened.count(), 1);
  QCOMPARE(QString::fromStdString(pane_->model()->dir.string()), dir);
  QVERIFY2(fact(pane_, "parameters").contains(QLocale().toString(qlonglong(T::parameters))),
           qPrintable(fact(pane_, "parameters")));
  QCOMPARE(fact(pane_, "heads"), QStringLiteral("2 query, 1 key/value, head size 4"));
  QCOMPARE(fact(pane_, "context"), QStringLiteral("256 tokens"));
  QVERIFY(fact(pane_, "tied").startsWith(QStringLiteral("no")));
}

void TestModelPane::truncatedWeightsShowError() {
  const QString dir = tmp_->filePath(QStringLiteral("truncated"));
  forja::test::write_tiny_llama(dir,
                                /*truncate_weights_by=*/100);  // the last tensor's bytes run past the end
  QSignalSpy failed(pane_, &ModelPane::open_failed);
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(dir);
  QTRY_COMPARE(failed.count(), 1);
  QCOMPARE(opened.count(), 0);
  auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("modelError"));
  QVERIFY(box->isVisible());
  QVERIFY2(box->message().contains(QStringLiteral("model.safetensors")), qPrintable(box->message()));
  QVERIFY(!pane_->findChild<QGroupBox*>(QStringLiteral("modelFacts"))->isVisible());
  QVERIFY(!pane_->model());
  // A failed folder is not remembered.
  QVERIFY(pane_->recent().isEmpty());
}

void TestModelPane::folderWithoutConfigShowsError() {
  const QString dir = tmp_->filePath(QStringLiteral("empty"));
  QDir().mkpath(dir);
  QSignalSpy failed(pane_, &ModelPane::open_failed);
  window_->open_model(dir);
  QTRY_COMPARE(failed.count(), 1);
  auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("modelError"));
  QVERIFY(box->isVisible());
  QVERIFY2(box->message().contains(dir) && box->message().contains(QStringLiteral("config.json")),
           qPrintable(box->message()));
  QVERIFY(!box->hint().isEmpty());
  // Then a good folder clears the error.
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(fixture("gpt2"));
  QTRY_COMPARE(opened.count(), 1);
  QVERIFY(!box->isVisible());
  QCOMPARE(fact(pane_, "rope"), QStringLiteral("learned position embeddings"));
}

void TestModelPane::recentListReopens() {
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(fixture("qwen2"));
  QTRY_COMPARE(opened.count(), 1);
  window_->open_model(fixture("mistral"));
  QTRY_COMPARE(opened.count(), 2);
  QCOMPARE(pane_->recent(), (QStringList{fixture("mistral"), fixture("qwen2")}));

  // A new window (a restart) lists them from QSettings; Enter on the second entry opens qwen2 again.
  delete window_;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  pane_ = window_->model_pane();
  auto* list = pane_->findChild<QListWidget*>(QStringLiteral("recentModels"));
  QCOMPARE(list->count(), 2);
  QSignalSpy reopened(pane_, &ModelPane::model_opened);
  list->setFocus();
  list->setCurrentRow(1);
  QTest::keyClick(list, Qt::Key_Return);
  QTRY_COMPARE(reopened.count(), 1);
  QCOMPARE(fact(pane_, "architecture"), QStringLiteral("Qwen2ForCausalLM"));
  QCOMPARE(pane_->recent().first(), fixture("qwen2"));
}

void TestModelPane::recentNamesTellFoldersApart() {
  using forja::ui::distinct_folder_names;
  // Three folders named "model": each gets as many parents as it takes; a lone name stays short.
  QCOMPARE(distinct_folder_names({QStringLiteral("/data/a/model"), QStringLiteral("/data/b/model"),
                                  QStringLiteral("/x/a/model/"), QStringLiteral("/data/tiny")}),
           (QStringList{QStringLiteral("data/a/model"), QStringLiteral("b/model"),
                        QStringLiteral("x/a/model"), QStringLiteral("tiny")}));
  // A Hugging Face cache snapshot reads as its repo id.
  QCOMPARE(distinct_folder_names(
               {QStringLiteral("/srv/cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/"
                               "7ae557604adf67be50417f59c2c2f167def9a775")}),
           QStringList{QStringLiteral("Qwen/Qwen2.5-0.5B-Instruct")});
  QCOMPARE(distinct_folder_names({QStringLiteral("/model"), QStringLiteral("/model")}),
           (QStringList{QStringLiteral("model"), QStringLiteral("model")}));

  // An adapter reads as its run; LibTorch's names as people write them.
  using forja::ui::adapter_display_name;
  QCOMPARE(adapter_display_name(QStringLiteral("/r/runs/model-20261206-031738/adapter")),
           QStringLiteral("model-20261206-031738"));
  QCOMPARE(adapter_display_name(QStringLiteral("/r/runs/model-1/checkpoints/step-00000040/adapter/")),
           QStringLiteral("model-1 · step-00000040"));
  QCOMPARE(adapter_display_name(QStringLiteral("/srv/loras/my-lora")), QStringLiteral("my-lora"));
  QCOMPARE(forja::ui::device_display_name(QStringLiteral("cpu")), QStringLiteral("CPU"));
  QCOMPARE(forja::ui::device_display_name(QStringLiteral("cuda:1")), QStringLiteral("GPU cuda:1"));
  QCOMPARE(forja::ui::dtype_display_name(QStringLiteral("BFloat16")), QStringLiteral("bf16"));
  QCOMPARE(forja::ui::dtype_display_name(QStringLiteral("Float")), QStringLiteral("fp32"));

  // The list shows them so.
  const QString a = tmp_->filePath(QStringLiteral("a/model")), b = tmp_->filePath(QStringLiteral("b/model"));
  for (const QString& d : {a, b}) {
    QDir().mkpath(d);
    forja::test::write_tiny_llama(d);
  }
  QSignalSpy opened(pane_, &ModelPane::model_opened);
  window_->open_model(a);
  QTRY_COMPARE(opened.count(), 1);
  window_->open_model(b);
  QTRY_COMPARE(opened.count(), 2);
  auto* list = pane_->findChild<QListWidget*>(QStringLiteral("recentModels"));
  QCOMPARE(list->item(0)->text(), QStringLiteral("b/model"));
  QCOMPARE(list->item(1)->text(), QStringLiteral("a/model"));
}

void TestModelPane::windowReopensOnTheSavedPane() {
  const QString journal = tmp_->filePath(QStringLiteral("journal.db"));
  window_->show_pane(PaneId::Runs);
  window_->close();
  delete window_;
  window_ = new MainWindow({journal});
  QCOMPARE(window_->current_pane(), PaneId::Runs);
  // A saved position with no pane (a hand edit, another version's setting) opens on the Model pane.
  const int past_last = static_cast<int>(forja::ui::kAllPanes.size());
  for (const int saved : {-1, past_last, 99}) {
    delete window_;
    QSettings().setValue(QStringLiteral("MainWindow/pane"), saved);
    window_ = new MainWindow({journal});
    QCOMPARE(window_->current_pane(), PaneId::Model);
  }
  pane_ = window_->model_pane();
}

QTEST_MAIN(TestModelPane)
#include "test_model_pane.moc"
