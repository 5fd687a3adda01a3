// The live monitor: a sampler thread reading NVML and LibTorch's allocator into a ring buffer.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "env/nvml_api.h"
#include "env/ring_buffer.h"
#include "env/torch_facts.h"
#include "forja/env.h"

namespace forja::env {

namespace {

constexpr std::chrono::milliseconds kMinInterval{50};
constexpr std::chrono::milliseconds kMaxInterval{3600 * 1000};

std::chrono::milliseconds clamp_interval(std::chrono::milliseconds v) {
  return std::clamp(v, kMinInterval, kMaxInterval);
}

}  // namespace

struct Monitor::Impl {
  MonitorOptions options;
  nvml::Library nvml;
  mutable std::mutex mutex;  // guards history, stop_requested
  std::condition_variable wake;
  RingBuffer<Sample> history;
  std::atomic<int64_t> interval_ms;
  std::atomic<bool> running{false};
  bool stop_requested = false;
  std::thread thread;
  std::chrono::steady_clock::time_point started;
  uint64_t sequence = 0;
  std::vector<std::string> names;  // by NVML index: a card's name never changes, so it is read once

  explicit Impl(MonitorOptions o)
      : options(std::move(o)),
        nvml(choose(options.nvml_library, "FORJA_NVML_LIBRARY", "libnvidia-ml.so.1")),
        history(options.history),
        interval_ms(clamp_interval(options.interval).count()) {}

  Sample take() {
    Sample s;
    s.sequence = sequence++;
    s.since_start =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    s.wall = std::chrono::system_clock::now();
    unsigned count = 0;
    if (nvml.ready() && nvml.DeviceGetCount && nvml.DeviceGetHandleByIndex &&
        nvml.DeviceGetCount(&count) == nvml::kSuccess) {
      for (unsigned i = 0; i < count; ++i) {
        nvml::Device dev = nullptr;
        if (nvml.DeviceGetHandleByIndex(i, &dev) != nvml::kSuccess) continue;
        GpuSample g;
        g.index = static_cast<int>(i);
        if (names.size() <= i) names.resize(i + 1);
        if (names[i].empty()) names[i] = nvml::device_string(nvml.DeviceGetName, dev);
        g.name = names[i];
        nvml::Memory mem{};
        if (nvml.DeviceGetMemoryInfo && nvml.DeviceGetMemoryInfo(dev, &mem) == nvml::kSuccess) {
          g.memory_used = mem.used;
          g.memory_total = mem.total;
        }
        nvml::Utilization u{};
        if (nvml.DeviceGetUtilizationRates && nvml.DeviceGetUtilizationRates(dev, &u) == nvml::kSuccess) {
          g.gpu_util_percent = u.gpu;
          g.memory_util_percent = u.memory;
        }
        unsigned v = 0;
        if (nvml.DeviceGetTemperature &&
            nvml.DeviceGetTemperature(dev, nvml::kTemperatureGpu, &v) == nvml::kSuccess)
          g.temperature_c = v;
        if (nvml.DeviceGetPowerUsage && nvml.DeviceGetPowerUsage(dev, &v) == nvml::kSuccess)
          g.power_watts = v / 1000.0;
        if (nvml.DeviceGetClockInfo && nvml.DeviceGetClockInfo(dev, nvml::kClockSm, &v) == nvml::kSuccess)
          g.sm_clock_mhz = v;
        for (const auto& p : nvml::running_processes(nvml, dev))
          g.processes.push_back({p.pid, nvml::process_name(p.pid), p.used});
        s.gpus.push_back(std::move(g));
      }
    }
    if (options.torch_allocator) s.allocator = torch_allocator_samples();
    return s;
  }

  void loop() {
    for (;;) {
      Sample s = take();
      {
        std::lock_guard<std::mutex> lock(mutex);
        history.push(s);
      }
      if (options.on_sample) options.on_sample(s);
      const auto last = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mutex);
      // The deadline is recomputed on every wake so that set_interval() takes effect during a long wait.
      for (;;) {
        if (stop_requested) return;
        const auto deadline = last + std::chrono::milliseconds(interval_ms.load());
        if (std::chrono::steady_clock::now() >= deadline) break;
        wake.wait_until(lock, deadline);
      }
    }
  }
};

Monitor::Monitor(MonitorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Monitor::~Monitor() {
  stop();
}

void Monitor::start() {
  if (impl_->running.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop_requested = false;
  }
  impl_->started = std::chrono::steady_clock::now();
  impl_->sequence = 0;
  impl_->thread = std::thread([this] { impl_->loop(); });
}

void Monitor::stop() {
  if (!impl_->running.load()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop_requested = true;
  }
  impl_->wake.notify_all();
  // Called from the on_sample callback, the thread cannot join itself: it ends after the callback returns,
  // and the next stop() or the destructor, on another thread, joins it.
  if (impl_->thread.get_id() == std::this_thread::get_id()) return;
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->running = false;
}

bool Monitor::running() const {
  return impl_->running.load();
}

void Monitor::set_interval(std::chrono::milliseconds interval) {
  impl_->interval_ms = clamp_interval(interval).count();
  impl_->wake.notify_all();  // a shorter interval takes effect now, not after the old wait
}

std::chrono::milliseconds Monitor::interval() const {
  return std::chrono::milliseconds(impl_->interval_ms.load());
}

bool Monitor::nvml_ready() const {
  return impl_->nvml.ready();
}

std::string Monitor::nvml_error() const {
  return impl_->nvml.error();
}

std::vector<Sample> Monitor::history() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->history.to_vector();
}

std::optional<Sample> Monitor::latest() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->history.empty()) return std::nullopt;
  return impl_->history.back();
}

size_t Monitor::history_capacity() const {
  return impl_->history.capacity();
}

}  // namespace forja::env
