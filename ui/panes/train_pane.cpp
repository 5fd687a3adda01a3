// TrainPane: the form, the worker hand-off, the plots and the log.
#include "panes/train_pane.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <ctime>
#include <span>
#include <type_traits>
#include <utility>

#include "app_paths.h"
#include "error_box.h"
#include "forja/config_reference.h"
#include "forja/error.h"
#include "forja/journal.h"
#include "forja/run_recorder.h"
#include "forja/train.h"
#include "form_util.h"
#include "format.h"
#include "journal_service.h"
#include "plot.h"
#include "theme.h"
#include "train_worker.h"

namespace forja::ui {
namespace {

using forja::LoraSettings;
using forja::OptimizerSettings;
using forja::TrainConfig;

// The config file's schedule names (train_config_to_json writes the same words), in the combo box's order.
constexpr std::pair<forja::LrSchedule, const char*> kSchedules[] = {
    {forja::LrSchedule::Cosine, "cosine"},
    {forja::LrSchedule::Linear, "linear"},
    {forja::LrSchedule::Constant, "constant"}};

// Starting points a practitioner would pick: the quick test checks the setup in seconds, balanced is the
// common LoRA recipe (r16, alpha 32, lr 2e-4, cosine with warmup), thorough trains longer with eval and
// early stopping. Each changes only the settings it names (and the LoRA shape, apply_preset).
struct Preset {
  const char* name;   // apply_preset's argument and the combo box's item data
  const char* label;  // the combo box's text
  void (*apply)(TrainConfig&);
};
const Preset kPresets[] = {
    {"quick", QT_TRANSLATE_NOOP("forja::ui::TrainPane", "Quick test (a few steps)"),
     [](TrainConfig& c) {
       c.max_steps = 20, c.batch_size = 2, c.grad_accum = 1, c.max_length = 512;
       c.optimizer.warmup_steps = 2, c.eval_every = 10, c.checkpoint_every = 10,
       c.optimizer.learning_rate = 2e-4;
     }},
    {"balanced", QT_TRANSLATE_NOOP("forja::ui::TrainPane", "Balanced"),
     [](TrainConfig& c) {
       c.max_steps = 500, c.batch_size = 4, c.grad_accum = 4, c.max_length = 2048;
       c.optimizer.warmup_steps = 25, c.eval_every = 50, c.checkpoint_every = 50,
       c.optimizer.learning_rate = 2e-4;
     }},
    {"thorough", QT_TRANSLATE_NOOP("forja::ui::TrainPane", "Thorough"),
     [](TrainConfig& c) {
       c.max_steps = 3000, c.batch_size = 4, c.grad_accum = 8, c.max_length = 4096;
       c.optimizer.warmup_steps = 100, c.eval_every = 100, c.checkpoint_every = 100,
       c.optimizer.learning_rate = 1e-4;
     }},
    // The built-in toy model (about 1M parameters) learns the chat format of its 80 questions in under a
    // minute on the CPU: a high rate, no dropout, no eval.
    {"demo", QT_TRANSLATE_NOOP("forja::ui::TrainPane", "Demo (the toy model, on the CPU)"),
     [](TrainConfig& c) {
       c.max_steps = 60, c.batch_size = 8, c.grad_accum = 1, c.max_length = 256;
       c.optimizer.warmup_steps = 3, c.eval_every = 0, c.checkpoint_every = 20,
       c.optimizer.learning_rate = 6e-3;
       c.lora.dropout = 0.0;
       c.device = "cpu";
     }},
};

// A config value named by its member path (&TrainConfig::lora, &LoraSettings::rank), const when the config
// is.
template <typename Config>
Config& member(Config& c) {
  return c;
}
template <typename Config, typename Member, typename... Path>
auto& member(Config& c, Member first, Path... rest) {
  return member(c.*first, rest...);
}

// Form fields bound to the config value at a member path.
template <typename Box, typename... Path>
TrainFormField number_field(const char* name, Box* box, Path... path) {
  return {
      name, box,
      [=](TrainConfig& c) {
        auto& value = member(c, path...);
        value = static_cast<std::remove_reference_t<decltype(value)>>(box->value());
      },
      [=](const TrainConfig& c) { box->setValue(static_cast<decltype(box->value())>(member(c, path...))); }};
}

template <typename... Path>
TrainFormField check_field(const char* name, QCheckBox* box, Path... path) {
  return {name, box, [=](TrainConfig& c) { member(c, path...) = box->isChecked(); },
          [=](const TrainConfig& c) { box->setChecked(member(c, path...)); }};
}

// A check box for a text setting with two values (base_quant: "nf4" or "none").
template <typename... Path>
TrainFormField flag_field(const char* name, QCheckBox* box, const char* on, const char* off, Path... path) {
  return {name, box, [=](TrainConfig& c) { member(c, path...) = box->isChecked() ? on : off; },
          [=](const TrainConfig& c) { box->setChecked(member(c, path...) == on); }};
}

// A combo box whose items are the setting's own words (device, dtype).
template <typename... Path>
TrainFormField text_field(const char* name, QComboBox* box, Path... path) {
  return {name, box, [=](TrainConfig& c) { member(c, path...) = box->currentText().toStdString(); },
          [=](const TrainConfig& c) { box->setCurrentText(QString::fromStdString(member(c, path...))); }};
}

// A combo box of an enum's names, from the (value, name) table that also fills it.
template <typename T, size_t N, typename... Path>
TrainFormField choice_field(const char* name, QComboBox* box, const std::pair<T, const char*> (&table)[N],
                            Path... path) {
  const std::span<const std::pair<T, const char*>> choices(table);
  for (const auto& choice : choices) box->addItem(QString::fromLatin1(choice.second));
  return {name, box,
          [=](TrainConfig& c) {
            for (const auto& [value, text] : choices)
              if (box->currentText() == QLatin1String(text)) member(c, path...) = value;
          },
          [=](const TrainConfig& c) {
            for (const auto& [value, text] : choices)
              if (member(c, path...) == value) box->setCurrentText(QString::fromLatin1(text));
          }};
}

// A line of comma-separated names for a list setting (LoRA target modules).
template <typename... Path>
TrainFormField list_field(const char* name, QLineEdit* box, Path... path) {
  return {name, box,
          [=](TrainConfig& c) {
            auto& list = member(c, path...);
            list.clear();
            for (const QString& item : box->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
              if (const QString t = item.trimmed(); !t.isEmpty()) list.push_back(t.toStdString());
          },
          [=](const TrainConfig& c) {
            QStringList items;
            for (const std::string& item : member(c, path...)) items << QString::fromStdString(item);
            box->setText(items.join(QStringLiteral(", ")));
          }};
}

// A line of text for a text setting (a file path).
template <typename... Path>
TrainFormField line_field(const char* name, QLineEdit* box, Path... path) {
  return {name, box, [=](TrainConfig& c) { member(c, path...) = box->text().trimmed().toStdString(); },
          [=](const TrainConfig& c) { box->setText(QString::fromStdString(member(c, path...))); }};
}

// Two fields on one row of the form.
QWidget* pair_row(QWidget* left, QWidget* right) {
  auto* row = new QWidget;
  auto* l = new QHBoxLayout(row);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(left);
  l->addWidget(right);
  return row;
}

// A plot shows only the series that have data: a legend entry and a right axis for those alone, and while
// nothing has data, a line saying when the curves come instead of bare 0–5 axes.
void show_series(QCustomPlot* plot) {
  bool any = false, right = false;
  for (int g = 0; g < plot->graphCount(); ++g) {
    QCPGraph* graph = plot->graph(g);
    const bool has = !graph->data()->isEmpty();
    any = any || has;
    if (has && graph->valueAxis() == plot->yAxis2) right = true;
    if (has)
      graph->addToLegend();
    else
      graph->removeFromLegend();
  }
  plot->legend->setVisible(plot->legend->itemCount() > 1);
  plot->yAxis2->setVisible(right);
  for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) axis->setTickLabels(any);
  if (auto* empty = plot->findChild<QCPItemText*>(QStringLiteral("emptyPlotText"))) empty->setVisible(!any);
  plot->replot(QCustomPlot::rpQueuedReplot);
}

void add_point(QCustomPlot* plot, int graph, double x, double y) {
  plot->graph(graph)->addData(x, y);
  plot->rescaleAxes();
  show_series(plot);
}

}  // namespace

TrainPane::TrainPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("TrainPane"));
  worker_ = new TrainWorker(this);
  build_layout();
  bind_form();
  wire_signals();
  apply_preset(QStringLiteral("quick"));
  set_model_dir({});
  update_estimate();
  update_buttons();
}

