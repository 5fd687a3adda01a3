// The part of NVML (libnvidia-ml.so.1) that Forja uses, declared here to match the driver's C ABI (nvml.h is
// not needed to build), and loaded at run time. Every function but init is optional: an old driver may lack
// one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "env/dynlib.h"

namespace forja::env::nvml {

using Return = int;  // nvmlReturn_t
struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorLibRmVersionMismatch = 18;
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr unsigned kFeatureEnabled = 1;
constexpr unsigned kStringBuffer = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE / NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct PciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

struct ProcessInfo {  // nvmlProcessInfo_t as used by the _v3 process queries
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

// One loaded NVML with nvmlInit done; nvmlShutdown and dlclose on destruction (NVML counts its inits).
class Library {
 public:
  explicit Library(const std::string& name);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool loaded() const { return lib_.loaded(); }
  bool ready() const { return ready_; }
  Return init_code() const { return init_code_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return lib_.path(); }
  std::string error_string(Return r) const;

  Return (*SystemGetDriverVersion)(char*, unsigned int) = nullptr;
  Return (*SystemGetCudaDriverVersion)(int*) = nullptr;
  Return (*DeviceGetCount)(unsigned int*) = nullptr;
  Return (*DeviceGetHandleByIndex)(unsigned int, Device*) = nullptr;
  Return (*DeviceGetName)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetUUID)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetMemoryInfo)(Device, Memory*) = nullptr;
  Return (*DeviceGetCudaComputeCapability)(Device, int*, int*) = nullptr;
  Return (*DeviceGetPciInfo)(Device, PciInfo*) = nullptr;
  Return (*DeviceGetCurrPcieLinkGeneration)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMaxPcieLinkGeneration)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetCurrPcieLinkWidth)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMaxPcieLinkWidth)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMigMode)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*DeviceGetMaxMigDeviceCount)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMigDeviceHandleByIndex)(Device, unsigned int, Device*) = nullptr;
  Return (*DeviceGetEccMode)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*DeviceGetPersistenceMode)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetPowerManagementLimit)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetUtilizationRates)(Device, Utilization*) = nullptr;
  Return (*DeviceGetTemperature)(Device, int, unsigned int*) = nullptr;
  Return (*DeviceGetPowerUsage)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetClockInfo)(Device, int, unsigned int*) = nullptr;
  Return (*DeviceGetComputeRunningProcesses)(Device, unsigned int*, ProcessInfo*) = nullptr;
  Return (*DeviceGetGraphicsRunningProcesses)(Device, unsigned int*, ProcessInfo*) = nullptr;

 private:
  DynamicLibrary lib_;
  bool ready_ = false;
  Return init_code_ = 0;
  std::string error_;
  Return (*init_)() = nullptr;
  Return (*shutdown_)() = nullptr;
  const char* (*error_string_)(Return) = nullptr;
};

// Compute and graphics processes on a device, merged by pid. Empty when the driver does not say.
struct Process {
  unsigned pid;
  unsigned long long used;
};
std::vector<Process> running_processes(const Library& lib, Device dev);

// A device's string property (its name, its UUID) through one of NVML's getters; empty when it fails.
std::string device_string(Return (*fn)(Device, char*, unsigned), Device dev);

// The name of a process from /proc/<pid>/comm; empty when it cannot be read (another PID namespace).
std::string process_name(unsigned pid);

}  // namespace forja::env::nvml
