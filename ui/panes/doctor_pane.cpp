// DoctorPane: layout, the probe hand-off and the findings view.
#include "panes/doctor_pane.h"

#include <QApplication>
#include <QClipboard>
#include <QCoreApplication>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShowEvent>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "jobs/doctor_job.h"
#include "jobs/job_monitor.h"

namespace forja::ui {
namespace {
// A finding's sentence in the window's language: its template translated (the context lupdate reads in
// core/env/advice.cpp), then %1 … %9 filled in one pass, as the engine fills the English one.
QString finding_text(const std::string& tmpl, const std::vector<std::string>& args) {
  const std::string translated =
      QCoreApplication::translate("forja::env::Finding", tmpl.c_str()).toStdString();
  return QString::fromStdString(forja::env::fill_template(translated, args));
}

QString severity_icon(forja::env::Severity s) {
  switch (s) {
    case forja::env::Severity::error:
      return QStringLiteral(":/icons/severity-error.svg");
    case forja::env::Severity::warning:
      return QStringLiteral(":/icons/severity-warning.svg");
    case forja::env::Severity::info:
      break;
  }
  return QStringLiteral(":/icons/severity-info.svg");
}

}  // namespace

DoctorPane::DoctorPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("DoctorPane"));
  auto* heading = make_heading(tr("Is this machine ready to fine-tune?"));
  check_button_ = new QPushButton(QIcon(QStringLiteral(":/icons/refresh.svg")), tr("Check Again"));
  check_button_->setObjectName(QStringLiteral("doctorCheckButton"));
  connect(check_button_, &QPushButton::clicked, this, &DoctorPane::check);
  copy_button_ = new QPushButton(tr("Copy Report"));
  copy_button_->setObjectName(QStringLiteral("doctorCopyButton"));
  copy_button_->setToolTip(tr("Copy the full report, e.g. for a bug report"));
  copy_button_->setEnabled(false);
  connect(copy_button_, &QPushButton::clicked, this, [this] {
    if (report_)
      QApplication::clipboard()->setText(QString::fromStdString(forja::env::report_text(*report_)));
  });
  auto* top = new QHBoxLayout;
  top->addWidget(heading, 1);
  top->addWidget(copy_button_);
  top->addWidget(check_button_);

  banner_ = new QLabel(tr("Not checked yet."));
  banner_->setObjectName(QStringLiteral("doctorBanner"));
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::RichText);

  findings_ = new QTreeWidget;
  findings_->setObjectName(QStringLiteral("doctorFindings"));
  findings_->setColumnCount(2);
  findings_->setHeaderLabels({tr("What is wrong"), tr("What to do")});
  findings_->setRootIsDecorated(false);
  findings_->setWordWrap(true);
  findings_->setUniformRowHeights(false);
  findings_->header()->setSectionResizeMode(QHeaderView::Stretch);

  details_ = new QPlainTextEdit;
  details_->setObjectName(QStringLiteral("doctorDetails"));
  details_->setReadOnly(true);
  details_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(findings_);
  split->addWidget(details_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(banner_);
  layout->addWidget(split, 1);
}

void DoctorPane::showEvent(QShowEvent* event) {
  Pane::showEvent(event);
  if (!checked_once_) check();
}

void DoctorPane::check() {
  if (checking_) return;
  checking_ = true;
  checked_once_ = true;
  check_button_->setEnabled(false);
  banner_->setText(tr("Checking the NVIDIA driver, the GPUs, CUDA and LibTorch…"));
  auto* job = new DoctorJob;
  connect(job, &DoctorJob::probed, this, &DoctorPane::show_report);
  connect(job, &Job::failed, this, [this](const QString& message, const QString& hint) {
    banner_->setText(
        tr("<b>The check itself failed:</b> %1<br>%2").arg(message.toHtmlEscaped(), hint.toHtmlEscaped()));
  });
  connect(job, &Job::ended, this, [this] {
    checking_ = false;
    check_button_->setEnabled(true);
  });
  context_.jobs->start(job);
}

QString DoctorPane::where_work_runs(const forja::env::Report& report) {
  if (report.torch.cuda_available && report.torch.device_count > 0) {
    for (const auto& gpu : report.gpus)
      if (gpu.cuda_index == 0) return tr("the GPU %1 (cuda:0)").arg(QString::fromStdString(gpu.name));
    return tr("the GPU cuda:0");
  }
  return tr("the CPU");
}

void DoctorPane::show_report(std::shared_ptr<const forja::env::Report> report) {
  report_ = std::move(report);
  const auto& r = *report_;
  const bool on_gpu = r.torch.cuda_available && r.torch.device_count > 0;
  int errors = 0, warnings = 0, notes = 0;
  for (const auto& f : r.findings) {
    errors += f.severity == forja::env::Severity::error;
    warnings += f.severity == forja::env::Severity::warning;
    notes += f.severity == forja::env::Severity::info;
  }
  QString why;
  if (!on_gpu) {
    // The first error says why the GPU is not used: the most common silent-CPU trap, said loudly.
    for (const auto& f : r.findings)
      if (f.severity == forja::env::Severity::error) {
        why = finding_text(f.problem_template, f.problem_args);
        break;
      }
    if (why.isEmpty()) why = tr("no CUDA GPU is visible to this build.");
  }
  QString text = tr("<b>Training and chat will run on %1.</b>").arg(where_work_runs(r).toHtmlEscaped());
  if (!on_gpu) text += QStringLiteral(" ") + tr("Why: %1").arg(why.toHtmlEscaped());
  text += QStringLiteral("<br>");
  if (errors + warnings == 0)
    text += notes == 0 ? tr("No problems found.") : tr("Nothing to fix; %n note(s) below.", nullptr, notes);
  else
    text += tr("%n problem(s) to fix", nullptr, errors) + QStringLiteral(", ") +
            tr("%n warning(s)", nullptr, warnings) + QStringLiteral(".");
  banner_->setText(text);

  findings_->clear();
  if (r.findings.empty()) {
    auto* item = new QTreeWidgetItem(findings_, {tr("Nothing to fix."), QString()});
    item->setIcon(0, QIcon(QStringLiteral(":/icons/severity-ok.svg")));
  }
  for (const auto& f : r.findings) {
    auto* item = new QTreeWidgetItem(findings_, {finding_text(f.problem_template, f.problem_args),
                                                 finding_text(f.fix_template, f.fix_args)});
    item->setIcon(0, QIcon(severity_icon(f.severity)));
    item->setData(0, Qt::UserRole, QString::fromStdString(f.id));
    item->setToolTip(0, finding_text(f.problem_template, f.problem_args));
    item->setToolTip(1, finding_text(f.fix_template, f.fix_args));
  }
  details_->setPlainText(QString::fromStdString(forja::env::report_text(r)));
  copy_button_->setEnabled(true);
  Q_EMIT report_ready(report_);
}

}  // namespace forja::ui
