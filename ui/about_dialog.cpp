// The About dialog.
#include "about_dialog.h"

#include <QDialogButtonBox>
#include <QIcon>
#include <QLabel>
#include <QVBoxLayout>

#include "jobs/doctor_job.h"
#include "jobs/job_monitor.h"
#include "pane.h"

namespace forja::ui {

QString AboutDialog::docs_url() {
  return QStringLiteral(FORJA_HOMEPAGE "#readme");
}

AboutDialog::AboutDialog(AppContext& context, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("aboutDialog"));
  setWindowTitle(tr("About Forja"));
  auto* icon = new QLabel;
  icon->setPixmap(QIcon(QStringLiteral(":/icons/forja.svg")).pixmap(64, 64));
  auto* text = new QLabel(
      tr("<h2>Forja %1</h2><p>LoRA fine-tuning and chat for open language models on your own NVIDIA GPU, "
         "with "
         "no Python to install.</p><p>Free software under the GNU General Public License, version 3 or "
         "later.</p><p><a href=\"%2\">Documentation</a></p>")
          .arg(QStringLiteral(FORJA_VERSION), docs_url()));
  text->setObjectName(QStringLiteral("aboutText"));
  text->setOpenExternalLinks(true);
  text->setWordWrap(true);
  runtime_ = new QLabel(tr("Qt %1 · LibTorch and CUDA: asking…").arg(QString::fromLatin1(qVersion())));
  runtime_->setObjectName(QStringLiteral("aboutRuntime"));
  runtime_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::accept);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(icon, 0, Qt::AlignHCenter);
  layout->addWidget(text);
  layout->addWidget(runtime_);
  layout->addWidget(buttons);

  auto* job = new DoctorJob;
  connect(job, &DoctorJob::probed, this, &AboutDialog::show_runtime);
  connect(job, &Job::failed, this, [this](const QString& message, const QString&) {
    runtime_->setText(tr("Qt %1 · LibTorch and CUDA: %2").arg(QString::fromLatin1(qVersion()), message));
  });
  context.jobs->start(job);
}

void AboutDialog::show_runtime(std::shared_ptr<const forja::env::Report> report) {
  const auto& t = report->torch;
  const QString torch = t.version.empty() ? tr("(not found)") : QString::fromStdString(t.version);
  QString cuda;
  if (!t.built_with_cuda)
    cuda = tr("CPU only");
  else
    cuda = tr("CUDA %1").arg(QString::fromStdString(forja::env::cuda_version_string(t.cuda_runtime_built)));
  QString driver;
  if (!report->driver.version.empty())
    driver = tr(" · NVIDIA driver %1").arg(QString::fromStdString(report->driver.version));
  runtime_->setText(
      tr("Qt %1 · LibTorch %2 (%3)%4").arg(QString::fromLatin1(qVersion()), torch, cuda, driver));
}

}  // namespace forja::ui
