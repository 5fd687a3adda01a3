// Tests of the Doctor and GPU panes and the status bar's GPU line, driven through the main window against the
// fake NVML and CUDA driver libraries that tests/core/env builds (the real dlopen path, scripted GPUs).
#include <QComboBox>
#include <QDialog>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include <unistd.h>

#include "about_dialog.h"
#include "error_box.h"
#include "forja/env.h"
#include "format.h"
#include "gpu_monitor_service.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/doctor_pane.h"
#include "panes/gpu_pane.h"
#include "plot.h"
#include "settings.h"
#include "settings_dialog.h"
#include "ui_init.h"
#include "ui_test_support.h"

using forja::ui::DoctorPane;
using forja::ui::GpuPane;
using forja::ui::MainWindow;
using forja::ui::PaneId;

namespace {

void use_scenario(const char* scenario) {
  qputenv("FORJA_FAKE_GPU_SCENARIO", QByteArray(FORJA_ENV_SCENARIO_DIR "/") + scenario);
  qputenv("FORJA_NVML_LIBRARY", FORJA_FAKE_NVML);
  qputenv("FORJA_CUDA_DRIVER_LIBRARY", FORJA_FAKE_CUDA);
  qputenv("FORJA_NVIDIA_VERSION_FILE", FORJA_ENV_SCENARIO_DIR "/nvidia_version_550.txt");
}

// A machine with no NVIDIA driver at all: the libraries do not exist.
void use_no_driver() {
  qputenv("FORJA_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  qputenv("FORJA_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
  qputenv("FORJA_NVIDIA_VERSION_FILE", "/nonexistent/version");
}

// The Doctor's conclusions below are those of a CPU-only LibTorch (Debian's) on the scripted driver. A
// LibTorch built with CUDA reaches the machine's real driver past the fake one, so its conclusions are not
// the script's: test_gpu_window checks that build's Doctor on the real GPU.
bool libtorch_has_cuda() {
  return forja::env::probe_torch().built_with_cuda;
}
constexpr const char* kCpuOnlyScenario =
    "this scenario is a CPU-only LibTorch's view of the scripted driver; this LibTorch has CUDA";

QStringList finding_ids(DoctorPane* pane) {
  auto* tree = pane->findChild<QTreeWidget*>(QStringLiteral("doctorFindings"));
  QStringList ids;
  for (int i = 0; i < tree->topLevelItemCount(); ++i)
    ids << tree->topLevelItem(i)->data(0, Qt::UserRole).toString();
  return ids;
}

}  // namespace

class TestGpuPanes : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_gpu_panes"); }
  void cleanup();
  void doctorSaysTheWorkRunsOnTheCpuAndWhy();
  void doctorWithoutDriver();
  void settingsListTheGpusAndKeepTheChoice();
  void doctorSpeaksTheWindowsLanguage();
  void aboutNamesTheRuntime();
  void doctorCheckAgainFollowsTheMachine();
  void gpuPanePlotsLiveSamples();
  void gpuPaneWithoutDriverSaysSo();

 private:
  MainWindow* open_window();
  QTemporaryDir* tmp_ = nullptr;
  MainWindow* window_ = nullptr;
};

MainWindow* TestGpuPanes::open_window() {
  tmp_ = new QTemporaryDir;
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  return window_;
}

void TestGpuPanes::cleanup() {
  QVERIFY(forja::test::close_window(window_, tmp_));
}

