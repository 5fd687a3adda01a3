// GpuMonitorService: hands samples from the sampler thread to the GUI thread.
#include "gpu_monitor_service.h"

#include <QMetaObject>

namespace forja::ui {

GpuMonitorService::GpuMonitorService(const Options& options, QObject* parent) : QObject(parent) {
  forja::env::MonitorOptions o;
  o.interval = options.interval;
  o.nvml_library = options.nvml_library;
  // The callback runs on the sampler thread: queue the emission to this object's thread. stop() (called by
  // the destructor before anything else) joins the sampler, so no callback outlives the object.
  o.on_sample = [this](const forja::env::Sample& s) {
    QMetaObject::invokeMethod(
        this, [this, s] { Q_EMIT sampled(s); }, Qt::QueuedConnection);
  };
  monitor_ = std::make_unique<forja::env::Monitor>(std::move(o));
}

GpuMonitorService::~GpuMonitorService() {
  stop();
}

void GpuMonitorService::start() {
  if (monitor_->nvml_ready() && !monitor_->running()) monitor_->start();
}

void GpuMonitorService::stop() {
  if (monitor_->running()) monitor_->stop();
}

bool GpuMonitorService::available() const {
  return monitor_->nvml_ready();
}

QString GpuMonitorService::reason() const {
  return QString::fromStdString(monitor_->nvml_error());
}

void GpuMonitorService::set_interval(std::chrono::milliseconds interval) {
  monitor_->set_interval(interval);
}

std::chrono::milliseconds GpuMonitorService::interval() const {
  return monitor_->interval();
}

std::vector<forja::env::Sample> GpuMonitorService::history() const {
  return monitor_->history();
}

}  // namespace forja::ui
