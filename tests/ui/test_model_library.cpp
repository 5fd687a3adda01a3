// The Model pane as a model library: the Hugging Face cache and the recent folders listed with what each
// model is (architecture, parameters, dtype, size, whether Forja loads it, when it was last opened),
// "Download from Hugging Face…" planning and pulling a model from a Hub stand-in on 127.0.0.1
// (tests/core/hub/hub_stand_in.h) with progress, a cancelled download resumed, the pulled model opened, and a
// cached model deleted.
#include <QCryptographicHash>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "error_box.h"
#include "format.h"
#include "hub_dialog.h"
#include "hub_stand_in.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/model_pane.h"
#include "ui_test_support.h"

namespace fs = std::filesystem;
using forja::ui::HubDownloadDialog;
using forja::ui::MainWindow;
using forja::ui::ModelPane;

namespace {
const fs::path kDemo = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo" / "model";
const std::string kCommit = "fedcba9876543210fedcba9876543210fedcba98";

std::string sha256_of(const fs::path& file) {
  QFile f(QString::fromStdString(file.string()));
  if (!f.open(QIODevice::ReadOnly)) return {};
  QCryptographicHash h(QCryptographicHash::Sha256);
  h.addData(&f);
  return h.result().toHex().toStdString();
}

// The bytes of the files under a folder, links not followed: what a cache repository takes on the disk.
int64_t bytes_under(const fs::path& dir) {
  int64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) total += static_cast<int64_t>(e.file_size());
  return total;
}

void write_text(const fs::path& file, const QByteArray& text) {
  QFile f(QString::fromStdString(file.string()));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(text);
}

// The library's columns, as the pane orders them.
enum Column { kModel, kArch, kParams, kDtype, kSize, kSupported, kLastUsed };
}  // namespace

class TestModelLibrary : public QObject {
  Q_OBJECT

  std::unique_ptr<HubStandIn> hub_;
  std::unique_ptr<QTemporaryDir> tmp_;
  MainWindow* window_ = nullptr;
  ModelPane* pane_ = nullptr;

