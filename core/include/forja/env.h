// The environment doctor and the live GPU monitor: what this machine has (NVIDIA driver, GPUs, CUDA,
// LibTorch, nvcc), what is wrong with it in plain words, and a sampler of GPU memory and utilization for
// plots. Plain C++ types only: the UI shows the report and the monitor history through this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace forja::env {

// Where to look. Every empty field falls back to an environment variable, then to the system default, so that
// the tests can point the real loading code at fake libraries and a fake /proc file.
struct ProbeOptions {
  std::string nvml_library;         // FORJA_NVML_LIBRARY, else libnvidia-ml.so.1
  std::string cuda_driver_library;  // FORJA_CUDA_DRIVER_LIBRARY, else libcuda.so.1
  std::string kernel_module_file;   // FORJA_NVIDIA_VERSION_FILE, else /proc/driver/nvidia/version
  std::string nvcc;                 // FORJA_NVCC, else CUDACXX, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin
  bool probe_torch = true;          // ask LibTorch about itself (off: the torch facts stay "not probed")
  bool probe_nvcc = true;
};

struct LibraryStatus {
  std::string requested;  // the name or path given to dlopen
  std::string path;       // the file that was actually loaded (symlinks resolved)
  bool loaded = false;
  std::string error;  // why it did not load or initialise; empty when all is well
};

struct DriverInfo {
  LibraryStatus nvml;
  LibraryStatus cuda;
  bool nvml_ready = false;  // loaded and nvmlInit succeeded
  bool cuda_ready = false;  // loaded and cuInit succeeded
  int nvml_init_code = 0;   // nvmlReturn_t of nvmlInit_v2
  int cuda_init_code = 0;   // CUresult of cuInit
  std::string version;      // user-space driver, e.g. "550.54.14"
  int cuda_version = 0;     // the highest CUDA the driver supports, 1000*major + 10*minor (12040 = 12.4)
  std::string kernel_module_file;
  std::string kernel_module_version;  // from /proc/driver/nvidia/version; empty when the module is not loaded
  bool present() const { return nvml.loaded || cuda.loaded; }
};

struct GpuProcess {
  unsigned pid = 0;
  std::string name;         // from /proc/<pid>/comm; empty when not visible (another container)
  uint64_t used_bytes = 0;  // 0 when the driver does not say
  bool is_self = false;     // this process
};

struct GpuInfo {
  int index = 0;  // NVML's index (nvidia-smi's)
  int cuda_index =
      -1;  // the index CUDA and LibTorch use; -1 when CUDA_VISIBLE_DEVICES hides it or CUDA is absent
  std::string name;
  std::string uuid;  // "GPU-…"
  std::string pci_bus_id;
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  int pcie_gen = 0, pcie_gen_max = 0, pcie_width = 0, pcie_width_max = 0;  // 0: not reported
  std::optional<bool> mig_enabled;
  int mig_instances = 0;  // MIG devices (GPU instances with a compute instance) that exist on this GPU
  std::optional<bool> ecc_enabled;
  std::optional<bool> persistence_mode;
  std::optional<double> power_limit_watts;
  std::vector<GpuProcess> processes;
};

struct TorchInfo {
  bool probed = false;
  std::string version;           // "2.11.0"
  bool built_with_cuda = false;  // FORJA_TORCH_CUDA: this build links a LibTorch with CUDA
  bool cuda_available = false;   // torch::cuda::is_available()
  int device_count = 0;
  int cuda_runtime_built = 0;   // CUDA runtime LibTorch was compiled with, 1000*major + 10*minor
  int cuda_runtime_loaded = 0;  // the libcudart actually loaded
  int cudnn_built = 0;          // 10000*major + 100*minor + patch (9.8.0 = 90800)
  int cudnn_loaded = 0;
  std::vector<std::string> cuda_architectures;  // from LibTorch's NVCC flags: "sm_80", "compute_90"
};

struct ToolkitInfo {
  std::string nvcc;      // path of the nvcc found, empty when none
  std::string version;   // "13.0.88"
  int cuda_version = 0;  // 1000*major + 10*minor
};

// How this Forja binary was built: the architectures and CUDA version of its own kernels, if any.
struct BuildInfo {
  bool kernels = false;
  std::vector<std::string> kernel_architectures;  // "sm_80", "compute_90"
  int kernels_cuda_version = 0;
};

enum class Severity { info, warning, error };

