// InspectModelJob: forja::inspect_model(dir) off the GUI thread. It reads config.json and the safetensors
// headers only, but a model on a network drive or a cold disk can still take seconds.
#pragma once

#include <filesystem>

#include "forja/model_info.h"
#include "jobs/job.h"

namespace forja::ui {

class InspectModelJob : public Job {
  Q_OBJECT

 public:
  explicit InspectModelJob(std::filesystem::path dir);

 Q_SIGNALS:
  // Emitted on success, before succeeded().
  void inspected(const forja::ModelInfo& info);

 protected:
  void execute() override;

 private:
  std::filesystem::path dir_;
};

}  // namespace forja::ui