void TestGpuPanes::doctorSaysTheWorkRunsOnTheCpuAndWhy() {
  // healthy.json: one RTX 4090 on driver 550.54.14. This build links Debian's CPU-only LibTorch, so the GPU
  // is there but unusable: the most common silent-CPU trap, which the banner must say out loud.
  if (libtorch_has_cuda()) QSKIP(kCpuOnlyScenario);
  use_scenario("healthy.json");
  open_window();
  DoctorPane* pane = window_->doctor_pane();
  QSignalSpy ready(pane, &DoctorPane::report_ready);
  window_->show_pane(PaneId::Doctor);  // first show starts the probe
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 20000);
  QVERIFY(pane->report());
  QCOMPARE(pane->report()->gpus.size(), size_t(1));
  QCOMPARE(QString::fromStdString(pane->report()->gpus[0].name), QStringLiteral("NVIDIA GeForce RTX 4090"));
  QVERIFY2(finding_ids(pane).contains(QStringLiteral("torch-no-cuda")),
           qPrintable(finding_ids(pane).join(',')));
  const QString banner = pane->findChild<QLabel*>(QStringLiteral("doctorBanner"))->text();
  QVERIFY2(banner.contains(QStringLiteral("run on the CPU")), qPrintable(banner));
  QVERIFY2(banner.contains(QStringLiteral("Why:")), qPrintable(banner));
  const QString details = pane->findChild<QPlainTextEdit*>(QStringLiteral("doctorDetails"))->toPlainText();
  QVERIFY2(details.contains(QStringLiteral("550.54.14")), qPrintable(details));
  QVERIFY(pane->findChild<QPushButton*>(QStringLiteral("doctorCopyButton"))->isEnabled());
}

void TestGpuPanes::doctorWithoutDriver() {
  if (libtorch_has_cuda()) QSKIP(kCpuOnlyScenario);
  use_no_driver();
  open_window();
  DoctorPane* pane = window_->doctor_pane();
  QSignalSpy ready(pane, &DoctorPane::report_ready);
  pane->check();
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 20000);
  QVERIFY(pane->report()->gpus.empty());
  QVERIFY2(finding_ids(pane).contains(QStringLiteral("no-driver")), qPrintable(finding_ids(pane).join(',')));
  QVERIFY(
      pane->findChild<QLabel*>(QStringLiteral("doctorBanner"))->text().contains(QStringLiteral("the CPU")));
}

void TestGpuPanes::doctorCheckAgainFollowsTheMachine() {
  // "Check Again" probes anew: the scenario changes under the window (a driver change), the findings follow.
  // A current driver first: healthy.json's CUDA 12.4 is rightly too old for a build with CUDA 13 kernels.
  use_scenario("current_driver.json");
  open_window();
  DoctorPane* pane = window_->doctor_pane();
  QSignalSpy ready(pane, &DoctorPane::report_ready);
  pane->check();
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 20000);
  QVERIFY(!finding_ids(pane).contains(QStringLiteral("driver-too-old")));
  use_scenario("old_driver.json");  // driver 470.57.02: CUDA 11.4 at most
  QTest::mouseClick(pane->findChild<QPushButton*>(QStringLiteral("doctorCheckButton")), Qt::LeftButton);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, 20000);
  QCOMPARE(QString::fromStdString(pane->report()->driver.version), QStringLiteral("470.57.02"));
  // Driver 470 is too old for anything CUDA 12+ this build carries (its kernels, a CUDA LibTorch).
  const auto& rep = *pane->report();
  QVERIFY2(finding_ids(pane).contains(QStringLiteral("driver-too-old")) ||
               !(rep.build.kernels || rep.torch.built_with_cuda),
           qPrintable(finding_ids(pane).join(',')));
}

