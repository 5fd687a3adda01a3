// forja-cli monitor: one line per sample of GPU memory, utilization, temperature, power and clocks, plus this
// process's LibTorch allocator, until Ctrl-C or --count samples.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "command.h"
#include "forja/env.h"
#include "forja/error.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string text_line(const forja::env::Sample& s) {
  char when[16];
  std::time_t t = std::chrono::system_clock::to_time_t(s.wall);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(when, sizeof(when), "%H:%M:%S", &tm);
  std::string line = when;
  auto opt = [](const auto& v, const char* unit) {
    return v ? std::to_string(static_cast<long long>(*v)) + unit : std::string("-");
  };
  for (const auto& g : s.gpus) {
    line += "  GPU" + std::to_string(g.index) + " " + gib(g.memory_used) + "/" + gib(g.memory_total) +
            " GiB util " + opt(g.gpu_util_percent, "%") + " mem " + opt(g.memory_util_percent, "%") + " " +
            opt(g.temperature_c, "C") + " " + opt(g.power_watts, "W") + " " + opt(g.sm_clock_mhz, "MHz");
    for (const auto& p : g.processes)
      line += " [" + std::to_string(p.pid) + " " + (p.name.empty() ? "?" : p.name) + " " + gib(p.used_bytes) +
              "G]";
  }
  for (const auto& a : s.allocator)
    line += "  torch cuda:" + std::to_string(a.cuda_index) + " alloc " + gib(a.allocated) + " reserved " +
            gib(a.reserved) + " peak " + gib(a.peak_allocated) + " GiB";
  return line + "\n";
}

std::string json_line(const forja::env::Sample& s) {
  nlohmann::json j;
  j["sequence"] = s.sequence;
  j["ms"] = s.since_start.count();
  j["gpus"] = nlohmann::json::array();
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const auto& g : s.gpus) {
    nlohmann::json procs = nlohmann::json::array();
    for (const auto& p : g.processes)
      procs.push_back({{"pid", p.pid}, {"name", p.name}, {"used_bytes", p.used_bytes}});
    j["gpus"].push_back({{"index", g.index},
                         {"memory_used_bytes", g.memory_used},
                         {"memory_total_bytes", g.memory_total},
                         {"gpu_util_percent", opt(g.gpu_util_percent)},
                         {"memory_util_percent", opt(g.memory_util_percent)},
                         {"temperature_c", opt(g.temperature_c)},
                         {"power_watts", opt(g.power_watts)},
                         {"sm_clock_mhz", opt(g.sm_clock_mhz)},
                         {"processes", procs}});
  }
  j["allocator"] = nlohmann::json::array();
  for (const auto& a : s.allocator)
    j["allocator"].push_back({{"cuda_index", a.cuda_index},
                              {"allocated_bytes", a.allocated},
                              {"reserved_bytes", a.reserved},
                              {"peak_allocated_bytes", a.peak_allocated}});
  return j.dump() + "\n";
}

long parse_positive(const std::string& text, const char* what) {
  try {
    size_t used = 0;
    long v = std::stol(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (...) {
  }
  throw forja::Error(std::string("--") + what + " must be a whole number, not '" + text + "'");
}

int run_monitor(forja::cli::Args& args) {
  args.reject_unknown({"interval", "count", "nvml-library"});
  forja::env::MonitorOptions options;
  const long interval = parse_positive(args.option_or("interval", "500"), "interval");
  if (interval < 50) throw forja::Error("--interval must be at least 50 ms, not " + std::to_string(interval));
  options.interval = std::chrono::milliseconds(interval);
  const long count = parse_positive(args.option_or("count", "0"), "count");
  options.nvml_library = args.option_or("nvml-library", "");
  const bool as_json = args.flag("json");

  std::atomic<long> printed{0};
  std::mutex out_mutex;
  options.on_sample = [&](const forja::env::Sample& s) {
    if (count > 0 && printed.load() >= count) return;
    const std::string line = as_json ? json_line(s) : text_line(s);
    std::lock_guard<std::mutex> lock(out_mutex);
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    ++printed;
  };
  forja::env::Monitor monitor(options);
  if (!monitor.nvml_ready())
    throw forja::Error("cannot monitor the GPU: NVML is not available (" + monitor.nvml_error() + ")",
                       "Run forja-cli doctor to see why the NVIDIA driver is not usable.");

  g_interrupted = 0;
  auto previous = std::signal(SIGINT, on_sigint);
  monitor.start();
  // The signal handler only sets a flag; this thread notices it within 50 ms and stops the sampler normally.
  while (!g_interrupted && (count == 0 || printed.load() < count))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  monitor.stop();
  std::signal(SIGINT, previous);
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(monitor, "Show GPU memory, utilization and LibTorch's allocator live, until Ctrl-C",
                  "monitor [--interval ms] [--count N] [--json] [--nvml-library path]", run_monitor,
                  {"json"});
