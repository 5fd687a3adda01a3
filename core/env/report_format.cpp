// The doctor's report in plain words (forja-cli doctor) and as JSON (--json, and the UI).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "forja/env.h"

namespace forja::env {

namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string yes_no(const std::optional<bool>& v, const char* yes, const char* no) {
  if (!v) return "n/a";
  return *v ? yes : no;
}

std::string or_unknown(const std::string& s) {
  return s.empty() ? "unknown" : s;
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string report_text(const Report& r) {
  std::ostringstream o;
  const auto& d = r.driver;
  o << "NVIDIA driver\n";
  if (!d.present()) {
    o << "  not found (" << d.nvml.requested << ": " << d.nvml.error << ")\n";
  } else {
    o << "  user-space driver   " << or_unknown(d.version) << "\n";
    o << "  supports CUDA up to " << or_unknown(cuda_version_string(d.cuda_version)) << "\n";
    o << "  kernel module       "
      << (d.kernel_module_version.empty() ? "not loaded (" + d.kernel_module_file + " is missing)"
                                          : d.kernel_module_version)
      << "\n";
    o << "  NVML                " << (d.nvml_ready ? d.nvml.path : "unavailable: " + d.nvml.error) << "\n";
    o << "  CUDA driver         " << (d.cuda_ready ? d.cuda.path : "unavailable: " + d.cuda.error) << "\n";
  }
  o << "  CUDA_VISIBLE_DEVICES "
    << (r.cuda_visible_devices ? "\"" + *r.cuda_visible_devices + "\"" : "not set") << "\n\n";

  o << "GPUs (" << r.gpus.size() << ")\n";
  if (r.gpus.empty()) o << "  none\n";
  for (const auto& g : r.gpus) {
    o << "  [" << g.index << "] " << g.name << "  " << gib(g.memory_total) << "  compute capability "
      << g.cc_major << "." << g.cc_minor << "\n";
    o << "      CUDA index "
      << (g.cuda_index >= 0 ? std::to_string(g.cuda_index) : std::string("none (hidden)")) << "   UUID "
      << or_unknown(g.uuid) << "   PCI " << or_unknown(g.pci_bus_id) << "\n";
    if (g.pcie_gen > 0)
      o << "      PCIe gen " << g.pcie_gen << "/" << g.pcie_gen_max << " x" << g.pcie_width << "/x"
        << g.pcie_width_max << "\n";
    o << "      memory used " << gib(g.memory_used) << "   MIG " << yes_no(g.mig_enabled, "on", "off");
    if (g.mig_enabled.value_or(false)) o << " (" << g.mig_instances << " instances)";
    o << "   ECC " << yes_no(g.ecc_enabled, "on", "off") << "   persistence "
      << yes_no(g.persistence_mode, "on", "off");
    if (g.power_limit_watts) {
      char w[32];
      std::snprintf(w, sizeof(w), "%.0f W", *g.power_limit_watts);
      o << "   power limit " << w;
    }
    o << "\n";
    for (const auto& p : g.processes)
      o << "      process " << p.pid << " " << (p.name.empty() ? "?" : p.name) << "  " << gib(p.used_bytes)
        << (p.is_self ? "  (this process)" : "") << "\n";
  }
  // Multi-GPU training (forja-cli train --gpus N) runs NCCL over these links; without them through host
  // memory.
  if (!r.peer_access.empty()) {
    o << "  peer access (CUDA indices):";
    for (const auto& p : r.peer_access)
      o << "  " << p.from << "->" << p.to << " " << yes_no(p.can, "yes", "NO");
    o << "\n";
  }
  o << "\n";

  const auto& t = r.torch;
  o << "LibTorch\n";
  if (!t.probed) {
    o << "  not probed\n";
  } else {
    o << "  version             " << t.version << "\n";
    o << "  built with CUDA     " << (t.built_with_cuda ? "yes" : "NO (CPU only)") << "\n";
    if (t.built_with_cuda) {
      o << "  CUDA available      "
        << (t.cuda_available ? "yes, " + std::to_string(t.device_count) + " device(s)" : std::string("NO"))
        << "\n";
      o << "  CUDA runtime        built " << or_unknown(cuda_version_string(t.cuda_runtime_built))
        << ", loaded " << or_unknown(cuda_version_string(t.cuda_runtime_loaded)) << "\n";
      o << "  cuDNN               built " << or_unknown(cudnn_version_string(t.cudnn_built)) << ", loaded "
        << or_unknown(cudnn_version_string(t.cudnn_loaded)) << "\n";
      std::string archs;
      for (const auto& a : t.cuda_architectures) archs += (archs.empty() ? "" : " ") + a;
      o << "  GPU architectures   " << or_unknown(archs) << "\n";
    }
  }
  o << "\nCUDA toolkit (for building kernels)\n";
  o << "  nvcc                "
    << (r.toolkit.nvcc.empty() ? std::string("not found")
                               : r.toolkit.nvcc + " (" + or_unknown(r.toolkit.version) + ")")
    << "\n\n";

  if (r.findings.empty()) {
    o << "No problems found.\n";
  } else {
    o << "Findings\n";
    for (const auto& f : r.findings) {
      o << "  " << severity_name(f.severity) << " [" << f.id << "]: " << f.problem << "\n";
      o << "      what to do: " << f.fix << "\n";
    }
  }
  return o.str();
}

std::string report_json(const Report& r, int indent) {
  using nlohmann::json;
  const auto& d = r.driver;
  auto lib = [](const LibraryStatus& l) {
    return json{{"requested", l.requested}, {"path", l.path}, {"loaded", l.loaded}, {"error", l.error}};
  };
  json j;
  j["driver"] = {{"present", d.present()},
                 {"version", d.version},
                 {"cuda_version", cuda_version_string(d.cuda_version)},
                 {"kernel_module_version", d.kernel_module_version},
                 {"kernel_module_file", d.kernel_module_file},
                 {"nvml", lib(d.nvml)},
                 {"nvml_ready", d.nvml_ready},
                 {"nvml_init_code", d.nvml_init_code},
                 {"cuda", lib(d.cuda)},
                 {"cuda_ready", d.cuda_ready},
                 {"cuda_init_code", d.cuda_init_code}};
  j["cuda_visible_devices"] = opt(r.cuda_visible_devices);
  j["gpus"] = json::array();
  for (const auto& g : r.gpus) {
    json procs = json::array();
    for (const auto& p : g.processes)
      procs.push_back({{"pid", p.pid}, {"name", p.name}, {"used_bytes", p.used_bytes}, {"self", p.is_self}});
    j["gpus"].push_back(
        {{"index", g.index},
         {"cuda_index", g.cuda_index},
         {"name", g.name},
         {"uuid", g.uuid},
         {"pci_bus_id", g.pci_bus_id},
         {"memory_total_bytes", g.memory_total},
         {"memory_used_bytes", g.memory_used},
         {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
         {"pcie",
          {{"gen", g.pcie_gen},
           {"gen_max", g.pcie_gen_max},
           {"width", g.pcie_width},
           {"width_max", g.pcie_width_max}}},
         {"mig_enabled", opt(g.mig_enabled)},
         {"mig_instances", g.mig_instances},
         {"ecc_enabled", opt(g.ecc_enabled)},
         {"persistence_mode", opt(g.persistence_mode)},
         {"power_limit_watts", opt(g.power_limit_watts)},
         {"processes", procs}});
  }
  j["peer_access"] = json::array();
  for (const auto& p : r.peer_access)
    j["peer_access"].push_back({{"from", p.from}, {"to", p.to}, {"can", opt(p.can)}});
  const auto& t = r.torch;
  j["torch"] = {{"probed", t.probed},
                {"version", t.version},
                {"built_with_cuda", t.built_with_cuda},
                {"cuda_available", t.cuda_available},
                {"device_count", t.device_count},
                {"cuda_runtime_built", cuda_version_string(t.cuda_runtime_built)},
                {"cuda_runtime_loaded", cuda_version_string(t.cuda_runtime_loaded)},
                {"cudnn_built", cudnn_version_string(t.cudnn_built)},
                {"cudnn_loaded", cudnn_version_string(t.cudnn_loaded)},
                {"cuda_architectures", t.cuda_architectures}};
  j["toolkit"] = {{"nvcc", r.toolkit.nvcc}, {"version", r.toolkit.version}};
  j["build"] = {{"kernels", r.build.kernels},
                {"kernel_architectures", r.build.kernel_architectures},
                {"kernels_cuda_version", cuda_version_string(r.build.kernels_cuda_version)}};
  j["findings"] = json::array();
  for (const auto& f : r.findings)
    j["findings"].push_back(
        {{"id", f.id}, {"severity", severity_name(f.severity)}, {"problem", f.problem}, {"fix", f.fix}});
  return j.dump(indent);
}

}  // namespace forja::env