void TestGpuPanes::gpuPanePlotsLiveSamples() {
  use_scenario("healthy.json");
  open_window();
  auto* service = window_->gpu_monitor();
  QVERIFY2(service->available(), qPrintable(service->reason()));
  GpuPane* pane = window_->gpu_pane();
  window_->show_pane(PaneId::Gpu);
  auto* interval = pane->findChild<QSpinBox*>(QStringLiteral("gpuInterval"));
  interval->setValue(100);  // the spin box drives the sampler
  QCOMPARE(service->interval().count(), 100);
  QTRY_VERIFY_WITH_TIMEOUT(pane->plotted_points(0) >= 3, 10000);
  // The plot is titled with nvidia-smi's index and the driver's name of the card.
  auto* plot = pane->findChild<QCustomPlot*>(QStringLiteral("gpuPlot0"));
  QVERIFY(plot);
  auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
  QVERIFY(title);
  QCOMPARE(title->text(), QStringLiteral("GPU 0 · NVIDIA GeForce RTX 4090"));
  // The status bar shows the same GPU: healthy.json's 1 GiB used of 24564 MiB, 37% busy.
  const QString status = window_->findChild<QLabel*>(QStringLiteral("gpuStatus"))->text();
  QVERIFY2(status.contains(QStringLiteral("GPU0")) && status.contains(QStringLiteral("37%")),
           qPrintable(status));
  // healthy.json lists this process ("pid": "self") holding 512 MiB.
  auto* table = pane->findChild<QTableWidget*>(QStringLiteral("gpuProcesses"));
  QTRY_VERIFY(table->rowCount() >= 1);
  QVERIFY2(table->item(0, 1)->text().startsWith(QString::number(::getpid())),
           qPrintable(table->item(0, 1)->text()));
  QCOMPARE(table->item(0, 2)->text(), forja::ui::format_bytes(512LL * 1024 * 1024));

  // Samples taken while another pane is shown are drawn as soon as the GPU pane is back, not a sampling
  // interval later: with the sampler slowed to 10 s, no new sample can be what redraws the plot.
  window_->show_pane(PaneId::Train);
  const int before = pane->plotted_points(0);
  QTRY_VERIFY_WITH_TIMEOUT(pane->plotted_points(0) >= before + 2, 10000);
  interval->setValue(10000);
  QTest::qWait(150);  // a sample already under way lands before the count below
  const int hidden = pane->plotted_points(0);
  QSignalSpy replotted(plot, &QCustomPlot::afterReplot);
  window_->show_pane(PaneId::Gpu);
  QTRY_VERIFY_WITH_TIMEOUT(!replotted.isEmpty(), 2000);
  QCOMPARE(pane->plotted_points(0), hidden);
}

void TestGpuPanes::gpuPaneWithoutDriverSaysSo() {
  use_no_driver();
  open_window();
  QVERIFY(!window_->gpu_monitor()->available());
  auto* notice = window_->gpu_pane()->findChild<forja::ui::ErrorBox*>(QStringLiteral("gpuNotice"));
  QVERIFY(notice->message().contains(QStringLiteral("No NVIDIA driver")));
  QCOMPARE(window_->gpu_pane()->plotted_points(0), -1);
  QCOMPARE(window_->findChild<QLabel*>(QStringLiteral("gpuStatus"))->text(), QStringLiteral("No GPU"));
}

void TestGpuPanes::settingsListTheGpusAndKeepTheChoice() {
  // The GPU list comes from the driver (the fake's RTX 4090); choosing it is saved, and at the next start the
  // engine's environment names it in the PCI bus order nvidia-smi shows.
  use_scenario("healthy.json");
  open_window();
  forja::ui::SettingsDialog dialog(window_->context(), window_);
  auto* gpu = dialog.findChild<QComboBox*>(QStringLiteral("gpu"));
  QTRY_COMPARE_WITH_TIMEOUT(gpu->count(), 2, 20000);
  QVERIFY2(gpu->itemText(1).contains(QStringLiteral("NVIDIA GeForce RTX 4090")),
           qPrintable(gpu->itemText(1)));
  QVERIFY2(gpu->itemText(1).contains(QStringLiteral("GiB")), qPrintable(gpu->itemText(1)));
  gpu->setCurrentIndex(1);
  dialog.save();
  QCOMPARE(forja::ui::gpu_setting(), 0);
  const QByteArray visible = qgetenv("CUDA_VISIBLE_DEVICES"), order = qgetenv("CUDA_DEVICE_ORDER");
  forja::ui::apply_environment_settings();
  QCOMPARE(qgetenv("CUDA_VISIBLE_DEVICES"), QByteArray("0"));
  QCOMPARE(qgetenv("CUDA_DEVICE_ORDER"), QByteArray("PCI_BUS_ID"));
  visible.isNull() ? qunsetenv("CUDA_VISIBLE_DEVICES") : qputenv("CUDA_VISIBLE_DEVICES", visible);
  order.isNull() ? qunsetenv("CUDA_DEVICE_ORDER") : qputenv("CUDA_DEVICE_ORDER", order);

  // A GPU chosen before that the driver no longer shows stays listed as such, not silently dropped.
  forja::ui::set_gpu_setting(3);
  forja::ui::SettingsDialog again(window_->context(), window_);
  auto* gpu2 = again.findChild<QComboBox*>(QStringLiteral("gpu"));
  QTRY_COMPARE_WITH_TIMEOUT(gpu2->count(), 3, 20000);
  QCOMPARE(gpu2->currentData().toInt(), 3);
  QVERIFY2(gpu2->currentText().contains(QStringLiteral("not found")), qPrintable(gpu2->currentText()));
  forja::ui::set_gpu_setting(-1);
  forja::test::settle_journal(window_);
}

