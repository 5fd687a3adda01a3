// DoctorJob: the engine call and its result signal.
#include "jobs/doctor_job.h"

namespace forja::ui {

DoctorJob::DoctorJob(forja::env::ProbeOptions options)
    : Job(tr("Checking the GPU setup")), options_(std::move(options)) {}

void DoctorJob::execute() {
  report(-1, "probing the NVIDIA driver, GPUs, CUDA and LibTorch");
  auto result = std::make_shared<const forja::env::Report>(forja::env::probe(options_));
  if (cancel_requested()) return;
  Q_EMIT probed(result);
}

}  // namespace forja::ui
