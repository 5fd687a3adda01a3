// RunsPane: the list, the overlay plot and the details of the selected run.
#include "panes/runs_pane.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "plot.h"

#include <filesystem>
#include <set>

#include "background_write.h"
#include "error_box.h"
#include "export_dialog.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "format.h"
#include "jobs/export_job.h"
#include "jobs/inspect_model_job.h"
#include "jobs/job_monitor.h"
#include "journal_service.h"
#include "theme.h"

namespace forja::ui {
namespace {

QString status_text(forja::RunStatus s) {
  switch (s) {
    case forja::RunStatus::Running:
      return RunsPane::tr("running");
    case forja::RunStatus::Completed:
      return RunsPane::tr("completed");
    case forja::RunStatus::Failed:
      return RunsPane::tr("failed");
    case forja::RunStatus::Stopped:
      return RunsPane::tr("stopped");
    case forja::RunStatus::Interrupted:
      return RunsPane::tr("interrupted");
  }
  return {};
}

QString status_icon(forja::RunStatus s) {
  switch (s) {
    case forja::RunStatus::Completed:
      return QStringLiteral(":/icons/severity-ok.svg");
    case forja::RunStatus::Failed:
      return QStringLiteral(":/icons/severity-error.svg");
    case forja::RunStatus::Interrupted:
      return QStringLiteral(":/icons/severity-warning.svg");
    default:
      return QStringLiteral(":/icons/severity-info.svg");
  }
}

}  // namespace

RunsPane::RunsPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("RunsPane"));
  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("runsSummary"));
  summary_->setWordWrap(true);  // beside the buttons: a long message wraps rather than widen the window
  auto* refresh_button = new QPushButton(QIcon(QStringLiteral(":/icons/refresh.svg")), tr("Refresh"));
  refresh_button->setObjectName(QStringLiteral("refreshRunsButton"));
  refresh_button->setShortcut(QKeySequence::Refresh);
  connect(refresh_button, &QPushButton::clicked, this, &RunsPane::refresh);
  delete_ = new QPushButton(QIcon(QStringLiteral(":/icons/delete.svg")), tr("Delete…"));
  delete_->setObjectName(QStringLiteral("deleteRunButton"));
  delete_->setToolTip(tr("Delete the selected runs from the history (Del). Adapter files on disk are kept."));
  connect(delete_, &QPushButton::clicked, this, &RunsPane::delete_selected);
  chat_ = new QPushButton(QIcon(QStringLiteral(":/icons/chat.svg")), tr("Chat with Adapter"));
  chat_->setObjectName(QStringLiteral("chatWithRunButton"));
  chat_->setToolTip(tr("Open the selected run's base model and adapter in the Chat pane."));
  connect(chat_, &QPushButton::clicked, this, [this] {
    if (const forja::RunRecord* r = selected_run_with_adapter())
      Q_EMIT chat_requested(QString::fromStdString(r->model_dir), QString::fromStdString(r->adapter_path));
  });
  export_ = new QPushButton(tr("Export…"));
  export_->setObjectName(QStringLiteral("exportRunButton"));
  export_->setToolTip(
      tr("Write the selected run's model for other tools: a GGUF file (quantized or not), an Ollama folder, "
         "a GGUF LoRA adapter, or a Hugging Face folder."));
  connect(export_, &QPushButton::clicked, this, &RunsPane::open_export_dialog);
  export_csv_ = new QPushButton(tr("Metrics CSV…"));
  export_csv_->setObjectName(QStringLiteral("exportMetricsButton"));
  export_csv_->setToolTip(tr("Write the selected run's metrics, one line per step, as a CSV file."));
  connect(export_csv_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export metrics as CSV"),
                                                      QStringLiteral("metrics.csv"), tr("CSV files (*.csv)"));
    if (!path.isEmpty()) export_metrics_csv(path);
  });
  cancel_export_ = new QPushButton(tr("Cancel export"));
  cancel_export_->setObjectName(QStringLiteral("cancelExportButton"));
  cancel_export_->setVisible(false);
  connect(cancel_export_, &QPushButton::clicked, this, &RunsPane::cancel_export);
  export_status_ = new QLabel;
  export_status_->setObjectName(QStringLiteral("exportStatus"));
  auto* top = new QHBoxLayout;
  top->addWidget(summary_, 1);
  top->addWidget(export_status_);
  top->addWidget(export_);
  top->addWidget(export_csv_);
  top->addWidget(cancel_export_);
  top->addWidget(chat_);
  top->addWidget(refresh_button);
  top->addWidget(delete_);

  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("runsError"));

  list_ = new QTreeWidget;
  list_->setObjectName(QStringLiteral("runList"));
  list_->setRootIsDecorated(false);
  list_->setUniformRowHeights(true);
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->setAlternatingRowColors(true);
  list_->setHeaderLabels({tr("Run"), tr("Status"), tr("Model"), tr("Started"), tr("Duration"),
                          tr("Final loss"), tr("Eval loss"), tr("Adapter")});
  list_->header()->setStretchLastSection(true);
  connect(list_, &QTreeWidget::itemSelectionChanged, this, [this] {
    update_plot();
    update_details();
    update_label_editor();
    update_buttons();
  });
  auto* del = new QShortcut(QKeySequence::Delete, list_, nullptr, nullptr, Qt::WidgetShortcut);
  connect(del, &QShortcut::activated, this, &RunsPane::delete_selected);

  plot_ = new QCustomPlot;
  plot_->setObjectName(QStringLiteral("lossPlot"));
  plot_->setMinimumHeight(220);
  plot_->xAxis->setLabel(tr("step"));
  plot_->yAxis->setLabel(tr("loss"));
  plot_->legend->setVisible(true);
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  style_plot(plot_, palette());

  details_ = new QPlainTextEdit;
  details_->setObjectName(QStringLiteral("runDetails"));
  details_->setReadOnly(true);
  details_->setPlaceholderText(tr("Select a run to see its configuration."));

  name_edit_ = new QLineEdit;
  name_edit_->setObjectName(QStringLiteral("runNameEdit"));
  notes_edit_ = new QPlainTextEdit;
  notes_edit_->setObjectName(QStringLiteral("runNotesEdit"));
  notes_edit_->setPlaceholderText(tr("What this run tried, what came of it"));
  notes_edit_->setTabChangesFocus(true);
  notes_edit_->setMaximumHeight(notes_edit_->fontMetrics().lineSpacing() * 5);
  save_label_ = new QPushButton(tr("Save name and notes"));
  save_label_->setObjectName(QStringLiteral("saveRunLabelButton"));
  connect(save_label_, &QPushButton::clicked, this, &RunsPane::save_label);
  for (auto* w : {static_cast<QWidget*>(name_edit_), static_cast<QWidget*>(notes_edit_)})
    w->setEnabled(false);
  save_label_->setEnabled(false);
  // Saving is offered once the text differs from what the journal holds.
  auto edited = [this] {
    const auto it =
        std::find_if(runs_.begin(), runs_.end(), [&](const auto& r) { return r.id == label_run_id_; });
    save_label_->setEnabled(it != runs_.end() && !name_edit_->text().trimmed().isEmpty() &&
                            (name_edit_->text().trimmed() != QString::fromStdString(it->name) ||
                             notes_edit_->toPlainText() != QString::fromStdString(it->notes)));
  };
  connect(name_edit_, &QLineEdit::textChanged, this, edited);
  connect(notes_edit_, &QPlainTextEdit::textChanged, this, edited);
  connect(name_edit_, &QLineEdit::returnPressed, this, &RunsPane::save_label);
  auto* label_form = new QFormLayout;
  label_form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  label_form->addRow(tr("Name:"), name_edit_);
  label_form->addRow(tr("Notes:"), notes_edit_);
  label_form->addRow(QString(), save_label_);
  auto* side = new QWidget;
  auto* side_layout = new QVBoxLayout(side);
  side_layout->setContentsMargins(0, 0, 0, 0);
  side_layout->addLayout(label_form);
  side_layout->addWidget(details_, 1);

  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(plot_);
  bottom->addWidget(side);
  bottom->setStretchFactor(0, 3);
  bottom->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(list_);
  split->addWidget(bottom);
  split->setStretchFactor(1, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(error_);
  layout->addWidget(split, 1);

  poll_ = new QTimer(this);
  poll_->setInterval(kPollIntervalMs);
  connect(poll_, &QTimer::timeout, this, &RunsPane::refresh);
  connect(context_.journal, &JournalService::unavailable, this, &RunsPane::show_journal_error);
  refresh();
}

