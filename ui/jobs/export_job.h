// ExportJob: forja::export_model off the GUI thread (loading, merging and writing a model takes from seconds
// to many minutes), its progress as the job's, and the job's cancel as the export's.
#pragma once

#include "forja/export.h"
#include "jobs/job.h"

namespace forja::ui {

class ExportJob : public Job {
  Q_OBJECT

 public:
  explicit ExportJob(forja::ExportOptions options);

 Q_SIGNALS:
  // Emitted on success, before succeeded().
  void exported(const QString& destination, const QStringList& notes);

 protected:
  void execute() override;

 private:
  forja::ExportOptions options_;
};

}  // namespace forja::ui
