// A fake libcuda for the env tests: the driver-API entry points the doctor binds, answering from the same
// scenario JSON as the fake NVML. A GPU with "cuda_visible": false is one CUDA does not list (as under
// CUDA_VISIBLE_DEVICES, or a MIG GPU without instances).
#include <cstdio>
#include <cstring>
#include <vector>

#include "fake_gpu_scenario.h"

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3, kInvalidDevice = 101;
bool g_ready = false;

std::vector<size_t> visible() {
  std::vector<size_t> out;
  for (size_t i = 0; i < fake_gpu::gpus().size(); ++i)
    if (fake_gpu::gpus()[i].value("cuda_visible", true)) out.push_back(i);
  return out;
}

const nlohmann::json* device(int dev) {
  const auto v = visible();
  if (!g_ready || dev < 0 || static_cast<size_t>(dev) >= v.size()) return nullptr;
  return &fake_gpu::gpus()[v[dev]];
}

}  // namespace

extern "C" {

int cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  if (!fake_gpu::load_scenario()) return 100;  // CUDA_ERROR_NO_DEVICE
  const int code = fake_gpu::scenario().value("cuda_init", 0);
  g_ready = code == kSuccess;
  return code;
}
int cuDriverGetVersion(int* v) {
  if (!v) return kInvalidValue;
  if (!fake_gpu::load_scenario()) return kInvalidValue;
  *v = fake_gpu::scenario().value("cuda_driver_version", 0);
  return kSuccess;
}
int cuGetErrorString(int r, const char** s) {
  *s = r == 803 ? "system has unsupported display driver / cuda driver combination" : "fake CUDA error";
  return kSuccess;
}
int cuDeviceGetCount(int* n) {
  if (!g_ready) return kNotInitialized;
  *n = static_cast<int>(visible().size());
  return kSuccess;
}
int cuDeviceGet(int* dev, int ordinal) {
  if (!device(ordinal)) return kInvalidDevice;
  *dev = ordinal;
  return kSuccess;
}
int cuDeviceGetName(char* name, int len, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  std::snprintf(name, static_cast<size_t>(len), "%s", g->at("name").get<std::string>().c_str());
  return kSuccess;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  *bytes = g->at("memory_total").get<size_t>();
  return kSuccess;
}
int cuDeviceGetAttribute(int* v, int attr, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  switch (attr) {
    case 75:
      *v = (*g)["cc"][0].get<int>();
      return kSuccess;
    case 76:
      *v = (*g)["cc"][1].get<int>();
      return kSuccess;
    case 50:
      *v = (*g)["pci"][0].get<int>();
      return kSuccess;
    case 33:
      *v = (*g)["pci"][1].get<int>();
      return kSuccess;
    case 34:
      *v = (*g)["pci"][2].get<int>();
      return kSuccess;
    default:
      return kInvalidValue;
  }
}
int cuDeviceGetUuid_v2(unsigned char* uuid, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  // "GPU-xxxxxxxx-xxxx-…": 32 hex digits after the prefix, dashes skipped.
  const std::string s = g->at("uuid").get<std::string>();
  std::string hex;
  for (char c : s.substr(4))
    if (c != '-') hex += c;
  for (int i = 0; i < 16; ++i)
    uuid[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return kSuccess;
}

// "cuda_peer_access": [[from, to], ...] by CUDA index; any other pair cannot.
int cuDeviceCanAccessPeer(int* can, int from, int to) {
  if (!can || !device(from) || !device(to)) return kInvalidDevice;
  *can = 0;
  for (const auto& p : fake_gpu::scenario().value("cuda_peer_access", nlohmann::json::array()))
    if (p.at(0).get<int>() == from && p.at(1).get<int>() == to) *can = 1;
  return kSuccess;
}
}  // extern "C"
