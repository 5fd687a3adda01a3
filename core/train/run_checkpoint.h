// clang-format off
// Run checkpoints that a crash cannot corrupt. A checkpoint is a folder <root>/step-00000120/ holding
//   adapter_model.safetensors, adapter_config.json  the adapter, in PEFT's format (usable as is)
//   optimizer.safetensors                           AdamW moments, keyed by the adapter's PEFT names
//   rng.safetensors                                 CPU (and CUDA) generator states
//   trainer_state.json                              step, schedule position, data cursor, early stopping
//   run_config.json                                 the whole TrainConfig
//   manifest.json                                   size and SHA-256 of every file above (written last)
// It is written into a temporary sibling folder, every file fsynced, then renamed into place and the parent
// fsynced: a reader sees a whole checkpoint or none. A folder whose manifest is missing or does not match its
// files (a torn disk write, a bit flip, a hand edit) is reported and skipped.
// Fault points of a save, in order (FORJA_FAULT, forja/fault.h): checkpoint.begin, write:<file> (a torn write
// of one file), checkpoint.files_written, checkpoint.synced, checkpoint.renamed, checkpoint.dir_synced,
// checkpoint.pruned, checkpoint.done.
// clang-format on
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lora_linear.h"
#include "optimizer.h"

namespace forja::train {

struct RunState {
  int64_t step = 0;         // optimizer steps done
  int64_t total_steps = 0;  // the schedule's length
  std::string data_cursor;  // opaque, from the data source
  std::string config_json;  // the run's TrainConfig as JSON
  std::optional<double> best_eval_loss;
  int64_t evals_without_improvement = 0;
};

// Saves a checkpoint for `state.step` under `root`, then deletes the oldest checkpoints beyond `keep` (>= 1).
// Returns the checkpoint folder.
std::filesystem::path save_run_checkpoint(const std::filesystem::path& root, const LoraAdapters& adapters,
                                          const AdamW& optimizer, const RunState& state,
                                          const std::string& base_model, int64_t keep);

// What crashed saves left under `root` (the caller holds the output folder's lock): unfinished temporaries
// and retired copies go, a checkpoint caught between the two renames of a re-save comes back.
void tidy_checkpoint_root(const std::filesystem::path& root);

// Empty when `dir` is a complete checkpoint whose files match its manifest; else what is wrong.
std::string checkpoint_problem(const std::filesystem::path& dir);

// The checkpoint folders under `root`, oldest first (by step), whether valid or not.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& root);

// The newest valid checkpoint; each newer one that is not valid adds a message to `warnings`.
std::optional<std::filesystem::path> latest_valid_checkpoint(const std::filesystem::path& root,
                                                             std::vector<std::string>& warnings);

// Restores adapters, optimizer and the generators' states from a checkpoint; returns its RunState.
RunState load_run_checkpoint(const std::filesystem::path& dir, LoraAdapters& adapters, AdamW& optimizer);
// Its tensor part: adapters, optimizer moments and generator states (LibTorch errors surface as c10::Error).
void load_state_tensors(const std::filesystem::path& dir, LoraAdapters& adapters, AdamW& optimizer);

}  // namespace forja::train
