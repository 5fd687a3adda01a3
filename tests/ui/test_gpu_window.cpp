// The real window on a real NVIDIA GPU, driven as a user drives it: the GPU pane shows the machine's card and
// plots it live from the driver (the real libnvidia-ml, no fake), the Train pane fine-tunes the built-in toy
// model in a real forja-cli worker on cuda, and the Chat pane answers on the GPU. Skipped where this build
// sees no CUDA GPU. FORJA_TEST_WINDOW_DEVICE=cpu runs the same train and chat flow on the CPU instead (the
// GPU-only checks left out), so that the flow can be checked on a machine without a GPU.
// FORJA_SCREENSHOT_DIR=<dir>: the whole window is grabbed to train_cuda.png, gpu.png (the GPU pane after the
// run) and chat_cuda.png there.
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <optional>

#include "forja/env.h"
#include "forja/journal.h"
#include "gpu_monitor_service.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/chat_pane.h"
#include "panes/data_pane.h"
#include "panes/doctor_pane.h"
#include "panes/gpu_pane.h"
#include "panes/model_pane.h"
#include "panes/train_pane.h"
#include "plot.h"
#include "train_worker.h"
#include "ui_test_support.h"

using forja::ui::ChatPane;
using forja::ui::MainWindow;
using forja::ui::PaneId;
using forja::ui::TrainPane;

namespace {

const QString kDemo = QStringLiteral(FORJA_SOURCE_DIR "/resources/demo");
// Enough steps for a curve and a checkpoint (the demo preset checkpoints every 20), few enough for seconds.
constexpr int kSteps = 30;

// Grabs the whole window to <FORJA_SCREENSHOT_DIR>/<name>, as forja-screenshots does; nothing without it.
void screenshot(MainWindow* window, const QString& name) {
  const QString dir = qEnvironmentVariable("FORJA_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  // The pane just shown lays itself out, and the plots draw their queued replots, before the grab.
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
  const QString file = QDir(dir).filePath(name);
  if (!QDir().mkpath(dir) || !window->grab().save(file)) qWarning("could not write %s", qPrintable(file));
}

// The steps the worker wrote to <run>/progress.jsonl, its own record of the run.
QList<QJsonObject> progress_steps(const QString& run_dir) {
  QList<QJsonObject> steps;
  QFile f(QDir(run_dir).filePath(QStringLiteral("progress.jsonl")));
  if (!f.open(QIODevice::ReadOnly)) return steps;
  while (!f.atEnd()) {
    const QJsonObject j = QJsonDocument::fromJson(f.readLine()).object();
    if (j.value(QStringLiteral("event")).toString() == QLatin1String("step")) steps << j;
  }
  return steps;
}

const forja::env::GpuSample* gpu_in(const forja::env::Sample& sample, int nvml_index) {
  for (const auto& g : sample.gpus)
    if (g.index == nvml_index) return &g;
  return nullptr;
}

// Whether the latest sample has this process's LibTorch allocator holding memory on cuda:0.
bool window_holds_cuda0(const forja::ui::GpuMonitorService* service) {
  const std::vector<forja::env::Sample> history = service->history();
  return !history.empty() && std::any_of(history.back().allocator.begin(), history.back().allocator.end(),
                                         [](const auto& a) { return a.cuda_index == 0 && a.allocated > 0; });
}

}  // namespace

class TestGpuWindow : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void cleanupTestCase();
  void gpuPaneShowsTheCard();
  void trainPaneRunsOnCuda();
  void chatDecodesOnCuda();

 private:
  bool on_gpu() const { return device_ == QLatin1String("cuda"); }
  // The demo model open in the window (a test run alone opens it itself).
  void open_demo_model();
  // The GPU pane's sampling interval, set through its spin box as a user would: short, so that a run of a
  // few seconds gets many samples.
  void sample_every(int ms);

