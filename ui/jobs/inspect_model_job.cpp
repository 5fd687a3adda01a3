// InspectModelJob: the engine call and its result signal.
#include "jobs/inspect_model_job.h"

namespace forja::ui {

InspectModelJob::InspectModelJob(std::filesystem::path dir)
    : Job(tr("Reading model folder")), dir_(std::move(dir)) {}

void InspectModelJob::execute() {
  report(-1, dir_.string());
  ModelInfo info = inspect_model(dir_);
  if (cancel_requested()) return;
  Q_EMIT inspected(info);
}

}  // namespace forja::ui