void TestGpuPanes::doctorSpeaksTheWindowsLanguage() {
  // The findings come from the engine as templates; in a Portuguese window they read in Portuguese, with the
  // machine's facts (the fake's RTX 4090) filled in.
  if (libtorch_has_cuda()) QSKIP(kCpuOnlyScenario);
  use_scenario("healthy.json");
  QVERIFY(forja::ui::install_translations(QLocale(QStringLiteral("pt_BR"))));
  open_window();
  DoctorPane* pane = window_->doctor_pane();
  QSignalSpy ready(pane, &DoctorPane::report_ready);
  pane->check();
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 20000);
  auto* tree = pane->findChild<QTreeWidget*>(QStringLiteral("doctorFindings"));
  QString shown;
  for (int i = 0; i < tree->topLevelItemCount(); ++i)
    shown += tree->topLevelItem(i)->text(0) + u'|' + tree->topLevelItem(i)->text(1) + u'\n';
  forja::ui::install_translations(QLocale(QLocale::English, QLocale::UnitedStates));
  QVERIFY2(shown.contains(QStringLiteral("ESTA BUILD DO FORJA RODA SÓ NA CPU")), qPrintable(shown));
  QVERIFY2(shown.contains(QStringLiteral("GPU 0 (NVIDIA GeForce RTX 4090)")), qPrintable(shown));
  QVERIFY2(shown.contains(QStringLiteral("Compile o Forja de novo")), qPrintable(shown));
  QVERIFY2(!shown.contains(QStringLiteral("RUNS ON THE CPU ONLY")), qPrintable(shown));
  forja::test::settle_journal(window_);
}

void TestGpuPanes::aboutNamesTheRuntime() {
  use_scenario("healthy.json");
  open_window();
  forja::ui::AboutDialog about(window_->context(), window_);
  const QString text = about.findChild<QLabel*>(QStringLiteral("aboutText"))->text();
  QVERIFY2(text.contains(QStringLiteral(FORJA_VERSION)), qPrintable(text));
  QVERIFY2(text.contains(QStringLiteral("General Public License")), qPrintable(text));
  QVERIFY2(text.contains(forja::ui::AboutDialog::docs_url()), qPrintable(text));
  auto* runtime = about.findChild<QLabel*>(QStringLiteral("aboutRuntime"));
  QVERIFY(runtime->text().contains(QString::fromLatin1(qVersion())));
  // The probe answers off the GUI thread: then LibTorch's version and the fake driver's.
  QTRY_VERIFY_WITH_TIMEOUT(
      runtime->text().contains(QRegularExpression(QStringLiteral("LibTorch \\d+\\.\\d+"))), 20000);
  QVERIFY2(runtime->text().contains(QStringLiteral("550.54.14")), qPrintable(runtime->text()));
  forja::test::settle_journal(window_);
}

QTEST_MAIN(TestGpuPanes)
#include "test_gpu_panes.moc"
