// DataPane: controls, the job hand-off, the stats, histogram, problems and the token preview.
#include "panes/data_pane.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "error_box.h"
#include "jobs/job_monitor.h"
#include "jobs/prepare_data_job.h"
#include "plot.h"
#include "theme.h"

namespace forja::ui {
namespace {

const char* const kLastDatasetKey = "DataPane/lastDataset";

QString number(int64_t v) {
  return QLocale().toString(static_cast<qlonglong>(v));
}

// Makes whitespace visible in the token view: a space token shows as "·", a newline as "↵" then a line break.
QString visible(const std::string& text) {
  QString out;
  for (const QChar c : QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()))) {
    if (c == QLatin1Char('\n'))
      out += QStringLiteral("↵<br>");
    else if (c == QLatin1Char(' '))
      out += QStringLiteral("·");
    else if (c == QLatin1Char('\t'))
      out += QStringLiteral("→");
    else
      out += QString(c).toHtmlEscaped();
  }
  return out;
}

}  // namespace

DataPane::DataPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("DataPane"));
  auto* heading = make_heading(tr("Training data"));
  auto* open_button = new QPushButton(QIcon(QStringLiteral(":/icons/open-folder.svg")), tr("Open Dataset…"));
  open_button->setObjectName(QStringLiteral("openDatasetButton"));
  connect(open_button, &QPushButton::clicked, this, &DataPane::open_dialog);
  auto* top = new QHBoxLayout;
  top->addWidget(heading, 1);
  top->addWidget(open_button);

  file_label_ =
      new QLabel(tr("JSONL or JSON files: alpaca (instruction / input / output), chat (messages), "
                    "ShareGPT (conversations) or plain text (text)."));
  file_label_->setObjectName(QStringLiteral("datasetFile"));
  file_label_->setWordWrap(true);

  format_ = new QComboBox;
  format_->setObjectName(QStringLiteral("datasetFormat"));
  for (const char* name : {"auto", "alpaca", "chat", "sharegpt", "text"})
    format_->addItem(QString::fromLatin1(name));
  max_length_ = new QSpinBox;
  max_length_->setObjectName(QStringLiteral("datasetMaxLength"));
  max_length_->setRange(16, 131072);
  max_length_->setValue(2048);
  max_length_->setSuffix(tr(" tokens"));
  eval_fraction_ = new QDoubleSpinBox;
  eval_fraction_->setObjectName(QStringLiteral("datasetEvalFraction"));
  eval_fraction_->setRange(0, 0.5);
  eval_fraction_->setSingleStep(0.05);
  eval_fraction_->setValue(0.1);
  skip_bad_ = new QCheckBox(tr("Skip bad lines (and list them)"));
  skip_bad_->setObjectName(QStringLiteral("datasetSkipBad"));
  skip_bad_->setChecked(true);
  train_on_prompt_ = new QCheckBox(tr("Train on the prompt too"));
  train_on_prompt_->setObjectName(QStringLiteral("datasetTrainOnPrompt"));
  auto* options = new QFormLayout;
  options->addRow(tr("Format:"), format_);
  options->addRow(tr("Max length:"), max_length_);
  options->addRow(tr("Held out for eval:"), eval_fraction_);
  options->addRow(skip_bad_);
  options->addRow(train_on_prompt_);
  for (auto* w : {static_cast<QWidget*>(format_), static_cast<QWidget*>(max_length_),
                  static_cast<QWidget*>(eval_fraction_)})
    w->setMaximumWidth(180);
  connect(format_, &QComboBox::currentIndexChanged, this, &DataPane::reload);
  connect(max_length_, &QSpinBox::editingFinished, this, &DataPane::reload);
  connect(eval_fraction_, &QDoubleSpinBox::editingFinished, this, &DataPane::reload);
  connect(skip_bad_, &QCheckBox::toggled, this, &DataPane::reload);
  connect(train_on_prompt_, &QCheckBox::toggled, this, &DataPane::reload);

  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("datasetError"));
  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("datasetSummary"));
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);

  histogram_ = new QCustomPlot;
  histogram_->setObjectName(QStringLiteral("datasetHistogram"));
  histogram_->setMinimumHeight(160);
  histogram_->xAxis->setLabel(tr("tokens per example"));
  histogram_->yAxis->setLabel(tr("examples"));
  style_plot(histogram_, palette());

  problems_ = new QTreeWidget;
  problems_->setObjectName(QStringLiteral("datasetProblems"));
  problems_->setHeaderLabels({tr("Where"), tr("Problem")});
  problems_->setRootIsDecorated(false);
  problems_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);

  example_ = new QSpinBox;
  example_->setObjectName(QStringLiteral("datasetExample"));
  example_->setEnabled(false);
  connect(example_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) { show_example(v - 1); });
  example_source_ = new QLabel;
  example_source_->setObjectName(QStringLiteral("datasetExampleSource"));
  tokens_ = new QTextBrowser;
  tokens_->setObjectName(QStringLiteral("datasetTokens"));
  tokens_->setOpenLinks(false);
  auto* example_row = new QHBoxLayout;
  example_row->addWidget(new QLabel(tr("Example")));
  example_row->addWidget(example_);
  example_row->addWidget(example_source_, 1);
  auto* legend = new QLabel(tr("Highlighted tokens carry the loss: the model learns to produce them."));
  legend->setWordWrap(true);
  auto* preview_box = new QWidget;
  auto* preview_layout = new QVBoxLayout(preview_box);
  preview_layout->setContentsMargins(0, 0, 0, 0);
  preview_layout->addLayout(example_row);
  preview_layout->addWidget(legend);
  preview_layout->addWidget(tokens_, 1);

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addLayout(options);
  left_layout->addWidget(summary_, 1);
  auto* stats_row = new QSplitter(Qt::Horizontal);
  stats_row->addWidget(left);
  stats_row->addWidget(histogram_);
  stats_row->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(stats_row);
  split->addWidget(preview_box);
  split->addWidget(problems_);
  split->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(file_label_);
  layout->addWidget(error_);
  layout->addWidget(split, 1);
}

