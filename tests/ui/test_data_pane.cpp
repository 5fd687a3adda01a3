// Tests of the Data pane, driven through the main window: the bundled demo dataset read with a fixture
// tokenizer (counts, histogram, the token preview with trained tokens highlighted), bad lines listed with
// file:line or stopping the read, and a model folder without a tokenizer.
#include <QCheckBox>
#include <QFile>
#include <QLabel>
#include <QRegularExpression>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QTreeWidget>

#include "error_box.h"
#include "jobs/job.h"
#include "jobs/prepare_data_job.h"
#include "main_window.h"
#include "panes/data_pane.h"
#include "plot.h"
#include "ui_test_support.h"

using forja::ui::DataPane;
using forja::ui::MainWindow;
using forja::ui::PaneId;

namespace {

const QString kDemo = QStringLiteral(FORJA_SOURCE_DIR "/resources/demo/dataset.jsonl");
// tests/fixtures/tokenizers/qwen2_bpe: a byte-level BPE trained by make_tokenizer_fixtures.py with Qwen2's
// ChatML chat template in its tokenizer_config.json.
const QString kQwenTokenizer = QStringLiteral(FORJA_FIXTURES_DIR "/tokenizers/qwen2_bpe");

void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

}  // namespace

class TestDataPane : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_data_pane"); }
  void init();
  void cleanup();
  void demoDatasetWithTokenizer();
  void badLinesAreListedOrStopTheRead();
  void histogramMarksTheMaxLength();
  void modelWithoutTokenizerStillReadsRecords();

 private:
  QTemporaryDir* tmp_ = nullptr;
  MainWindow* window_ = nullptr;
  DataPane* pane_ = nullptr;
};

void TestDataPane::init() {
  QSettings().clear();
  tmp_ = new QTemporaryDir;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  pane_ = window_->data_pane();
  window_->show_pane(PaneId::Data);
}

void TestDataPane::cleanup() {
  QVERIFY(forja::ui::Job::cancel_all_and_wait(5000));
  delete window_;
  delete tmp_;
}

void TestDataPane::demoDatasetWithTokenizer() {
  pane_->set_model_dir(kQwenTokenizer);
  QSignalSpy ready(pane_, &DataPane::dataset_ready);
  pane_->open(kDemo);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 30000);
  const auto& p = pane_->preview();
  QVERIFY(p && p->prepared);
  const auto& s = p->prepared->stats;
  // resources/demo/dataset.jsonl: 80 chat records; the pane's default holds out 10% (8) for eval.
  QCOMPARE(s.records_read, size_t(80));
  QCOMPARE(s.chat, size_t(80));
  QCOMPARE(s.train.examples + s.eval.examples, size_t(80));
  QCOMPARE(s.eval.examples, size_t(8));
  QVERIFY(s.train.trained_tokens > 0 && s.train.trained_tokens < s.train.tokens);
  // The signal carries how the pane read the file, as training config keys.
  const QJsonObject settings = ready.at(0).at(1).toJsonObject();
  QCOMPARE(settings.value(QStringLiteral("data_format")).toString(), QStringLiteral("auto"));
  QCOMPARE(settings.value(QStringLiteral("max_length")).toInt(), 2048);
  QCOMPARE(settings.value(QStringLiteral("eval_fraction")).toDouble(), 0.1);
  QCOMPARE(settings.value(QStringLiteral("on_bad_record")).toString(), QStringLiteral("skip"));
  QCOMPARE(settings.value(QStringLiteral("train_on_prompt")).toBool(), false);
  const QString summary = pane_->findChild<QLabel*>(QStringLiteral("datasetSummary"))->text();
  QVERIFY2(summary.contains(QStringLiteral("80 records")), qPrintable(summary));
  // The histogram holds one bar per bin, counting every train example.
  auto* plot = pane_->findChild<QCustomPlot*>(QStringLiteral("datasetHistogram"));
  QCOMPARE(plot->plottableCount(), 1);
  auto* bars = qobject_cast<QCPBars*>(plot->plottable(0));
  double counted = 0;
  for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) counted += it->value;
  QCOMPARE(counted, double(s.train.examples));
  // The first example shown token by token: the assistant's answer highlighted, the system/user turns not.
  auto* tokens = pane_->findChild<QTextBrowser*>(QStringLiteral("datasetTokens"));
  const QString html = tokens->toHtml();
  const auto& first = p->prepared->train.front();
  // One shaded span per token, neighbours never the same shade (the token borders), the trained tokens in
  // shades of their own.
  QStringList colors;
  static const QRegularExpression bg(QStringLiteral("background-color:(#[0-9a-f]{6})"));
  for (auto it = bg.globalMatch(html); it.hasNext();) colors << it.next().captured(1);
  QCOMPARE(colors.size(), static_cast<qsizetype>(first.ids.size()));
  for (qsizetype t = 1; t < colors.size(); ++t) QVERIFY2(colors[t] != colors[t - 1], qPrintable(colors[t]));
  QSet<QString> trained_colors, other_colors;
  int trained_spans = 0;
  for (size_t t = 0; t < first.ids.size(); ++t) {
    (first.train_mask[t] ? trained_colors : other_colors) << colors[static_cast<qsizetype>(t)];
    trained_spans += first.train_mask[t];
  }
  QCOMPARE(trained_colors.size(), 2);
  QCOMPARE(other_colors.size(), 2);
  QVERIFY(!trained_colors.intersects(other_colors));
  QVERIFY(trained_spans > 0 && trained_spans < static_cast<int>(first.ids.size()));
  // Another example on the spin box.
  pane_->findChild<QSpinBox*>(QStringLiteral("datasetExample"))->setValue(2);
  QVERIFY(pane_->findChild<QLabel*>(QStringLiteral("datasetExampleSource"))
              ->text()
              .startsWith(QString::fromStdString(p->prepared->train[1].source)));
}

