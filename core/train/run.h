// A whole fine-tune: load the model, attach LoRA, resume from the newest valid checkpoint in
// <output_dir>/checkpoints (or start fresh), run the steps with evaluation, early stopping, periodic
// checkpoints and the progress callback, checkpoint on every stop, and write the final adapter to
// <output_dir>/adapter.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forja/batch.h"
#include "forja/train.h"
#include "jsonl_source.h"

namespace forja::train {

class DataParallel;

struct RunHooks {
  TrainCallback on_progress;                           // per optimizer step; may pause or cancel
  std::function<void(const std::string&)> on_message;  // resumed from…, skipped a damaged checkpoint, …
  // One rank of a data-parallel run (data_parallel.h), or null. Each step then draws grad_accum × world
  // micro-batches (the global batch), forwards this rank's share and sums the gradients over the ranks; only
  // rank 0 writes checkpoints and the adapter. Pause and cancel take effect when any rank asks for them.
  DataParallel* data_parallel = nullptr;
};

TrainResult run_training(const TrainConfig& config, BatchSource& train_data,
                         const std::vector<Batch>& eval_data, const RunHooks& hooks = {});

// run_training with the data of config.train_file / eval_file: datasets of records through the tokenizer and
// chat template, or pre-tokenized JSONL (dataset_source.h). The data summary goes to on_message first.
TrainResult run_training_from_files(const TrainConfig& config, const RunHooks& hooks = {});

}  // namespace forja::train
