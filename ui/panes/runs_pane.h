// RunsPane: the history of training runs from the journal — config, status, final losses, duration, adapter —
// with the loss curves of the selected runs overlaid in one plot, and deleting a run. It polls the journal,
// so runs written by a worker process appear without a restart.
#pragma once

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <vector>

#include "forja/journal.h"
#include "pane.h"

class QCustomPlot;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTimer;
class QTreeWidget;

namespace forja::ui {

class ErrorBox;

class RunsPane : public Pane {
  Q_OBJECT

 public:
  enum Column {
    NameCol,
    StatusCol,
    ModelCol,
    StartedCol,
    DurationCol,
    LossCol,
    EvalLossCol,
    AdapterCol,
    ColumnCount
  };

  explicit RunsPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("Runs"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/runs.svg")); }

  // Re-reads the journal, keeping the selection. Journal reads run on the GUI thread: in WAL mode a reader
  // never waits for the worker's writes, and the queries touch an index only.
  void refresh();
  std::vector<int64_t> selected_run_ids() const;
  void select_runs(const std::vector<int64_t>& ids);
  // Asks for confirmation, then deletes the selected runs that are not running.
  void delete_selected();
  // How often the pane looks for new runs and metrics while it is visible.
  static constexpr int kPollIntervalMs = 2000;

 Q_SIGNALS:
  void runs_deleted(int count);
  // "Chat with Adapter": the selected run's base model and the adapter it produced.
  void chat_requested(const QString& model_dir, const QString& adapter_dir);

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void update_plot();
  void update_details();
  void update_buttons();
  void show_journal_error(const QString& message, const QString& hint);

  std::vector<forja::RunRecord> runs_;
  QByteArray signature_ = "never read";
  QLabel* summary_;
  ErrorBox* error_;
  QTreeWidget* list_;
  QCustomPlot* plot_;
  QPlainTextEdit* details_;
  QPushButton* delete_;
  QPushButton* chat_;
  QTimer* poll_;
};

}  // namespace forja::ui