  QString device_;                // what the Train pane is told: "cuda", or "cpu" under the override
  bool torch_cuda_ = false;       // the engine's probe: LibTorch sees a CUDA device
  int nvml_of_cuda0_ = 0;         // the NVML (nvidia-smi) index of the GPU that CUDA calls cuda:0
  QString adapter_;               // the adapter trainPaneRunsOnCuda left, for the chat
  QTemporaryDir* tmp_ = nullptr;  // the journal and the run's output folder
  MainWindow* window_ = nullptr;  // one window for the whole suite, as one user session
};

void TestGpuWindow::initTestCase() {
  forja::test::init_ui_test_environment("test_gpu_window");
  qputenv("FORJA_CLI", FORJA_CLI);
  // The machine's own driver: never the fake NVML / CUDA libraries the other GPU suites point at.
  for (const char* name : {"FORJA_NVML_LIBRARY", "FORJA_CUDA_DRIVER_LIBRARY", "FORJA_NVIDIA_VERSION_FILE",
                           "FORJA_FAKE_GPU_SCENARIO"})
    qunsetenv(name);
  device_ = qEnvironmentVariable("FORJA_TEST_WINDOW_DEVICE", QStringLiteral("cuda"));
  QVERIFY2(device_ == QLatin1String("cuda") || device_ == QLatin1String("cpu"),
           qPrintable(QStringLiteral("FORJA_TEST_WINDOW_DEVICE is cuda or cpu, not %1").arg(device_)));

  forja::env::ProbeOptions options;
  options.probe_nvcc = false;  // the toolkit plays no part here
  const forja::env::Report report = forja::env::probe(options);
  torch_cuda_ = report.torch.cuda_available && report.torch.device_count > 0;
  for (const auto& gpu : report.gpus)
    if (gpu.cuda_index == 0) nvml_of_cuda0_ = gpu.index;
  if (on_gpu() && !torch_cuda_) {
    const QString why =
        !report.torch.built_with_cuda
            ? QStringLiteral("LibTorch %1 was built without CUDA")
                  .arg(QString::fromStdString(report.torch.version))
            : QStringLiteral("LibTorch %1 has CUDA but sees %2 device(s)%3")
                  .arg(QString::fromStdString(report.torch.version))
                  .arg(report.torch.device_count)
                  .arg(report.driver.present() ? QString()
                                               : QStringLiteral(" and there is no NVIDIA driver"));
    QSKIP(qPrintable(QStringLiteral("no CUDA GPU is visible to this build: %1 (FORJA_TEST_WINDOW_DEVICE=cpu "
                                    "runs the train and chat flow on the CPU)")
                         .arg(why)));
  }

  tmp_ = new QTemporaryDir;
  QVERIFY(tmp_->isValid());
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->resize(1280, 720);  // the size of the README's screenshots
  window_->show();
}

void TestGpuWindow::cleanupTestCase() {
  if (window_ && window_->train_pane()->running()) window_->train_pane()->stop();
  QVERIFY(forja::test::close_window(window_, tmp_));
}

void TestGpuWindow::open_demo_model() {
  if (window_->model_pane()->model()) return;
  window_->open_model(kDemo + QStringLiteral("/model"));
  QTRY_VERIFY_WITH_TIMEOUT(window_->model_pane()->model().has_value(), 30000);
}

void TestGpuWindow::sample_every(int ms) {
  auto* interval = window_->gpu_pane()->findChild<QSpinBox*>(QStringLiteral("gpuInterval"));
  QVERIFY(interval);
  interval->setValue(ms);
  QCOMPARE(window_->gpu_monitor()->interval().count(), ms);
}