void RunsPane::show_journal_error(const QString& message, const QString& hint) {
  error_->show_error(message, hint);
  journal_error_ = true;
  summary_->setText(tr("The run history is not available."));
  list_->setEnabled(false);
  delete_->setEnabled(false);
}

void RunsPane::refresh() {
  // A poll never queues behind one still waiting for the journal (a slow disk would pile them up).
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  refreshing_ = true;
  context_.journal->request(
      this, [](forja::Journal& j) { return j.runs(); },
      [this](std::vector<forja::RunRecord> runs) {
        show_runs(std::move(runs));
        refresh_done();
      },
      [this](const JournalFailure& why) {
        show_journal_error(why.message, why.hint);
        refresh_done();
      });
}

void RunsPane::refresh_done() {
  refreshing_ = false;
  if (refresh_again_) {
    refresh_again_ = false;
    refresh();
  }
}

void RunsPane::show_runs(std::vector<forja::RunRecord> runs) {
  if (journal_error_) error_->clear();  // an export's error stays until the next export
  journal_error_ = false;
  list_->setEnabled(true);
  // Polling rebuilds nothing when nothing changed, so the user's selection, scroll and plot zoom stay put.
  QByteArray signature;
  for (const auto& r : runs) {
    signature += QByteArray::number(qlonglong(r.id)) + ':' + forja::to_string(r.status) + ':' +
                 QByteArray::number(qlonglong(r.last_step)) + ':' +
                 QByteArray::number(qlonglong(r.ended_at_ms.value_or(0))) + ':' + r.adapter_path.c_str() +
                 ':' + QByteArray::number(qHash(QByteArray::fromStdString(r.name + '\n' + r.notes))) + ';';
  }
  const bool running = std::any_of(runs.begin(), runs.end(),
                                   [](const auto& r) { return r.status == forja::RunStatus::Running; });
  if (signature == signature_ && !running) return;
  signature_ = signature;
  const std::vector<int64_t> keep = selected_run_ids();
  runs_ = std::move(runs);

  const QSignalBlocker block(list_);
  list_->clear();
  const int64_t now = forja::journal_now_ms();
  for (const auto& r : runs_) {
    auto* item = new QTreeWidgetItem(list_);
    item->setData(NameCol, Qt::UserRole, QVariant::fromValue<qlonglong>(r.id));
    item->setText(NameCol, QString::fromStdString(r.name));
    if (!r.notes.empty()) item->setToolTip(NameCol, QString::fromStdString(r.notes));
    item->setText(StatusCol, status_text(r.status));
    item->setIcon(StatusCol, QIcon(status_icon(r.status)));
    item->setText(ModelCol, QString::fromStdString(std::filesystem::path(r.model_dir).filename().string()));
    item->setToolTip(ModelCol, QString::fromStdString(r.model_dir));
    item->setText(StartedCol, format_timestamp_ms(r.started_at_ms));
    // Running time only: the gaps of a paused, dead or waiting run are not its duration.
    item->setText(DurationCol, format_duration_ms(r.running_ms(now)));
    item->setText(LossCol, format_loss(r.final_loss));
    item->setText(EvalLossCol, format_loss(r.final_eval_loss));
    item->setText(AdapterCol, QString::fromStdString(r.adapter_path));
    if (!r.error_message.empty()) item->setToolTip(StatusCol, QString::fromStdString(r.error_message));
  }
  for (int c = 0; c < AdapterCol; ++c) list_->resizeColumnToContents(c);
  summary_->setText(runs_.empty()
                        ? tr("No training runs yet. Runs you start appear here, with their loss curves.")
                        : tr("%n run(s) in the history", nullptr, static_cast<int>(runs_.size())));
  select_runs(keep);
  update_plot();
  update_details();
  update_label_editor();
  update_buttons();
}