  fs::path cache() const { return fs::path(tmp_->path().toStdString()) / "hub"; }
  template <class T>
  T* in_dialog(const char* name) {
    return pane_->download_dialog()->findChild<T*>(QLatin1String(name));
  }
  QTreeWidget* library() const { return pane_->findChild<QTreeWidget*>(QStringLiteral("cachedModels")); }
  // The library's row whose Model column reads `name`, or null.
  QTreeWidgetItem* row(const QString& name) const {
    const auto found = library()->findItems(name, Qt::MatchExactly, kModel);
    return found.size() == 1 ? found.first() : nullptr;
  }
  void pull_demo() {
    forja::hub::PullOptions o;
    o.ref = forja::hub::parse_repo_ref("forja-test/demo");
    o.settings = forja::hub::settings_from_environment();
    forja::hub::pull(o);
  }

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_model_library"); }
  void init() {
    QSettings().clear();
    hub_ = std::make_unique<HubStandIn>();
    hub_->add_repo("forja-test/demo", HubStandIn::repo_from_folder(kDemo, kCommit));
    tmp_ = std::make_unique<QTemporaryDir>();
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub_->endpoint()));
    qputenv("HF_HUB_CACHE", QByteArray::fromStdString(cache().string()));
    window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
    window_->show();
    pane_ = window_->model_pane();
  }
  void cleanup() {
    hub_->release();
    QVERIFY(forja::ui::Job::cancel_all_and_wait(10000));
    delete window_;
    hub_.reset();
    tmp_.reset();
    qunsetenv("HF_ENDPOINT");
    qunsetenv("HF_HUB_CACHE");
  }

  void downloadsPlansThenPullsAndOpensTheModel() {
    auto* status = pane_->findChild<QLabel*>(QStringLiteral("cacheStatus"));
    QTRY_VERIFY(status->text().contains(QStringLiteral("No models")));
    pane_->findChild<QPushButton*>(QStringLiteral("downloadModelButton"))->click();
    QVERIFY(pane_->download_dialog()->isVisible());
    in_dialog<QLineEdit>("hubRepo")->setText(QStringLiteral("forja-test/demo"));
    auto* download = in_dialog<QPushButton>("hubDownload");
    QVERIFY(!download->isEnabled());  // nothing is downloaded before its plan was shown
    in_dialog<QPushButton>("hubCheck")->click();
    auto* plan = in_dialog<QLabel>("hubPlan");
    QTRY_VERIFY_WITH_TIMEOUT(plan->text().contains(QStringLiteral("model.safetensors")), 30000);
    QVERIFY2(plan->text().contains(QStringLiteral("Forja loads it")), qPrintable(plan->text()));
    QCOMPARE(hub_->count("/cdn/"), 0);
    QVERIFY(download->isEnabled());
    download->click();
    QTRY_VERIFY_WITH_TIMEOUT(pane_->model().has_value(), 60000);
    QCOMPARE(pane_->model()->family, std::string("llama"));
    QCOMPARE(pane_->model()->dir, cache() / "models--forja-test--demo" / "snapshots" / kCommit);
    // The opened snapshot is a recent folder too, listed once: as its cache entry.
    QTRY_COMPARE(library()->topLevelItemCount(), 1);
    QCOMPARE(library()->topLevelItem(0)->text(kModel), QStringLiteral("forja-test/demo"));
    QVERIFY(HubDownloadDialog::unfinished_download().isEmpty());
  }

  void cancelledDownloadResumesAfterARestart() {
    const std::string sha = sha256_of(kDemo / "model.safetensors");
    const fs::path part = cache() / "models--forja-test--demo" / "blobs" / (sha + ".incomplete");
    hub_->stall_at("model.safetensors", 800000);
    pane_->findChild<QPushButton*>(QStringLiteral("downloadModelButton"))->click();
    in_dialog<QLineEdit>("hubRepo")->setText(QStringLiteral("forja-test/demo"));
    in_dialog<QPushButton>("hubCheck")->click();
    QTRY_VERIFY_WITH_TIMEOUT(in_dialog<QPushButton>("hubDownload")->isEnabled(), 30000);
    in_dialog<QPushButton>("hubDownload")->click();
    auto* progress = in_dialog<QProgressBar>("hubProgress");
    QTRY_VERIFY_WITH_TIMEOUT(progress->value() > 0 && fs::exists(part), 60000);
    // Closing the dialog does not stop the download.
    pane_->download_dialog()->hide();
    QVERIFY(pane_->download_dialog()->downloading());
    in_dialog<QPushButton>("hubCancel")->click();
    hub_->release();  // the held transfer ends; the job sees the cancel
    QTRY_VERIFY_WITH_TIMEOUT(!pane_->download_dialog()->downloading(), 30000);
    QVERIFY2(in_dialog<QLabel>("hubStatus")->text().contains(QStringLiteral("Cancelled")),
             qPrintable(in_dialog<QLabel>("hubStatus")->text()));
    QVERIFY(fs::exists(part));  // kept for the resume
    const uint64_t kept = fs::file_size(part);
    QCOMPARE(HubDownloadDialog::unfinished_download(), QStringLiteral("forja-test/demo@main"));

    // A new window (the app restarted) offers the unfinished download; Download resumes it with Range.
    QVERIFY(forja::ui::Job::cancel_all_and_wait(10000));
    delete window_;
    window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
    window_->show();
    pane_ = window_->model_pane();
    QCOMPARE(in_dialog<QLineEdit>("hubRepo")->text(), QStringLiteral("forja-test/demo"));
    QVERIFY(in_dialog<QLabel>("hubStatus")->text().contains(QStringLiteral("did not finish")));
    hub_->clear_requests();
    in_dialog<QPushButton>("hubCheck")->click();
    QTRY_VERIFY_WITH_TIMEOUT(in_dialog<QPushButton>("hubDownload")->isEnabled(), 30000);
    in_dialog<QPushButton>("hubDownload")->click();
    QTRY_VERIFY_WITH_TIMEOUT(pane_->model().has_value(), 60000);
    bool resumed = false;
    for (const auto& r : hub_->requests()) resumed |= r.range == "bytes=" + std::to_string(kept) + "-";
    QVERIFY(resumed);
    QCOMPARE(sha256_of(pane_->model()->dir / "model.safetensors"), sha);
  }

  void deletesACachedModel() {
    pull_demo();
    pane_->refresh_cache();
    QTRY_COMPARE(library()->topLevelItemCount(), 1);
    pane_->delete_cached(QStringLiteral("forja-test/demo"));
    QTRY_COMPARE(library()->topLevelItemCount(), 0);
    QVERIFY(
        pane_->findChild<QLabel*>(QStringLiteral("cacheStatus"))->text().contains(QStringLiteral("freed")));
    QVERIFY(!fs::exists(cache() / "models--forja-test--demo"));
  }

  void libraryShowsWhatEachModelIs() {
    pull_demo();
    // A cache entry whose config.json names an architecture Forja does not load (the demo's weights under a
    // Mamba config: model_type decides what Forja loads, "architectures" names it).
    const fs::path mamba = cache() / "models--forja-test--mamba" / "snapshots" / kCommit;
    fs::create_directories(mamba);
    fs::copy_file(kDemo / "model.safetensors", mamba / "model.safetensors");
    write_text(mamba / "config.json",
               R"({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "vocab_size": 1344})");
    // A cache entry a download left without its weights.
    const fs::path partial = cache() / "models--forja-test--partial" / "snapshots" / kCommit;
    fs::create_directories(partial);
    fs::copy_file(kDemo / "config.json", partial / "config.json");
    // A folder of the user's own, opened before: a recent folder.
    const QString tiny = tmp_->filePath(QStringLiteral("models/tiny"));
    forja::test::write_tiny_llama(tiny);
    QSignalSpy opened(pane_, &ModelPane::model_opened);
    pane_->open(tiny);
    QTRY_COMPARE(opened.count(), 1);
    // Every listing made after the open has all four; the earlier ones (the window's first) have fewer.
    QTRY_COMPARE_WITH_TIMEOUT(library()->topLevelItemCount(), 4, 30000);

    QTreeWidgetItem* demo = row(QStringLiteral("forja-test/demo"));
    QVERIFY(demo);
    QCOMPARE(demo->text(kArch), QStringLiteral("LlamaForCausalLM"));  // resources/demo/model/config.json
    // 959,616 parameters: the tensors of the demo's model.safetensors header, added up (tied: no lm_head).
    QCOMPARE(demo->text(kParams), QStringLiteral("959.6 K"));
    QCOMPARE(demo->text(kDtype), QStringLiteral("BF16"));  // every tensor of the demo is bf16
    QCOMPARE(demo->text(kSupported), QStringLiteral("yes"));
    const int64_t demo_bytes = bytes_under(cache() / "models--forja-test--demo");
    QVERIFY(demo_bytes > int64_t(fs::file_size(kDemo / "model.safetensors")));
    QCOMPARE(demo->text(kSize), forja::ui::format_bytes(demo_bytes));
    QCOMPARE(demo->text(kLastUsed), QStringLiteral("never"));

    QTreeWidgetItem* unknown = row(QStringLiteral("forja-test/mamba"));
    QVERIFY(unknown);
    QCOMPARE(unknown->text(kSupported), QStringLiteral("no"));
    QCOMPARE(unknown->text(kArch), QStringLiteral("MambaForCausalLM"));
    QCOMPARE(unknown->text(kParams), QStringLiteral("—"));
    // The reason is inspect_model's own message, naming the file and the type, with the hint.
    const QString reason = unknown->toolTip(kSupported);
    QVERIFY2(reason.contains(QStringLiteral("config.json: model_type 'mamba' is not supported")),
             qPrintable(reason));
    QVERIFY2(reason.contains(QStringLiteral("Forja supports the model types")), qPrintable(reason));

    QTreeWidgetItem* incomplete = row(QStringLiteral("forja-test/partial"));
    QVERIFY(incomplete);
    QCOMPARE(incomplete->text(kSupported), QStringLiteral("incomplete"));
    QCOMPARE(incomplete->text(kArch), QStringLiteral("—"));  // not inspected

    QTreeWidgetItem* local = row(QStringLiteral("tiny"));
    QVERIFY(local);
    QCOMPARE(local->data(kModel, Qt::UserRole).toString(), tiny);
    QCOMPARE(local->text(kArch), QStringLiteral("LlamaForCausalLM"));
    QCOMPARE(local->text(kParams), QString::number(forja::test::TinyLlama::parameters));  // under 1,000
    QCOMPARE(local->text(kDtype), QStringLiteral("F32"));  // write_safetensors writes F32
    QCOMPARE(local->text(kSupported), QStringLiteral("yes"));
    const QDir tiny_dir(tiny);
    QCOMPARE(
        local->text(kSize),
        forja::ui::format_bytes(QFileInfo(tiny_dir.filePath(QStringLiteral("config.json"))).size() +
                                QFileInfo(tiny_dir.filePath(QStringLiteral("model.safetensors"))).size()));
    QVERIFY(local->text(kLastUsed) != QStringLiteral("never"));

    // Delete is offered for a model of the cache only, never for a folder of the user's own.
    auto* del = pane_->findChild<QPushButton*>(QStringLiteral("deleteCachedModel"));
    library()->setCurrentItem(local);
    QVERIFY(!del->isEnabled());
    library()->setCurrentItem(demo);
    QVERIFY(del->isEnabled());

    // The folder's "Last used" set to a fixed time (as an earlier session would have left it): the library
    // shows the stored time, and the order below does not hang on two opens' milliseconds.
    const QDateTime long_ago(QDate(2020, 1, 2), QTime(3, 4, 5), Qt::UTC);
    QVariantMap stored = QSettings().value(QStringLiteral("ModelPane/lastUsed")).toMap();
    QVERIFY(stored.contains(tiny));
    stored[tiny] = long_ago.toString(Qt::ISODateWithMs);
    QSettings().setValue(QStringLiteral("ModelPane/lastUsed"), stored);

    // Enter on the demo's row opens its snapshot; its "Last used" becomes the time the open recorded, and
    // it sorts first (the library sorts by "Last used", newest first), the folder second.
    const qint64 before = QDateTime::currentMSecsSinceEpoch();
    library()->setFocus();
    QTest::keyClick(library(), Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 2, 30000);
    const qint64 after = QDateTime::currentMSecsSinceEpoch();
    const QString snapshot =
        QString::fromStdString((cache() / "models--forja-test--demo" / "snapshots" / kCommit).string());
    QCOMPARE(QString::fromStdString(pane_->model()->dir.string()), snapshot);
    const QDateTime used = QDateTime::fromString(
        QSettings().value(QStringLiteral("ModelPane/lastUsed")).toMap().value(snapshot).toString(),
        Qt::ISODateWithMs);
    QVERIFY(used.isValid());
    QVERIFY(before <= used.toMSecsSinceEpoch() && used.toMSecsSinceEpoch() <= after);
    QTRY_VERIFY_WITH_TIMEOUT(
        row(QStringLiteral("forja-test/demo")) &&
            row(QStringLiteral("forja-test/demo"))->text(kLastUsed) != QStringLiteral("never"),
        30000);
    demo = row(QStringLiteral("forja-test/demo"));
    QCOMPARE(demo->text(kLastUsed), forja::ui::format_timestamp_ms(used.toMSecsSinceEpoch()));
    QCOMPARE(library()->topLevelItemCount(), 4);  // the opened snapshot is its cache row, not a fifth
    QCOMPARE(library()->topLevelItem(0), demo);
    QCOMPARE(library()->topLevelItem(1), row(QStringLiteral("tiny")));
    QCOMPARE(row(QStringLiteral("tiny"))->text(kLastUsed),
             forja::ui::format_timestamp_ms(long_ago.toMSecsSinceEpoch()));
  }
};

QTEST_MAIN(TestModelLibrary)
#include "test_model_library.moc"
