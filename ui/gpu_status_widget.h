// GpuStatusWidget: the status bar's glance at the GPUs — memory used / total and utilization of each,
// refreshed by GpuMonitorService, or "no GPU" with the reason as tooltip.
#pragma once

#include <QLabel>

#include "forja/env.h"

namespace forja::ui {

class GpuMonitorService;

class GpuStatusWidget : public QLabel {
  Q_OBJECT

 public:
  explicit GpuStatusWidget(GpuMonitorService* service, QWidget* parent = nullptr);

 private:
  void show_sample(const forja::env::Sample& sample);
};

}  // namespace forja::ui
