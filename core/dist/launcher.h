// The launcher behind `forja-cli train --nproc N` / `--gpus N`: starts this machine's workers (the same
// program with the worker's arguments and torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT), watches them, and when one fails stops the others and says which rank failed and how.
// POSIX only; no torch.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace forja::dist
