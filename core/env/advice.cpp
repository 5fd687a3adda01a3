// The advice rules: each looks at a Report and, when something is wrong, says so in one sentence and says
// what to do in another. Pure functions of the report, so the tests can drive every rule.
#include <algorithm>
#include <cstdio>

#include "env/probe_detail.h"
#include "forja/env.h"

namespace forja::env {

namespace {

// Linux x86_64 "Toolkit Driver Version" of each CUDA GA release, from the CUDA Toolkit release notes (Table
// 3).
struct DriverFloor {
  int cuda;
  const char* driver;
};
constexpr DriverFloor kDriverFloors[] = {
    {11000, "450.51.05"}, {11010, "455.23"},    {11020, "460.27.03"}, {11030, "465.19.01"},
    {11040, "470.42.01"}, {11050, "495.29.05"}, {11060, "510.39.01"}, {11070, "515.43.04"},
    {11080, "520.61.05"}, {12000, "525.60.13"}, {12010, "530.30.02"}, {12020, "535.54.03"},
    {12030, "545.23.06"}, {12040, "550.54.14"}, {12050, "555.42.02"}, {12060, "560.28.03"},
    {12080, "570.26"},    {12090, "575.51.03"}, {13000, "580.65.06"},
};

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string gpu_label(const GpuInfo& g) {
  return "GPU " + std::to_string(g.index) + " (" + g.name + ")";
}

std::string cc_string(const GpuInfo& g) {
  return std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void rule_no_driver(const Report& r, std::vector<Finding>& out) {
  if (r.driver.present()) return;
  out.push_back(
      {"no-driver", Severity::info,
       "No NVIDIA driver was found (" + r.driver.nvml.requested + " and " + r.driver.cuda.requested +
           " did not load), so Forja runs on the CPU.",
       "If this machine has an NVIDIA GPU, install the NVIDIA driver and reboot; otherwise there is "
       "nothing to do."});
}

bool mismatch(const Report& r) {
  const auto& d = r.driver;
  if (d.nvml_init_code == 18 /*NVML_ERROR_LIB_RM_VERSION_MISMATCH*/) return true;
  if (d.cuda_init_code == 803 /*CUDA_ERROR_SYSTEM_DRIVER_MISMATCH*/) return true;
  return !d.kernel_module_version.empty() && !d.version.empty() && d.kernel_module_version != d.version;
}

void rule_driver_mismatch(const Report& r, std::vector<Finding>& out) {
  if (!mismatch(r)) return;
  const auto& d = r.driver;
  std::string problem;
  if (!d.kernel_module_version.empty() && !d.version.empty() && d.kernel_module_version != d.version)
    problem = "The loaded NVIDIA kernel module is " + d.kernel_module_version +
              " but the user-space driver is " + d.version +
              ", so the GPU cannot be used (usually the driver was updated without a reboot).";
  else
    problem = "The NVIDIA kernel module and the user-space driver are different versions (" +
              (d.nvml.error.empty() ? d.cuda.error : d.nvml.error) + "), so the GPU cannot be used.";
  out.push_back(
      {"driver-mismatch", Severity::error, problem,
       "Reboot, or unload and reload the nvidia kernel modules, so that both are the same version."});
}

void rule_driver_not_ready(const Report& r, std::vector<Finding>& out) {
  const auto& d = r.driver;
  if (!d.present() || d.nvml_ready || d.cuda_ready || mismatch(r)) return;
  const std::string why = !d.nvml.error.empty() ? d.nvml.error : d.cuda.error;
  out.push_back(
      {"driver-not-running", Severity::error,
       "The NVIDIA driver libraries are installed but the driver did not start: " + why + ".",
       "Check that the GPU is seen (lspci | grep -i nvidia) and that the nvidia kernel module is loaded "
       "(sudo modprobe nvidia), or reboot after a driver install."});
}

void rule_no_gpu(const Report& r, std::vector<Finding>& out) {
  if (!(r.driver.nvml_ready || r.driver.cuda_ready) || !r.gpus.empty()) return;
  out.push_back({"no-gpu", Severity::warning,
                 "The NVIDIA driver is running but reports no GPU, so Forja runs on the CPU.",
                 "Check that the GPU is seated and powered and that this container or VM was given it."});
}

void rule_driver_too_old(const Report& r, std::vector<Finding>& out) {
  const int have = r.driver.cuda_version;
  if (have <= 0) return;
  struct Need {
    std::string who;
    int cuda;
  };
  std::vector<Need> needs;
  if (r.torch.built_with_cuda) {
    int rt = r.torch.cuda_runtime_loaded > 0 ? r.torch.cuda_runtime_loaded : r.torch.cuda_runtime_built;
    if (rt > 0) needs.push_back({"this LibTorch uses CUDA " + cuda_version_string(rt), rt});
  }
  if (r.build.kernels && r.build.kernels_cuda_version > 0)
    needs.push_back(
        {"Forja's kernels were built with CUDA " + cuda_version_string(r.build.kernels_cuda_version),
         r.build.kernels_cuda_version});
  for (const auto& n : needs) {
    if (n.cuda <= have) continue;
    const std::string floor = minimum_driver_for_cuda(n.cuda);
    const std::string driver =
        r.driver.version.empty() ? "The NVIDIA driver" : "NVIDIA driver " + r.driver.version;
    const bool other_major = n.cuda / 1000 > have / 1000;
    Finding f;
    f.id = "driver-too-old";
    f.severity = other_major ? Severity::error : Severity::warning;
    f.problem =
        driver + " supports CUDA up to " + cuda_version_string(have) + ", but " + n.who +
        (other_major ? ", so CUDA will not start."
                     : "; it runs through minor-version compatibility, but PTX JIT and newer features fail.");
    f.fix = "Install NVIDIA driver " +
            (floor.empty() ? std::string("for CUDA ") + cuda_version_string(n.cuda)
                           : floor + " or newer (the minimum for CUDA " + cuda_version_string(n.cuda) + ")") +
            ", or use a build made for CUDA " + cuda_version_string(have) + " or older.";
    out.push_back(std::move(f));
  }
}

void rule_architectures(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (g.cc_major <= 0) continue;
    const std::string sm = "sm_" + std::to_string(g.cc_major * 10 + g.cc_minor);
    if (r.torch.built_with_cuda && !r.torch.cuda_architectures.empty() &&
        !architectures_cover(r.torch.cuda_architectures, g.cc_major, g.cc_minor)) {
      out.push_back(
          {"arch-missing", Severity::error,
           gpu_label(g) + " has compute capability " + cc_string(g) +
               ", which this LibTorch has no kernels for (it has " + join(r.torch.cuda_architectures) + ").",
           "Use a LibTorch build that includes " + sm + " (check its release notes for supported GPUs)."});
    }
    if (r.build.kernels && !r.build.kernel_architectures.empty() &&
        !architectures_cover(r.build.kernel_architectures, g.cc_major, g.cc_minor)) {
      out.push_back({"kernel-arch-missing", Severity::warning,
                     gpu_label(g) + " has compute capability " + cc_string(g) +
                         ", but Forja's own kernels were built "
                         "only for " +
                         join(r.build.kernel_architectures) + ".",
                     "Reconfigure with -DCMAKE_CUDA_ARCHITECTURES=" +
                         std::to_string(g.cc_major * 10 + g.cc_minor) + " (or native) and rebuild."});
    }
  }
}

void rule_no_bf16(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (g.cc_major <= 0 || g.cc_major >= 8) continue;
    out.push_back({"no-bf16", Severity::warning,
                   gpu_label(g) + " has compute capability " + cc_string(g) +
                       " and no bf16 support (that needs 8.0, Ampere, or newer).",
                   "Train in fp16 with loss scaling (or fp32 for small models) instead of bf16."});
  }
}

void rule_torch_cuda(const Report& r, std::vector<Finding>& out) {
  if (!r.torch.probed || r.gpus.empty()) return;
  const std::string names = gpu_label(r.gpus.front()) + (r.gpus.size() > 1 ? " and others" : "");
  if (!r.torch.built_with_cuda) {
    out.push_back(
        {"torch-no-cuda", Severity::error,
         "THIS FORJA BUILD RUNS ON THE CPU ONLY: its LibTorch has no CUDA, even though " + names +
             " is present.",
         "Rebuild Forja with the cuda preset against a LibTorch that has CUDA (CMAKE_PREFIX_PATH pointing "
         "at it)."});
    return;
  }
  const bool any_visible =
      std::any_of(r.gpus.begin(), r.gpus.end(), [](const GpuInfo& g) { return g.cuda_index >= 0; });
  if (!r.torch.cuda_available && (any_visible || !r.driver.cuda_ready)) {
    out.push_back(
        {"torch-cuda-unavailable", Severity::error,
         "THE WORK WOULD RUN ON THE CPU: LibTorch has CUDA but cannot use " + names + ".",
         "Fix the driver findings in this report, then run forja-cli doctor again until it says CUDA is "
         "available."});
  }
}

void rule_gpus_hidden(const Report& r, std::vector<Finding>& out) {
  if (!r.cuda_visible_devices || r.gpus.empty() || !r.driver.cuda_ready || !r.driver.nvml_ready) return;
  const bool any_visible =
      std::any_of(r.gpus.begin(), r.gpus.end(), [](const GpuInfo& g) { return g.cuda_index >= 0; });
  const bool mig_without_instance = std::any_of(r.gpus.begin(), r.gpus.end(), [](const GpuInfo& g) {
    return g.mig_enabled.value_or(false) && g.mig_instances == 0;
  });
  if (any_visible || mig_without_instance) return;
  out.push_back({"gpus-hidden", Severity::warning,
                 "CUDA_VISIBLE_DEVICES=\"" + *r.cuda_visible_devices +
                     "\" hides every GPU from CUDA, so Forja runs on "
                     "the CPU.",
                 "Unset CUDA_VISIBLE_DEVICES, or set it to the index or UUID of the GPU to use (e.g. 0)."});
}

void rule_memory_held(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (g.memory_total == 0) continue;
    const GpuProcess* biggest = nullptr;
    for (const auto& p : g.processes)
      if (!p.is_self && (!biggest || p.used_bytes > biggest->used_bytes)) biggest = &p;
    // "Most" of the memory: half of it leaves too little for any but the smallest model.
    const uint64_t half = g.memory_total / 2;
    if (biggest && biggest->used_bytes >= half) {
      const std::string who = "Process " + std::to_string(biggest->pid) +
                              (biggest->name.empty() ? "" : " (" + biggest->name + ")");
      out.push_back(
          {"memory-held", Severity::warning,
           who + " holds " + gib(biggest->used_bytes) + " of the " + gib(g.memory_total) + " on " +
               gpu_label(g) + ".",
           "Stop that process, or choose another GPU with CUDA_VISIBLE_DEVICES, before training: Forja can "
           "use only what is free."});
    } else if (g.processes.empty() && g.memory_used >= half) {
      out.push_back({"memory-held", Severity::warning,
                     gib(g.memory_used) + " of the " + gib(g.memory_total) + " on " + gpu_label(g) +
                         " is in use by processes this session cannot see (another container or user).",
                     "Free that memory (nvidia-smi on the host shows who holds it) or choose another GPU."});
    }
  }
}

