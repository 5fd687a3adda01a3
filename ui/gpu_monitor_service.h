// GpuMonitorService: the window's one live GPU sampler. It owns a forja::env::Monitor (its own thread, NVML
// loaded at run time) and re-emits every sample on the GUI thread, so the status bar and the GPU pane plot
// the same numbers. Without a driver it says so once (available() false, reason()) and never samples.
#pragma once

#include <QObject>
#include <QString>

#include <chrono>
#include <memory>

#include "forja/env.h"

namespace forja::ui {

class GpuMonitorService : public QObject {
  Q_OBJECT

 public:
  struct Options {
    std::chrono::milliseconds interval{500};
    std::string nvml_library;  // empty: FORJA_NVML_LIBRARY, else the driver's libnvidia-ml.so.1
  };
  explicit GpuMonitorService(const Options& options, QObject* parent = nullptr);
  explicit GpuMonitorService(QObject* parent = nullptr) : GpuMonitorService(Options{}, parent) {}
  ~GpuMonitorService() override;

  void start();
  void stop();
  bool available() const;
  QString reason() const;  // why not available
  void set_interval(std::chrono::milliseconds interval);
  std::chrono::milliseconds interval() const;
  // Everything sampled so far, oldest first (the monitor's ring buffer: an hour at 2 Hz).
  std::vector<forja::env::Sample> history() const;

 Q_SIGNALS:
  void sampled(const forja::env::Sample& sample);

 private:
  std::unique_ptr<forja::env::Monitor> monitor_;
};

}  // namespace forja::ui