std::vector<int64_t> RunsPane::selected_run_ids() const {
  std::vector<int64_t> ids;
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = list_->topLevelItem(i);
    if (item->isSelected()) ids.push_back(item->data(NameCol, Qt::UserRole).toLongLong());
  }
  return ids;
}

void RunsPane::select_runs(const std::vector<int64_t>& ids) {
  const std::set<int64_t> want(ids.begin(), ids.end());
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = list_->topLevelItem(i);
    item->setSelected(want.count(item->data(NameCol, Qt::UserRole).toLongLong()) > 0);
  }
}

void RunsPane::update_plot() {
  const std::vector<int64_t> ids = selected_run_ids();
  std::vector<std::pair<int64_t, std::string>> wanted;  // in the list's order, so the colours stay put
  for (const auto& r : runs_)
    if (std::find(ids.begin(), ids.end(), r.id) != ids.end()) wanted.emplace_back(r.id, r.name);
  const int token = ++plot_token_;
  context_.journal->request(
      this,
      [wanted](forja::Journal& j) {
        std::vector<std::vector<forja::MetricPoint>> points;
        for (const auto& w : wanted) points.push_back(j.metrics(w.first));
        return points;
      },
      [this, wanted, token](const std::vector<std::vector<forja::MetricPoint>>& points) {
        if (token == plot_token_) draw_plot(wanted, points);
      },
      [this](const JournalFailure& why) { show_journal_error(why.message, why.hint); });
}

