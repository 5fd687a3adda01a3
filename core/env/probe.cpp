// probe(): gathers the driver, GPU, CUDA, LibTorch and toolkit facts into a Report, then runs the advice
// rules.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "env/cuda_driver_api.h"
#include "env/nvml_api.h"
#include "env/probe_detail.h"
#include "env/torch_facts.h"
#include "forja/env.h"

#ifndef FORJA_ENV_KERNEL_ARCHS
#define FORJA_ENV_KERNEL_ARCHS ""
#endif
#ifndef FORJA_ENV_KERNEL_CUDA_VERSION
#define FORJA_ENV_KERNEL_CUDA_VERSION ""
#endif

namespace forja::env {

namespace fs = std::filesystem;

std::string parse_kernel_module_version(const std::string& proc_text) {
  static const std::regex pattern(R"(Kernel Module(?: for \S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?))");
  std::smatch m;
  if (std::regex_search(proc_text, m, pattern)) return m[1].str();
  return {};
}

std::string parse_nvcc_version(const std::string& nvcc_output) {
  static const std::regex full(R"(release [0-9]+\.[0-9]+, V([0-9]+\.[0-9]+\.[0-9]+))");
  static const std::regex short_form(R"(release ([0-9]+\.[0-9]+))");
  std::smatch m;
  if (std::regex_search(nvcc_output, m, full)) return m[1].str();
  if (std::regex_search(nvcc_output, m, short_form)) return m[1].str();
  return {};
}

int parse_cuda_version(const std::string& text) {
  static const std::regex pattern(R"(^\s*([0-9]+)\.([0-9]+))");
  std::smatch m;
  if (!std::regex_search(text, m, pattern)) return 0;
  return std::stoi(m[1]) * 1000 + std::stoi(m[2]) * 10;
}

std::vector<std::string> parse_cmake_architectures(const std::string& list) {
  std::vector<std::string> out;
  static const std::regex item(R"(^([0-9]+[a-z]?)(?:-(real|virtual))?$)");
  std::string token;
  std::stringstream in(list);
  while (std::getline(in, token, list.find(';') != std::string::npos ? ';' : ',')) {
    std::smatch m;
    if (!std::regex_match(token, m, item)) continue;
    const std::string num = m[1];
    const std::string kind = m[2].matched ? m[2].str() : std::string();
    if (kind != "virtual") out.push_back("sm_" + num);
    if (kind != "real") out.push_back("compute_" + num);
  }
  return out;
}

bool architectures_cover(const std::vector<std::string>& architectures, int cc_major, int cc_minor) {
  static const std::regex pattern(R"(^(sm|compute)_([0-9]+)([a-z]?)$)");
  const int cc = cc_major * 10 + cc_minor;
  for (const auto& a : architectures) {
    std::smatch m;
    if (!std::regex_match(a, m, pattern)) continue;
    const int n = std::stoi(m[2]);
    const bool specific = m[3].matched && !m[3].str().empty();  // sm_90a / sm_100f: that GPU only
    if (m[1] == "sm") {
      if (specific ? n == cc : (n / 10 == cc_major && n <= cc)) return true;
    } else if (!specific && n <= cc) {
      return true;
    } else if (specific && n == cc) {
      return true;
    }
  }
  return false;
}

namespace {

std::string read_file_or_empty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string find_nvcc(const std::string& override_path) {
  auto usable = [](const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; };
  // An explicit choice is final: a wrong FORJA_NVCC should be reported as "no nvcc", not silently replaced.
  if (!override_path.empty()) return usable(override_path) ? override_path : std::string();
  if (const char* v = std::getenv("CUDACXX"); v && *v && usable(v)) return v;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home && usable(fs::path(home) / "bin/nvcc"))
    return (fs::path(home) / "bin/nvcc").string();
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && usable(fs::path(dir) / "nvcc")) return (fs::path(dir) / "nvcc").string();
  }
  if (usable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return {};
}

ToolkitInfo probe_toolkit(const std::string& override_path) {
  ToolkitInfo t;
  t.nvcc = find_nvcc(override_path);
  if (t.nvcc.empty()) return t;
  // The path comes from the user's own environment; quoting keeps spaces in it from splitting the command.
  std::string cmd = "'" + t.nvcc + "' --version 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 512> buf{};
    while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
    ::pclose(p);
  }
  t.version = parse_nvcc_version(out);
  t.cuda_version = parse_cuda_version(t.version);
  return t;
}

