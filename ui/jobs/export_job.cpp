// ExportJob: the engine's export stages as one progress bar.
#include "jobs/export_job.h"

#include <QStringList>

namespace forja::ui {

ExportJob::ExportJob(forja::ExportOptions options)
    : Job(tr("Exporting model")), options_(std::move(options)) {}

void ExportJob::execute() {
  const std::string destination = options_.out.string();
  auto progress = [&](const forja::ExportProgress& p) {
    switch (p.stage) {
      case forja::ExportProgress::Stage::Loading:
        report(-1, tr("loading the base model").toStdString());
        break;
      case forja::ExportProgress::Stage::Merging:
        report(-1, tr("merging the adapter").toStdString());
        break;
      case forja::ExportProgress::Stage::Writing:
        report(p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : -1,
               tr("writing %1").arg(QString::fromStdString(destination)).toStdString());
        break;
    }
  };
  const forja::ExportResult r =
      forja::export_model(options_, progress, [this] { return cancel_requested(); });
  QStringList notes;
  for (const auto& n : r.notes) notes << QString::fromStdString(n);
  Q_EMIT exported(QString::fromStdString(destination), notes);
}

}  // namespace forja::ui
