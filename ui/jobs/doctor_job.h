// DoctorJob: forja::env::probe() off the GUI thread. Loading NVML and the CUDA driver and asking LibTorch
// about CUDA can take seconds on a cold machine (the driver initialises every GPU).
#pragma once

#include <memory>

#include "forja/env.h"
#include "jobs/job.h"

namespace forja::ui {

class DoctorJob : public Job {
  Q_OBJECT

 public:
  explicit DoctorJob(forja::env::ProbeOptions options = {});

 Q_SIGNALS:
  // Emitted on success, before succeeded().
  void probed(std::shared_ptr<const forja::env::Report> report);

 protected:
  void execute() override;

 private:
  forja::env::ProbeOptions options_;
};

}  // namespace forja::ui