void rule_mig(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (!g.mig_enabled.value_or(false) || g.mig_instances > 0) continue;
    out.push_back(
        {"mig-no-instance", Severity::error,
         "MIG mode is on for " + gpu_label(g) + " but no MIG instance exists, so CUDA has no device on it.",
         "Create an instance (sudo nvidia-smi mig -i " + std::to_string(g.index) +
             " -cgi <profile> -C) or turn MIG off (sudo nvidia-smi -i " + std::to_string(g.index) +
             " -mig 0) and reset the GPU."});
  }
}

void rule_cudnn(const Report& r, std::vector<Finding>& out) {
  const int built = r.torch.cudnn_built, loaded = r.torch.cudnn_loaded;
  if (!r.torch.built_with_cuda || built <= 0 || loaded <= 0 || built / 10000 == loaded / 10000) return;
  out.push_back(
      {"cudnn-mismatch", Severity::warning,
       "LibTorch was built with cuDNN " + cudnn_version_string(built) + " but cuDNN " +
           cudnn_version_string(loaded) + " is loaded; convolutions may fail or be slow.",
       "Put the cuDNN that came with this LibTorch first on the library path (or remove the other one)."});
}

}  // namespace

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error:
      return "error";
    case Severity::warning:
      return "warning";
    case Severity::info:
      return "info";
  }
  return "info";
}

std::string cuda_version_string(int v) {
  if (v <= 0) return {};
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cudnn_version_string(int v) {
  if (v <= 0) return {};
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

std::string minimum_driver_for_cuda(int cuda_version) {
  for (const auto& f : kDriverFloors)
    if (f.cuda == cuda_version) return f.driver;
  // A release not in the table (a newer minor): the floor of the nearest older one is a lower bound only.
  return {};
}

std::vector<Finding> advise(const Report& r) {
  std::vector<Finding> out;
  rule_no_driver(r, out);
  rule_driver_mismatch(r, out);
  rule_driver_not_ready(r, out);
  rule_no_gpu(r, out);
  rule_torch_cuda(r, out);
  rule_driver_too_old(r, out);
  rule_architectures(r, out);
  rule_mig(r, out);
  rule_gpus_hidden(r, out);
  rule_memory_held(r, out);
  rule_no_bf16(r, out);
  rule_cudnn(r, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  return out;
}

}  // namespace forja::env
