// GpuStatusWidget: formatting of the status bar line.
#include "gpu_status_widget.h"

#include <QStringList>

#include "format.h"
#include "gpu_monitor_service.h"

namespace forja::ui {

GpuStatusWidget::GpuStatusWidget(GpuMonitorService* service, QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("gpuStatus"));
  if (!service || !service->available()) {
    setText(tr("No GPU"));
    setToolTip(service ? service->reason() : QString());
    return;
  }
  setText(tr("GPU: waiting for the first sample"));
  connect(service, &GpuMonitorService::sampled, this, &GpuStatusWidget::show_sample);
}

void GpuStatusWidget::show_sample(const forja::env::Sample& sample) {
  QStringList parts;
  for (const auto& g : sample.gpus) {
    QString part = tr("GPU%1 %2 / %3")
                       .arg(g.index)
                       .arg(format_bytes(static_cast<int64_t>(g.memory_used)),
                            format_bytes(static_cast<int64_t>(g.memory_total)));
    if (g.gpu_util_percent) part += tr(" · %1%").arg(*g.gpu_util_percent);
    parts << part;
  }
  setText(parts.isEmpty() ? tr("No GPU") : parts.join(QStringLiteral("   ")));
}

}  // namespace forja::ui
