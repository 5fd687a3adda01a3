// The part of torch.distributed's C++ API (c10d) that Forja uses, across LibTorch 1.13 (Debian) and 2.x: a
// TCPStore, the Gloo and NCCL process groups, allreduce. In 1.13 the process groups derive from
// c10d::ProcessGroup; from 2.0 they are c10d::Backend subclasses (ProcessGroup became a wrapper around them).
// Only this header and process_group.cpp include c10d.
#pragma once

#include <torch/version.h>

#if FORJA_DIST_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#if FORJA_DIST_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace forja::dist::compat {

#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

inline constexpr bool kHasNccl = FORJA_DIST_NCCL != 0;
inline constexpr bool kHasGloo = FORJA_DIST_GLOO != 0;

}  // namespace forja::dist::compat
