#include "env/torch_facts.h"

#include <dlfcn.h>

#include <ATen/Version.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <regex>
#include <set>

#include "env/torch_compat.h"

namespace forja::env {

namespace {

int cuda_from_text(const std::string& major, const std::string& minor) {
  return std::stoi(major) * 1000 + std::stoi(minor) * 10;
}

// What the process has actually loaded, asked of the libraries themselves (LibTorch links them, so they are
// in the global scope when present).
int loaded_cuda_runtime() {
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
  int v = 0;
  if (fn && fn(&v) == 0) return v;
  return 0;
}

int loaded_cudnn() {
  using Fn = size_t (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudnnGetVersion"));
  return fn ? normalize_cudnn_version(static_cast<long>(fn())) : 0;
}

}  // namespace

int normalize_cudnn_version(long raw) {
  if (raw <= 0) return 0;
  if (raw >= 10000) return static_cast<int>(raw);
  return static_cast<int>((raw / 1000) * 10000 + ((raw / 100) % 10) * 100 + raw % 100);
}

void parse_torch_config(const std::string& text, TorchInfo& info) {
  std::smatch m;
  static const std::regex runtime_loaded(R"(-\s+CUDA Runtime ([0-9]+)\.([0-9]+))");
  static const std::regex runtime_built(R"(Built with CUDA Runtime ([0-9]+)\.([0-9]+))");
  static const std::regex settings_cuda(R"(CUDA_VERSION=([0-9]+)\.([0-9]+))");
  static const std::regex settings_cudnn(R"(CUDNN_VERSION=([0-9]+)\.([0-9]+)(?:\.([0-9]+))?)");
  // show_config prints cuDNN as raw/1000 "." raw/100%10 ["." raw%100]; the raw number comes back from the
  // parts.
  static const std::regex cudnn_loaded(R"(-\s+CuDNN ([0-9]+)\.([0-9]+)(?:\.([0-9]+))?)");
  static const std::regex cudnn_built(R"(Built with CuDNN ([0-9]+)\.([0-9]+)(?:\.([0-9]+))?)");
  static const std::regex arch(R"(code=((?:sm|compute)_[0-9]+[a-z]?))");

  if (std::regex_search(text, m, runtime_loaded)) info.cuda_runtime_loaded = cuda_from_text(m[1], m[2]);
  if (std::regex_search(text, m, settings_cuda))
    info.cuda_runtime_built = cuda_from_text(m[1], m[2]);
  else if (std::regex_search(text, m, runtime_built))
    info.cuda_runtime_built = cuda_from_text(m[1], m[2]);
  else
    info.cuda_runtime_built = info.cuda_runtime_loaded;

  auto raw_cudnn = [](const std::smatch& mm) {
    long patch = mm[3].matched ? std::stol(mm[3]) : 0;
    return std::stol(mm[1]) * 1000 + std::stol(mm[2]) * 100 + patch;
  };
  if (std::regex_search(text, m, cudnn_loaded)) info.cudnn_loaded = normalize_cudnn_version(raw_cudnn(m));
  if (std::regex_search(text, m, settings_cudnn)) {
    int patch = m[3].matched ? std::stoi(m[3]) : 0;
    info.cudnn_built = std::stoi(m[1]) * 10000 + std::stoi(m[2]) * 100 + patch;
  } else if (std::regex_search(text, m, cudnn_built)) {
    info.cudnn_built = normalize_cudnn_version(raw_cudnn(m));
  } else {
    info.cudnn_built = info.cudnn_loaded;
  }

  std::set<std::string> seen;
  info.cuda_architectures.clear();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), arch); it != std::sregex_iterator(); ++it) {
    std::string code = (*it)[1];
    if (seen.insert(code).second) info.cuda_architectures.push_back(code);
  }
}

TorchInfo probe_torch() {
  TorchInfo info;
  info.probed = true;
  info.version = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                 std::to_string(TORCH_VERSION_PATCH);
  info.built_with_cuda = FORJA_TORCH_CUDA;
  try {
    info.cuda_available = torch::cuda::is_available();
    info.device_count = info.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
  } catch (...) {
    info.cuda_available = false;
  }
  try {
    parse_torch_config(at::show_config(), info);
  } catch (...) {
    // A CUDA build without a usable driver can throw from the CUDA hooks; the dlsym answers below still hold.
  }
  if (int v = loaded_cuda_runtime()) info.cuda_runtime_loaded = v;
  if (int v = loaded_cudnn()) info.cudnn_loaded = v;
  return info;
}

void release_cuda_memory(int device) {
  torch_compat::release_and_reset_peak(device);
}

std::vector<AllocatorSample> torch_allocator_samples() {
  std::vector<AllocatorSample> out;
#if FORJA_TORCH_CUDA
  int n = 0;
  try {
    n = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  } catch (...) {
    n = 0;
  }
  for (int d = 0; d < n; ++d) {
    torch_compat::AllocatorStats s;
    if (!torch_compat::allocator_stats(d, s)) continue;
    out.push_back({d, static_cast<uint64_t>(s.allocated), static_cast<uint64_t>(s.reserved),
                   static_cast<uint64_t>(s.peak_allocated)});
  }
#endif
  return out;
}

}  // namespace forja::env
