// What LibTorch says about itself: version, CUDA at build and at run time, cuDNN, the GPU architectures it
// has kernels for, and its allocator's counters. The one translation unit of core/env that includes torch
// headers.
#pragma once

#include <string>
#include <vector>

#include "forja/env.h"

namespace forja::env {

// Reads at::show_config()'s text ("CUDA Runtime 12.8", "NVCC architecture flags: -gencode;…", "CuDNN 91.0.2",
// "Build settings: … CUDA_VERSION=12.8, CUDNN_VERSION=9.8.0, …") into `info`.
void parse_torch_config(const std::string& text, TorchInfo& info);

// cudnnGetVersion()'s number → 10000*major + 100*minor + patch. cuDNN 8 encodes 1000*major + 100*minor +
// patch, cuDNN 9 already 10000*major + 100*minor + patch.
int normalize_cudnn_version(long raw);

// Allocator counters per CUDA device for this process; empty without CUDA.
std::vector<AllocatorSample> torch_allocator_samples();

// Empties LibTorch's CUDA cache on `device` and resets its peak counter; nothing without CUDA.
void release_cuda_memory(int device);

}  // namespace forja::env