void TestGpuWindow::gpuPaneShowsTheCard() {
  forja::ui::GpuMonitorService* service = window_->gpu_monitor();
  if (!on_gpu() && !service->available())
    QSKIP(qPrintable(QStringLiteral("no NVIDIA driver to read: %1").arg(service->reason())));
  QVERIFY2(service->available(), qPrintable(service->reason()));
  const QString smi = QStandardPaths::findExecutable(QStringLiteral("nvidia-smi"));
  if (smi.isEmpty()) QSKIP("nvidia-smi is not on the PATH: nothing to compare the GPU's name with");
  QProcess query;
  query.start(smi, {QStringLiteral("--query-gpu=name"), QStringLiteral("--format=csv,noheader"),
                    QStringLiteral("--id=0")});
  QVERIFY2(query.waitForFinished(30000), qPrintable(query.errorString()));
  QVERIFY2(query.exitStatus() == QProcess::NormalExit && query.exitCode() == 0,
           query.readAllStandardError().constData());
  const QString smi_name =
      QString::fromLocal8Bit(query.readAllStandardOutput()).section(u'\n', 0, 0).trimmed();
  QVERIFY(!smi_name.isEmpty());

  window_->show_pane(PaneId::Gpu);
  forja::ui::GpuPane* pane = window_->gpu_pane();
  sample_every(100);
  if (QTest::currentTestFailed()) return;
  // Live: new points arrive after the pane is shown, not only the history it replayed when it was built.
  const int before = std::max(0, pane->plotted_points(0));
  QTRY_VERIFY_WITH_TIMEOUT(pane->plotted_points(0) > before + 1, 5000);
  const std::vector<forja::env::Sample> history = service->history();
  QVERIFY(!history.empty());
  const forja::env::Sample& latest = history.back();
  QVERIFY(!latest.gpus.empty());
  // One plot for every card the driver lists, titled with its nvidia-smi index and name; GPU 0's name is
  // the one nvidia-smi prints.
  for (const auto& g : latest.gpus) {
    QVERIFY2(pane->plotted_points(g.index) >= 1, qPrintable(QString::number(g.index)));
    auto* plot = pane->findChild<QCustomPlot*>(QStringLiteral("gpuPlot%1").arg(g.index));
    QVERIFY(plot);
    auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    QVERIFY(title);
    QCOMPARE(title->text(), QStringLiteral("GPU %1 · %2").arg(g.index).arg(QString::fromStdString(g.name)));
  }
  const forja::env::GpuSample* gpu0 = gpu_in(latest, 0);
  QVERIFY(gpu0);
  QCOMPARE(QString::fromStdString(gpu0->name), smi_name);
  QVERIFY2(gpu0->memory_total > 0, "the driver reports no memory on GPU 0");
  QVERIFY(gpu0->memory_used <= gpu0->memory_total);
  // The plot's memory axis spans the card's memory.
  auto* plot0 = pane->findChild<QCustomPlot*>(QStringLiteral("gpuPlot0"));
  QVERIFY(plot0->yAxis->range().upper > 0);

  // The Doctor pane's report of the same driver names the same card.
  forja::ui::DoctorPane* doctor = window_->doctor_pane();
  QSignalSpy ready(doctor, &forja::ui::DoctorPane::report_ready);
  doctor->check();
  QTRY_VERIFY_WITH_TIMEOUT(ready.count() >= 1, 60000);
  QString doctor_name;
  for (const auto& g : doctor->report()->gpus)
    if (g.index == 0) doctor_name = QString::fromStdString(g.name);
  QCOMPARE(doctor_name, smi_name);
  const QString details = doctor->findChild<QPlainTextEdit*>(QStringLiteral("doctorDetails"))->toPlainText();
  QVERIFY2(details.contains(smi_name), qPrintable(details));
  if (on_gpu()) {
    const QString banner = doctor->findChild<QLabel*>(QStringLiteral("doctorBanner"))->text();
    QVERIFY2(banner.contains(QStringLiteral("cuda:0")), qPrintable(banner));
  }
}

