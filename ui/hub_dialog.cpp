#include "hub_dialog.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include "error_box.h"
#include "forja/error.h"
#include "format.h"
#include "jobs/hub_jobs.h"

namespace forja::ui {

namespace {
const char* kUnfinishedKey = "hub/unfinished_download";
}

QString HubDownloadDialog::unfinished_download() {
  return QSettings().value(kUnfinishedKey).toString();
}

HubDownloadDialog::HubDownloadDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Download from Hugging Face"));
  setObjectName(QStringLiteral("hubDownloadDialog"));
  repo_ = new QLineEdit;
  repo_->setObjectName(QStringLiteral("hubRepo"));
  repo_->setPlaceholderText(QStringLiteral("Qwen/Qwen2.5-0.5B-Instruct"));
  revision_ = new QLineEdit(QStringLiteral("main"));
  revision_->setObjectName(QStringLiteral("hubRevision"));
  revision_->setToolTip(tr("A branch, a tag or a commit"));
  auto* form = new QFormLayout;
  form->addRow(tr("Repository:"), repo_);
  form->addRow(tr("Revision:"), revision_);

  plan_ = new QLabel;
  plan_->setObjectName(QStringLiteral("hubPlan"));
  plan_->setWordWrap(true);
  plan_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("hubStatus"));
  status_->setWordWrap(true);
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("hubProgress"));
  progress_->setRange(0, 1000);
  progress_->hide();
  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("hubError"));

  check_ = new QPushButton(tr("Check"));
  check_->setObjectName(QStringLiteral("hubCheck"));
  download_ = new QPushButton(tr("Download"));
  download_->setObjectName(QStringLiteral("hubDownload"));
  download_->setEnabled(false);
  cancel_ = new QPushButton(tr("Cancel download"));
  cancel_->setObjectName(QStringLiteral("hubCancel"));
  cancel_->setEnabled(false);
  auto* close = new QPushButton(tr("Close"));
  connect(close, &QPushButton::clicked, this, &QDialog::hide);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(check_);
  buttons->addWidget(download_);
  buttons->addWidget(cancel_);
  buttons->addStretch(1);
  buttons->addWidget(close);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(plan_, 1);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addWidget(error_);
  layout->addLayout(buttons);

  connect(check_, &QPushButton::clicked, this, &HubDownloadDialog::check);
  connect(repo_, &QLineEdit::returnPressed, this, &HubDownloadDialog::check);
  connect(repo_, &QLineEdit::textEdited, this, [this] { download_->setEnabled(false); });
  connect(download_, &QPushButton::clicked, this, &HubDownloadDialog::download);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (pull_) pull_->cancel();
  });
  if (const QString unfinished = unfinished_download(); !unfinished.isEmpty()) {
    const auto at = unfinished.indexOf(QLatin1Char('@'));
    repo_->setText(unfinished.left(at));
    if (at >= 0) revision_->setText(unfinished.mid(at + 1));
    status_->setText(
        tr("The download of %1 did not finish: Check, then Download resumes it.").arg(unfinished));
  }
}

std::optional<forja::hub::RepoRef> HubDownloadDialog::ref_from_fields() {
  const QString rev = revision_->text().trimmed();
  const QString text = repo_->text().trimmed() + (rev.isEmpty() ? QString() : QLatin1Char('@') + rev);
  try {
    return forja::hub::parse_repo_ref(text.toStdString());
  } catch (const forja::Error& e) {
    fail(QString::fromStdString(e.what()), QString::fromStdString(e.hint()));
    return std::nullopt;
  }
}

void HubDownloadDialog::check() {
  error_->clear();
  const auto ref = ref_from_fields();
  if (!ref) return;
  download_->setEnabled(false);
  check_->setEnabled(false);
  plan_->setText(tr("Asking %1…").arg(QString::fromStdString(ref->repo_id)));
  auto* job = new HubPlanJob(*ref);
  connect(job, &HubPlanJob::planned, this, &HubDownloadDialog::show_plan);
  connect(job, &Job::failed, this, &HubDownloadDialog::fail);
  connect(job, &Job::ended, this, [this] { check_->setEnabled(!downloading()); });
  job->start();
}

void HubDownloadDialog::show_plan(const forja::hub::PullPlan& plan) {
  QString files;
  for (const auto& f : plan.files)
    files +=
        QStringLiteral("<br>&nbsp;&nbsp;%1 — %2")
            .arg(QString::fromStdString(f.path).toHtmlEscaped(), format_bytes(static_cast<int64_t>(f.size)));
  const bool fits = plan.download_bytes < plan.free_bytes;
  plan_->setText(
      tr("<b>%1</b> at commit %2<br>%3<br>%4 file(s), %5; %6 to download, %7 free in the cache.%8")
          .arg(QString::fromStdString(plan.repo_id).toHtmlEscaped(),
               QString::fromStdString(plan.commit.substr(0, 12)),
               plan.architecture_supported
                   ? tr("Forja loads it (%1).").arg(QString::fromStdString(plan.support_note).toHtmlEscaped())
                   : tr("Forja cannot load it: %1")
                         .arg(QString::fromStdString(plan.support_note).toHtmlEscaped()),
               QString::number(plan.files.size()), format_bytes(static_cast<int64_t>(plan.total_bytes)),
               format_bytes(static_cast<int64_t>(plan.download_bytes)),
               format_bytes(static_cast<int64_t>(plan.free_bytes)), files));
  download_->setEnabled(fits && !downloading());
  if (!fits)
    fail(tr("Not enough disk space for this download"),
         tr("Free some space, or set HF_HUB_CACHE to a folder on a larger disk."));
}

void HubDownloadDialog::download() {
  const auto ref = ref_from_fields();
  if (!ref || downloading()) return;
  error_->clear();
  QSettings().setValue(kUnfinishedKey, QString::fromStdString(ref->repo_id + "@" + ref->revision));
  auto* job = new HubPullJob(*ref);
  pull_ = job;
  download_->setEnabled(false);
  check_->setEnabled(false);
  cancel_->setEnabled(true);
  progress_->setValue(0);
  progress_->show();
  status_->setText(tr("Downloading…"));
  connect(job, &Job::progressed, this, [this](double fraction, const QString& message) {
    if (fraction >= 0) progress_->setValue(static_cast<int>(fraction * 1000));
    status_->setText(message);
  });
  connect(job, &HubPullJob::pulled, this, [this](const QString& dir) {
    QSettings().remove(kUnfinishedKey);
    status_->setText(tr("Downloaded to %1").arg(dir));
    Q_EMIT downloaded(dir);
  });
  connect(job, &Job::failed, this, &HubDownloadDialog::fail);
  connect(job, &Job::cancelled, this,
          [this] { status_->setText(tr("Cancelled. What was downloaded is kept: Download resumes it.")); });
  connect(job, &Job::ended, this, [this] {
    cancel_->setEnabled(false);
    check_->setEnabled(true);
    download_->setEnabled(true);
    progress_->hide();
  });
  job->start();
}

void HubDownloadDialog::fail(const QString& message, const QString& hint) {
  error_->show_error(message, hint);
}

}  // namespace forja::ui
