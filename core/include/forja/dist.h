// Data-parallel training across processes (torch.distributed's c10d: Gloo on CPUs, NCCL on GPUs), as
// `forja-cli train --nproc N` / `--gpus N` runs it. The launcher starts this machine's workers (the same
// program with the worker's arguments and torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT), watches them, and when one fails stops the others and says which rank failed and how; each
// worker joins the run from that environment. Only in builds with the dist area (c10d's headers).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forja/train.h"

namespace forja::train {
class DataParallel;
}

namespace forja::dist {

struct LaunchOptions {
  std::string program;            // the worker executable
  std::vector<std::string> args;  // its arguments (without the program name)
  int nproc = 1;                  // workers on this machine
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port of this machine (one machine only)
  bool gpus = false;    // one GPU per worker over NCCL (FORJA_DIST_BACKEND=nccl, NCCL_NVLS_ENABLE=0)
  // After a worker fails, how long the others get to stop by themselves (rank 0 then writes the last
  // completed step's checkpoint) before they are killed.
  std::chrono::seconds grace{60};
  // Set from a signal handler: each live worker is sent SIGTERM once (they pause together with a checkpoint).
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> on_message;
};

struct WorkerExit {
  int rank = 0;
  pid_t pid = 0;
  int wait_status = 0;
  bool ok = false;             // exited with status 0
  bool stopped_by_us = false;  // killed by the launcher after another worker failed
  std::string description;     // "exited with status 1", "was killed by signal 9 (Killed)"
};

struct LaunchResult {
  std::vector<WorkerExit> workers;  // by local rank
  int first_failed = -1;            // index into workers of the first worker that failed, or -1
  bool ok() const { return first_failed < 0; }
  // One line per failed worker, the first failure first.
  std::string report() const;
};

// Starts the workers and waits for all of them. Throws forja::Error when they cannot be started.
LaunchResult launch_workers(const LaunchOptions& options);

// A TCP port of this machine that nobody listens on right now.
int free_local_port();

// True when this build has the NCCL process group (LibTorch with CUDA and NCCL's headers).
bool has_nccl();
// True when this build has the Gloo process group (ranks on CPUs; the PyTorch wheel ships no Gloo headers).
bool has_gloo();

// This process's place in a data-parallel run, joined.
struct DataParallelWorker {
  std::shared_ptr<train::DataParallel> group;  // for RunHooks::data_parallel
  int rank = 0;
  int world_size = 1;
};
// When this process was started as a worker (WORLD_SIZE and the other torchrun variables are set): joins the
// run over NCCL (FORJA_DIST_BACKEND=nccl, or a CUDA config) or Gloo, and sets config.device to this worker's
// GPU (NCCL) or the CPU (Gloo with device "auto"). Nothing when the variables are not set. Throws
// forja::Error on inconsistent variables or a rendezvous that does not complete.
std::optional<DataParallelWorker> join_data_parallel_run(TrainConfig& config);

}  // namespace forja::dist
