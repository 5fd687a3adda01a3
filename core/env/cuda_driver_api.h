// The part of the CUDA driver API (libcuda.so.1) the doctor uses, declared to match its C ABI (cuda.h is not
// needed to build) and loaded at run time. It tells which GPUs CUDA itself sees, after CUDA_VISIBLE_DEVICES.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "env/dynlib.h"

namespace forja::env::cuda {

using Result = int;  // CUresult
using Device = int;  // CUdevice

constexpr Result kSuccess = 0;
constexpr Result kErrorNoDevice = 100;
constexpr Result kErrorSystemDriverMismatch = 803;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrPciDeviceId = 34;
constexpr int kAttrPciDomainId = 50;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

struct Uuid {  // CUuuid
  unsigned char bytes[16];
};

struct DeviceFacts {
  int ordinal = 0;
  std::string name;
  std::string
      uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML writes it; "MIG-…" is not known here
  size_t memory_total = 0;
  int cc_major = 0, cc_minor = 0;
  int pci_domain = -1, pci_bus = -1, pci_device = -1;
};

// libcuda stays loaded for the life of the process: after cuInit it runs threads from its own code.
class Library {
 public:
  explicit Library(const std::string& name);

  bool loaded() const { return lib_.loaded(); }
  bool ready() const { return ready_; }
  Result init_code() const { return init_code_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return lib_.path(); }
  std::string error_string(Result r) const;

  int driver_version() const;                // 0 when unknown
  std::vector<DeviceFacts> devices() const;  // empty when not ready
  // Whether device `from` can address device `to`'s memory directly (NVLink or PCIe P2P: what NCCL's
  // multi-GPU collectives run over); nullopt when the driver cannot say.
  std::optional<bool> can_access_peer(int from, int to) const;

 private:
  DynamicLibrary lib_;
  bool ready_ = false;
  Result init_code_ = 0;
  std::string error_;
  Result (*init_)(unsigned int) = nullptr;
  Result (*driver_get_version_)(int*) = nullptr;
  Result (*device_get_count_)(int*) = nullptr;
  Result (*device_get_)(Device*, int) = nullptr;
  Result (*device_get_name_)(char*, int, Device) = nullptr;
  Result (*device_total_mem_)(size_t*, Device) = nullptr;
  Result (*device_get_attribute_)(int*, int, Device) = nullptr;
  Result (*device_get_uuid_)(Uuid*, Device) = nullptr;
  Result (*device_can_access_peer_)(int*, Device, Device) = nullptr;
  Result (*get_error_string_)(Result, const char**) = nullptr;
};

std::string format_uuid(const Uuid& u);

}  // namespace forja::env::cuda