void TestGpuWindow::trainPaneRunsOnCuda() {
  open_demo_model();
  if (QTest::currentTestFailed()) return;
  TrainPane* train = window_->train_pane();
  window_->show_pane(PaneId::Train);
  // The demo preset first, as "Try the Demo" does: it sets the max length the Data pane reads the data with.
  auto* preset = train->findChild<QComboBox*>(QStringLiteral("trainPreset"));
  preset->setCurrentIndex(preset->findData(QStringLiteral("demo")));
  auto* device = train->findChild<QComboBox*>(QStringLiteral("trainDevice"));
  QCOMPARE(device->currentText(), QStringLiteral("cpu"));  // the preset's own choice, overridden below
  forja::ui::DataPane* data = window_->data_pane();
  QSignalSpy read(data, &forja::ui::DataPane::dataset_ready);
  const QString dataset = kDemo + QStringLiteral("/dataset.jsonl");
  data->set_eval_fraction(0.0);
  data->open(dataset);
  QTRY_VERIFY_WITH_TIMEOUT(!read.isEmpty() && read.last().at(0).toString() == dataset && !data->loading(),
                           60000);
  device->setCurrentText(device_);
  QCOMPARE(device->currentText(), device_);
  train->findChild<QSpinBox*>(QStringLiteral("trainSteps"))->setValue(kSteps);
  const QString run_dir = tmp_->filePath(QStringLiteral("run"));
  train->findChild<QLineEdit*>(QStringLiteral("trainOutputDir"))->setText(run_dir);

  // The driver's view while the worker runs: every sample taken meanwhile, against GPU 0's use just before.
  forja::ui::GpuMonitorService* service = window_->gpu_monitor();
  const bool nvml = service->available();
  if (on_gpu()) QVERIFY2(nvml, qPrintable(service->reason()));
  int samples_while_running = 0;
  bool worker_listed = false;
  uint64_t idle_used = 0, peak_used = 0;
  double first_t = -1, last_t = -1;  // the samples' times while it ran, in the plot's seconds
  QObject watch;  // the sample handler's context: gone, with the handler, when this test returns
  if (nvml) {
    sample_every(100);
    if (QTest::currentTestFailed()) return;
    QTRY_VERIFY_WITH_TIMEOUT(!service->history().empty(), 5000);
    if (const auto* g = gpu_in(service->history().back(), nvml_of_cuda0_)) idle_used = g->memory_used;
    connect(service, &forja::ui::GpuMonitorService::sampled, &watch, [&](const forja::env::Sample& s) {
      if (!train->running()) return;
      ++samples_while_running;
      last_t = static_cast<double>(s.since_start.count()) / 1000.0;
      if (first_t < 0) first_t = last_t;
      if (const auto* g = gpu_in(s, nvml_of_cuda0_)) {
        peak_used = std::max(peak_used, g->memory_used);
        for (const auto& p : g->processes) worker_listed |= p.pid == train->worker()->pid();
      }
    });
  }

  QSignalSpy finished(train, &TrainPane::run_finished);
  QSignalSpy failed(train, &TrainPane::run_failed);
  auto* start = train->findChild<QPushButton*>(QStringLiteral("trainStart"));
  QVERIFY(start->isEnabled());
  QTest::mouseClick(start, Qt::LeftButton);
  QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 300000);
  screenshot(window_, QStringLiteral("train_cuda.png"));
  QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
  const QJsonObject result = finished.at(0).at(0).toJsonObject();
  QCOMPARE(result.value(QStringLiteral("outcome")).toString(), QStringLiteral("finished"));
  QCOMPARE(result.value(QStringLiteral("steps")).toInt(), kSteps);
  // Where the worker trained, as it reports it, not as the form asked.
  QCOMPARE(result.value(QStringLiteral("device")).toString(),
           on_gpu() ? QStringLiteral("cuda:0") : QStringLiteral("cpu"));
  const QString status = train->findChild<QLabel*>(QStringLiteral("trainStatus"))->text();
  QVERIFY2(status.contains(QStringLiteral("Run finished after %1 steps on %2.")
                               .arg(kSteps)
                               .arg(on_gpu() ? QStringLiteral("GPU cuda:0") : QStringLiteral("CPU"))),
           qPrintable(status));
  auto* progress = train->findChild<QProgressBar*>(QStringLiteral("trainProgress"));
  QCOMPARE(progress->maximum(), kSteps);
  QCOMPARE(progress->value(), kSteps);
  QCOMPARE(train->plotted_steps(), kSteps);
  adapter_ = result.value(QStringLiteral("adapter")).toString();
  QVERIFY2(QFile::exists(adapter_ + QStringLiteral("/adapter_model.safetensors")), qPrintable(adapter_));

  // Where the worker ran, from its own records, not from the form: every step line reports LibTorch's CUDA
  // caching allocator (memory held on cuda devices, 0 where the process has none), and the journal keeps it.
  const QList<QJsonObject> steps = progress_steps(run_dir);
  QCOMPARE(steps.size(), kSteps);
  int steps_on_cuda = 0;
  for (const QJsonObject& s : steps)
    steps_on_cuda += s.value(QStringLiteral("gpu_allocated_gib")).toDouble() > 0 &&
                     s.value(QStringLiteral("gpu_reserved_gib")).toDouble() > 0;
  const QString worker_device = steps_on_cuda == kSteps ? QStringLiteral("cuda")
                                : steps_on_cuda == 0    ? QStringLiteral("cpu")
                                                        : QStringLiteral("mixed");
  QVERIFY2(
      worker_device == device_,
      qPrintable(QStringLiteral("the worker's steps say %1 (%2 of %3 steps held CUDA memory), the form %4")
                     .arg(worker_device)
                     .arg(steps_on_cuda)
                     .arg(kSteps)
                     .arg(device_)));
  {
    forja::Journal journal = forja::test::read_journal(window_);
    std::optional<forja::RunRecord> run;
    for (const auto& r : journal.runs())
      if (QString::fromStdString(r.adapter_path) == adapter_) run = r;
    QVERIFY2(run, qPrintable(adapter_));
    QCOMPARE(run->status, forja::RunStatus::Completed);
    const std::vector<forja::MetricPoint> metrics = journal.metrics(run->id);
    QCOMPARE(metrics.size(), size_t(kSteps));
    for (const auto& m : metrics)
      QVERIFY2(on_gpu() ? m.gpu_memory_bytes.value_or(0) > 0 : !m.gpu_memory_bytes.has_value(),
               qPrintable(QStringLiteral("step %1").arg(m.step)));
  }

  // The Train pane's "GPU GiB" curve: a point per step on cuda, none on the CPU.
  auto* speed = train->findChild<QCustomPlot*>(QStringLiteral("trainSpeedPlot"));
  QVERIFY(speed);
  QCPGraph* gib = nullptr;
  for (int g = 0; g < speed->graphCount(); ++g)
    if (speed->graph(g)->name() == QLatin1String("GPU GiB")) gib = speed->graph(g);
  QVERIFY(gib);
  if (on_gpu()) {
    QCOMPARE(gib->dataCount(), kSteps);
    for (auto it = gib->data()->constBegin(); it != gib->data()->constEnd(); ++it)
      QVERIFY2(it->value > 0, qPrintable(QStringLiteral("step %1: %2 GiB").arg(it->key).arg(it->value)));
    QVERIFY(speed->yAxis2->visible());
  } else {
    QCOMPARE(gib->dataCount(), 0);
  }

  if (on_gpu()) {
    // The GPU pane plotted the driver's samples while the worker ran, and the worker's memory shows in them.
    qInfo("NVML: %d samples while the worker ran; GPU %d used %.0f MiB idle, %.0f MiB at most; the worker %s",
          samples_while_running, nvml_of_cuda0_, idle_used / 1048576.0, peak_used / 1048576.0,
          worker_listed ? "listed among its processes" : "not listed (its pid is not visible here)");
    QVERIFY(samples_while_running >= 1);
    QVERIFY2(peak_used > idle_used,
             qPrintable(QStringLiteral("GPU %1's used memory never rose above its %2 bytes before the run")
                            .arg(nvml_of_cuda0_)
                            .arg(idle_used)));
    // The same rise on the GPU pane's memory curve, between the first and the last sample of the run.
    auto* plot =
        window_->gpu_pane()->findChild<QCustomPlot*>(QStringLiteral("gpuPlot%1").arg(nvml_of_cuda0_));
    QVERIFY(plot);
    int points = 0;
    double plotted_peak = 0;
    for (auto it = plot->graph(0)->data()->findBegin(first_t, false);
         it != plot->graph(0)->data()->constEnd() && it->key <= last_t; ++it) {
      ++points;
      plotted_peak = std::max(plotted_peak, it->value);
    }
    QVERIFY2(points >= 1,
             qPrintable(QStringLiteral("no points between %1 s and %2 s").arg(first_t).arg(last_t)));
    QVERIFY(plotted_peak * 1024 * 1024 * 1024 > static_cast<double>(idle_used));
    // The GPU pane with the run's rise and fall on its curve.
    window_->show_pane(PaneId::Gpu);
    screenshot(window_, QStringLiteral("gpu.png"));
    window_->show_pane(PaneId::Train);
  }
}

