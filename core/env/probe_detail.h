// Small parsers behind probe(), here so that the tests can feed them the real texts they read.
#pragma once

#include <string>
#include <vector>

namespace forja::env {

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 …" → "535.104.05";
// the open module's "… Open Kernel Module for x86_64  550.54.14  Release Build …" too. Empty when absent.
std::string parse_kernel_module_version(const std::string& proc_text);

// "Cuda compilation tools, release 13.0, V13.0.88" → "13.0.88" (falls back to "13.0"). Empty when absent.
std::string parse_nvcc_version(const std::string& nvcc_output);

// CMAKE_CUDA_ARCHITECTURES as written ("80-real;86;90a-virtual", comma or semicolon separated) → "sm_80",
// "sm_86", "compute_86", "compute_90a". "native", "all", "all-major" give an empty list (not known here).
std::vector<std::string> parse_cmake_architectures(const std::string& list);

// "12.4" / "12.4.131" → 12040; 0 when it does not parse.
int parse_cuda_version(const std::string& text);

// Whether code for `architectures` ("sm_80", "compute_90") runs on compute capability major.minor: a cubin
// runs on the same major at an equal or higher minor ("sm_80" on 8.6, not "sm_90a" anywhere but 9.0), PTX is
// JIT-compiled for any equal or newer GPU.
bool architectures_cover(const std::vector<std::string>& architectures, int cc_major, int cc_minor);

}  // namespace forja::env
