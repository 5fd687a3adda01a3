// MainWindow: assembly of panes, menus, shortcuts and the persisted window state.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileInfo>
#include <QJsonObject>
#include <QKeySequence>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>

#include "about_dialog.h"
#include "app_paths.h"
#include "forja/error.h"
#include "forja/journal.h"
#include "gpu_monitor_service.h"
#include "gpu_status_widget.h"
#include "job_status_widget.h"
#include "jobs/job_monitor.h"
#include "journal_service.h"
#include "panes/chat_pane.h"
#include "panes/data_pane.h"
#include "panes/doctor_pane.h"
#include "panes/gpu_pane.h"
#include "panes/model_pane.h"
#include "panes/runs_pane.h"
#include "panes/train_pane.h"
#include "settings_dialog.h"

namespace forja::ui {
namespace {

const char* const kGeometryKey = "MainWindow/geometry";
const char* const kStateKey = "MainWindow/state";
const char* const kSplitterKey = "MainWindow/splitter";
const char* const kPaneKey = "MainWindow/pane";

}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent) {
  setObjectName(QStringLiteral("MainWindow"));
  setWindowTitle(tr("Forja"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/forja.svg")));
  jobs_ = new JobMonitor(this);
  context_.jobs = jobs_;
  // NVML from FORJA_NVML_LIBRARY when set (the tests' fake driver), else the driver's own.
  gpu_ = new GpuMonitorService(this);
  context_.gpu = gpu_;
  gpu_->start();
  context_.journal = new JournalService(
      options.journal_path.isEmpty() ? default_journal_path() : options.journal_path, this);

  sidebar_ = new QListWidget;
  sidebar_->setObjectName(QStringLiteral("sidebar"));
  sidebar_->setIconSize(QSize(22, 22));
  sidebar_->setSpacing(2);
  sidebar_->setFrameShape(QFrame::NoFrame);
  sidebar_->setMinimumWidth(120);
  stack_ = new QStackedWidget;
  stack_->setObjectName(QStringLiteral("paneStack"));
  splitter_ = new QSplitter;
  splitter_->setObjectName(QStringLiteral("mainSplitter"));
  splitter_->addWidget(sidebar_);
  splitter_->addWidget(stack_);
  splitter_->setStretchFactor(1, 1);
  splitter_->setChildrenCollapsible(false);
  splitter_->setSizes({150, 850});
  setCentralWidget(splitter_);

  model_pane_ = new ModelPane(context_);
  runs_pane_ = new RunsPane(context_);
  data_pane_ = new DataPane(context_);
  train_pane_ = new TrainPane(context_);
  chat_pane_ = new ChatPane(context_);
  doctor_pane_ = new DoctorPane(context_);
  gpu_pane_ = new GpuPane(context_);
  add_pane(PaneId::Model, model_pane_);
  add_pane(PaneId::Data, data_pane_);
  add_pane(PaneId::Train, train_pane_);
  add_pane(PaneId::Runs, runs_pane_);
  add_pane(PaneId::Chat, chat_pane_);
  add_pane(PaneId::Gpu, gpu_pane_);
  add_pane(PaneId::Doctor, doctor_pane_);
  connect(data_pane_, &DataPane::dataset_ready, train_pane_, &TrainPane::set_dataset);
  connect(train_pane_, &TrainPane::preset_max_length, data_pane_, &DataPane::set_max_length);
  connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
  connect(model_pane_, &ModelPane::recent_changed, this, &MainWindow::rebuild_recent_menu);
  connect(model_pane_, &ModelPane::model_opened, this, [this](const forja::ModelInfo& info) {
    setWindowTitle(tr("%1 — Forja").arg(QFileInfo(QString::fromStdString(info.dir.string())).fileName()));
    data_pane_->set_model_dir(QString::fromStdString(info.dir.string()));
    train_pane_->set_model_dir(QString::fromStdString(info.dir.string()));
    train_pane_->set_model_info(info);
    chat_pane_->set_model_dir(QString::fromStdString(info.dir.string()));
  });
  connect(model_pane_, &ModelPane::demo_requested, this, &MainWindow::start_demo);
  connect(runs_pane_, &RunsPane::chat_requested, this, [this](const QString& model, const QString& adapter) {
    const auto& open = model_pane_->model();
    if (!open || QDir(QString::fromStdString(open->dir.string())) != QDir(model)) open_model(model);
    chat_pane_->set_model_dir(model);
    chat_pane_->open_adapter(adapter);
    show_pane(PaneId::Chat);
  });
  // A finished run's adapter goes into the chat at once, to talk to the result.
  connect(train_pane_, &TrainPane::run_finished, chat_pane_, [this](const QJsonObject& result) {
    const QString adapter = result.value(QStringLiteral("adapter")).toString();
    if (!adapter.isEmpty()) chat_pane_->open_adapter(adapter);
  });

  statusBar()->addWidget(new JobStatusWidget(jobs_), 1);
  statusBar()->addPermanentWidget(new GpuStatusWidget(gpu_));
  build_menus();
  show_pane(PaneId::Model);
  restore_state();
  restore_latest_run();
}

void MainWindow::restore_latest_run() {
  // The newest run, when it did not end: still going (its worker outlived a window), or interrupted
  // (marked so when the journal opened). The Train pane follows the first and offers to resume the second.
  // A journal that cannot be read is the Runs pane's to report.
  context_.journal->request(
      this, [](forja::Journal& j) { return j.runs(); },
      [this](const std::vector<forja::RunRecord>& runs) {
        if (runs.empty()) return;
        const auto& r = runs.front();
        if (r.status == forja::RunStatus::Running || r.status == forja::RunStatus::Interrupted)
          train_pane_->restore_run(QString::fromStdString(r.config_json), r.worker_pid);
      });
}

MainWindow::~MainWindow() = default;

bool MainWindow::start_demo() {
  const QString demo = demo_dir();
  if (demo.isEmpty()) {
    QMessageBox::warning(this, tr("Demo"),
                         tr("The demo files (resources/demo) are not installed with this copy of Forja."));
    return false;
  }
  if (train_pane_->running()) {
    show_pane(PaneId::Train);
    return false;
  }
  const QString dataset = demo + QStringLiteral("/dataset.jsonl");
  const QString model = demo + QStringLiteral("/model");
  train_pane_->apply_preset(QStringLiteral("demo"));
  // The dataset is read once the model is open, so that it is tokenized with the model's tokenizer.
  auto* opened = new QMetaObject::Connection;
  *opened = connect(model_pane_, &ModelPane::model_opened, this,
                    [this, opened, model, dataset](const forja::ModelInfo& info) {
                      if (QDir(QString::fromStdString(info.dir.string())) != QDir(model)) return;
                      disconnect(*opened);
                      delete opened;
                      data_pane_->set_eval_fraction(0.0);  // every question is one the chat should answer
                      data_pane_->open(dataset);
                    });
  // Train once the Data pane has read (and tokenized) the dataset, then chat once the run has finished.
  auto* ready = new QMetaObject::Connection;
  *ready = connect(data_pane_, &DataPane::dataset_ready, this,
                   [this, ready, dataset](const QString& file, const QJsonObject&) {
                     if (file != dataset) return;
                     disconnect(*ready);
                     delete ready;
                     show_pane(PaneId::Train);
                     train_pane_->start();
                   });
  auto* finished = new QMetaObject::Connection;
  *finished = connect(train_pane_, &TrainPane::run_finished, this, [this, finished](const QJsonObject& r) {
    disconnect(*finished);
    delete finished;
    if (r.value(QStringLiteral("outcome")).toString() == QLatin1String("finished")) show_pane(PaneId::Chat);
  });
  open_model(model);
  return true;
}

void MainWindow::add_pane(PaneId id, Pane* pane) {
  // The sidebar's rows and the stack's pages follow PaneId's order, so a row is the id's index.
  Q_ASSERT(stack_->count() == pane_index(id));
  panes_[static_cast<size_t>(pane_index(id))] = pane;
  stack_->addWidget(pane);
  auto* item = new QListWidgetItem(pane->icon(), pane->title(), sidebar_);
  item->setSizeHint(QSize(0, 34));
}

PaneId MainWindow::current_pane() const {
  return pane_at(stack_->currentIndex()).value_or(PaneId::Model);
}

void MainWindow::show_pane(PaneId id) {
  sidebar_->setCurrentRow(pane_index(id));
}

void MainWindow::open_model(const QString& dir) {
  show_pane(PaneId::Model);
  model_pane_->open(dir);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open =
      file->addAction(QIcon(QStringLiteral(":/icons/open-folder.svg")), tr("&Open Model Folder…"));
  open->setObjectName(QStringLiteral("actionOpenModel"));
  open->setShortcut(QKeySequence(tr("Ctrl+O")));
  connect(open, &QAction::triggered, this, [this] {
    show_pane(PaneId::Model);
    model_pane_->open_dialog();
  });
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  rebuild_recent_menu();
  file->addSeparator();
  QAction* settings = file->addAction(tr("&Settings…"));
  settings->setObjectName(QStringLiteral("actionSettings"));
  settings->setShortcut(QKeySequence(tr("Ctrl+,")));
  settings->setMenuRole(QAction::PreferencesRole);
  connect(settings, &QAction::triggered, this, [this] {
    auto* dialog = new SettingsDialog(context_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
  });
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setObjectName(QStringLiteral("actionQuit"));
  quit->setShortcut(QKeySequence(tr("Ctrl+Q")));
  quit->setMenuRole(QAction::QuitRole);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  view_menu_ = menuBar()->addMenu(tr("&View"));
  for (const PaneId id : kAllPanes) {
    const int i = pane_index(id);
    QAction* a = view_menu_->addAction(pane(id)->icon(), pane(id)->title());
    a->setObjectName(QStringLiteral("actionPane%1").arg(i + 1));
    // Ctrl+1..9 as in browsers and editors; a tenth pane would go without a shortcut.
    if (i < 9) a->setShortcut(QKeySequence(tr("Ctrl+%1").arg(i + 1)));
    connect(a, &QAction::triggered, this, [this, id] { show_pane(id); });
  }

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About Forja"));
  about->setObjectName(QStringLiteral("actionAbout"));
  about->setMenuRole(QAction::AboutRole);
  connect(about, &QAction::triggered, this, [this] {
    auto* dialog = new AboutDialog(context_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
  });
}

void MainWindow::rebuild_recent_menu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList recent = model_pane_->recent();
  for (const QString& dir : recent) {
    QAction* a = recent_menu_->addAction(QDir::toNativeSeparators(dir));
    connect(a, &QAction::triggered, this, [this, dir] { open_model(dir); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::restore_state() {
  QSettings settings;
  if (!restoreGeometry(settings.value(QLatin1String(kGeometryKey)).toByteArray())) resize(1100, 720);
  restoreState(settings.value(QLatin1String(kStateKey)).toByteArray());
  splitter_->restoreState(settings.value(QLatin1String(kSplitterKey)).toByteArray());
  // Saved as its sidebar position; one this version does not have leaves the first pane showing.
  if (const auto id = pane_at(settings.value(QLatin1String(kPaneKey), 0).toInt())) show_pane(*id);
}

void MainWindow::save_state() {
  QSettings settings;
  settings.setValue(QLatin1String(kGeometryKey), saveGeometry());
  settings.setValue(QLatin1String(kStateKey), saveState());
  settings.setValue(QLatin1String(kSplitterKey), splitter_->saveState());
  settings.setValue(QLatin1String(kPaneKey), pane_index(current_pane()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  save_state();
  // Jobs hold no unsaved user work yet (training runs live in their own worker process): ask them to stop.
  jobs_->cancel_all();
  gpu_->stop();
  event->accept();
}

}  // namespace forja::ui