void RunsPane::draw_plot(const std::vector<std::pair<int64_t, std::string>>& runs,
                         const std::vector<std::vector<forja::MetricPoint>>& metrics) {
  plot_->clearGraphs();
  int color = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const QString name = QString::fromStdString(runs[i].second);
    QVector<double> steps, loss, eval_steps, eval_loss;
    for (const auto& p : metrics[i]) {
      if (p.loss) steps << double(p.step), loss << *p.loss;
      if (p.eval_loss) eval_steps << double(p.step), eval_loss << *p.eval_loss;
    }
    const QColor c = series_color(color++, palette());
    QCPGraph* train = plot_->addGraph();
    train->setName(name);
    train->setPen(QPen(c, 2));
    train->setData(steps, loss, true);
    if (!eval_steps.isEmpty()) {
      QCPGraph* eval = plot_->addGraph();
      eval->setName(tr("%1 (eval)").arg(name));
      eval->setPen(QPen(c, 1.5, Qt::DashLine));
      eval->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, c, 5));
      eval->setData(eval_steps, eval_loss, true);
    }
  }
  plot_->legend->setVisible(plot_->graphCount() > 0);
  if (plot_->graphCount() > 0) {
    plot_->rescaleAxes();
    plot_->yAxis->scaleRange(1.1);
  }
  plot_->replot();
}

void RunsPane::update_details() {
  const std::vector<int64_t> ids = selected_run_ids();
  if (ids.size() != 1) {
    details_->setPlainText(ids.empty() ? QString() : tr("%n runs selected.", nullptr, int(ids.size())));
    return;
  }
  auto it = std::find_if(runs_.begin(), runs_.end(), [&](const auto& r) { return r.id == ids[0]; });
  if (it == runs_.end()) return;
  const forja::RunRecord& r = *it;
  QStringList lines;
  lines << tr("Run %1 — %2").arg(r.id).arg(QString::fromStdString(r.name));
  if (!r.notes.empty()) lines << tr("Notes: %1").arg(QString::fromStdString(r.notes));
  lines << tr("Status: %1").arg(status_text(r.status));
  lines << tr("Model: %1").arg(QString::fromStdString(r.model_dir));
  if (!r.dataset_path.empty()) lines << tr("Dataset: %1").arg(QString::fromStdString(r.dataset_path));
  // Steps are counted from 1 (the optimizer steps done); last_step is -1 while none has metrics.
  lines << tr("Steps: %1 of %2").arg(std::max<int64_t>(r.last_step, 0)).arg(r.total_steps);
  if (!r.adapter_path.empty()) lines << tr("Adapter: %1").arg(QString::fromStdString(r.adapter_path));
  if (!r.error_message.empty()) {
    lines << tr("Error: %1").arg(QString::fromStdString(r.error_message));
    if (!r.error_hint.empty()) lines << tr("What to do: %1").arg(QString::fromStdString(r.error_hint));
  }
  const QByteArray config = QByteArray::fromStdString(r.config_json);
  const QJsonDocument doc = QJsonDocument::fromJson(config);
  QStringList tail;
  tail << QString() << tr("Configuration:")
       << (doc.isNull() ? QString::fromUtf8(config) : QString::fromUtf8(doc.toJson(QJsonDocument::Indented)));
  details_->setPlainText((lines + tail).join(QLatin1Char('\n')));
  // The checkpoint line follows once the journal has answered.
  const int token = ++details_token_;
  const int64_t id = r.id;
  context_.journal->request(
      this, [id](forja::Journal& j) { return j.checkpoints(id); },
      [this, lines, tail, token](const std::vector<forja::CheckpointRecord>& checkpoints) mutable {
        if (token != details_token_ || checkpoints.empty()) return;
        lines << tr("Checkpoints: %1, the last at step %2")
                     .arg(checkpoints.size())
                     .arg(checkpoints.back().step);
        details_->setPlainText((lines + tail).join(QLatin1Char('\n')));
      },
      // The list and the plot already report a broken journal; the details stay as complete as they can.
      [](const JournalFailure&) {});
}