void TrainPane::build_layout() {
  auto* heading = make_heading(tr("Fine-tune with LoRA"));
  inputs_ = new QLabel;
  inputs_->setObjectName(QStringLiteral("trainInputs"));
  inputs_->setWordWrap(true);
  auto* split = new QSplitter;
  split->addWidget(build_form());
  split->addWidget(build_run_view());
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(heading);
  layout->addWidget(inputs_);
  layout->addWidget(split, 1);
}

// The settings, in a scroll area: the preset, the output folder, the form's fields and the memory estimate.
QWidget* TrainPane::build_form() {
  preset_ = new QComboBox;
  preset_->setObjectName(QStringLiteral("trainPreset"));
  for (const Preset& p : kPresets) preset_->addItem(tr(p.label), QString::fromLatin1(p.name));
  output_dir_ = new QLineEdit;
  output_dir_->setObjectName(QStringLiteral("trainOutputDir"));
  run_name_ = new QLineEdit;
  run_name_->setPlaceholderText(tr("the output folder's name"));
  run_name_->setToolTip(tr("The run's name in the Runs pane; it can be changed there later"));
  notes_ = new QLineEdit;
  notes_->setPlaceholderText(tr("what this run tries (kept with it in the Runs pane)"));
  rank_ = int_box(1, 1024, 16);
  alpha_ = real_box(0.1, 4096, 32, 1, 1);
  dropout_ = real_box(0, 0.9, 0.05, 2, 0.05);
  targets_ = new QLineEdit;
  QStringList default_targets;
  for (const std::string& t : TrainConfig{}.lora.target_modules) default_targets << QString::fromStdString(t);
  targets_->setText(default_targets.join(QStringLiteral(", ")));
  targets_->setToolTip(tr("The projections that get an adapter, comma-separated, as PEFT names them"));
  lr_ = real_box(1e-7, 1, 2e-4, 6, 1e-5);
  weight_decay_ = real_box(0, 1, 0, 3, 0.01);
  clip_ = real_box(0, 100, 1, 2, 0.1);
  schedule_ = new QComboBox;
  warmup_ = int_box(0, 100000, 0);
  steps_ = int_box(1, 10000000, 100);
  epochs_ = real_box(0, 1000, 0, 2, 0.5);
  epochs_->setToolTip(tr("Passes over the training data; when above 0 they set the steps (rounded up)"));
  batch_ = int_box(1, 4096, 4);
  accum_ = int_box(1, 4096, 1);
  max_len_ = int_box(16, 131072, 1024);
  eval_every_ = int_box(0, 1000000, 0);
  eval_file_ = new QLineEdit;
  eval_file_->setPlaceholderText(tr("none: the Data pane's held-out fraction"));
  eval_file_->setToolTip(tr("A held-out dataset in the training file's shape, evaluated every N steps"));
  patience_ = int_box(0, 100000, 0);
  patience_->setToolTip(tr("Stop after this many evaluations without improvement (0: never)"));
  min_delta_ = real_box(0, 100, 0, 4, 0.001);
  min_delta_->setToolTip(tr("How much lower the eval loss must be to count as an improvement"));
  ckpt_every_ = int_box(0, 1000000, 50);
  seed_ = int_box(0, 2147483647, 42);
  device_ = new QComboBox;
  device_->addItems({QStringLiteral("auto"), QStringLiteral("cuda"), QStringLiteral("cpu")});
  workers_ = int_box(1, 64, 1);
  workers_->setToolTip(tr(
      "Data-parallel workers, each with a copy of the model: one per GPU on cuda (NCCL), or processes on the "
      "cpu (Gloo). Each takes batch × accumulation rows per step, so the step's batch grows with them."));
  dtype_ = new QComboBox;
  dtype_->addItems(
      {QStringLiteral("auto"), QStringLiteral("bf16"), QStringLiteral("fp16"), QStringLiteral("fp32")});
  // Short labels keep the form narrow (in any language); what each costs and saves is in its tooltip.
  checkpointing_ = new QCheckBox(tr("Activation checkpointing"));
  checkpointing_->setToolTip(
      tr("Less memory, about 30% slower: each block's activations are recomputed in the "
         "backward pass"));
  selective_ = new QCheckBox(tr("Selective checkpointing"));
  selective_->setToolTip(
      tr("The adapters' inputs are remade in the backward pass: less memory, a few % slower"));
  base_4bit_ = new QCheckBox(tr("4-bit base (QLoRA)"));
  base_4bit_->setToolTip(
      tr("The base model's projections in NF4, about a quarter of its memory; Llama-family "
         "models"));
  packing_ = new QCheckBox(tr("Pack short examples"));
  packing_->setToolTip(tr("Pack short examples into full rows: faster on short data"));

  auto* form = new QFormLayout;
  // A label that leaves its field too little room goes above it: one column where the pane is narrow.
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  form->addRow(tr("Preset:"), preset_);
  form->addRow(tr("Output folder:"), output_dir_);
  form->addRow(tr("Run name:"), run_name_);
  form->addRow(tr("Notes:"), notes_);
  form->addRow(tr("LoRA rank / alpha:"), pair_row(rank_, alpha_));
  form->addRow(tr("LoRA dropout:"), dropout_);
  form->addRow(tr("LoRA targets:"), targets_);
  form->addRow(tr("Learning rate:"), lr_);
  form->addRow(tr("Schedule / warmup steps:"), pair_row(schedule_, warmup_));
  form->addRow(tr("Weight decay:"), weight_decay_);
  form->addRow(tr("Clip grad norm at:"), clip_);
  form->addRow(tr("Steps / epochs (0: steps):"), pair_row(steps_, epochs_));
  form->addRow(tr("Batch × accumulation:"), pair_row(batch_, accum_));
  form->addRow(tr("Max length:"), max_len_);
  form->addRow(tr("Eval every (0: never):"), eval_every_);
  form->addRow(tr("Eval file:"), eval_file_);
  form->addRow(tr("Early stopping: patience / min. delta:"), pair_row(patience_, min_delta_));
  form->addRow(tr("Checkpoint every:"), ckpt_every_);
  form->addRow(tr("Seed:"), seed_);
  form->addRow(tr("Device / base dtype:"), pair_row(device_, dtype_));
  form->addRow(tr("Workers (GPUs / processes):"), workers_);
  form->addRow(checkpointing_);
  form->addRow(selective_);
  form->addRow(base_4bit_);
  form->addRow(packing_);
  estimate_ = new QLabel;
  estimate_->setObjectName(QStringLiteral("trainMemoryEstimate"));
  estimate_->setWordWrap(true);
  form->addRow(estimate_);
  auto* form_box = new QWidget;
  form_box->setLayout(form);
  return vertical_scroll_area(form_box);
}