void DataPane::set_model_dir(const QString& dir) {
  if (dir == model_dir_) return;
  model_dir_ = dir;
  reload();
}

void DataPane::set_eval_fraction(double fraction) {
  eval_fraction_->setValue(fraction);
}

void DataPane::set_max_length(int tokens) {
  if (max_length_->value() == tokens) return;
  max_length_->setValue(tokens);
  reload();
}

void DataPane::open_dialog() {
  const QString last = QSettings().value(QLatin1String(kLastDatasetKey)).toString();
  const QString file = QFileDialog::getOpenFileName(
      this, tr("Open a dataset"), last.isEmpty() ? QDir::homePath() : QFileInfo(last).absolutePath(),
      tr("Datasets (*.jsonl *.json);;All files (*)"));
  if (!file.isEmpty()) open(file);
}

void DataPane::open(const QString& file) {
  dataset_ = QFileInfo(file).absoluteFilePath();
  QSettings().setValue(QLatin1String(kLastDatasetKey), dataset_);
  reload();
}

void DataPane::reload() {
  if (dataset_.isEmpty()) return;
  forja::DatasetOptions o;
  o.read.format = forja::parse_format_name(format_->currentText().toStdString());
  o.read.on_bad_record = skip_bad_->isChecked() ? forja::OnBadRecord::Skip : forja::OnBadRecord::Stop;
  o.max_length = max_length_->value();
  o.eval_fraction = eval_fraction_->value();
  o.train_on_prompt = train_on_prompt_->isChecked();
  const quint64 request = ++request_;
  loading_ = true;
  error_->clear();
  file_label_->setText(tr("Reading %1…").arg(QDir::toNativeSeparators(dataset_)));
  auto* job = new PrepareDataJob(dataset_.toStdString(), model_dir_.toStdString(), o);
  // An answer to an older request (options changed meanwhile) is dropped: the pane shows the newest settings.
  connect(job, &PrepareDataJob::prepared, this, [this, request](std::shared_ptr<const DataPreview> p) {
    if (request == request_) show_preview(std::move(p));
  });
  connect(job, &Job::failed, this, [this, request](const QString& message, const QString& hint) {
    if (request != request_) return;
    preview_.reset();
    file_label_->setText(QDir::toNativeSeparators(dataset_));
    error_->show_error(message, hint);
    Q_EMIT dataset_failed(message, hint);
  });
  connect(job, &Job::ended, this, [this, request] {
    if (request == request_) loading_ = false;
  });
  context_.jobs->start(job);
}

