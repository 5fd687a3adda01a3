// Multi-process data-parallel training through torch.distributed's c10d: the rendezvous (a TCPStore that rank
// 0 serves), a Gloo (CPU) or NCCL (CUDA) process group, and train::DataParallel on top of it. The environment
// names are torchrun's, so a worker started by `forja-cli train --nproc N` or by hand reads the same
// variables.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "data_parallel.h"
#include "forja/dist.h"

namespace forja::dist {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Every collective and the rendezvous give up after this long (a peer that hangs without dying).
  std::chrono::seconds timeout{300};
};

// The worker's place in a run from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and
// FORJA_DIST_TIMEOUT_S), or nothing when WORLD_SIZE is not set. Inconsistent values are an error naming them.
std::optional<DistEnv> dist_env_from_environment();

enum class Backend { Gloo, Nccl };

// Joins the run: connects to rank 0's store (rank 0 serves it) and creates the process group. NCCL sums CUDA
// tensors on `cuda:local_rank`; Gloo sums CPU tensors. Tensors on another device are copied there and back.
// Throws forja::Error when the rendezvous does not complete within the timeout.
std::unique_ptr<train::DataParallel> connect(const DistEnv& env, Backend backend);

}  // namespace forja::dist
