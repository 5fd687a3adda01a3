// A fake libnvidia-ml for the env tests: the NVML entry points Forja binds, answering from a scenario JSON
// file. Declared here on their own (not from core/env) so that a layout mistake in Forja is not mirrored.
#include <cstdint>
#include <cstring>

#include "fake_gpu_scenario.h"

namespace {

struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned int gpu, memory;
};
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
using Device = void*;

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3,
              kInsufficientSize = 7, kDriverNotLoaded = 9;
bool g_ready = false;

const nlohmann::json* gpu(Device d) {
  const auto i = reinterpret_cast<uintptr_t>(d);
  if (!g_ready || i == 0 || i > fake_gpu::gpus().size()) return nullptr;
  return &fake_gpu::gpus()[i - 1];
}

int copy_string(const std::string& s, char* out, unsigned length) {
  if (s.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return kSuccess;
}

int value(Device d, const char* key, unsigned* out, int index = -1) {
  const auto* g = gpu(d);
  if (!g || !out) return kInvalidArgument;
  if (!g->contains(key)) return kNotSupported;
  *out = index < 0 ? (*g)[key].get<unsigned>() : (*g)[key][index].get<unsigned>();
  return kSuccess;
}

int processes(Device d, unsigned* count, ProcessInfo* infos, const char* kind) {
  const auto* g = gpu(d);
  if (!g || !count) return kInvalidArgument;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : g->value("processes", nlohmann::json::array()))
    if (p.value("kind", std::string("compute")) == kind) list.push_back(p);
  if (*count < list.size()) {
    *count = static_cast<unsigned>(list.size());
    return kInsufficientSize;
  }
  *count = static_cast<unsigned>(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    infos[i] = {fake_gpu::pid_of(list[i]), list[i].at("used").get<unsigned long long>(), 0xFFFFFFFFu,
                0xFFFFFFFFu};
  return kSuccess;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (!fake_gpu::load_scenario()) return kDriverNotLoaded;
  const int code = fake_gpu::scenario().value("nvml_init", 0);
  g_ready = code == kSuccess;
  return code;
}
int nvmlShutdown() {
  g_ready = false;
  return kSuccess;
}
const char* nvmlErrorString(int r) {
  switch (r) {
    case 9:
      return "Driver Not Loaded";
    case 18:
      return "Driver/library version mismatch";
    default:
      return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* out, unsigned length) {
  if (!g_ready) return kUninitialized;
  return copy_string(fake_gpu::scenario().value("driver_version", std::string()), out, length);
}
int nvmlSystemGetCudaDriverVersion_v2(int* v) {
  if (!g_ready) return kUninitialized;
  *v = fake_gpu::scenario().value("cuda_driver_version", 0);
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  if (!g_ready) return kUninitialized;
  *n = static_cast<unsigned>(fake_gpu::gpus().size());
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, Device* d) {
  if (!g_ready || i >= fake_gpu::gpus().size()) return kInvalidArgument;
  *d = reinterpret_cast<Device>(static_cast<uintptr_t>(i + 1));
  return kSuccess;
}
int nvmlDeviceGetName(Device d, char* out, unsigned length) {
  const auto* g = gpu(d);
  return g ? copy_string(g->at("name").get<std::string>(), out, length) : kInvalidArgument;
}
int nvmlDeviceGetUUID(Device d, char* out, unsigned length) {
  const auto* g = gpu(d);
  return g ? copy_string(g->at("uuid").get<std::string>(), out, length) : kInvalidArgument;
}
int nvmlDeviceGetMemoryInfo(Device d, Memory* m) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  m->total = g->at("memory_total").get<unsigned long long>();
  m->used = g->value("memory_used", 0ULL);
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetCudaComputeCapability(Device d, int* major, int* minor) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  *major = (*g)["cc"][0].get<int>();
  *minor = (*g)["cc"][1].get<int>();
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(Device d, PciInfo* p) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  const auto& pci = g->at("pci");
  p->domain = pci[0].get<unsigned>();
  p->bus = pci[1].get<unsigned>();
  p->device = pci[2].get<unsigned>();
  std::snprintf(p->busId, sizeof(p->busId), "%08X:%02X:%02X.0", p->domain, p->bus, p->device);
  std::snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04X:%02X:%02X.0", p->domain, p->bus, p->device);
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(Device d, unsigned* v) {
  return value(d, "pcie", v, 0);
}
int nvmlDeviceGetMaxPcieLinkGeneration(Device d, unsigned* v) {
  return value(d, "pcie", v, 1);
}
int nvmlDeviceGetCurrPcieLinkWidth(Device d, unsigned* v) {
  return value(d, "pcie", v, 2);
}
int nvmlDeviceGetMaxPcieLinkWidth(Device d, unsigned* v) {
  return value(d, "pcie", v, 3);
}
int nvmlDeviceGetMigMode(Device d, unsigned* current, unsigned* pending) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  if (!g->contains("mig")) return kNotSupported;
  *current = *pending = (*g)["mig"].value("enabled", 0u);
  return kSuccess;
}
int nvmlDeviceGetMaxMigDeviceCount(Device d, unsigned* n) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  *n = 7;  // an A100 has at most seven MIG slices
  return kSuccess;
}
int nvmlDeviceGetMigDeviceHandleByIndex(Device d, unsigned i, Device* mig) {
  const auto* g = gpu(d);
  if (!g) return kInvalidArgument;
  const unsigned instances = g->contains("mig") ? (*g)["mig"].value("instances", 0u) : 0u;
  if (i >= instances) return 6;  // NVML_ERROR_NOT_FOUND
  *mig = reinterpret_cast<Device>(static_cast<uintptr_t>(1000 + i));
  return kSuccess;
}
int nvmlDeviceGetEccMode(Device d, unsigned* current, unsigned* pending) {
  int r = value(d, "ecc", current);
  if (r == kSuccess) *pending = *current;
  return r;
}
int nvmlDeviceGetPersistenceMode(Device d, unsigned* mode) {
  return value(d, "persistence", mode);
}
int nvmlDeviceGetPowerManagementLimit(Device d, unsigned* mw) {
  return value(d, "power_limit_mw", mw);
}
int nvmlDeviceGetUtilizationRates(Device d, Utilization* u) {
  unsigned g = 0, m = 0;
  int r = value(d, "util", &g, 0);
  if (r != kSuccess) return r;
  value(d, "util", &m, 1);
  u->gpu = g;
  u->memory = m;
  return kSuccess;
}
int nvmlDeviceGetTemperature(Device d, int sensor, unsigned* t) {
  return sensor == 0 ? value(d, "temperature", t) : kInvalidArgument;
}
int nvmlDeviceGetPowerUsage(Device d, unsigned* mw) {
  return value(d, "power_mw", mw);
}
int nvmlDeviceGetClockInfo(Device d, int type, unsigned* mhz) {
  return type == 1 ? value(d, "sm_clock", mhz) : kNotSupported;
}
int nvmlDeviceGetComputeRunningProcesses_v3(Device d, unsigned* count, ProcessInfo* infos) {
  return processes(d, count, infos, "compute");
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(Device d, unsigned* count, ProcessInfo* infos) {
  return processes(d, count, infos, "graphics");
}

}  // extern "C"