void DataPane::show_preview(std::shared_ptr<const DataPreview> p) {
  preview_ = std::move(p);
  file_label_->setText(QDir::toNativeSeparators(dataset_));
  const DataPreview& d = *preview_;
  QString html;
  problems_->clear();
  auto add_problems = [this](const std::vector<forja::DataProblem>& problems) {
    for (const auto& pr : problems)
      new QTreeWidgetItem(problems_,
                          {QString::fromStdString(pr.where()), QString::fromStdString(pr.message)});
  };
  if (d.prepared) {
    const auto& s = d.prepared->stats;
    html = tr("<b>%1 records</b> read (alpaca %2, chat %3, ShareGPT %4, text %5), %6 skipped.<br>"
              "<b>Train:</b> %7 examples, %8 tokens, %9 trained; length %10–%11 (mean %12).<br>"
              "<b>Eval:</b> %13 examples, %14 tokens.<br>"
              "%15 cut to the max length; %16 dropped with nothing to learn.")
               .arg(number(static_cast<int64_t>(s.records_read)), number(static_cast<int64_t>(s.alpaca)),
                    number(static_cast<int64_t>(s.chat)), number(static_cast<int64_t>(s.sharegpt)),
                    number(static_cast<int64_t>(s.text)), number(static_cast<int64_t>(s.records_skipped)),
                    number(static_cast<int64_t>(s.train.examples)), number(s.train.tokens),
                    number(s.train.trained_tokens))
               .arg(number(s.train.min_length), number(s.train.max_length),
                    QLocale().toString(s.train.mean_length, 'f', 1),
                    number(static_cast<int64_t>(s.eval.examples)), number(s.eval.tokens),
                    number(static_cast<int64_t>(s.train.truncated + s.eval.truncated)),
                    number(static_cast<int64_t>(s.train.dropped_no_trained + s.eval.dropped_no_trained)));
    add_problems(s.problems);
    example_->setEnabled(!d.prepared->train.empty());
    example_->setRange(1, std::max<int>(1, static_cast<int>(d.prepared->train.size())));
    show_example(example_->value() - 1);
  } else {
    html = tr("<b>%1 records</b> read, %2 skipped.<br>%3")
               .arg(number(static_cast<int64_t>(d.read.records.size())),
                    number(static_cast<int64_t>(d.read.skipped)), d.tokenizer_note.toHtmlEscaped());
    add_problems(d.read.problems);
    example_->setEnabled(false);
    tokens_->setHtml(QStringLiteral("<p>%1</p>").arg(d.tokenizer_note.toHtmlEscaped()));
  }
  summary_->setText(html);
  problems_->setVisible(problems_->topLevelItemCount() > 0);
  update_histogram();
  Q_EMIT dataset_ready(dataset_,
                       QJsonObject{{QStringLiteral("data_format"), format_->currentText()},
                                   {QStringLiteral("max_length"), max_length_->value()},
                                   {QStringLiteral("eval_fraction"), eval_fraction_->value()},
                                   {QStringLiteral("on_bad_record"),
                                    skip_bad_->isChecked() ? QStringLiteral("skip") : QStringLiteral("stop")},
                                   {QStringLiteral("train_on_prompt"), train_on_prompt_->isChecked()}});
}

