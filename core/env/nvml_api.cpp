#include "env/nvml_api.h"

#include <fstream>
#include <map>
#include <vector>

namespace forja::env::nvml {

Library::Library(const std::string& name) : lib_(name, /*keep_loaded=*/false) {
  if (!lib_.loaded()) {
    error_ = lib_.error();
    return;
  }
  lib_.bind(error_string_, "nvmlErrorString");
  lib_.bind(shutdown_, "nvmlShutdown");
  if (!lib_.bind(init_, "nvmlInit_v2") && !lib_.bind(init_, "nvmlInit")) {
    error_ = lib_.path() + ": has no nvmlInit_v2; this is not a usable NVML";
    return;
  }
  init_code_ = init_();
  if (init_code_ != kSuccess) {
    error_ = "nvmlInit failed: " + error_string(init_code_);
    return;
  }
  ready_ = true;
  lib_.bind(SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  if (!lib_.bind(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2"))
    lib_.bind(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion");
  if (!lib_.bind(DeviceGetCount, "nvmlDeviceGetCount_v2")) lib_.bind(DeviceGetCount, "nvmlDeviceGetCount");
  if (!lib_.bind(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2"))
    lib_.bind(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex");
  lib_.bind(DeviceGetName, "nvmlDeviceGetName");
  lib_.bind(DeviceGetUUID, "nvmlDeviceGetUUID");
  lib_.bind(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
  lib_.bind(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability");
  lib_.bind(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3");
  lib_.bind(DeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
  lib_.bind(DeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration");
  lib_.bind(DeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth");
  lib_.bind(DeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth");
  lib_.bind(DeviceGetMigMode, "nvmlDeviceGetMigMode");
  lib_.bind(DeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount");
  lib_.bind(DeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex");
  lib_.bind(DeviceGetEccMode, "nvmlDeviceGetEccMode");
  lib_.bind(DeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode");
  lib_.bind(DeviceGetPowerManagementLimit, "nvmlDeviceGetPowerManagementLimit");
  lib_.bind(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  lib_.bind(DeviceGetTemperature, "nvmlDeviceGetTemperature");
  lib_.bind(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  lib_.bind(DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
  lib_.bind(DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3");
  lib_.bind(DeviceGetGraphicsRunningProcesses, "nvmlDeviceGetGraphicsRunningProcesses_v3");
}

Library::~Library() {
  if (ready_ && shutdown_) shutdown_();
}

std::string Library::error_string(Return r) const {
  const char* s = error_string_ ? error_string_(r) : nullptr;
  return (s ? std::string(s) : std::string("NVML error")) + " (code " + std::to_string(r) + ")";
}

namespace {

void append_processes(Return (*query)(Device, unsigned int*, ProcessInfo*), Device dev,
                      std::map<unsigned, unsigned long long>& by_pid) {
  if (!query) return;
  // The list can grow between the size query and the fetch; a few retries with room to spare cover that.
  unsigned int count = 0;
  std::vector<ProcessInfo> infos;
  for (int attempt = 0; attempt < 4; ++attempt) {
    infos.resize(count + 8);
    count = static_cast<unsigned>(infos.size());
    Return r = query(dev, &count, infos.data());
    if (r == kSuccess) break;
    if (r != kErrorInsufficientSize) return;
    if (attempt == 3) return;
  }
  for (unsigned i = 0; i < count && i < infos.size(); ++i) {
    auto& used = by_pid[infos[i].pid];
    // NVML_VALUE_NOT_AVAILABLE is (unsigned long long)-1: treat it as unknown, not as 16 EiB.
    if (infos[i].used_gpu_memory != ~0ULL) used = std::max(used, infos[i].used_gpu_memory);
  }
}

}  // namespace

std::vector<Process> running_processes(const Library& lib, Device dev) {
  std::map<unsigned, unsigned long long> by_pid;
  append_processes(lib.DeviceGetComputeRunningProcesses, dev, by_pid);
  append_processes(lib.DeviceGetGraphicsRunningProcesses, dev, by_pid);
  std::vector<Process> out;
  for (const auto& [pid, used] : by_pid) out.push_back({pid, used});
  return out;
}

std::string device_string(Return (*fn)(Device, char*, unsigned), Device dev) {
  if (!fn) return {};
  char buf[kStringBuffer] = {};
  if (fn(dev, buf, sizeof(buf)) != kSuccess) return {};
  return buf;
}

std::string process_name(unsigned pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace forja::env::nvml