// Start / Pause / Stop, the progress, the plots and the log.
QWidget* TrainPane::build_run_view() {
  start_ = new QPushButton(tr("Start"));
  start_->setObjectName(QStringLiteral("trainStart"));
  pause_ = new QPushButton(tr("Pause"));
  pause_->setObjectName(QStringLiteral("trainPause"));
  pause_->setToolTip(tr("Write a checkpoint and stop; Resume continues exactly from it"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setObjectName(QStringLiteral("trainStop"));
  stop_->setToolTip(tr("End the run now; the last checkpoint stays"));
  export_ = new QPushButton(tr("Export Config…"));
  export_->setObjectName(QStringLiteral("trainExport"));

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(start_);
  buttons->addWidget(pause_);
  buttons->addWidget(stop_);
  buttons->addStretch(1);
  buttons->addWidget(export_);
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("trainProgress"));
  status_ = new QLabel(tr("Pick a model (Model pane) and a dataset (Data pane), then Start."));
  status_->setObjectName(QStringLiteral("trainStatus"));
  status_->setWordWrap(true);  // an adapter's path can be long: the line wraps instead of widening the window
  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("trainError"));
  train_again_ = new QPushButton(tr("Train again as a new run"));
  train_again_->setObjectName(QStringLiteral("trainAgainButton"));
  train_again_->setVisible(false);
  connect(train_again_, &QPushButton::clicked, this, &TrainPane::train_again_as_new_run);

  loss_plot_ = make_plot(QStringLiteral("trainLossPlot"), tr("loss"));
  loss_plot_->graph(0)->setName(tr("train"));
  loss_plot_->addGraph();
  loss_plot_->graph(1)->setName(tr("eval"));
  loss_plot_->graph(1)->setPen(QPen(series_color(1, palette()), 2));
  loss_plot_->graph(1)->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
  lr_plot_ = make_plot(QStringLiteral("trainLrPlot"), tr("learning rate"));
  norm_plot_ = make_plot(QStringLiteral("trainNormPlot"), tr("grad norm"));
  speed_plot_ = make_plot(QStringLiteral("trainSpeedPlot"), tr("tokens/s"));
  speed_plot_->yAxis2->setVisible(true);
  speed_plot_->yAxis2->setLabel(tr("GPU GiB"));
  speed_plot_->addGraph(speed_plot_->xAxis, speed_plot_->yAxis2);
  speed_plot_->graph(1)->setPen(QPen(series_color(3, palette()), 1.5));
  speed_plot_->graph(1)->setName(tr("GPU GiB"));
  // Real tokens (graph 0) are the honest speed; the rate of positions run, padding included, shows beside it
  // what the padding cost.
  speed_plot_->graph(0)->setName(tr("tokens/s"));
  speed_plot_->addGraph();
  speed_plot_->graph(2)->setName(tr("positions/s, padding included"));
  speed_plot_->graph(2)->setPen(QPen(series_color(2, palette()), 1, Qt::DashLine));
  for (QCustomPlot* p : {loss_plot_, lr_plot_, norm_plot_, speed_plot_}) show_series(p);
  auto* plots = new QGridLayout;
  plots->addWidget(loss_plot_, 0, 0);
  plots->addWidget(lr_plot_, 0, 1);
  plots->addWidget(norm_plot_, 1, 0);
  plots->addWidget(speed_plot_, 1, 1);
  auto* plots_box = new QWidget;
  plots_box->setLayout(plots);
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("trainLog"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* right_split = new QSplitter(Qt::Vertical);
  right_split->addWidget(plots_box);
  right_split->addWidget(log_);
  right_split->setStretchFactor(0, 3);
  auto* right = new QWidget;
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addLayout(buttons);
  right_layout->addWidget(progress_);
  right_layout->addWidget(status_);
  right_layout->addWidget(error_);
  right_layout->addWidget(train_again_, 0, Qt::AlignLeft);
  right_layout->addWidget(right_split, 1);
  return right;
}

void TrainPane::bind_form() {
  // The form's fields and the config values they edit, both ways: config_json, restore_run, the presets and
  // the memory estimate all go through this list.
  form_ = {
      line_field("trainRunName", run_name_, &TrainConfig::run_name),
      line_field("trainNotes", notes_, &TrainConfig::notes),
      number_field("trainRank", rank_, &TrainConfig::lora, &LoraSettings::rank),
      number_field("trainAlpha", alpha_, &TrainConfig::lora, &LoraSettings::alpha),
      number_field("trainDropout", dropout_, &TrainConfig::lora, &LoraSettings::dropout),
      list_field("trainTargets", targets_, &TrainConfig::lora, &LoraSettings::target_modules),
      number_field("trainLr", lr_, &TrainConfig::optimizer, &OptimizerSettings::learning_rate),
      number_field("trainWd", weight_decay_, &TrainConfig::optimizer, &OptimizerSettings::weight_decay),
      number_field("trainClip", clip_, &TrainConfig::optimizer, &OptimizerSettings::max_grad_norm),
      choice_field("trainSchedule", schedule_, kSchedules, &TrainConfig::optimizer,
                   &OptimizerSettings::schedule),
      number_field("trainWarmup", warmup_, &TrainConfig::optimizer, &OptimizerSettings::warmup_steps),
      number_field("trainSteps", steps_, &TrainConfig::max_steps),
      number_field("trainEpochs", epochs_, &TrainConfig::epochs),
      number_field("trainBatch", batch_, &TrainConfig::batch_size),
      number_field("trainAccum", accum_, &TrainConfig::grad_accum),
      number_field("trainMaxLength", max_len_, &TrainConfig::max_length),
      number_field("trainEvalEvery", eval_every_, &TrainConfig::eval_every),
      line_field("trainEvalFile", eval_file_, &TrainConfig::eval_file),
      number_field("trainPatience", patience_, &TrainConfig::early_stopping_patience),
      number_field("trainMinDelta", min_delta_, &TrainConfig::early_stopping_min_delta),
      number_field("trainCheckpointEvery", ckpt_every_, &TrainConfig::checkpoint_every),
      number_field("trainSeed", seed_, &TrainConfig::seed),
      text_field("trainDevice", device_, &TrainConfig::device),
      text_field("trainDtype", dtype_, &TrainConfig::dtype),
      check_field("trainCheckpointing", checkpointing_, &TrainConfig::activation_checkpointing),
      check_field("trainSelective", selective_, &TrainConfig::selective_checkpointing),
      flag_field("trainBase4bit", base_4bit_, "nf4", "none", &TrainConfig::base_quant),
      check_field("trainPacking", packing_, &TrainConfig::packing),
  };
  for (const TrainFormField& f : form_) f.widget->setObjectName(QString::fromLatin1(f.object_name));
  // Not a config value: the worker's command line (start()).
  workers_->setObjectName(QStringLiteral("trainWorkers"));
}

void TrainPane::wire_signals() {
  for (QSpinBox* b : {rank_, batch_, max_len_})
    connect(b, &QSpinBox::valueChanged, this, &TrainPane::update_estimate);
  connect(checkpointing_, &QCheckBox::toggled, this, &TrainPane::update_estimate);
  connect(selective_, &QCheckBox::toggled, this, &TrainPane::update_estimate);
  connect(base_4bit_, &QCheckBox::toggled, this, &TrainPane::update_estimate);
  connect(preset_, &QComboBox::currentIndexChanged, this,
          [this] { apply_preset(preset_->currentData().toString()); });

  connect(start_, &QPushButton::clicked, this, &TrainPane::start);
  connect(pause_, &QPushButton::clicked, this, &TrainPane::pause);
  connect(stop_, &QPushButton::clicked, this, &TrainPane::stop);
  connect(export_, &QPushButton::clicked, this, &TrainPane::show_export_dialog);

  connect(worker_, &TrainWorker::step, this, &TrainPane::on_step);
  connect(worker_, &TrainWorker::message, this, &TrainPane::log);
  connect(worker_, &TrainWorker::checkpoint, this, [this](const QJsonObject& c) {
    log(tr("checkpoint at step %1: %2")
            .arg(c.value(QStringLiteral("step")).toInteger())
            .arg(c.value(QStringLiteral("path")).toString()));
  });
  connect(worker_, &TrainWorker::finished, this, &TrainPane::on_finished);
  connect(worker_, &TrainWorker::died, this, &TrainPane::on_died);
}

void TrainPane::show_export_dialog() {
  QDialog d(this);
  d.setWindowTitle(tr("The same run from the command line"));
  auto* text = new QPlainTextEdit(config_json());
  text->setReadOnly(true);
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* hint = new QLabel(tr("Save as config.json and run: forja-cli train config.json"));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  auto* l = new QVBoxLayout(&d);
  l->addWidget(hint);
  l->addWidget(text);
  l->addWidget(buttons);
  d.resize(560, 520);
  d.exec();
}

QString TrainPane::outcome_text(const QString& outcome) {
  // The worker's outcome names (forja-cli train --json-progress), in the window's words.
  if (outcome == QLatin1String("finished")) return tr("finished");
  if (outcome == QLatin1String("early_stopped")) return tr("stopped early");
  if (outcome == QLatin1String("cancelled")) return tr("cancelled");
  return outcome;
}

void TrainPane::on_finished(const QJsonObject& r) {
  const QString outcome = r.value(QStringLiteral("outcome")).toString();
  const QString steps = QString::number(r.value(QStringLiteral("steps")).toInteger());
  const QString adapter = QDir::toNativeSeparators(r.value(QStringLiteral("adapter")).toString());
  // A worker from before the done line named its device says nothing of it.
  const QString device = r.value(QStringLiteral("device")).toString();
  status_->setText(outcome == QLatin1String("paused")
                       ? tr("Paused at step %1 with a checkpoint. Resume continues from it.").arg(steps)
                   : device.isEmpty()
                       ? tr("Run %1 after %2 steps. Adapter: %3").arg(outcome_text(outcome), steps, adapter)
                       : tr("Run %1 after %2 steps on %3. Adapter: %4")
                             .arg(outcome_text(outcome), steps, device_display_name(device), adapter));
  log(tr("worker: %1").arg(outcome));
  const QJsonObject oom = r.value(QStringLiteral("out_of_memory")).toObject();
  if (!oom.isEmpty()) {
    // The worker measured a setting that fits: the form takes it, so Resume continues with it.
    const QJsonObject s = oom.value(QStringLiteral("suggested")).toObject();
    if (!s.isEmpty()) {
      TrainConfig c = form_config();
      c.batch_size = s.value(QStringLiteral("batch_size")).toInt();
      c.grad_accum = s.value(QStringLiteral("grad_accum")).toInt();
      c.activation_checkpointing = s.value(QStringLiteral("activation_checkpointing")).toBool();
      show_config(c);
    }
    error_->show_error(
        tr("The GPU ran out of memory."),
        oom.value(QStringLiteral("message")).toString() +
            (s.isEmpty() ? QString() : QStringLiteral("\n") + tr("The form now has that setting.")));
    status_->setText(tr("Paused: out of GPU memory. Resume continues with the setting that fits."));
  }
  update_buttons();
  Q_EMIT run_finished(r);
}

void TrainPane::on_died(const QString& tail) {
  // The worker could not say so itself: its journal row still says running. The Runs pane shows it as
  // interrupted from now on; Start resumes it (the worker continues the same row).
  context_.journal->write(
      this,
      [](forja::Journal& j) {
        j.mark_interrupted([](int64_t pid) { return TrainWorker::process_alive(pid); });
      },
      [this](const JournalFailure& why) {
        if (!context_.journal->open_failure())
          log(tr("the run journal could not be updated: %1").arg(why.message));
      });
  const QString last = tail.section(QLatin1Char('\n'), -3);
  error_->show_error(tr("The training process ended without finishing."),
                     last.isEmpty()
                         ? tr("It was killed or crashed. Start resumes from the last checkpoint.")
                         : last + QStringLiteral("\n") +
                               tr("Fix the problem, then Start resumes from the last checkpoint."));
  status_->setText(tr("Interrupted."));
  update_buttons();
  Q_EMIT run_failed(tail);
}

void TrainPane::clear_plots() {
  for (QCustomPlot* p : {loss_plot_, lr_plot_, norm_plot_, speed_plot_}) {
    for (int g = 0; g < p->graphCount(); ++g) p->graph(g)->data()->clear();
    show_series(p);
  }
}

QCustomPlot* TrainPane::make_plot(const QString& name, const QString& y_label) {
  auto* plot = new QCustomPlot;
  plot->setObjectName(name);
  plot->setMinimumSize(220, 150);
  plot->addGraph();
  plot->graph(0)->setPen(QPen(series_color(0, palette()), 1.5));
  plot->xAxis->setLabel(tr("step"));
  plot->yAxis->setLabel(y_label);
  auto* empty = new QCPItemText(plot);
  empty->setObjectName(QStringLiteral("emptyPlotText"));
  empty->position->setType(QCPItemPosition::ptAxisRectRatio);
  empty->position->setCoords(0.5, 0.5);
  empty->setText(tr("The curve starts with the first step."));
  style_plot(plot, palette());
  return plot;
}

void TrainPane::apply_preset(const QString& name) {
  {
    const QSignalBlocker block(preset_);  // the combo shows the preset; its signal would apply it again
    if (const int i = preset_->findData(name); i >= 0) preset_->setCurrentIndex(i);
  }
  TrainConfig c = form_config();
  for (const Preset& p : kPresets)
    if (name == QLatin1String(p.name)) p.apply(c);
  // Every preset trains the common LoRA shape.
  c.lora.rank = 16;
  c.lora.alpha = 32;
  show_config(c);
  // The Data pane reads the dataset with the same max length, so that its preview and counts match the run.
  Q_EMIT preset_max_length(static_cast<int>(c.max_length));
}

TrainConfig TrainPane::form_config() const {
  TrainConfig c;
  for (const TrainFormField& f : form_) f.read(c);
  return c;
}

void TrainPane::show_config(const TrainConfig& config) {
  for (const TrainFormField& f : form_) f.show(config);
}

void TrainPane::set_model_dir(const QString& dir) {
  model_dir_ = dir;
  if (output_dir_->text().isEmpty() || !running())
    output_dir_->setText(QString::fromStdString(
        forja::new_run_dir(default_runs_dir().toStdString(), dir.toStdString(), std::time(nullptr))
            .string()));
  inputs_->setText(
      tr("Model: %1 · Dataset: %2")
          .arg(dir.isEmpty() ? tr("none (open one in the Model pane)") : QDir::toNativeSeparators(dir),
               dataset_.isEmpty() ? tr("none (open one in the Data pane)")
                                  : QDir::toNativeSeparators(dataset_)));
  if (!running())
    status_->setText(dir.isEmpty() || dataset_.isEmpty()
                         ? tr("Pick a model (Model pane) and a dataset (Data pane), then Start.")
                         : tr("Ready: Start runs %n step(s) in a worker process.", nullptr, steps_->value()));
  update_buttons();
}

void TrainPane::set_model_info(const forja::ModelInfo& info) {
  shape_ = forja::model_shape(info);
  // Targets another architecture's names would match nothing (GPT-2 has c_attn, not q_proj): a model of
  // another family gets all of its own projections; targets that are its own stay as the user set them.
  QStringList own;
  for (const std::string& t : info.lora_targets) own << QString::fromStdString(t);
  const TrainConfig c = form_config();
  const bool fits =
      !c.lora.target_modules.empty() &&
      std::all_of(c.lora.target_modules.begin(), c.lora.target_modules.end(),
                  [&](const std::string& t) { return own.contains(QString::fromStdString(t)); });
  if (!fits && !running() && !own.isEmpty()) targets_->setText(own.join(QStringLiteral(", ")));
  targets_->setToolTip(
      tr("The projections that get an adapter, comma-separated, as PEFT names them. This model's: %1")
          .arg(own.join(QStringLiteral(", "))));
  update_estimate();
}

void TrainPane::update_estimate() {
  if (!shape_) {
    estimate_->setText(tr("Estimated GPU memory: open a model to see it."));
    return;
  }
  const TrainConfig c = form_config();
  forja::TrainShape t;
  t.batch_size = c.batch_size;
  t.seq_len = c.max_length;
  t.lora_rank = c.lora.rank;
  t.activation_checkpointing = c.activation_checkpointing;
  t.selective_checkpointing = c.selective_checkpointing;
  t.nf4_base = c.base_quant == "nf4";
  const forja::MemoryEstimate m = forja::estimate_train_memory(*shape_, t);
  estimate_->setText(tr("Estimated GPU memory: about %1 (weights %2, LoRA and optimizer %3, activations %4). "
                        "Rows shorter than the max length take less.")
                         .arg(format_bytes(m.total()), format_bytes(m.weights), format_bytes(m.adapters),
                              format_bytes(m.activations)));
}

void TrainPane::set_dataset(const QString& file, const QJsonObject& data_settings) {
  dataset_ = file;
  data_settings_ = data_settings;
  if (data_settings.contains(QStringLiteral("max_length")) && !running())
    max_len_->setValue(data_settings.value(QStringLiteral("max_length")).toInt());
  set_model_dir(model_dir_);
}

QString TrainPane::config_json() const {
  TrainConfig c = form_config();
  c.model_dir = model_dir_.toStdString();
  c.output_dir = output_dir_->text().toStdString();
  c.train_file = dataset_.toStdString();
  const auto text = [&](const char* key, const std::string& fallback) {
    const QJsonValue v = data_settings_.value(QLatin1String(key));
    return v.isString() ? v.toString().toStdString() : fallback;
  };
  c.data_format = text("data_format", c.data_format);
  c.on_bad_record = text("on_bad_record", c.on_bad_record);
  c.eval_fraction = data_settings_.value(QStringLiteral("eval_fraction")).toDouble(c.eval_fraction);
  c.train_on_prompt = data_settings_.value(QStringLiteral("train_on_prompt")).toBool(c.train_on_prompt);
  return QString::fromStdString(forja::train_config_to_json(c));
}

void TrainPane::start() {
  error_->clear();
  if (model_dir_.isEmpty() || dataset_.isEmpty()) {
    error_->show_error(tr("A run needs a model and a dataset."),
                       tr("Open a model folder in the Model pane and a dataset in the Data pane."));
    return;
  }
  if (workers_->value() > 1 && device_->currentText() == QLatin1String("auto")) {
    error_->show_error(tr("Several workers need a device: cuda (one GPU each) or cpu."),
                       tr("Pick cuda or cpu, or set the workers to 1."));
    return;
  }
  if (running() || starting_) return;
  const QString out = output_dir_->text();
  train_again_->setVisible(false);
  starting_ = true;
  update_buttons();
  // Its checkpoint is the last step, so a "resume" would train nothing and only overwrite how it ended.
  context_.journal->request(
      this, [dir = out.toStdString()](forja::Journal& j) { return forja::completed_run_in(j, dir); },
      [this, out](const std::optional<forja::RunRecord>& done) {
        starting_ = false;
        if (!done) {
          launch(out, true);
          return;
        }
        error_->show_error(
            tr("The run \u201c%1\u201d in %2 already completed; starting it again would rewrite its history.")
                .arg(QString::fromStdString(done->name), out),
            tr("Train again as a new run: it gets a folder of its own, and this run stays as it is."),
            ErrorBox::Severity::Warning);
        train_again_->setVisible(true);
        update_buttons();
      },
      [this, out](const JournalFailure& why) {
        starting_ = false;
        // A journal that could not be opened keeps no history, but the run itself can still go.
        if (context_.journal->open_failure()) {
          launch(out, false);
          return;
        }
        error_->show_error(why.message, why.hint);
        update_buttons();
      });
}

void TrainPane::launch(const QString& out, bool with_journal) {
  if (!QDir().mkpath(out)) {
    error_->show_error(tr("%1: the output folder cannot be created").arg(out), tr("Choose another folder."));
    return;
  }
  const QString config_path = QDir(out).filePath(QStringLiteral("config.json"));
  QFile f(config_path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(config_json().toUtf8()) < 0) {
    error_->show_error(tr("%1: cannot be written").arg(config_path), f.errorString());
    return;
  }
  f.close();
  const QString journal = with_journal ? context_.journal->path() : QString();
  QStringList extra;
  if (workers_->value() > 1)
    extra << (device_->currentText() == QLatin1String("cpu") ? QStringLiteral("--nproc")
                                                             : QStringLiteral("--gpus"))
          << QString::number(workers_->value());
  if (!worker_->start(config_path, out, journal, extra)) {
    error_->show_error(worker_->error(), tr("Build forja-cli, or set FORJA_CLI to its path."));
    return;
  }
  log(tr("started %1 (pid %2) in %3").arg(TrainWorker::cli_path()).arg(worker_->pid()).arg(out));
  status_->setText(tr("Starting: loading the model and the data…"));
  update_buttons();
}

void TrainPane::train_again_as_new_run() {
  if (running()) return;
  output_dir_->setText(QString::fromStdString(
      forja::new_run_dir(default_runs_dir().toStdString(), model_dir_.toStdString(), std::time(nullptr))
          .string()));
  clear_plots();
  start();
}

bool TrainPane::restore_run(const QString& config_json, qint64 worker_pid) {
  if (running()) return false;
  forja::TrainConfig c;
  try {
    c = forja::train_config_from_json(config_json.toStdString(), "the run journal");
  } catch (const forja::Error& e) {
    log(tr("a run in the journal could not be shown: %1").arg(QString::fromStdString(e.message())));
    return false;
  }
  auto q = [](const std::string& s) { return QString::fromStdString(s); };
  show_config(c);
  model_dir_ = q(c.model_dir);  // set_dataset shows it, through set_model_dir
  set_dataset(q(c.train_file), QJsonObject{{QStringLiteral("data_format"), q(c.data_format)},
                                           {QStringLiteral("max_length"), static_cast<int>(c.max_length)},
                                           {QStringLiteral("eval_fraction"), c.eval_fraction},
                                           {QStringLiteral("on_bad_record"), q(c.on_bad_record)},
                                           {QStringLiteral("train_on_prompt"), c.train_on_prompt}});
  output_dir_->setText(q(c.output_dir));  // set_model_dir proposes a new folder when none is running
  clear_plots();
  error_->clear();
  log(tr("following the run in %1 (worker pid %2)").arg(q(c.output_dir)).arg(worker_pid));
  worker_->attach(q(c.output_dir), worker_pid);
  update_buttons();
  return true;
}

void TrainPane::pause() {
  worker_->request_pause();
  status_->setText(tr("Pausing: the run writes a checkpoint, then stops…"));
}

void TrainPane::stop() {
  worker_->kill();
  status_->setText(tr("Stopped."));
}

bool TrainPane::running() const {
  return worker_->running();
}

int TrainPane::plotted_steps() const {
  return loss_plot_->graph(0)->dataCount();
}

void TrainPane::on_step(const QJsonObject& p) {
  const double step = p.value(QStringLiteral("step")).toDouble();
  const double total = p.value(QStringLiteral("total_steps")).toDouble();
  // A run killed after recording a step and before checkpointing it does that step again when resumed: the
  // curves drop what they had from there on, so each step is plotted once.
  for (QCustomPlot* plot : {loss_plot_, lr_plot_, norm_plot_, speed_plot_})
    for (int g = 0; g < plot->graphCount(); ++g)
      if (!plot->graph(g)->data()->isEmpty() && (plot->graph(g)->data()->constEnd() - 1)->key >= step)
        plot->graph(g)->data()->removeAfter(step - 0.5);
  add_point(loss_plot_, 0, step, p.value(QStringLiteral("loss")).toDouble());
  if (p.contains(QStringLiteral("eval_loss")))
    add_point(loss_plot_, 1, step, p.value(QStringLiteral("eval_loss")).toDouble());
  add_point(lr_plot_, 0, step, p.value(QStringLiteral("lr")).toDouble());
  add_point(norm_plot_, 0, step, p.value(QStringLiteral("grad_norm")).toDouble());
  add_point(speed_plot_, 0, step, p.value(QStringLiteral("tokens_per_s")).toDouble());
  // The worker reports 0 GiB on the CPU: no GPU memory curve (nor its axis) there.
  if (const double gib = p.value(QStringLiteral("gpu_reserved_gib")).toDouble(); gib > 0)
    add_point(speed_plot_, 1, step, gib);
  if (p.contains(QStringLiteral("positions_per_s")))
    add_point(speed_plot_, 2, step, p.value(QStringLiteral("positions_per_s")).toDouble());
  progress_->setRange(0, static_cast<int>(total));
  progress_->setValue(static_cast<int>(step));
  status_->setText(
      tr("Step %1 of %2 · loss %3 · %4 tokens/s (%5 trained of %6 tokens in %7 positions) · ETA %8")
          .arg(step)
          .arg(total)
          .arg(p.value(QStringLiteral("loss")).toDouble(), 0, 'f', 4)
          .arg(p.value(QStringLiteral("tokens_per_s")).toDouble(), 0, 'f', 0)
          .arg(p.value(QStringLiteral("trained_tokens")).toInteger())
          .arg(p.value(QStringLiteral("tokens")).toInteger())
          .arg(p.value(QStringLiteral("positions")).toInteger())
          .arg(format_duration_ms(static_cast<int64_t>(p.value(QStringLiteral("eta_s")).toDouble() * 1000))));
}

void TrainPane::log(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

void TrainPane::update_buttons() {
  const bool run = running();
  const bool ready = !model_dir_.isEmpty() && !dataset_.isEmpty();
  start_->setEnabled(!run && !starting_ && ready);
  start_->setText(QFile::exists(QDir(output_dir_->text()).filePath(QStringLiteral("progress.jsonl")))
                      ? tr("Resume")
                      : tr("Start"));
  pause_->setEnabled(run);
  stop_->setEnabled(run);
}

void TrainPane::changeEvent(QEvent* event) {
  Pane::changeEvent(event);
  if (event->type() == QEvent::PaletteChange)
    for (QCustomPlot* p : {loss_plot_, lr_plot_, norm_plot_, speed_plot_}) style_plot(p, palette());
}

}  // namespace forja::ui