struct Finding {
  std::string id;  // stable rule name, e.g. "driver-too-old"
  Severity severity = Severity::info;
  std::string problem;  // one sentence: what is wrong
  std::string fix;      // one sentence: what to do
  // The same sentences as English templates with %1, %2 … and what fills them (versions, names, paths), so that
  // the window can say them in its own language; problem == fill_template(problem_template, problem_args).
  std::string problem_template, fix_template;
  std::vector<std::string> problem_args, fix_args;
};

// `tmpl` with each %1 … %9 replaced by args[0] … args[8], in one pass (an argument's own "%1" stays as it is).
std::string fill_template(const std::string& tmpl, const std::vector<std::string>& args);

// Between two GPUs CUDA lists (CUDA indices): whether `from` reaches `to`'s memory directly.
struct PeerAccess {
  int from = 0;
  int to = 0;
  std::optional<bool> can;  // nullopt: the driver did not say
};

struct Report {
  DriverInfo driver;
  std::vector<GpuInfo> gpus;
  std::vector<PeerAccess> peer_access;  // every ordered pair of CUDA devices; empty with fewer than two
  TorchInfo torch;
  ToolkitInfo toolkit;
  BuildInfo build;
  std::optional<std::string> cuda_visible_devices;
  unsigned self_pid = 0;
  std::vector<Finding> findings;  // advise(*this), filled by probe()
};

// Looks at the machine; never throws for a missing driver or GPU (that is a finding, not an error).
Report probe(const ProbeOptions& options = {});
// Only what LibTorch says about itself (probe()'s `torch`), without the driver, NVML or the toolkit.
TorchInfo probe_torch();

// The advice rules over a report; pure, so a report can be edited and advised again.
std::vector<Finding> advise(const Report& report);

std::string report_text(const Report& report);
std::string report_json(const Report& report, int indent = 2);

const char* severity_name(Severity s);
// 12040 → "12.4"; 0 → "".
std::string cuda_version_string(int version);
// 90800 → "9.8.0"; 0 → "".
std::string cudnn_version_string(int version);
// The lowest Linux driver that the CUDA toolkit release notes list for a CUDA version (12040 → "550.54.14");
// empty when the version is not in the table.
std::string minimum_driver_for_cuda(int cuda_version);

// ---- live monitor ----

struct ProcessSample {
  unsigned pid = 0;
  std::string name;
  uint64_t used_bytes = 0;
};

struct GpuSample {
  int index = 0;
  std::string name;  // "NVIDIA H200"; empty when the driver does not say
  uint64_t memory_used = 0;
  uint64_t memory_total = 0;
  std::optional<unsigned> gpu_util_percent;
  std::optional<unsigned> memory_util_percent;
  std::optional<unsigned> temperature_c;
  std::optional<double> power_watts;
  std::optional<unsigned> sm_clock_mhz;
  std::vector<ProcessSample> processes;
};

// LibTorch's caching allocator, for this process, per CUDA device.
struct AllocatorSample {
  int cuda_index = 0;
  uint64_t allocated = 0;
  uint64_t reserved = 0;
  uint64_t peak_allocated = 0;
};

struct Sample {
  uint64_t sequence = 0;  // 0, 1, 2, … since start()
  std::chrono::milliseconds since_start{0};
  std::chrono::system_clock::time_point wall;
  std::vector<GpuSample> gpus;
  std::vector<AllocatorSample> allocator;
};

struct MonitorOptions {
  std::chrono::milliseconds interval{500};  // 2 Hz
  size_t history = 7200;                    // samples kept: an hour at 2 Hz
  std::string nvml_library;                 // as ProbeOptions::nvml_library
  bool torch_allocator = true;
  // Called on the sampler thread after each sample; keep it short.
  std::function<void(const Sample&)> on_sample;
};

// A sampler thread. stop() returns within one sampling call, never a whole interval: the thread waits on a
// condition variable, not a sleep.
class Monitor {
 public:
  explicit Monitor(MonitorOptions options = {});
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  void start();
  void stop();
  bool running() const;
  void set_interval(std::chrono::milliseconds interval);  // clamped to [50 ms, 1 h]
  std::chrono::milliseconds interval() const;

  bool nvml_ready() const;
  std::string nvml_error() const;

  std::vector<Sample> history() const;  // oldest first
  std::optional<Sample> latest() const;
  size_t history_capacity() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forja::env
