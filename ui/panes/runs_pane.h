// RunsPane: the history of training runs from the journal — config, status, final losses, duration, adapter —
// with the loss curves of the selected runs overlaid in one plot, deleting a run, and exporting a run's
// adapter merged into its base model (a Hugging Face folder, or one GGUF file for llama.cpp, LM Studio and
// Ollama). It polls the journal, so runs written by a worker process appear without a restart.
#pragma once

#include <QByteArray>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "forja/journal.h"
#include "jobs/export_job.h"
#include "pane.h"

class QCustomPlot;
class QLabel;
class QLineEdit;
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

  // Re-reads the journal (on the journal's thread), keeping the selection.
  void refresh();
  std::vector<int64_t> selected_run_ids() const;
  // The one selected run, when it has an adapter (what chat and export act on); null otherwise.
  const forja::RunRecord* selected_run_with_adapter() const;
  void select_runs(const std::vector<int64_t>& ids);
  // Asks for confirmation, then deletes the selected runs that are not running.
  void delete_selected();
  // The selected run's adapter merged into its base model, written by an export job (forja/export.h) in the
  // background: format "hf" (a Hugging Face folder) or "gguf" (one .gguf file) at `destination`.
  // export_finished says how it went (false when cancelled); a failure shows in the error box with the
  // exporter's own words.
  // format: "gguf", "ollama", "gguf-lora" or "hf"; dtype: a GGUF type, or empty for the format's default.
  void export_selected(const QString& format, const QString& destination, const QString& dtype = {});
  // The Export dialog for the selected run; it starts the export when accepted.
  void open_export_dialog();
  // The selected run's metrics (forja::metrics_csv) written to `path` off the GUI thread; metrics_exported
  // says how it went, a failure shows in the error box.
  void export_metrics_csv(const QString& path);
  // Stops the export at its next tensor or file; nothing is left at the destination.
  void cancel_export();
  bool exporting() const { return export_job_ != nullptr; }
  // How often the pane looks for new runs and metrics while it is visible.
  static constexpr int kPollIntervalMs = 2000;

 Q_SIGNALS:
  void runs_deleted(int count);
  // "Chat with Adapter": the selected run's base model and the adapter it produced.
  void chat_requested(const QString& model_dir, const QString& adapter_dir);
  void export_finished(bool ok, const QString& destination);
  void metrics_exported(bool ok, const QString& path);

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void refresh_done();
  void show_runs(std::vector<forja::RunRecord> runs);
  void update_plot();
  void draw_plot(const std::vector<std::pair<int64_t, std::string>>& runs,
                 const std::vector<std::vector<forja::MetricPoint>>& metrics);
  void write_metrics_csv(std::string csv, const QString& path);
  void update_details();
  void update_label_editor();
  void save_label();
  void update_buttons();
  void show_journal_error(const QString& message, const QString& hint);

  std::vector<forja::RunRecord> runs_;
  QByteArray signature_ = "never read";
  QLabel* summary_;
  ErrorBox* error_;
  QTreeWidget* list_;
  QCustomPlot* plot_;
  QPlainTextEdit* details_;
  // The selected run's name and notes, editable; saved to the journal by save_label_.
  QLineEdit* name_edit_;
  QPlainTextEdit* notes_edit_;
  QPushButton* save_label_;
  int64_t label_run_id_ = 0;  // the run the editor shows; 0: none
  QPushButton* delete_;
  QPushButton* chat_;
  QPushButton* export_;
  QPushButton* export_csv_;
  QLabel* export_status_;
  QPushButton* cancel_export_;
  QPointer<ExportJob> export_job_;
  bool refreshing_ = false;     // a runs() request is in flight
  bool refresh_again_ = false;  // and another refresh was asked for meanwhile
  int plot_token_ = 0;          // the newest plot asked for; older answers are dropped
  int details_token_ = 0;
  bool journal_error_ = false;  // the error box shows the journal's error (cleared once it reads again)
  QTimer* poll_;
};

}  // namespace forja::ui
