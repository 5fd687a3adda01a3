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

// Marks a template for Qt's lupdate, which reads this file: the window translates the templates by this
// context. Core has no Qt, so the macro is only a marker here.
#define QT_TRANSLATE_NOOP(context, text) text

Finding finding(std::string id, Severity severity, const char* problem, std::vector<std::string> problem_args,
                const char* fix, std::vector<std::string> fix_args = {}) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.problem_template = problem;
  f.problem_args = std::move(problem_args);
  f.fix_template = fix;
  f.fix_args = std::move(fix_args);
  f.problem = fill_template(f.problem_template, f.problem_args);
  f.fix = fill_template(f.fix_template, f.fix_args);
  return f;
}

void rule_no_driver(const Report& r, std::vector<Finding>& out) {
  if (r.driver.present()) return;
  out.push_back(finding(
      "no-driver", Severity::info,
      QT_TRANSLATE_NOOP("forja::env::Finding",
                        "No NVIDIA driver was found (%1 and %2 did not load), so Forja runs on the CPU."),
      {r.driver.nvml.requested, r.driver.cuda.requested},
      QT_TRANSLATE_NOOP(
          "forja::env::Finding",
          "If this machine has an NVIDIA GPU, install the NVIDIA driver and reboot; otherwise there is "
          "nothing to do.")));
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
  const char* fix = QT_TRANSLATE_NOOP(
      "forja::env::Finding",
      "Reboot, or unload and reload the nvidia kernel modules, so that both are the same version.");
  if (!d.kernel_module_version.empty() && !d.version.empty() && d.kernel_module_version != d.version)
    out.push_back(finding(
        "driver-mismatch", Severity::error,
        QT_TRANSLATE_NOOP("forja::env::Finding",
                          "The loaded NVIDIA kernel module is %1 but the user-space driver is %2, so "
                          "the GPU cannot be used (usually the driver was updated without a reboot)."),
        {d.kernel_module_version, d.version}, fix));
  else
    out.push_back(
        finding("driver-mismatch", Severity::error,
                QT_TRANSLATE_NOOP("forja::env::Finding",
                                  "The NVIDIA kernel module and the user-space driver are different versions "
                                  "(%1), so the GPU cannot be used."),
                {d.nvml.error.empty() ? d.cuda.error : d.nvml.error}, fix));
}

void rule_driver_not_ready(const Report& r, std::vector<Finding>& out) {
  const auto& d = r.driver;
  if (!d.present() || d.nvml_ready || d.cuda_ready || mismatch(r)) return;
  const std::string why = !d.nvml.error.empty() ? d.nvml.error : d.cuda.error;
  out.push_back(finding(
      "driver-not-running", Severity::error,
      QT_TRANSLATE_NOOP("forja::env::Finding",
                        "The NVIDIA driver libraries are installed but the driver did not start: %1."),
      {why},
      QT_TRANSLATE_NOOP(
          "forja::env::Finding",
          "Check that the GPU is seen (lspci | grep -i nvidia) and that the nvidia kernel module is "
          "loaded (sudo modprobe nvidia), or reboot after a driver install.")));
}

void rule_no_gpu(const Report& r, std::vector<Finding>& out) {
  if (!(r.driver.nvml_ready || r.driver.cuda_ready) || !r.gpus.empty()) return;
  out.push_back(
      finding("no-gpu", Severity::warning,
              QT_TRANSLATE_NOOP("forja::env::Finding",
                                "The NVIDIA driver is running but reports no GPU, so Forja runs on the CPU."),
              {},
              QT_TRANSLATE_NOOP(
                  "forja::env::Finding",
                  "Check that the GPU is seated and powered and that this container or VM was given it.")));
}

