// The Model pane as a model library: the Hugging Face cache listed, "Download from Hugging Face…" planning
// and pulling a model from a Hub stand-in on 127.0.0.1 (tests/core/hub/hub_stand_in.h) with progress, a
// cancelled download resumed, the pulled model opened, and a cached model deleted.
#include <QCryptographicHash>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include "error_box.h"
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
    auto* list = pane_->findChild<QListWidget*>(QStringLiteral("cachedModels"));
    QTRY_COMPARE(list->count(), 1);
    QVERIFY(list->item(0)->text().startsWith(QStringLiteral("forja-test/demo")));
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
    forja::hub::PullOptions o;
    o.ref = forja::hub::parse_repo_ref("forja-test/demo");
    o.settings = forja::hub::settings_from_environment();
    forja::hub::pull(o);
    pane_->refresh_cache();
    auto* list = pane_->findChild<QListWidget*>(QStringLiteral("cachedModels"));
    QTRY_COMPARE(list->count(), 1);
    pane_->delete_cached(QStringLiteral("forja-test/demo"));
    QTRY_COMPARE(list->count(), 0);
    QVERIFY(
        pane_->findChild<QLabel*>(QStringLiteral("cacheStatus"))->text().contains(QStringLiteral("freed")));
    QVERIFY(!fs::exists(cache() / "models--forja-test--demo"));
  }
};

QTEST_MAIN(TestModelLibrary)
#include "test_model_library.moc"
