#include "env/cuda_driver_api.h"

#include <cstdio>

namespace forja::env::cuda {

Library::Library(const std::string& name) : lib_(name, /*keep_loaded=*/true) {
  if (!lib_.loaded()) {
    error_ = lib_.error();
    return;
  }
  lib_.bind(get_error_string_, "cuGetErrorString");
  lib_.bind(driver_get_version_, "cuDriverGetVersion");
  if (!lib_.bind(init_, "cuInit")) {
    error_ = lib_.path() + ": has no cuInit; this is not a usable CUDA driver";
    return;
  }
  init_code_ = init_(0);
  if (init_code_ != kSuccess) {
    error_ = "cuInit failed: " + error_string(init_code_);
    return;
  }
  ready_ = true;
  lib_.bind(device_get_count_, "cuDeviceGetCount");
  lib_.bind(device_get_, "cuDeviceGet");
  lib_.bind(device_get_name_, "cuDeviceGetName");
  if (!lib_.bind(device_total_mem_, "cuDeviceTotalMem_v2")) lib_.bind(device_total_mem_, "cuDeviceTotalMem");
  lib_.bind(device_get_attribute_, "cuDeviceGetAttribute");
  if (!lib_.bind(device_get_uuid_, "cuDeviceGetUuid_v2")) lib_.bind(device_get_uuid_, "cuDeviceGetUuid");
  lib_.bind(device_can_access_peer_, "cuDeviceCanAccessPeer");
}

std::optional<bool> Library::can_access_peer(int from, int to) const {
  Device a = 0, b = 0;
  int can = 0;
  if (!ready_ || !device_get_ || !device_can_access_peer_ || device_get_(&a, from) != kSuccess ||
      device_get_(&b, to) != kSuccess || device_can_access_peer_(&can, a, b) != kSuccess)
    return std::nullopt;
  return can != 0;
}

std::string Library::error_string(Result r) const {
  const char* s = nullptr;
  if (get_error_string_) get_error_string_(r, &s);
  return (s ? std::string(s) : std::string("CUDA driver error")) + " (code " + std::to_string(r) + ")";
}

int Library::driver_version() const {
  // cuDriverGetVersion works before and without cuInit, which matters when cuInit fails.
  int v = 0;
  if (driver_get_version_ && driver_get_version_(&v) == kSuccess) return v;
  return 0;
}

std::vector<DeviceFacts> Library::devices() const {
  std::vector<DeviceFacts> out;
  if (!ready_ || !device_get_count_ || !device_get_) return out;
  int count = 0;
  if (device_get_count_(&count) != kSuccess) return out;
  for (int i = 0; i < count; ++i) {
    Device dev = 0;
    if (device_get_(&dev, i) != kSuccess) continue;
    DeviceFacts f;
    f.ordinal = i;
    char name[256] = {};
    if (device_get_name_ && device_get_name_(name, sizeof(name) - 1, dev) == kSuccess) f.name = name;
    if (device_total_mem_) device_total_mem_(&f.memory_total, dev);
    auto attr = [&](int which, int fallback) {
      int v = fallback;
      if (!device_get_attribute_ || device_get_attribute_(&v, which, dev) != kSuccess) return fallback;
      return v;
    };
    f.cc_major = attr(kAttrComputeCapabilityMajor, 0);
    f.cc_minor = attr(kAttrComputeCapabilityMinor, 0);
    f.pci_domain = attr(kAttrPciDomainId, -1);
    f.pci_bus = attr(kAttrPciBusId, -1);
    f.pci_device = attr(kAttrPciDeviceId, -1);
    Uuid u{};
    if (device_get_uuid_ && device_get_uuid_(&u, dev) == kSuccess) f.uuid = format_uuid(u);
    out.push_back(std::move(f));
  }
  return out;
}

std::string format_uuid(const Uuid& u) {
  char buf[64];
  const unsigned char* b = u.bytes;
  std::snprintf(buf, sizeof(buf), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return buf;
}

}  // namespace forja::env::cuda