void TestDataPane::histogramMarksTheMaxLength() {
  pane_->set_model_dir(kQwenTokenizer);
  pane_->set_max_length(64);
  QSignalSpy ready(pane_, &DataPane::dataset_ready);
  pane_->open(kDemo);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 30000);
  const auto& prepared = *pane_->preview()->prepared;
  const size_t cut = prepared.stats.train.truncated;
  QVERIFY2(cut > 0 && cut < prepared.train.size(), qPrintable(QString::number(cut)));
  auto* plot = pane_->findChild<QCustomPlot*>(QStringLiteral("datasetHistogram"));
  auto* line = plot->findChild<QCPItemStraightLine*>(QStringLiteral("maxLengthLine"));
  QVERIFY(line);
  QCOMPARE(line->point1->coords().x(), 64.0);
  QCOMPARE(line->point2->coords().x(), 64.0);
  auto* label = plot->findChild<QCPItemText*>(QStringLiteral("maxLengthLabel"));
  QVERIFY(label);
  QVERIFY2(label->text().contains(QStringLiteral("%1 cut").arg(cut)), qPrintable(label->text()));
  // The bars count the lengths as read: the examples past the line are the cut ones.
  auto* bars = qobject_cast<QCPBars*>(plot->plottable(0));
  size_t longest = 0;
  for (const auto& e : prepared.train) longest = std::max(longest, static_cast<size_t>(e.original_length));
  double last_bar = 0;
  for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
    if (it->value > 0) last_bar = it->key + bars->width() / 2;
  QVERIFY2(last_bar >= 0.9 * static_cast<double>(longest) && longest > 64,
           qPrintable(QString::number(last_bar)));
}

void TestDataPane::badLinesAreListedOrStopTheRead() {
  const QString file = tmp_->filePath(QStringLiteral("bad.jsonl"));
  write_file(file,
             "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
             "{\"instruction\": \"Say hi\", \"output\": \n"  // line 2: broken JSON
             "{\"text\": \"plain text line\"}\n"
             "{\"messages\": []}\n");  // line 4: an empty conversation
  pane_->set_model_dir(kQwenTokenizer);
  QSignalSpy ready(pane_, &DataPane::dataset_ready);
  pane_->open(file);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 30000);
  auto* problems = pane_->findChild<QTreeWidget*>(QStringLiteral("datasetProblems"));
  QCOMPARE(problems->topLevelItemCount(), 2);
  QCOMPARE(problems->topLevelItem(0)->text(0), file + QStringLiteral(":2"));
  QCOMPARE(problems->topLevelItem(1)->text(0), file + QStringLiteral(":4"));
  QCOMPARE(pane_->preview()->prepared->stats.records_read, size_t(2));

  // Unticking "skip" makes the first bad line stop the read, with the error naming file:line.
  QSignalSpy failed(pane_, &DataPane::dataset_failed);
  pane_->findChild<QCheckBox*>(QStringLiteral("datasetSkipBad"))->setChecked(false);
  QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
  auto* box = pane_->findChild<forja::ui::ErrorBox*>(QStringLiteral("datasetError"));
  QVERIFY(box->isVisible());
  QVERIFY2(box->message().contains(file + QStringLiteral(":2")), qPrintable(box->message()));
}

void TestDataPane::modelWithoutTokenizerStillReadsRecords() {
  // tests/fixtures/models/smollm has weights and a config but no tokenizer files.
  pane_->set_model_dir(QStringLiteral(FORJA_FIXTURES_DIR "/models/smollm"));
  QSignalSpy ready(pane_, &DataPane::dataset_ready);
  pane_->open(kDemo);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 30000);
  QVERIFY(!pane_->preview()->prepared);
  QCOMPARE(pane_->preview()->read.records.size(), size_t(80));
  const QString summary = pane_->findChild<QLabel*>(QStringLiteral("datasetSummary"))->text();
  QVERIFY2(summary.contains(QStringLiteral("no tokenizer")), qPrintable(summary));
  QVERIFY(!pane_->findChild<QSpinBox*>(QStringLiteral("datasetExample"))->isEnabled());
}

QTEST_MAIN(TestDataPane)
#include "test_data_pane.moc"
