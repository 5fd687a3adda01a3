// TrainPane: the run's settings (presets plus every field of the training config), Start / Pause / Resume /
// Stop, progress with ETA, live plots (train and eval loss, learning rate, grad norm, tokens/s, GPU memory)
// and the log. The run itself is a separate `forja-cli train` process (TrainWorker): the window only writes
// its config, starts it, follows its progress file and asks it to pause. "Export config" shows the equivalent
// forja-cli file.
#pragma once

#include <QJsonObject>
#include <QString>

#include <functional>
#include <optional>
#include <vector>

#include "forja/memory_estimate.h"
#include "pane.h"

class QComboBox;
class QCheckBox;
class QCustomPlot;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace forja {
struct TrainConfig;
}

namespace forja::ui {

class ErrorBox;
class TrainWorker;

// One widget of the Train pane's form and the TrainConfig value it edits, both ways: read puts the widget's
// value into a config, show puts a config's value into the widget.
struct TrainFormField {
  const char* object_name;
  QWidget* widget;
  std::function<void(forja::TrainConfig&)> read;
  std::function<void(const forja::TrainConfig&)> show;
};

class TrainPane : public Pane {
  Q_OBJECT

 public:
  explicit TrainPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("Train"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/train.svg")); }

  void set_model_dir(const QString& dir);
  // The open model's shape, for the memory estimate under the form.
  void set_model_info(const forja::ModelInfo& info);
  // The dataset and how the Data pane read it (see DataPane::dataset_ready); max_length also sets the form's.
  void set_dataset(const QString& file, const QJsonObject& data_settings = {});
  // The training config the form describes, as the JSON `forja-cli train` reads.
  QString config_json() const;
  void apply_preset(const QString& name);  // "quick", "balanced", "thorough"

  // A run of the journal shown again (the window restarted): its whole config in the form, its curve replayed
  // from its progress file, and its worker followed while it lives. One that died (killed, crashed, the
  // machine went down) then reads as interrupted, and Start resumes it. False, with the reason in the log,
  // for a config that cannot be read.
  bool restore_run(const QString& config_json, qint64 worker_pid);

  // A new run, or a paused one continued (same output folder). A folder whose run completed is never
  // trained again: the pane says so and offers "Train again as a new run" (train_again_as_new_run).
  void start();
  // Start in a new output folder (forja::new_run_dir), leaving the finished run's history as it is.
  void train_again_as_new_run();
  void pause();  // checkpoint and stop; Start/Resume continues
  void stop();   // kill at once; the last checkpoint stays
  bool running() const;
  TrainWorker* worker() const { return worker_; }
  int plotted_steps() const;

 Q_SIGNALS:
  void run_finished(const QJsonObject& result);
  void run_failed(const QString& message);
  // A preset chose the rows' max length; the Data pane follows it.
  void preset_max_length(int tokens);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  static QString outcome_text(const QString& outcome);
  // Empties every curve (a new run, or one followed from the journal).
  void clear_plots();
  // The constructor's parts: the widgets and their layout, the form's binding to TrainConfig, the signals.
  void build_layout();
  QWidget* build_form();
  QWidget* build_run_view();
  void bind_form();
  void wire_signals();
  void show_export_dialog();

  void on_step(const QJsonObject& p);
  void on_finished(const QJsonObject& result);
  void on_died(const QString& tail);
  void log(const QString& line);
  void update_buttons();
  // start()'s second half, once the journal has said the folder holds no completed run.
  void launch(const QString& out, bool with_journal);
  QCustomPlot* make_plot(const QString& name, const QString& y_label);

  void update_estimate();
  // The form's values over TrainConfig's defaults (the pane's model, dataset and output folder are not in
  // it), and a config's values into the form: both through form_, the one list of bound fields.
  forja::TrainConfig form_config() const;
  void show_config(const forja::TrainConfig& config);

  QString model_dir_, dataset_;
  std::optional<forja::ModelShape> shape_;
  QLabel* estimate_;
  QJsonObject data_settings_;
  TrainWorker* worker_;
  QLabel* inputs_;
  QComboBox* preset_;
  QLineEdit* output_dir_;
  QLineEdit* targets_;   // LoRA target modules, comma-separated
  QLineEdit* run_name_;  // empty: the output folder's name
  QLineEdit* notes_;
  QLineEdit* eval_file_;  // a held-out dataset; empty: the Data pane's eval fraction of the training file
  QSpinBox *rank_, *steps_, *batch_, *accum_, *max_len_, *warmup_, *eval_every_, *ckpt_every_, *seed_;
  QSpinBox* patience_;         // early stopping: evals without improvement; 0: off
  QDoubleSpinBox* min_delta_;  // the improvement that counts
  QDoubleSpinBox* epochs_;     // passes over the data instead of steps; 0: the steps field decides
  QSpinBox* workers_;          // data-parallel worker processes: GPUs on cuda, processes on the cpu
  QDoubleSpinBox *alpha_, *dropout_, *lr_, *weight_decay_, *clip_;
  QComboBox *schedule_, *device_, *dtype_;
  QCheckBox *checkpointing_, *selective_, *base_4bit_, *packing_;
  QPushButton *start_, *pause_, *stop_, *export_;
  QPushButton* train_again_;  // shown when Start meets a folder whose run completed
  bool starting_ = false;     // Start asked the journal about the folder and waits for its answer
  QProgressBar* progress_;
  QLabel* status_;
  ErrorBox* error_;
  QCustomPlot *loss_plot_, *lr_plot_, *norm_plot_, *speed_plot_;
  QPlainTextEdit* log_;
  std::vector<TrainFormField> form_;
};

}  // namespace forja::ui
