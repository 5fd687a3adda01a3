// The only place where the env code touches LibTorch's CUDA internals, so that the differences between
// Debian's CPU LibTorch 1.13 and a CUDA LibTorch 2.x stay in one file. Included by torch_facts.cpp only.
#pragma once

#include <cstdint>

#if FORJA_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace forja::env::torch_compat {

struct AllocatorStats {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak_allocated = 0;
};

// LibTorch's caching-allocator counters for one device; false when this build has no CUDA or the allocator
// has not been set up on that device yet (getDeviceStats throws "did you call init?" then).
inline bool allocator_stats(int device, AllocatorStats& out) {
#if FORJA_TORCH_CUDA
  try {
    // 1.13 takes an int, 2.x a c10::DeviceIndex; index 0 of each StatArray is StatType::AGGREGATE in both.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    out.allocated = stats.allocated_bytes[0].current;
    out.reserved = stats.reserved_bytes[0].current;
    out.peak_allocated = stats.allocated_bytes[0].peak;
    return true;
  } catch (...) {
    return false;
  }
#else
  (void)device;
  (void)out;
  return false;
#endif
}

// Gives the caching allocator's free blocks back to the driver (after an out-of-memory error) and starts a
// new peak.
inline void release_and_reset_peak(int device) {
#if FORJA_TORCH_CUDA
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
  } catch (...) {
  }
#else
  (void)device;
#endif
}

}  // namespace forja::env::torch_compat