void RunsPane::update_label_editor() {
  const std::vector<int64_t> ids = selected_run_ids();
  const auto it = ids.size() == 1 ? std::find_if(runs_.begin(), runs_.end(),
                                                 [&](const auto& r) { return r.id == ids.front(); })
                                  : runs_.end();
  const int64_t id = it == runs_.end() ? 0 : it->id;
  // A poll that rebuilt the list keeps what the user is typing into the same run's fields.
  if (id == label_run_id_ && id != 0 && save_label_->isEnabled()) return;
  label_run_id_ = id;
  const QSignalBlocker block_name(name_edit_), block_notes(notes_edit_);
  name_edit_->setText(id ? QString::fromStdString(it->name) : QString());
  notes_edit_->setPlainText(id ? QString::fromStdString(it->notes) : QString());
  name_edit_->setEnabled(id != 0 && !journal_error_);
  notes_edit_->setEnabled(id != 0 && !journal_error_);
  save_label_->setEnabled(false);
}

void RunsPane::save_label() {
  if (!label_run_id_ || !save_label_->isEnabled()) return;
  const int64_t id = label_run_id_;
  const std::string name = name_edit_->text().trimmed().toStdString();
  const std::string notes = notes_edit_->toPlainText().toStdString();
  save_label_->setEnabled(false);
  error_->clear();
  context_.journal->request(
      this, [id, name, notes](forja::Journal& j) { return j.label_run(id, name, notes); },
      [this](bool) { refresh(); },
      [this](const JournalFailure& why) {
        error_->show_error(why.message, why.hint);
        save_label_->setEnabled(true);
      });
}

const forja::RunRecord* RunsPane::selected_run_with_adapter() const {
  const std::vector<int64_t> ids = selected_run_ids();
  if (ids.size() != 1) return nullptr;
  for (const auto& r : runs_)
    if (r.id == ids.front()) return r.adapter_path.empty() ? nullptr : &r;
  return nullptr;
}

void RunsPane::update_buttons() {
  const std::vector<int64_t> ids = selected_run_ids();
  bool any_deletable = false;
  for (const auto& r : runs_)
    if (r.status != forja::RunStatus::Running && std::find(ids.begin(), ids.end(), r.id) != ids.end())
      any_deletable = true;
  delete_->setEnabled(!journal_error_ && any_deletable);
  const bool one_with_adapter = selected_run_with_adapter() != nullptr;
  chat_->setEnabled(one_with_adapter);
  export_csv_->setEnabled(!journal_error_ && ids.size() == 1);
  export_->setEnabled(one_with_adapter && !exporting());
  cancel_export_->setVisible(exporting());
}

void RunsPane::export_metrics_csv(const QString& path) {
  const std::vector<int64_t> ids = selected_run_ids();
  if (ids.size() != 1) return;
  error_->clear();
  const int64_t id = ids.front();
  context_.journal->request(
      this, [id](forja::Journal& j) { return forja::metrics_csv(j.metrics(id)); },
      [this, path](std::string csv) { write_metrics_csv(std::move(csv), path); },
      [this, path](const JournalFailure& why) {
        show_journal_error(why.message, why.hint);
        Q_EMIT metrics_exported(false, path);
      });
}

void RunsPane::write_metrics_csv(std::string csv, const QString& path) {
  write_file_in_background(this, std::move(csv), path, [this, path](const QString& error) {
    if (!error.isEmpty()) error_->show_error(error, tr("Choose another file or folder."));
    Q_EMIT metrics_exported(error.isEmpty(), path);
  });
}