void DataPane::show_example(int index) {
  if (!preview_ || !preview_->prepared || !preview_->tokenizer) return;
  const auto& train = preview_->prepared->train;
  if (index < 0 || index >= static_cast<int>(train.size())) return;
  const auto& ex = train[static_cast<size_t>(index)];
  example_source_->setText(
      tr("%1 — %2 tokens, %3 trained%4")
          .arg(QString::fromStdString(ex.source), number(static_cast<int64_t>(ex.ids.size())),
               number(ex.trained_tokens()),
               ex.truncated ? tr(", cut from %1").arg(number(ex.original_length)) : QString()));
  // Token borders as tokenizer playgrounds show them: neighbouring tokens alternate between two shades, the
  // trained ones in the highlight's two, the rest in the base's (Qt's rich text draws no CSS borders).
  const QColor hi = series_color(2, palette()).lighter(is_dark(palette()) ? 60 : 175);
  const QColor base = palette().color(QPalette::Base);
  const QColor shades[2][2] = {{base, is_dark(palette()) ? base.lighter(150) : base.darker(110)},
                               {hi, is_dark(palette()) ? hi.lighter(130) : hi.darker(112)}};
  QString html = QStringLiteral("<div style=\"font-family: monospace;\">");
  int i = 0;
  for (const auto& t : forja::preview_example(*preview_->tokenizer, ex)) {
    const QColor bg = shades[t.trained ? 1 : 0][i++ % 2];
    html += QStringLiteral("<span title=\"%1 (id %2)\" style=\"background-color:%3;\">%4</span>")
                .arg(QString::fromStdString(t.piece).toHtmlEscaped())
                .arg(t.id)
                .arg(bg.name(), visible(t.text));
  }
  html += QStringLiteral("</div>");
  tokens_->setHtml(html);
}

void DataPane::update_histogram() {
  histogram_->clearPlottables();
  histogram_->clearItems();
  // The lengths as read, before the cut, so the bars past the max length show what it drops.
  std::vector<int64_t> lengths;
  int64_t cut = 0;
  if (preview_ && preview_->prepared)
    for (const auto& e : preview_->prepared->train) {
      lengths.push_back(std::max(e.original_length, static_cast<int64_t>(e.ids.size())));
      cut += e.truncated ? 1 : 0;
    }
  if (!lengths.empty()) {
    const auto h = forja::length_histogram(lengths, 20);
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars->setName(tr("train examples"));
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(0, palette()));
    double max_count = 1;
    for (size_t i = 0; i < h.counts.size(); ++i) {
      bars->addData((h.edges[i] + h.edges[i + 1]) / 2.0, static_cast<double>(h.counts[i]));
      max_count = std::max(max_count, static_cast<double>(h.counts[i]));
    }
    bars->setWidth(h.edges.size() > 1 ? (h.edges[1] - h.edges[0]) * 0.9 : 1.0);
    // The max length as a line, inside the range even when every example is shorter.
    const double max_length = max_length_->value();
    const double lo = std::min(h.edges.front(), max_length);
    const double hi = std::max({h.edges.back(), h.edges.front() + 1, max_length});
    histogram_->xAxis->setRange(lo - (hi - lo) * 0.02, hi + (hi - lo) * 0.02);
    histogram_->yAxis->setRange(0, max_count * 1.25);
    auto* line = new QCPItemStraightLine(histogram_);
    line->setObjectName(QStringLiteral("maxLengthLine"));
    line->setPen(QPen(series_color(1, palette()), 1.5, Qt::DashLine));
    line->point1->setCoords(max_length, 0);
    line->point2->setCoords(max_length, 1);
    auto* label = new QCPItemText(histogram_);
    label->setObjectName(QStringLiteral("maxLengthLabel"));
    label->setColor(palette().color(QPalette::WindowText));
    label->setPositionAlignment(Qt::AlignTop | (max_length > (lo + hi) / 2 ? Qt::AlignRight : Qt::AlignLeft));
    label->position->setCoords(max_length, max_count * 1.22);
    label->setText(tr("max length %1: %n cut", nullptr, static_cast<int>(cut))
                       .arg(number(static_cast<int64_t>(max_length))));
  }
  histogram_->replot();
}

void DataPane::changeEvent(QEvent* event) {
  Pane::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    style_plot(histogram_, palette());
    update_histogram();
  }
}

}  // namespace forja::ui