template <typename Fn>
unsigned nvml_uint(Fn fn, nvml::Device dev) {
  unsigned v = 0;
  if (!fn || fn(dev, &v) != nvml::kSuccess) return 0;
  return v;
}

GpuInfo gpu_from_nvml(const nvml::Library& lib, unsigned index, nvml::Device dev, unsigned self_pid) {
  GpuInfo g;
  g.index = static_cast<int>(index);
  g.name = nvml::device_string(lib.DeviceGetName, dev);
  g.uuid = nvml::device_string(lib.DeviceGetUUID, dev);
  nvml::Memory mem{};
  if (lib.DeviceGetMemoryInfo && lib.DeviceGetMemoryInfo(dev, &mem) == nvml::kSuccess) {
    g.memory_total = mem.total;
    g.memory_used = mem.used;
  }
  if (lib.DeviceGetCudaComputeCapability) lib.DeviceGetCudaComputeCapability(dev, &g.cc_major, &g.cc_minor);
  nvml::PciInfo pci{};
  if (lib.DeviceGetPciInfo && lib.DeviceGetPciInfo(dev, &pci) == nvml::kSuccess) {
    pci.bus_id[sizeof(pci.bus_id) - 1] = 0;
    g.pci_bus_id = pci.bus_id;
  }
  g.pcie_gen = static_cast<int>(nvml_uint(lib.DeviceGetCurrPcieLinkGeneration, dev));
  g.pcie_gen_max = static_cast<int>(nvml_uint(lib.DeviceGetMaxPcieLinkGeneration, dev));
  g.pcie_width = static_cast<int>(nvml_uint(lib.DeviceGetCurrPcieLinkWidth, dev));
  g.pcie_width_max = static_cast<int>(nvml_uint(lib.DeviceGetMaxPcieLinkWidth, dev));
  unsigned current = 0, pending = 0;
  if (lib.DeviceGetMigMode && lib.DeviceGetMigMode(dev, &current, &pending) == nvml::kSuccess) {
    g.mig_enabled = current == nvml::kFeatureEnabled;
    if (*g.mig_enabled && lib.DeviceGetMaxMigDeviceCount && lib.DeviceGetMigDeviceHandleByIndex) {
      unsigned max = 0;
      lib.DeviceGetMaxMigDeviceCount(dev, &max);
      for (unsigned i = 0; i < max; ++i) {
        nvml::Device mig = nullptr;
        if (lib.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) == nvml::kSuccess) ++g.mig_instances;
      }
    }
  }
  if (lib.DeviceGetEccMode && lib.DeviceGetEccMode(dev, &current, &pending) == nvml::kSuccess)
    g.ecc_enabled = current == nvml::kFeatureEnabled;
  if (lib.DeviceGetPersistenceMode && lib.DeviceGetPersistenceMode(dev, &current) == nvml::kSuccess)
    g.persistence_mode = current == nvml::kFeatureEnabled;
  unsigned milliwatts = 0;
  if (lib.DeviceGetPowerManagementLimit &&
      lib.DeviceGetPowerManagementLimit(dev, &milliwatts) == nvml::kSuccess)
    g.power_limit_watts = milliwatts / 1000.0;
  for (const auto& p : nvml::running_processes(lib, dev))
    g.processes.push_back({p.pid, nvml::process_name(p.pid), p.used, p.pid == self_pid});
  return g;
}

// Gives each NVML GPU the index CUDA uses for it: by UUID, else by PCI location (MIG devices carry their own
// UUIDs but their parent's PCI address).
void match_cuda_devices(std::vector<GpuInfo>& gpus, const std::vector<cuda::DeviceFacts>& devices) {
  auto pci_of = [](const cuda::DeviceFacts& d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%08x:%02x:%02x.0", static_cast<unsigned>(d.pci_domain),
                  static_cast<unsigned>(d.pci_bus), static_cast<unsigned>(d.pci_device));
    return std::string(buf);
  };
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (const auto& d : devices) {
    GpuInfo* hit = nullptr;
    for (auto& g : gpus)
      if (!d.uuid.empty() && lower(g.uuid) == lower(d.uuid)) hit = &g;
    if (!hit && d.pci_bus >= 0)
      for (auto& g : gpus)
        if (g.cuda_index < 0 && lower(g.pci_bus_id) == pci_of(d)) hit = &g;
    if (hit && hit->cuda_index < 0) hit->cuda_index = d.ordinal;
  }
}

}  // namespace