void rule_driver_too_old(const Report& r, std::vector<Finding>& out) {
  const int have = r.driver.cuda_version;
  if (have <= 0) return;
  struct Need {
    bool torch;  // this LibTorch's CUDA, else Forja's kernels'
    int cuda;
  };
  std::vector<Need> needs;
  if (r.torch.built_with_cuda) {
    int rt = r.torch.cuda_runtime_loaded > 0 ? r.torch.cuda_runtime_loaded : r.torch.cuda_runtime_built;
    if (rt > 0) needs.push_back({true, rt});
  }
  if (r.build.kernels && r.build.kernels_cuda_version > 0)
    needs.push_back({false, r.build.kernels_cuda_version});
  const std::string driver = r.driver.version.empty() ? std::string("(version unknown)") : r.driver.version;
  for (const auto& n : needs) {
    if (n.cuda <= have) continue;
    const std::string floor = minimum_driver_for_cuda(n.cuda);
    const bool other_major = n.cuda / 1000 > have / 1000;
    // One template per case, whole sentences, so that a translation never has to join fragments.
    const char* problem =
        n.torch
            ? (other_major
                   ? QT_TRANSLATE_NOOP("forja::env::Finding",
                                       "NVIDIA driver %1 supports CUDA up to %2, but this LibTorch uses "
                                       "CUDA %3, so CUDA will not start.")
                   : QT_TRANSLATE_NOOP("forja::env::Finding",
                                       "NVIDIA driver %1 supports CUDA up to %2, but this LibTorch uses "
                                       "CUDA %3; it runs through minor-version compatibility, but PTX JIT "
                                       "and newer features fail."))
            : (other_major
                   ? QT_TRANSLATE_NOOP("forja::env::Finding",
                                       "NVIDIA driver %1 supports CUDA up to %2, but Forja's kernels were "
                                       "built with CUDA %3, so CUDA will not start.")
                   : QT_TRANSLATE_NOOP("forja::env::Finding",
                                       "NVIDIA driver %1 supports CUDA up to %2, but Forja's kernels were "
                                       "built with CUDA %3; they run through minor-version compatibility, "
                                       "but PTX JIT and newer features fail."));
    const std::string need = cuda_version_string(n.cuda), can = cuda_version_string(have);
    out.push_back(
        floor.empty()
            ? finding("driver-too-old", other_major ? Severity::error : Severity::warning, problem,
                      {driver, can, need},
                      QT_TRANSLATE_NOOP(
                          "forja::env::Finding",
                          "Install NVIDIA driver for CUDA %1, or use a build made for CUDA %2 or older."),
                      {need, can})
            : finding("driver-too-old", other_major ? Severity::error : Severity::warning, problem,
                      {driver, can, need},
                      QT_TRANSLATE_NOOP(
                          "forja::env::Finding",
                          "Install NVIDIA driver %1 or newer (the minimum for CUDA %2), or use a build "
                          "made for CUDA %3 or older."),
                      {floor, need, can}));
  }
}

void rule_architectures(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (g.cc_major <= 0) continue;
    const std::string sm = "sm_" + std::to_string(g.cc_major * 10 + g.cc_minor);
    if (r.torch.built_with_cuda && !r.torch.cuda_architectures.empty() &&
        !architectures_cover(r.torch.cuda_architectures, g.cc_major, g.cc_minor)) {
      out.push_back(
          finding("arch-missing", Severity::error,
                  QT_TRANSLATE_NOOP(
                      "forja::env::Finding",
                      "%1 has compute capability %2, which this LibTorch has no kernels for (it has %3)."),
                  {gpu_label(g), cc_string(g), join(r.torch.cuda_architectures)},
                  QT_TRANSLATE_NOOP(
                      "forja::env::Finding",
                      "Use a LibTorch build that includes %1 (check its release notes for supported GPUs)."),
                  {sm}));
    }
    if (r.build.kernels && !r.build.kernel_architectures.empty() &&
        !architectures_cover(r.build.kernel_architectures, g.cc_major, g.cc_minor)) {
      out.push_back(finding(
          "kernel-arch-missing", Severity::warning,
          QT_TRANSLATE_NOOP("forja::env::Finding",
                            "%1 has compute capability %2, but Forja's own kernels were built only for %3."),
          {gpu_label(g), cc_string(g), join(r.build.kernel_architectures)},
          QT_TRANSLATE_NOOP("forja::env::Finding",
                            "Reconfigure with -DCMAKE_CUDA_ARCHITECTURES=%1 (or native) and rebuild."),
          {std::to_string(g.cc_major * 10 + g.cc_minor)}));
    }
  }
}

void rule_no_bf16(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (g.cc_major <= 0 || g.cc_major >= 8) continue;
    out.push_back(finding(
        "no-bf16", Severity::warning,
        QT_TRANSLATE_NOOP(
            "forja::env::Finding",
            "%1 has compute capability %2 and no bf16 support (that needs 8.0, Ampere, or newer)."),
        {gpu_label(g), cc_string(g)},
        QT_TRANSLATE_NOOP("forja::env::Finding",
                          "Train in fp16 with loss scaling (or fp32 for small models) instead of bf16.")));
  }
}

