// What `forja-cli train` (cmd_train.cpp) shares with its two helpers: the stop flag its signals set, the
// printing of a run's progress (lines for people, or one JSON object per line for the window), and the
// data-parallel launcher behind --nproc / --gpus.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "command.h"
#include "forja/train.h"
#include "forja/train_run.h"

namespace forja::cli {

// Set by SIGINT / SIGTERM once stop_training_on_signals() ran: a run pauses at its next step with a
// checkpoint, a launcher stops its workers.
std::atomic<bool>& train_stop_requested();
void stop_training_on_signals();

// A run's progress on stdout: with `json`, the lines the window reads (events message, run, step,
// checkpoint, done); else a line per step, or on a terminal (`tty`) one progress bar redrawn in place.
class TrainProgressPrinter {
 public:
  TrainProgressPrinter(bool json, bool tty) : json_(json), tty_(tty) {}
  void message(const std::string& text) const;
  void run_id(int64_t journal_run_id) const;
  void step(const TrainProgress& p) const;
  void checkpoint(const forja::train::SavedCheckpoint& saved) const;
  void done(const TrainResult& r) const;

 private:
  bool json_, tty_;
};

// --nproc N / --gpus N: starts the workers (this program, with torchrun's environment) and waits for them.
// Returns 0 when every worker finished; throws forja::Error naming the rank that failed otherwise.
int launch_train_workers(const Args& args, const std::string& config_path);

}  // namespace forja::cli