Report probe(const ProbeOptions& options) {
  Report r;
  r.self_pid = static_cast<unsigned>(::getpid());
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) r.cuda_visible_devices = v;

  const std::string nvml_name = choose(options.nvml_library, "FORJA_NVML_LIBRARY", "libnvidia-ml.so.1");
  const std::string cuda_name =
      choose(options.cuda_driver_library, "FORJA_CUDA_DRIVER_LIBRARY", "libcuda.so.1");
  r.driver.kernel_module_file =
      choose(options.kernel_module_file, "FORJA_NVIDIA_VERSION_FILE", "/proc/driver/nvidia/version");
  r.driver.kernel_module_version =
      parse_kernel_module_version(read_file_or_empty(r.driver.kernel_module_file));

  nvml::Library nv(nvml_name);
  r.driver.nvml = {nvml_name, nv.path(), nv.loaded(), nv.error()};
  r.driver.nvml_ready = nv.ready();
  r.driver.nvml_init_code = nv.init_code();
  if (nv.ready()) {
    char version[80] = {};
    if (nv.SystemGetDriverVersion && nv.SystemGetDriverVersion(version, sizeof(version)) == nvml::kSuccess)
      r.driver.version = version;
    int cuda_version = 0;
    if (nv.SystemGetCudaDriverVersion && nv.SystemGetCudaDriverVersion(&cuda_version) == nvml::kSuccess)
      r.driver.cuda_version = cuda_version;
    unsigned count = 0;
    if (nv.DeviceGetCount && nv.DeviceGetHandleByIndex && nv.DeviceGetCount(&count) == nvml::kSuccess) {
      for (unsigned i = 0; i < count; ++i) {
        nvml::Device dev = nullptr;
        if (nv.DeviceGetHandleByIndex(i, &dev) != nvml::kSuccess) continue;
        r.gpus.push_back(gpu_from_nvml(nv, i, dev, r.self_pid));
      }
    }
  }
  if (r.driver.version.empty() && nv.loaded()) r.driver.version = version_from_library_file(nv.path());

  cuda::Library cu(cuda_name);
  r.driver.cuda = {cuda_name, cu.path(), cu.loaded(), cu.error()};
  r.driver.cuda_ready = cu.ready();
  r.driver.cuda_init_code = cu.init_code();
  if (cu.loaded()) {
    if (r.driver.cuda_version == 0) r.driver.cuda_version = cu.driver_version();
    if (r.driver.version.empty()) r.driver.version = version_from_library_file(cu.path());
    const auto devices = cu.devices();
    if (r.gpus.empty()) {
      // No NVML (some containers, WSL without it): what CUDA sees is all there is to report.
      for (const auto& d : devices) {
        GpuInfo g;
        g.index = d.ordinal;
        g.cuda_index = d.ordinal;
        g.name = d.name;
        g.uuid = d.uuid;
        g.memory_total = d.memory_total;
        g.cc_major = d.cc_major;
        g.cc_minor = d.cc_minor;
        r.gpus.push_back(std::move(g));
      }
    } else {
      match_cuda_devices(r.gpus, devices);
    }
    for (const auto& a : devices)
      for (const auto& b : devices)
        if (a.ordinal != b.ordinal)
          r.peer_access.push_back({a.ordinal, b.ordinal, cu.can_access_peer(a.ordinal, b.ordinal)});
  }

  if (options.probe_torch) r.torch = probe_torch();
  if (options.probe_nvcc) r.toolkit = probe_toolkit(choose(options.nvcc, "FORJA_NVCC", ""));
  r.build.kernel_architectures = parse_cmake_architectures(FORJA_ENV_KERNEL_ARCHS);
  r.build.kernels_cuda_version = parse_cuda_version(FORJA_ENV_KERNEL_CUDA_VERSION);
  r.build.kernels = r.build.kernels_cuda_version != 0;
  r.findings = advise(r);
  return r;
}

}  // namespace forja::env