void rule_torch_cuda(const Report& r, std::vector<Finding>& out) {
  if (!r.torch.probed || r.gpus.empty()) return;
  const std::string first = gpu_label(r.gpus.front());
  const bool several = r.gpus.size() > 1;
  if (!r.torch.built_with_cuda) {
    out.push_back(finding(
        "torch-no-cuda", Severity::error,
        several ? QT_TRANSLATE_NOOP(
                      "forja::env::Finding",
                      "THIS FORJA BUILD RUNS ON THE CPU ONLY: its LibTorch has no CUDA, even though %1 "
                      "and others are present.")
                : QT_TRANSLATE_NOOP(
                      "forja::env::Finding",
                      "THIS FORJA BUILD RUNS ON THE CPU ONLY: its LibTorch has no CUDA, even though %1 "
                      "is present."),
        {first},
        QT_TRANSLATE_NOOP(
            "forja::env::Finding",
            "Rebuild Forja with the cuda preset against a LibTorch that has CUDA (CMAKE_PREFIX_PATH "
            "pointing at it).")));
    return;
  }
  const bool any_visible =
      std::any_of(r.gpus.begin(), r.gpus.end(), [](const GpuInfo& g) { return g.cuda_index >= 0; });
  if (!r.torch.cuda_available && (any_visible || !r.driver.cuda_ready)) {
    out.push_back(finding(
        "torch-cuda-unavailable", Severity::error,
        several ? QT_TRANSLATE_NOOP(
                      "forja::env::Finding",
                      "THE WORK WOULD RUN ON THE CPU: LibTorch has CUDA but cannot use %1 and others.")
                : QT_TRANSLATE_NOOP("forja::env::Finding",
                                    "THE WORK WOULD RUN ON THE CPU: LibTorch has CUDA but cannot use %1."),
        {first},
        QT_TRANSLATE_NOOP(
            "forja::env::Finding",
            "Fix the driver findings in this report, then run forja-cli doctor again until it says "
            "CUDA is available.")));
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
  out.push_back(finding(
      "gpus-hidden", Severity::warning,
      QT_TRANSLATE_NOOP("forja::env::Finding",
                        "CUDA_VISIBLE_DEVICES=\"%1\" hides every GPU from CUDA, so Forja runs on the CPU."),
      {*r.cuda_visible_devices},
      QT_TRANSLATE_NOOP(
          "forja::env::Finding",
          "Unset CUDA_VISIBLE_DEVICES, or set it to the index or UUID of the GPU to use (e.g. 0).")));
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
      const std::string pid = std::to_string(biggest->pid);
      const char* fix =
          QT_TRANSLATE_NOOP("forja::env::Finding",
                            "Stop that process, or choose another GPU with CUDA_VISIBLE_DEVICES, before "
                            "training: Forja can use only what is free.");
      if (biggest->name.empty())
        out.push_back(
            finding("memory-held", Severity::warning,
                    QT_TRANSLATE_NOOP("forja::env::Finding", "Process %1 holds %2 of the %3 on %4."),
                    {pid, gib(biggest->used_bytes), gib(g.memory_total), gpu_label(g)}, fix));
      else
        out.push_back(
            finding("memory-held", Severity::warning,
                    QT_TRANSLATE_NOOP("forja::env::Finding", "Process %1 (%2) holds %3 of the %4 on %5."),
                    {pid, biggest->name, gib(biggest->used_bytes), gib(g.memory_total), gpu_label(g)}, fix));
    } else if (g.processes.empty() && g.memory_used >= half) {
      out.push_back(finding(
          "memory-held", Severity::warning,
          QT_TRANSLATE_NOOP(
              "forja::env::Finding",
              "%1 of the %2 on %3 is in use by processes this session cannot see (another container or "
              "user)."),
          {gib(g.memory_used), gib(g.memory_total), gpu_label(g)},
          QT_TRANSLATE_NOOP(
              "forja::env::Finding",
              "Free that memory (nvidia-smi on the host shows who holds it) or choose another GPU.")));
    }
  }
}

void rule_mig(const Report& r, std::vector<Finding>& out) {
  for (const auto& g : r.gpus) {
    if (!g.mig_enabled.value_or(false) || g.mig_instances > 0) continue;
    const std::string index = std::to_string(g.index);
    out.push_back(finding(
        "mig-no-instance", Severity::error,
        QT_TRANSLATE_NOOP("forja::env::Finding",
                          "MIG mode is on for %1 but no MIG instance exists, so CUDA has no device on it."),
        {gpu_label(g)},
        QT_TRANSLATE_NOOP(
            "forja::env::Finding",
            "Create an instance (sudo nvidia-smi mig -i %1 -cgi <profile> -C) or turn MIG off (sudo "
            "nvidia-smi -i %1 -mig 0) and reset the GPU."),
        {index}));
  }
}

void rule_cudnn(const Report& r, std::vector<Finding>& out) {
  const int built = r.torch.cudnn_built, loaded = r.torch.cudnn_loaded;
  if (!r.torch.built_with_cuda || built <= 0 || loaded <= 0 || built / 10000 == loaded / 10000) return;
  out.push_back(finding(
      "cudnn-mismatch", Severity::warning,
      QT_TRANSLATE_NOOP(
          "forja::env::Finding",
          "LibTorch was built with cuDNN %1 but cuDNN %2 is loaded; convolutions may fail or be slow."),
      {cudnn_version_string(built), cudnn_version_string(loaded)},
      QT_TRANSLATE_NOOP(
          "forja::env::Finding",
          "Put the cuDNN that came with this LibTorch first on the library path (or remove the other "
          "one).")));
}

}  // namespace

std::string fill_template(const std::string& tmpl, const std::vector<std::string>& args) {
  std::string out;
  out.reserve(tmpl.size());
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c == '%' && i + 1 < tmpl.size() && tmpl[i + 1] >= '1' && tmpl[i + 1] <= '9') {
      const size_t n = static_cast<size_t>(tmpl[i + 1] - '1');
      if (n < args.size()) {
        out += args[n];
        ++i;
        continue;
      }
    }
    out += c;
  }
  return out;
}

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
