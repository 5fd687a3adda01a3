// The Settings dialog's form.
#include "settings_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "app_paths.h"
#include "forja/hub.h"
#include "format.h"
#include "jobs/doctor_job.h"
#include "jobs/job_monitor.h"
#include "pane.h"
#include "settings.h"
#include "ui_init.h"

namespace forja::ui {

SettingsDialog::SettingsDialog(AppContext& context, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("settingsDialog"));
  setWindowTitle(tr("Settings"));

  language_ = new QComboBox;
  language_->setObjectName(QStringLiteral("language"));
  language_->addItem(tr("The system's (%1)").arg(QLocale::system().nativeLanguageName()), QString());
  for (const Language& l : available_languages()) language_->addItem(l.name, l.code);
  language_->setCurrentIndex(std::max(0, language_->findData(language_setting())));

  theme_ = new QComboBox;
  theme_->setObjectName(QStringLiteral("theme"));
  theme_->addItem(tr("The system's"), static_cast<int>(Theme::System));
  theme_->addItem(tr("Light"), static_cast<int>(Theme::Light));
  theme_->addItem(tr("Dark"), static_cast<int>(Theme::Dark));
  theme_->setCurrentIndex(theme_->findData(static_cast<int>(theme_setting())));

  runs_dir_ = new QLineEdit(runs_dir_setting());
  runs_dir_->setObjectName(QStringLiteral("runsDir"));
  runs_dir_->setPlaceholderText(xdg_runs_dir());  // the default, shown while no folder is chosen
  hub_cache_ = new QLineEdit(hub_cache_setting());
  hub_cache_->setObjectName(QStringLiteral("hubCache"));
  // The folder the Hub code uses when none is chosen (a chosen one is the field's text, so the placeholder
  // never shows it).
  hub_cache_->setPlaceholderText(
      QString::fromStdString(forja::hub::settings_from_environment().cache_dir.string()));

  gpu_ = new QComboBox;
  gpu_->setObjectName(QStringLiteral("gpu"));
  gpu_->addItem(tr("Automatic (every GPU, CUDA's order)"), -1);
  if (gpu_setting() >= 0) {
    gpu_->addItem(tr("GPU %1").arg(gpu_setting()), gpu_setting());
    gpu_->setCurrentIndex(1);
  }

  auto* form = new QFormLayout;
  form->addRow(tr("Language:"), language_);
  form->addRow(tr("Theme:"), theme_);
  form->addRow(tr("New runs go to:"), folder_row(runs_dir_, tr("Folder for new runs")));
  form->addRow(tr("Models are downloaded to:"), folder_row(hub_cache_, tr("Folder for downloaded models")));
  form->addRow(tr("GPU:"), gpu_);
  restart_note_ = new QLabel(tr("A new language or GPU takes effect the next time Forja starts."));
  restart_note_->setObjectName(QStringLiteral("restartNote"));
  restart_note_->setWordWrap(true);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, [this] {
    save();
    accept();
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(restart_note_);
  layout->addStretch();
  layout->addWidget(buttons);

  // The GPUs by name come from the driver, which can take seconds to answer: off the GUI thread.
  auto* job = new DoctorJob;
  connect(job, &DoctorJob::probed, this, &SettingsDialog::list_gpus);
  context.jobs->start(job);
}

QWidget* SettingsDialog::folder_row(QLineEdit* edit, const QString& title) {
  auto* row = new QWidget;
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->addWidget(edit, 1);
  auto* browse = new QPushButton(tr("Browse…"));
  connect(browse, &QPushButton::clicked, this, [this, edit, title] {
    const QString start = edit->text().isEmpty() ? edit->placeholderText() : edit->text();
    const QString dir = QFileDialog::getExistingDirectory(this, title, start);
    if (!dir.isEmpty()) edit->setText(dir);
  });
  h->addWidget(browse);
  return row;
}

void SettingsDialog::list_gpus(std::shared_ptr<const forja::env::Report> report) {
  const int chosen = gpu_->currentData().toInt();
  while (gpu_->count() > 1) gpu_->removeItem(1);
  for (const auto& g : report->gpus)
    gpu_->addItem(
        tr("GPU %1: %2 (%3)")
            .arg(g.index)
            .arg(QString::fromStdString(g.name), format_bytes(static_cast<int64_t>(g.memory_total))),
        g.index);
  // A GPU chosen before and gone now stays listed, so that saving does not drop the choice unseen.
  if (chosen >= 0 && gpu_->findData(chosen) < 0)
    gpu_->addItem(tr("GPU %1 (not found now)").arg(chosen), chosen);
  gpu_->setCurrentIndex(std::max(0, gpu_->findData(chosen)));
}

void SettingsDialog::save() {
  set_language_setting(language_->currentData().toString());
  const auto theme = static_cast<Theme>(theme_->currentData().toInt());
  if (theme != theme_setting()) {
    set_theme_setting(theme);
    apply_theme(theme);
  }
  set_runs_dir_setting(runs_dir_->text().trimmed());
  set_hub_cache_setting(hub_cache_->text().trimmed());
  set_gpu_setting(gpu_->currentData().toInt());
  apply_hub_cache_setting();
}

}  // namespace forja::ui