void RunsPane::open_export_dialog() {
  const forja::RunRecord* run = selected_run_with_adapter();
  if (run == nullptr || exporting()) return;
  // Proposed beside the run's adapter, in the run's folder.
  auto* dialog = new ExportDialog(QString::fromStdString(run->name),
                                  QFileInfo(QString::fromStdString(run->adapter_path)).absolutePath(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  // The sizes need the model's weight count: read off the GUI thread.
  auto* inspect = new InspectModelJob(run->model_dir);
  connect(inspect, &InspectModelJob::inspected, dialog,
          [dialog](const forja::ModelInfo& info) { dialog->set_parameters(info.parameters); });
  context_.jobs->start(inspect);
  connect(dialog, &QDialog::accepted, this,
          [this, dialog] { export_selected(dialog->format(), dialog->destination(), dialog->dtype()); });
  dialog->open();
}

void RunsPane::export_selected(const QString& format, const QString& destination, const QString& dtype) {
  const forja::RunRecord* run = selected_run_with_adapter();
  if (run == nullptr || exporting()) return;
  error_->clear();
  forja::ExportOptions options;
  options.model_dir = run->model_dir;
  options.adapter_dir = std::filesystem::path(run->adapter_path);
  options.out = destination.toStdString();
  try {
    options.format = forja::export_format_from_name(format.toStdString());
  } catch (const forja::Error& e) {
    error_->show_error(QString::fromStdString(e.message()), QString::fromStdString(e.hint()));
    return;
  }
  if (!dtype.isEmpty()) options.dtype = dtype.toStdString();
  // A QLoRA run's adapter belongs to the 4-bit base it was trained on.
  const QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(run->config_json)).object();
  options.base_nf4 = config.value(QStringLiteral("base_quant")).toString() == QLatin1String("nf4");
  options.nf4_double_quant = config.value(QStringLiteral("nf4_double_quant")).toBool(true);
  auto* job = new ExportJob(std::move(options));
  export_job_ = job;
  const QString name = QString::fromStdString(run->name);
  export_status_->setText(tr("Exporting “%1”…").arg(name));
  connect(job, &Job::progressed, this, [this, name](double fraction, const QString&) {
    if (fraction >= 0)
      export_status_->setText(tr("Exporting “%1”… %2%").arg(name).arg(static_cast<int>(fraction * 100)));
  });
  connect(job, &ExportJob::exported, this, [this, destination](const QString&, const QStringList& notes) {
    export_status_->setText(tr("Exported to %1").arg(QDir::toNativeSeparators(destination)));
    export_status_->setToolTip(notes.join(QLatin1Char('\n')));
    Q_EMIT export_finished(true, destination);
  });
  connect(job, &Job::failed, this, [this, destination](const QString& message, const QString& hint) {
    export_status_->clear();
    error_->show_error(tr("The export did not finish: %1").arg(message), hint);
    Q_EMIT export_finished(false, destination);
  });
  connect(job, &Job::cancelled, this, [this, destination] {
    export_status_->setText(tr("Export cancelled; nothing was written"));
    Q_EMIT export_finished(false, destination);
  });
  connect(job, &Job::ended, this, [this] {
    export_job_ = nullptr;
    update_buttons();
  });
  context_.jobs->start(job);
  update_buttons();
}

void RunsPane::cancel_export() {
  if (export_job_) export_job_->cancel();
}

void RunsPane::delete_selected() {
  if (journal_error_) return;
  std::vector<const forja::RunRecord*> victims;
  const std::vector<int64_t> ids = selected_run_ids();
  for (const auto& r : runs_)
    if (r.status != forja::RunStatus::Running && std::find(ids.begin(), ids.end(), r.id) != ids.end())
      victims.push_back(&r);
  if (victims.empty()) return;

  QMessageBox ask(
      QMessageBox::Question, tr("Delete runs"),
      victims.size() == 1
          ? tr("Delete the run “%1” from the history?").arg(QString::fromStdString(victims[0]->name))
          : tr("Delete %1 runs from the history?").arg(victims.size()),
      QMessageBox::Yes | QMessageBox::Cancel, this);
  ask.setObjectName(QStringLiteral("confirmDeleteRuns"));
  ask.setInformativeText(
      tr("Their metrics and checkpoint records go; adapter files on disk are kept. Running "
         "runs are not deleted."));
  ask.setDefaultButton(QMessageBox::Cancel);
  if (ask.exec() != QMessageBox::Yes) return;

  std::vector<int64_t> victim_ids;
  for (const auto* r : victims) victim_ids.push_back(r->id);
  context_.journal->request(
      this,
      [victim_ids](forja::Journal& j) {
        int deleted = 0;
        for (const int64_t id : victim_ids) deleted += j.delete_run(id) ? 1 : 0;
        return deleted;
      },
      [this](int deleted) {
        refresh();
        Q_EMIT runs_deleted(deleted);
      },
      [this](const JournalFailure& why) {
        error_->show_error(why.message, why.hint);
        refresh();
        Q_EMIT runs_deleted(0);
      });
}

void RunsPane::showEvent(QShowEvent* event) {
  Pane::showEvent(event);
  refresh();
  poll_->start();
}

void RunsPane::hideEvent(QHideEvent* event) {
  Pane::hideEvent(event);
  poll_->stop();
}

void RunsPane::changeEvent(QEvent* event) {
  Pane::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    style_plot(plot_, palette());
    update_plot();
  }
}

}  // namespace forja::ui