void TestGpuWindow::chatDecodesOnCuda() {
  open_demo_model();
  if (QTest::currentTestFailed()) return;
  ChatPane* chat = window_->chat_pane();
  // The window hands a finished run's adapter to the chat: with one, the chat answers through it.
  const bool with_adapter = !adapter_.isEmpty();
  window_->show_pane(PaneId::Chat);
  QTRY_VERIFY_WITH_TIMEOUT(chat->model_ready() && (!with_adapter || chat->has_adapter()), 120000);
  chat->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0);
  chat->findChild<QSpinBox*>(QStringLiteral("maxNewTokens"))->setValue(64);
  QSignalSpy answered(chat, &ChatPane::answer_finished);
  auto* input = chat->findChild<QPlainTextEdit*>(QStringLiteral("chatInput"));
  input->setFocus();
  QTest::keyClicks(input, QStringLiteral("What is CUDA?"));
  QTest::keyClick(input, Qt::Key_Return);
  QTRY_VERIFY_WITH_TIMEOUT(!answered.isEmpty(), 60000);
  screenshot(window_, QStringLiteral("chat_cuda.png"));
  const QString answer = chat->last_answer();
  qInfo("the chat (%s) answered: %s", with_adapter ? "with the run's adapter" : "the base model",
        qPrintable(answer.left(200)));
  QVERIFY2(!answer.trimmed().isEmpty(),
           qPrintable(chat->findChild<QLabel*>(QStringLiteral("chatStatus"))->text()));

  // The device the engine loaded the model on, in the words the user reads above the conversation
  // ("… on GPU cuda:0 (bf16) …"). The chat has no device setting: it takes cuda whenever LibTorch sees one.
  const QString model_line = chat->findChild<QLabel*>(QStringLiteral("chatModel"))->text();
  const bool expect_gpu = on_gpu() || torch_cuda_;
  QVERIFY2(model_line.contains(expect_gpu ? QStringLiteral(" on GPU cuda") : QStringLiteral(" on CPU")),
           qPrintable(model_line));
  if (on_gpu()) {
    // And the window's own LibTorch allocator, sampled beside the driver, holds the chat's model on cuda:0.
    QTRY_VERIFY_WITH_TIMEOUT(window_holds_cuda0(window_->gpu_monitor()), 5000);
  }
}

QTEST_MAIN(TestGpuWindow)
#include "test_gpu_window.moc"
