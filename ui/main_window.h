// MainWindow: the sidebar of panes, the menus and shortcuts, the status bar, and the window state kept in
// QSettings. It owns the shared AppContext (job monitor, run journal) that the panes use.
#pragma once

#include <QMainWindow>
#include <QString>

#include <array>

#include "pane.h"
#include "pane_id.h"

class QListWidget;
class QMenu;
class QSplitter;
class QStackedWidget;

namespace forja::ui {

class ChatPane;
class DataPane;
class DoctorPane;
class GpuMonitorService;
class GpuPane;
class JobMonitor;
class ModelPane;
class RunsPane;
class TrainPane;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  struct Options {
    QString journal_path;  // empty: the XDG default (app_paths.h)
  };
  explicit MainWindow(const Options& options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  void open_model(const QString& dir);
  // "Try the Demo": opens the built-in toy model and dataset, fine-tunes it on the CPU with the demo preset,
  // then shows the Chat pane with the adapter on. False (and a message) when the demo files are missing.
  bool start_demo();
  Pane* pane(PaneId id) const { return panes_[static_cast<size_t>(pane_index(id))]; }
  PaneId current_pane() const;
  void show_pane(PaneId id);
  ModelPane* model_pane() const { return model_pane_; }
  RunsPane* runs_pane() const { return runs_pane_; }
  DataPane* data_pane() const { return data_pane_; }
  TrainPane* train_pane() const { return train_pane_; }
  ChatPane* chat_pane() const { return chat_pane_; }
  DoctorPane* doctor_pane() const { return doctor_pane_; }
  GpuPane* gpu_pane() const { return gpu_pane_; }
  GpuMonitorService* gpu_monitor() const { return gpu_; }
  AppContext& context() { return context_; }

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void restore_latest_run();
  void add_pane(PaneId id, Pane* pane);
  void build_menus();
  void rebuild_recent_menu();
  void restore_state();
  void save_state();

  JobMonitor* jobs_;
  GpuMonitorService* gpu_;
  AppContext context_;
  std::array<Pane*, kAllPanes.size()> panes_{};
  ModelPane* model_pane_ = nullptr;
  RunsPane* runs_pane_ = nullptr;
  DataPane* data_pane_ = nullptr;
  TrainPane* train_pane_ = nullptr;
  ChatPane* chat_pane_ = nullptr;
  DoctorPane* doctor_pane_ = nullptr;
  GpuPane* gpu_pane_ = nullptr;
  QSplitter* splitter_;
  QListWidget* sidebar_;
  QStackedWidget* stack_;
  QMenu* view_menu_ = nullptr;
  QMenu* recent_menu_ = nullptr;
};

}  // namespace forja::ui
