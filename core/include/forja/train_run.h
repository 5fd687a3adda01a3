// A whole fine-tune as a program runs it: load the model, attach LoRA, resume from the newest valid
// checkpoint in <output_dir>/checkpoints (or start fresh), run the steps with evaluation, early stopping,
// periodic checkpoints and the progress hooks, checkpoint on every stop, and write the final adapter to
// <output_dir>/adapter. What `forja-cli train` runs (the window supervises that process).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forja/error.h"
#include "forja/train.h"

namespace forja::train {

class DataParallel;

// Holds <output_dir>/.lock (an flock, gone with the process however it ends) so that two runs never write one
// output folder. Taken again by the same process it is shared. Creates the folder; throws forja::Error naming
// it when it cannot, or when another process holds it.
class OutputDirLock;
std::shared_ptr<OutputDirLock> lock_output_dir(const std::string& output_dir);

// A checkpoint folder on disk, as the record keepers (the journal) list them.
struct SavedCheckpoint {
  int64_t step = 0;
  std::string path;
};

// The order a step is told in is the write-ahead order: on_progress (the step's record) runs before the
// checkpoint that lets a resume skip the step becomes visible, and on_checkpoint after it. A kill between
// the two leaves a record of a step that a resume does again; on_start then drops it.
struct RunHooks {
  TrainCallback on_progress;  // per optimizer step; may pause or cancel
  // Before the first step: the step the run starts from (0 when fresh) and the checkpoints on disk. Records
  // of later steps belong to a run that was killed after recording them: they are done again.
  std::function<void(int64_t step, const std::vector<SavedCheckpoint>& on_disk)> on_start;
  // After a checkpoint became visible and older ones were pruned: the new one (with the loss of its step)
  // and every checkpoint now on disk.
  std::function<void(const SavedCheckpoint& saved, double loss, const std::vector<SavedCheckpoint>& on_disk)>
      on_checkpoint;
  std::function<void(const std::string&)> on_message;  // resumed from…, skipped a damaged checkpoint, …
  // A checkpoint or the final adapter could not be written (a full disk): the run's state is still in memory.
  // True retries the save (after the caller waited, or freed space); false, or no hook, ends the run with the
  // error.
  std::function<bool(const Error& problem)> on_save_failed;
  // One rank of a data-parallel run (forja/dist.h joins one), or null. Each step then draws grad_accum ×
  // world micro-batches (the global batch), forwards this rank's share and sums the gradients over the ranks;
  // only rank 0 writes checkpoints and the adapter. Pause and cancel take effect when any rank asks for them.
  DataParallel* data_parallel = nullptr;
};

// The run with the data of config.train_file / eval_file: datasets of records through the tokenizer and chat
// template, or pre-tokenized JSONL. The data summary goes to on_message first.
TrainResult run_training_from_files(const TrainConfig& config, const RunHooks& hooks = {});

// The optimizer steps `config.epochs` passes over `rows_per_epoch` rows take: batch_size × grad_accum rows
// per worker and step, rounded up, at least 1.
int64_t steps_for_epochs(const TrainConfig& config, int64_t rows_per_epoch, int world_size);

}  // namespace forja::train
